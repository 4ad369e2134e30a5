/*
 * ui_files.h - the dashboard's files, read into memory once.
 *
 * Owns struct ui_files: every regular file below ui_dir (configuration),
 * read when the master starts and on reload, never per request, each with
 * its content type, its strong ETag (a digest of its bytes), when that
 * is smaller its gzip form compressed once here, and the header lines of
 * each form of its answer (ETag, caching, Vary and the security headers),
 * written once here so that an answer adds them as one block
 * (http/head_format.h) instead of one header each. The set is immutable
 * after ui_files_load: the master loads it before forking, so every worker
 * serves the same bytes from the memory it inherited. Only names found by
 * walking ui_dir exist (letters, digits, '.', '-', '_' per segment, no
 * hidden files, no symbolic links), so a request can never name a file
 * outside it. Bounded: UI_FILES_MAX files of at most UI_FILE_MAX_BYTES.
 * Called by the master (daemon/master.c) and the /ui/ route (ui_route.h).
 */
#ifndef ENSIGN_UI_FILES_H
#define ENSIGN_UI_FILES_H

#include <stddef.h>

#define UI_FILES_MAX 512
#define UI_FILE_MAX_BYTES (8u * 1024u * 1024u)
#define UI_NAME_MAX 200
#define UI_DEPTH_MAX 4
#define UI_ETAG_MAX 48

/* The Content-Security-Policy every dashboard answer carries. */
extern const char ui_content_security_policy[];

/* The forms of a file's answer, each with its own header lines. */
enum ui_head_form {
    UI_HEAD_IDENTITY,     /* the identity bytes, and its 304 */
    UI_HEAD_GZIP,         /* the gzip bytes: Content-Encoding too */
    UI_HEAD_GZIP_NOT_MOD, /* the 304 of a client that accepts gzip */
    UI_HEAD_FORMS
};

struct ui_file {
    char *name;               /* relative to ui_dir: "index.html", "screens/flags.js" */
    const char *content_type; /* static text */
    char *body;
    size_t len;
    char *gz; /* the gzip form, or NULL when it is not smaller */
    size_t gz_len;
    char etag[UI_ETAG_MAX];    /* "\"<hex>\"" of the identity form */
    char etag_gz[UI_ETAG_MAX]; /* "\"<hex>-gz\"" of the gzip form */
    char *head[UI_HEAD_FORMS]; /* complete header lines of each form */
    size_t head_len[UI_HEAD_FORMS];
};

struct ui_files {
    struct ui_file *files; /* sorted by name */
    size_t count;
    size_t bytes;    /* identity bytes of every file */
    size_t gz_bytes; /* bytes as served to a client that accepts gzip */
};

/*
 * Reads every file below dir. Returns the set (caller frees with
 * ui_files_free), or NULL with err set: a directory that cannot be read,
 * more than UI_FILES_MAX files, a file larger than UI_FILE_MAX_BYTES, out
 * of memory.
 */
struct ui_files *ui_files_load(const char *dir, char *err, size_t errlen);

/* The file called name (len bytes, not NUL-terminated), or NULL. */
const struct ui_file *ui_files_find(const struct ui_files *ui, const char *name, size_t len);

/* NULL is fine. */
void ui_files_free(struct ui_files *ui);

#endif
