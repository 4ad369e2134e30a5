/*
 * ui_files.c - reading the dashboard's files, once (see ui_files.h).
 *
 * Walks ui_dir depth first with openat/fstatat (symbolic links are not
 * followed, hidden names and names with other characters are skipped),
 * reads each regular file whole, takes its SHA-256 for the ETag and
 * compresses it with zlib (gzip wrapper, best compression: it happens once
 * per load, not per request), and writes the header lines of each form of
 * its answer (the order and text ui_route.c sent header by header before). The array is sorted by
 * name for a binary search. Every allocation belongs to the set; a failed load frees what it made.
 * Called by the master at start and on reload.
 */
#include "http/ui_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/token.h"

const char ui_content_security_policy[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/* Content types by file name extension; anything else is bytes. */
static const struct {
    const char *ext;
    const char *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
};

static const char *content_type_of(const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < sizeof content_types / sizeof content_types[0]; i++) {
        size_t n = strlen(content_types[i].ext);
        if (len > n && strcmp(name + len - n, content_types[i].ext) == 0)
            return content_types[i].type;
    }
    return "application/octet-stream";
}

/* A segment the set may hold: not hidden, only [A-Za-z0-9._-]. */
static bool name_allowed(const char *name)
{
    if (name[0] == '\0' || name[0] == '.')
        return false;
    for (const char *p = name; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_';
        if (!ok)
            return false;
    }
    return true;
}

struct loader {
    struct ui_files *ui;
    size_t room;
    char *err;
    size_t errlen;
};

static int fail(struct loader *ld, const char *what, const char *name, const char *why)
{
    snprintf(ld->err, ld->errlen, "%s %s: %s", what, name, why);
    return -1;
}

/* The gzip form of body, or NULL when it is not smaller (or zlib fails). */
static char *gzip_of(const char *body, size_t len, size_t *out_len)
{
    z_stream z = {0};
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    uLong room = deflateBound(&z, (uLong)len);
    char *out = malloc(room);
    if (out == NULL) {
        deflateEnd(&z);
        return NULL;
    }
    z.next_in = (Bytef *)body;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)room;
    int rc = deflate(&z, Z_FINISH);
    *out_len = z.total_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END || *out_len >= len) {
        free(out);
        return NULL;
    }
    return out;
}

/* The whole file fd (size bytes) into a new buffer, or NULL. */
static char *read_all(int fd, size_t size)
{
    char *body = malloc(size > 0 ? size : 1);
    size_t got = 0;
    while (body != NULL && got < size) {
        ssize_t n = read(fd, body + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            free(body);
            return NULL;
        }
        got += (size_t)n;
    }
    return body;
}

/* The header lines of an answer with etag, and Content-Encoding: gzip
 * when gzip; NULL when out of memory. */
static char *head_lines(const char *etag, bool gzip, size_t *len)
{
    static const char format[] = "ETag: %s\r\n"
                                 "Cache-Control: no-cache\r\n"
                                 "Vary: Accept-Encoding\r\n"
                                 "Content-Security-Policy: %s\r\n"
                                 "X-Content-Type-Options: nosniff\r\n"
                                 "Referrer-Policy: no-referrer\r\n"
                                 "%s";
    const char *encoding = gzip ? "Content-Encoding: gzip\r\n" : "";
    int n = snprintf(NULL, 0, format, etag, ui_content_security_policy, encoding);
    char *lines = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (lines == NULL)
        return NULL;
    snprintf(lines, (size_t)n + 1, format, etag, ui_content_security_policy, encoding);
    *len = (size_t)n;
    return lines;
}

/* Writes f's header lines of every form; false when out of memory. */
static bool write_heads(struct ui_file *f)
{
    f->head[UI_HEAD_IDENTITY] = head_lines(f->etag, false, &f->head_len[UI_HEAD_IDENTITY]);
    f->head[UI_HEAD_GZIP] = head_lines(f->etag_gz, true, &f->head_len[UI_HEAD_GZIP]);
    f->head[UI_HEAD_GZIP_NOT_MOD] =
        head_lines(f->etag_gz, false, &f->head_len[UI_HEAD_GZIP_NOT_MOD]);
    for (int form = 0; form < UI_HEAD_FORMS; form++)
        if (f->head[form] == NULL)
            return false;
    return true;
}

static int add_file(struct loader *ld, int dirfd, const char *entry, const char *name, size_t size)
{
    if (ld->ui->count >= UI_FILES_MAX)
        return fail(ld, "ui_dir", name, "more than 512 files");
    if (size > UI_FILE_MAX_BYTES)
        return fail(ld, "ui_dir file", name, "larger than 8 MB");
    if (ld->ui->count == ld->room) {
        size_t room = ld->room ? ld->room * 2 : 32;
        struct ui_file *grown = realloc(ld->ui->files, room * sizeof *grown);
        if (grown == NULL)
            return fail(ld, "ui_dir", name, "out of memory");
        ld->ui->files = grown;
        ld->room = room;
    }
    int fd = openat(dirfd, entry, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(ld, "cannot open", name, strerror(errno));
    char *body = read_all(fd, size);
    close(fd);
    if (body == NULL)
        return fail(ld, "cannot read", name, "short read");
    struct ui_file *f = &ld->ui->files[ld->ui->count];
    *f = (struct ui_file){.name = strdup(name), .content_type = content_type_of(name)};
    f->body = body;
    f->len = size;
    if (f->name == NULL) {
        free(body);
        return fail(ld, "ui_dir", name, "out of memory");
    }
    ld->ui->count++;
    char hex[TOKEN_DIGEST_HEX_LEN + 1];
    token_digest_hex(body, size, hex);
    snprintf(f->etag, sizeof f->etag, "\"%.32s\"", hex);
    snprintf(f->etag_gz, sizeof f->etag_gz, "\"%.32s-gz\"", hex);
    f->gz = gzip_of(body, size, &f->gz_len);
    if (!write_heads(f))
        return fail(ld, "ui_dir", name, "out of memory");
    ld->ui->bytes += size;
    ld->ui->gz_bytes += f->gz != NULL ? f->gz_len : size;
    return 0;
}

static int walk(struct loader *ld, int dirfd, const char *prefix, int depth);

static int visit(struct loader *ld, int dirfd, const char *entry, const char *prefix, int depth)
{
    char name[UI_NAME_MAX + 1];
    int n = snprintf(name, sizeof name, "%s%s", prefix, entry);
    if (n < 0 || (size_t)n >= sizeof name)
        return 0; /* a name too long for a request is skipped */
    struct stat st;
    if (fstatat(dirfd, entry, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return fail(ld, "cannot stat", name, strerror(errno));
    if (S_ISREG(st.st_mode))
        return add_file(ld, dirfd, entry, name, (size_t)st.st_size);
    if (!S_ISDIR(st.st_mode) || depth >= UI_DEPTH_MAX)
        return 0;
    int sub = openat(dirfd, entry, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0)
        return fail(ld, "cannot open", name, strerror(errno));
    char sub_prefix[UI_NAME_MAX + 2];
    snprintf(sub_prefix, sizeof sub_prefix, "%s/", name);
    return walk(ld, sub, sub_prefix, depth + 1); /* walk closes sub */
}

/* Adds every file below dirfd (closed here), names prefixed with prefix. */
static int walk(struct loader *ld, int dirfd, const char *prefix, int depth)
{
    DIR *d = fdopendir(dirfd);
    if (d == NULL) {
        close(dirfd);
        return fail(ld, "cannot read", prefix[0] ? prefix : "ui_dir", strerror(errno));
    }
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;)
        if (name_allowed(e->d_name))
            rc = visit(ld, dirfd, e->d_name, prefix, depth);
    closedir(d);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct ui_file *)a)->name, ((const struct ui_file *)b)->name);
}

struct ui_files *ui_files_load(const char *dir, char *err, size_t errlen)
{
    struct ui_files *ui = calloc(1, sizeof *ui);
    if (ui == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    struct loader ld = {ui, 0, err, errlen};
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "ui_dir %s: %s", dir, strerror(errno));
        ui_files_free(ui);
        return NULL;
    }
    if (walk(&ld, fd, "", 0) != 0) {
        ui_files_free(ui);
        return NULL;
    }
    if (ui->count > 1)
        qsort(ui->files, ui->count, sizeof *ui->files, by_name);
    return ui;
}

const struct ui_file *ui_files_find(const struct ui_files *ui, const char *name, size_t len)
{
    if (ui == NULL || len == 0 || len > UI_NAME_MAX)
        return NULL;
    size_t lo = 0, hi = ui->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *candidate = ui->files[mid].name;
        int c = strncmp(candidate, name, len);
        if (c == 0 && candidate[len] != '\0')
            c = 1; /* candidate is longer: it sorts after name */
        if (c == 0)
            return &ui->files[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void ui_files_free(struct ui_files *ui)
{
    if (ui == NULL)
        return;
    for (size_t i = 0; i < ui->count; i++) {
        free(ui->files[i].name);
        free(ui->files[i].body);
        free(ui->files[i].gz);
        for (int form = 0; form < UI_HEAD_FORMS; form++)
            free(ui->files[i].head[form]);
    }
    free(ui->files);
    free(ui);
}
