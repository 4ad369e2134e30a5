/*
 * rowindex.c - hash index over a result column (see rowindex.h): open
 * addressing with linear probing, at most half full, FNV-1a of the text.
 * Each slot keeps the upper half of its value's hash, so a probe touches
 * the result's rows (scattered in memory) only when that half matches.
 */
#include "db/rowindex.h"

#include <stdlib.h>
#include <string.h>

static unsigned long long hash_text(const char *text)
{
    unsigned long long h = 1469598103934665603ULL;
    for (; *text; text++)
        h = (h ^ (unsigned char)*text) * 1099511628211ULL;
    return h;
}

/* The slot of value: the one holding its first row, or an empty one. */
static size_t slot_of(const struct rowindex *ri, const char *value, unsigned *tag)
{
    unsigned long long h = hash_text(value);
    *tag = (unsigned)(h >> 32);
    size_t i = (size_t)h & (ri->nslots - 1);
    while (ri->heads[i] >= 0 && (ri->tags[i] != *tag ||
                                 strcmp(PQgetvalue(ri->res, ri->heads[i], ri->column), value) != 0))
        i = (i + 1) & (ri->nslots - 1);
    return i;
}

int rowindex_build(struct rowindex *ri, const PGresult *res, int column)
{
    int rows = PQntuples(res);
    *ri = (struct rowindex){.res = res, .column = column, .nslots = 16};
    while (ri->nslots < (size_t)rows * 2)
        ri->nslots *= 2;
    ri->heads = malloc(ri->nslots * sizeof *ri->heads);
    ri->tags = malloc(ri->nslots * sizeof *ri->tags);
    ri->next = malloc(((size_t)rows + 1) * sizeof *ri->next);
    if (ri->heads == NULL || ri->tags == NULL || ri->next == NULL) {
        rowindex_free(ri);
        return -1;
    }
    memset(ri->heads, -1, ri->nslots * sizeof *ri->heads);
    for (int row = rows - 1; row >= 0; row--) {
        unsigned tag;
        size_t slot = slot_of(ri, PQgetvalue(res, row, column), &tag);
        ri->next[row] = ri->heads[slot];
        ri->heads[slot] = row;
        ri->tags[slot] = tag;
    }
    return 0;
}

int rowindex_first(const struct rowindex *ri, const char *value)
{
    unsigned tag;
    return ri->heads[slot_of(ri, value, &tag)];
}

void rowindex_free(struct rowindex *ri)
{
    free(ri->heads);
    free(ri->tags);
    free(ri->next);
    *ri = (struct rowindex){.res = NULL};
}
