/*
 * jsonout.h - writing a JSON body from PostgreSQL rows in one buffer, in
 * the text form PostgreSQL's own JSON output has (so a body written here
 * equals, byte for byte, the one a statement built with jsonb and json_agg
 * would have answered).
 *
 * Owns the buffer (grown by doubling; after an allocation failure every
 * further write is dropped and jsonout_finish answers NULL), the string
 * escape of PostgreSQL's escape_json, and the column writers: text as a
 * JSON string, JSON or numbers as they are, timestamptz in the API's form
 * (pgtime.h), each null when the column is.
 *
 * Called by flaglist.c and flagdetail.c.
 */
#ifndef ENSIGN_JSONOUT_H
#define ENSIGN_JSONOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <libpq-fe.h>

struct jsonout {
    char *data;
    size_t len, cap;
    bool failed;
};

/* Starts an empty body with room for about cap bytes; false when out of memory. */
bool jsonout_init(struct jsonout *pb, size_t cap);

/* The body (caller frees), or NULL after an allocation failure (freed). */
char *jsonout_finish(struct jsonout *pb);

/* Makes room for n more bytes and the NUL; false after an allocation failure. */
bool jsonout_reserve(struct jsonout *pb, size_t n);

/* Inline: a 1,000-flag list makes about 100,000 of these calls. */
static inline void jsonout_append(struct jsonout *pb, const char *s, size_t n)
{
    if (pb->len + n >= pb->cap && !jsonout_reserve(pb, n))
        return;
    memcpy(pb->data + pb->len, s, n);
    pb->len += n;
    pb->data[pb->len] = '\0';
}

static inline void jsonout_put(struct jsonout *pb, const char *s)
{
    jsonout_append(pb, s, strlen(s));
}

/* s (len bytes) as a JSON string, escaped as PostgreSQL's escape_json does. */
void jsonout_string(struct jsonout *pb, const char *s, size_t len);

/* A count (never negative; a negative value is written as 0) in decimal. */
void jsonout_count(struct jsonout *pb, long long value);

/* Starts member name ("name": , after the first with ", " before it), as jsonb writes it. */
void jsonout_key(struct jsonout *pb, const char *name, bool first);

/* Column col of row: as a JSON string; as it is (JSON or a number); as a
 * timestamp in the API's form ("2025-01-31T12:00:00.123Z"); or null. */
void jsonout_text(struct jsonout *pb, const PGresult *res, int row, int col);
void jsonout_raw(struct jsonout *pb, const PGresult *res, int row, int col);
void jsonout_time(struct jsonout *pb, const PGresult *res, int row, int col);

#endif
