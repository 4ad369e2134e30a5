/*
 * rowindex.h - a hash index over one text column of a libpq result, for
 * joining and grouping large results in the client instead of sorting
 * them in PostgreSQL.
 *
 * Owns the index arrays, not the result: the result must outlive the
 * index. Rows with the same value are chained in row order. Built once,
 * read-only afterwards. Called by snapshot_source.c.
 */
#ifndef ENSIGN_ROWINDEX_H
#define ENSIGN_ROWINDEX_H

#include <stddef.h>

#include <libpq-fe.h>

struct rowindex_slot {
    int row;      /* the first row of a value, -1 empty */
    unsigned tag; /* the upper half of that value's hash */
};

struct rowindex {
    const PGresult *res;
    int column;
    struct rowindex_slot *slots; /* nslots entries */
    const char **values;         /* per row: its value in column */
    int *next;                   /* per row: the next row with the same value, -1 last */
    size_t nslots;
};

/* Indexes column of res; 0, or -1 when out of memory (ri is then freed). */
int rowindex_build(struct rowindex *ri, const PGresult *res, int column);

/* The first row whose column equals value, or -1; later ones follow next. */
int rowindex_first(const struct rowindex *ri, const char *value);

static inline int rowindex_next(const struct rowindex *ri, int row)
{
    return ri->next[row];
}

void rowindex_free(struct rowindex *ri);

#endif
