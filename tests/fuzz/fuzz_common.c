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

#include "eval.h"
#include "json_guard.h"
#include "snapshot.h"
#include "snapshot_build.h"

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

struct json_object *fuzz_json(const uint8_t *data, size_t size)
{
    static struct json_tokener *tok;
    if (tok == NULL && (tok = json_tokener_new_ex(64)) == NULL)
        abort();
    if (size > INT32_MAX)
        return NULL;
    json_tokener_reset(tok);
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

struct json_object *fuzz_json_guarded(const uint8_t *data, size_t size)
{
    static struct json_tokener *tok;
    if (tok == NULL && (tok = json_tokener_new_ex(64)) == NULL)
        abort();
    size_t members;
    if (size > INT32_MAX || json_guard_scan((const char *)data, size, 0, &members) != JSON_GUARD_OK)
        return NULL;
    json_tokener_reset(tok);
    json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8);
    json_object *obj = json_tokener_parse_ex(tok, (const char *)data, (int)size);
    size_t end = json_tokener_get_parse_end(tok);
    bool complete = json_tokener_get_error(tok) == json_tokener_success;
    while (complete && end < size) {
        char c = (char)data[end++];
        complete = c == ' ' || c == '\t' || c == '\r' || c == '\n';
    }
    if (!complete || !json_guard_members_kept(obj, members)) {
        json_object_put(obj);
        return NULL;
    }
    fuzz_check_guarded(obj);
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

void fuzz_check_guarded(json_object *root)
{
    switch (json_object_get_type(root)) {
    case json_type_string:
        if (!clean_utf8(json_object_get_string(root), (size_t)json_object_get_string_len(root)))
            guarded_broken("a string that is not clean UTF-8");
        break;
    case json_type_double:
        if (!isfinite(json_object_get_double(root)))
            guarded_broken("a number that is not finite");
        break;
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(root); i++)
            fuzz_check_guarded(json_object_array_get_idx(root, i));
        break;
    case json_type_object: {
        json_object_object_foreach(root, key, value)
        {
            if (!clean_utf8(key, strlen(key)))
                guarded_broken("a member name that is not clean UTF-8");
            fuzz_check_guarded(value);
        }
        break;
    }
    default:
        break;
    }
}

/* ---- a snapshot from a spec ---- */

#define SPEC_MAX_ITEMS 64 /* entities, segments, flags, rules, variants */

static json_object *member(json_object *obj, const char *name)
{
    json_object *v = NULL;
    if (json_object_is_type(obj, json_type_object))
        json_object_object_get_ex(obj, name, &v);
    return v;
}

static const char *member_string(json_object *obj, const char *name, const char *fallback)
{
    json_object *v = member(obj, name);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : fallback;
}

/* JSON text for the builder: a string member as it is, anything else
 * serialized; fallback when absent. The text lives until obj is put. */
static const char *member_json(json_object *obj, const char *name, const char *fallback)
{
    json_object *v = member(obj, name);
    if (v == NULL)
        return fallback;
    if (json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

static size_t items(json_object *list)
{
    if (!json_object_is_type(list, json_type_array))
        return 0;
    size_t n = json_object_array_length(list);
    return n < SPEC_MAX_ITEMS ? n : SPEC_MAX_ITEMS;
}

/* A row the builder refuses is skipped (it stays usable), as the refresher
 * would: the rest of the spec is still built. */
static void add_entities(struct snapshot_builder *b, json_object *entities)
{
    for (size_t i = 0; i < items(entities); i++) {
        json_object *e = json_object_array_get_idx(entities, i);
        json_object *attrs = member(e, "attributes");
        for (size_t k = 0; k < items(attrs); k++) {
            json_object *a = json_object_array_get_idx(attrs, k);
            snapshot_builder_add_entity_attribute(b, FUZZ_ORG_ID, member_string(e, "key", ""),
                                                  member_string(a, "key", ""),
                                                  member_string(a, "dataType", "string"));
        }
    }
}

static void add_segments(struct snapshot_builder *b, json_object *segments)
{
    for (size_t i = 0; i < items(segments); i++) {
        json_object *g = json_object_array_get_idx(segments, i);
        snapshot_builder_add_segment(b, FUZZ_ORG_ID, member_string(g, "key", ""),
                                     member_json(g, "conditions", "[]"));
    }
}

static void add_rules(struct snapshot_builder *b, json_object *flag)
{
    const char *key = member_string(flag, "key", "");
    if (member(flag, "conditions") != NULL)
        snapshot_builder_add_rule(b, FUZZ_ENV_ID, key, "r0", member_json(flag, "conditions", "[]"),
                                  "{\"variant\":\"on\"}");
    json_object *rules = member(flag, "rules");
    for (size_t i = 0; i < items(rules); i++) {
        json_object *r = json_object_array_get_idx(rules, i);
        char id[32];
        snprintf(id, sizeof id, "r%zu", i + 1);
        snapshot_builder_add_rule(b, FUZZ_ENV_ID, key, member_string(r, "id", id),
                                  member_json(r, "conditions", "[]"),
                                  member_json(r, "serve", "{}"));
    }
}

static void add_flag(struct snapshot_builder *b, json_object *flag)
{
    static const struct snapshot_variant_input on_off[] = {{"on", "true"}, {"off", "false"}};
    struct snapshot_variant_input variants[SPEC_MAX_ITEMS];
    bool shorthand = member(flag, "type") == NULL;
    json_object *list = member(flag, "variants");
    size_t n = shorthand ? 2 : items(list);
    for (size_t i = 0; i < n; i++) {
        json_object *v = shorthand ? NULL : json_object_array_get_idx(list, i);
        variants[i] = shorthand ? on_off[i]
                                : (struct snapshot_variant_input){member_string(v, "key", ""),
                                                                  member_json(v, "value", "null")};
    }
    json_object *enabled = member(flag, "enabled");
    struct snapshot_flag_input in = {
        .env_id = FUZZ_ENV_ID,
        .flag_id = member_string(flag, "id", member_string(flag, "key", "")),
        .flag_key = member_string(flag, "key", ""),
        .type = member_string(flag, "type", "boolean"),
        .enabled = enabled == NULL || json_object_get_boolean(enabled),
        .off_variant_key = member_string(flag, "offVariantKey", shorthand ? "off" : NULL),
        .default_serve_json = member_json(flag, "defaultServe", "{\"variant\":\"off\"}"),
        .variants = variants,
        .variant_count = n,
    };
    if (snapshot_builder_add_flag(b, &in) == 0)
        add_rules(b, flag);
}

int fuzz_build_snapshot(json_object *spec, uint64_t generation, const char *path)
{
    struct snapshot_builder *b = snapshot_builder_new(generation);
    if (b == NULL)
        abort();
    char err[256];
    int rc = -1;
    if (snapshot_builder_add_environment(b, FUZZ_ENV_ID, FUZZ_ORG_ID, FUZZ_ENV_KEY) == 0 &&
        snapshot_builder_add_sdk_key(b, FUZZ_SDK_DIGEST, FUZZ_ENV_ID) == 0) {
        add_entities(b, member(spec, "entities"));
        add_segments(b, member(spec, "segments"));
        json_object *flags = member(spec, "flags");
        for (size_t i = 0; i < items(flags); i++)
            add_flag(b, json_object_array_get_idx(flags, i));
        rc = snapshot_builder_write(b, path, err, sizeof err);
    }
    snapshot_builder_free(b);
    return rc;
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
    if (strlen(res->variant_key) != res->variant_key_len)
        broken(s, flag, "a variant key length that does not match");
    if (!trusted)
        return;
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
