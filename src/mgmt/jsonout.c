/*
 * jsonout.c - a JSON body written from PostgreSQL rows (see jsonout.h).
 *
 * Owns the growing buffer and the escapes. Invariants: data is always
 * NUL-terminated after a successful write; once failed, nothing more is
 * written and jsonout_finish frees the buffer.
 *
 * Called by flaglist.c and flagdetail.c.
 */
#include "mgmt/jsonout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt/pgtime.h"

bool jsonout_init(struct jsonout *pb, size_t cap)
{
    *pb = (struct jsonout){.cap = cap > 0 ? cap : 64};
    pb->data = malloc(pb->cap);
    if (pb->data == NULL)
        return false;
    pb->data[0] = '\0';
    return true;
}

char *jsonout_finish(struct jsonout *pb)
{
    if (pb->failed) {
        free(pb->data);
        pb->data = NULL;
        return NULL;
    }
    return pb->data;
}

bool jsonout_reserve(struct jsonout *pb, size_t n)
{
    if (pb->failed)
        return false;
    if (pb->len + n + 1 <= pb->cap)
        return true;
    size_t cap = pb->cap * 2 > pb->len + n + 1 ? pb->cap * 2 : pb->len + n + 1;
    char *data = realloc(pb->data, cap);
    if (data == NULL) {
        pb->failed = true;
        return false;
    }
    pb->data = data;
    pb->cap = cap;
    return true;
}

/* The escape of byte ch in a JSON string, or NULL when it stands as it is. */
static const char *escape_of(unsigned char ch, char hex[8])
{
    switch (ch) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '\b':
        return "\\b";
    case '\f':
        return "\\f";
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    case '\t':
        return "\\t";
    default:
        if (ch >= 0x20)
            return NULL;
        snprintf(hex, 8, "\\u%04x", ch);
        return hex;
    }
}

/* s (len bytes) as a JSON string, escaped as PostgreSQL's escape_json does. */
void jsonout_string(struct jsonout *pb, const char *s, size_t len)
{
    jsonout_append(pb, "\"", 1);
    const char *run = s, *end = s + len;
    for (const char *c = s; c < end; c++) {
        unsigned char ch = (unsigned char)*c;
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue; /* the common case, without the switch */
        char hex[8];
        const char *esc = escape_of(ch, hex);
        if (esc == NULL)
            continue;
        jsonout_append(pb, run, (size_t)(c - run));
        jsonout_put(pb, esc);
        run = c + 1;
    }
    jsonout_append(pb, run, (size_t)(end - run));
    jsonout_append(pb, "\"", 1);
}

/* A count (never negative) in decimal. */
void jsonout_count(struct jsonout *pb, long long value)
{
    char digits[24];
    int n = 0;
    unsigned long long u = value < 0 ? 0 : (unsigned long long)value;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    jsonout_append(pb, digits + sizeof digits - n, (size_t)n);
}

/* Starts member name (after the first, with a separator). */
void jsonout_key(struct jsonout *pb, const char *name, bool first)
{
    if (!first)
        jsonout_put(pb, ", ");
    jsonout_string(pb, name, strlen(name));
    jsonout_put(pb, ": ");
}

/* Column col of row as a JSON string, or null. */
void jsonout_text(struct jsonout *pb, const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        jsonout_put(pb, "null");
    else
        jsonout_string(pb, PQgetvalue(res, row, col), (size_t)PQgetlength(res, row, col));
}

/* Column col of row (a timestamptz) in the API's form, or null. */
void jsonout_time(struct jsonout *pb, const PGresult *res, int row, int col)
{
    char iso[PGTIME_ISO_SIZE];
    size_t n = PQgetisnull(res, row, col)
                   ? 0
                   : pgtime_iso(PQgetvalue(res, row, col), (size_t)PQgetlength(res, row, col), iso);
    if (n == 0) {
        jsonout_put(pb, "null");
        return;
    }
    jsonout_append(pb, "\"", 1);
    jsonout_append(pb, iso, n);
    jsonout_append(pb, "\"", 1);
}

/* Column col of row copied as it is (JSON or a number), or null. Its
 * length from libpq: a detail's revisions are 20 KB. */
void jsonout_raw(struct jsonout *pb, const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        jsonout_put(pb, "null");
    else
        jsonout_append(pb, PQgetvalue(res, row, col), (size_t)PQgetlength(res, row, col));
}
