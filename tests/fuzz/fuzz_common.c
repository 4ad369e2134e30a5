/*
 * fuzz_common.c - helpers of the libFuzzer targets (see fuzz_common.h).
 */
#include "fuzz_common.h"

#include <dirent.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/eval.h"
#include "http/json_flat.h"
#include "http/json_guard.h"
#include "eval/snapshot.h"
#include "eval_spec.h"

char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        abort();
    if (size > 0)
        memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

static char dir_path[256];

/* Removes the files the targets left in the directory, then the directory
 * (no subdirectories are ever made). */
static void remove_dir(void)
{
    DIR *d = opendir(dir_path);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char file[512];
            snprintf(file, sizeof file, "%s/%s", dir_path, e->d_name);
            unlink(file);
        }
        closedir(d);
    }
    rmdir(dir_path);
}

const char *fuzz_dir(void)
{
    if (dir_path[0] != '\0')
        return dir_path;
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : NULL;
    if (base == NULL)
        base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    snprintf(dir_path, sizeof dir_path, "%s/ensign-fuzz-XXXXXX", base);
    if (mkdtemp(dir_path) == NULL) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(remove_dir);
    return dir_path;
}

int fuzz_memfile(const uint8_t *data, size_t size, char path[FUZZ_PATH_MAX])
{
    int fd = memfd_create("ensign-fuzz", MFD_CLOEXEC);
    if (fd < 0) {
        perror("fuzz: memfd_create");
        abort();
    }
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            perror("fuzz: write");
            abort();
        }
        done += (size_t)n;
    }
    snprintf(path, FUZZ_PATH_MAX, "/proc/self/fd/%d", fd);
    return fd;
}

/* The whole input as one JSON value (json-c flags), or NULL. */
static json_object *parse_whole(const uint8_t *data, size_t size, int flags)
{
    static struct json_tokener *tok;
    if (tok == NULL && (tok = json_tokener_new_ex(64)) == NULL)
        abort();
    if (size > INT32_MAX)
        return NULL;
    json_tokener_reset(tok);
    json_tokener_set_flags(tok, flags);
    json_object *obj = json_tokener_parse_ex(tok, (const char *)data, (int)size);
    size_t end = json_tokener_get_parse_end(tok);
    bool complete = json_tokener_get_error(tok) == json_tokener_success;
    while (complete && end < size) {
        char c = (char)data[end++];
        complete = c == ' ' || c == '\t' || c == '\r' || c == '\n';
    }
    if (!complete) {
        json_object_put(obj);
        return NULL;
    }
    return obj;
}

struct json_object *fuzz_json(const uint8_t *data, size_t size)
{
    return parse_whole(data, size, 0);
}

struct json_object *fuzz_json_guarded(const uint8_t *data, size_t size)
{
    size_t members;
    if (json_guard_scan((const char *)data, size, 0, &members) != JSON_GUARD_OK)
        return NULL;
    json_object *obj = parse_whole(data, size, JSON_GUARD_TOKENER_FLAGS);
    if (obj != NULL && !json_guard_members_kept(obj, members)) {
        json_object_put(obj);
        return NULL;
    }
    static struct json_flat_doc doc; /* reused: emptied by each conversion */
    const struct json_flat *flat = obj != NULL ? json_flat_from_json(&doc, obj) : NULL;
    if (flat != NULL)
        fuzz_check_guarded(flat);
    return obj;
}

/* An oracle independent of json_guard.c: strict UTF-8 (no overlong
 * forms, no surrogates, at most U+10FFFF) and no NUL. */
static bool clean_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned c = p[i];
        size_t n = c < 0x80             ? 0
                   : (c & 0xe0) == 0xc0 ? 1
                   : (c & 0xf0) == 0xe0 ? 2
                   : (c & 0xf8) == 0xf0 ? 3
                                        : 9;
        if (c == 0 || n == 9 || n >= len - i)
            return false;
        unsigned cp = n == 0 ? c : c & (0x3f >> n);
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        static const unsigned min[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

static void guarded_broken(const char *what)
{
    fprintf(stderr, "fuzz: json_guard accepted %s\n", what);
    abort();
}

void fuzz_check_guarded(const struct json_flat *root)
{
    switch (root->type) {
    case JSON_FLAT_STRING:
        if (!clean_utf8(root->u.text, root->len))
            guarded_broken("a string that is not clean UTF-8");
        break;
    case JSON_FLAT_DOUBLE:
        if (!isfinite(root->u.number))
            guarded_broken("a number that is not finite");
        break;
    case JSON_FLAT_ARRAY:
    case JSON_FLAT_OBJECT: {
        const struct json_flat *v = json_flat_first(root);
        for (uint32_t i = 0; i < root->len; i++, v = json_flat_next(v)) {
            if (v->key != NULL && !clean_utf8(v->key, v->key_len))
                guarded_broken("a member name that is not clean UTF-8");
            fuzz_check_guarded(v);
        }
        break;
    }
    default:
        break;
    }
}

int fuzz_build_snapshot(json_object *spec, uint64_t generation, const char *path)
{
    char err[256];
    return eval_spec_write(spec, generation, path, err, sizeof err) < 0 ? -1 : 0;
}

/* ---- evaluating everything ---- */

static void broken(const struct snapshot *s, const struct snapshot_flag *flag, const char *what)
{
    fprintf(stderr, "fuzz: %s%s: %s\n", flag != NULL ? "flag " : "environment",
            flag != NULL ? snapshot_string(s, flag->key) : "", what);
    abort();
}

static void check_result(const struct snapshot *s, const struct snapshot_flag *flag,
                         const struct eval_result *res, bool trusted)
{
    if (res->status != EVAL_OK) {
        if (res->reason != EVAL_REASON_ERROR || eval_error_code(res->status) == NULL)
            broken(s, flag, "an error without an error code or reason ERROR");
        return;
    }
    if (res->reason == EVAL_REASON_ERROR || res->variant_key == NULL || res->value_json == NULL)
        broken(s, flag, "a success without variant, value or reason");
    if (res->variant_index < flag->variant_first ||
        res->variant_index - flag->variant_first >= flag->variant_count)
        broken(s, flag, "a variant of another flag");
    if (!trusted) /* a hostile file may hold NUL inside a string: harmless */
        return;
    if (strlen(res->variant_key) != res->variant_key_len)
        broken(s, flag, "a variant key length that does not match");
    enum json_tokener_error error;
    json_object *value = json_tokener_parse_verbose(res->value_json, &error);
    if (error != json_tokener_success || strlen(res->value_json) != res->value_json_len)
        broken(s, flag, "a value that is not JSON text");
    json_object_put(value);
}

void fuzz_evaluate_all(const struct snapshot *s, const struct eval_context *ctx,
                       struct eval_scratch *scratch, bool trusted)
{
    for (uint32_t e = 0; e < s->counts[SNAPSHOT_SEC_ENVS]; e++) {
        const struct snapshot_env *env = &s->envs[e];
        size_t count;
        const struct snapshot_flag *flags = snapshot_env_flags(s, env, &count);
        for (size_t i = 0; i < count; i++) {
            const struct snapshot_flag *flag = &flags[i];
            if (snapshot_flag_by_key(s, env, snapshot_string(s, flag->key), flag->key.len) != flag)
                broken(s, flag, "not found by its own key");
            struct eval_result res;
            eval_flag(s, flag, ctx, scratch, &res);
            check_result(s, flag, &res, trusted);
        }
        char etag[EVAL_ETAG_SIZE];
        eval_bulk_etag(s, env, ctx->attributes, ctx->now_us, etag);
        if (etag[0] != '"' || strchr(etag + 1, '"') != etag + strlen(etag) - 1)
            broken(s, NULL, "an ETag that is not one quoted string");
    }
}
