/*
 * rowindex.c - hash index over a result column (see rowindex.h): open
 * addressing with linear probing, at most half full, over a hash of the
 * text taken eight bytes at a time. Each slot keeps its first row and the
 * upper half of its value's hash side by side (one cache line read per
 * probe), and each row's value pointer is kept in row order, so a probe
 * reads the result's text (scattered in memory) only when that half
 * matches, and without going through the result's tuple arrays.
 */
#include "db/rowindex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HASH_K1 UINT64_C(0x9e3779b97f4a7c15)
#define HASH_K2 UINT64_C(0xbf58476d1ce4e5b9)

static uint64_t hash_text(const char *text)
{
    size_t len = strlen(text);
    uint64_t h = len * HASH_K2, w;
    for (; len >= 8; text += 8, len -= 8) {
        memcpy(&w, text, 8);
        h ^= w * HASH_K1;
        h = (h << 29 | h >> 35) * HASH_K2;
    }
    w = 0;
    memcpy(&w, text, len);
    h = (h ^ (w * HASH_K1)) * HASH_K2;
    h ^= h >> 32; /* avalanche: the low bits pick the slot */
    h *= HASH_K1;
    h ^= h >> 29;
    h *= HASH_K2;
    return h ^ (h >> 32);
}

/* The slot of value: the one holding its first row, or an empty one. */
static size_t slot_of(const struct rowindex *ri, const char *value, unsigned *tag)
{
    uint64_t h = hash_text(value);
    *tag = (unsigned)(h >> 32);
    size_t i = (size_t)h & (ri->nslots - 1);
    for (;; i = (i + 1) & (ri->nslots - 1)) {
        const struct rowindex_slot *slot = &ri->slots[i];
        if (slot->row < 0 || (slot->tag == *tag && strcmp(ri->values[slot->row], value) == 0))
            return i;
    }
}

int rowindex_build(struct rowindex *ri, const PGresult *res, int column)
{
    int rows = PQntuples(res);
    *ri = (struct rowindex){.res = res, .column = column, .nslots = 16};
    while (ri->nslots < (size_t)rows * 2)
        ri->nslots *= 2;
    ri->slots = malloc(ri->nslots * sizeof *ri->slots);
    ri->values = malloc(((size_t)rows + 1) * sizeof *ri->values);
    ri->next = malloc(((size_t)rows + 1) * sizeof *ri->next);
    if (ri->slots == NULL || ri->values == NULL || ri->next == NULL) {
        rowindex_free(ri);
        return -1;
    }
    for (size_t i = 0; i < ri->nslots; i++)
        ri->slots[i].row = -1;
    for (int row = 0; row < rows; row++)
        ri->values[row] = PQgetvalue(res, row, column);
    for (int row = rows - 1; row >= 0; row--) {
        unsigned tag;
        struct rowindex_slot *slot = &ri->slots[slot_of(ri, ri->values[row], &tag)];
        ri->next[row] = slot->row;
        slot->row = row;
        slot->tag = tag;
    }
    return 0;
}

int rowindex_first(const struct rowindex *ri, const char *value)
{
    unsigned tag;
    return ri->slots[slot_of(ri, value, &tag)].row;
}

void rowindex_free(struct rowindex *ri)
{
    free(ri->slots);
    free(ri->values);
    free(ri->next);
    *ri = (struct rowindex){.res = NULL};
}
