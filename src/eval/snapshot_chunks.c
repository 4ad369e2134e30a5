/*
 * snapshot_chunks.c - chunk boundaries of a large organization's flags
 * (see snapshot_chunks.h).
 *
 * Invariants: b->first holds b->count owned strings in strictly increasing
 * byte order, the first "" (after plan, and kept by replan); a failed call
 * leaves *b as it was (plan: empty).
 */
#include "eval/snapshot_chunks.h"

#include <stdlib.h>
#include <string.h>

void snapshot_chunk_bounds_init(struct snapshot_chunk_bounds *b)
{
    memset(b, 0, sizeof *b);
}

void snapshot_chunk_bounds_free(struct snapshot_chunk_bounds *b)
{
    for (size_t i = 0; i < b->count; i++)
        free(b->first[i]);
    free(b->first);
    memset(b, 0, sizeof *b);
}

bool snapshot_chunks_wanted(size_t flag_count, size_t size)
{
    return size >= SNAPSHOT_CHUNKS_MIN_SIZE && flag_count > 2 * size;
}

static bool reserve(struct snapshot_chunk_bounds *b, size_t need)
{
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap * 2 : 8;
    while (cap < need)
        cap *= 2;
    char **first = realloc(b->first, cap * sizeof *first);
    if (first == NULL)
        return false;
    b->first = first;
    b->cap = cap;
    return true;
}

size_t snapshot_chunks_pieces(size_t count, size_t size)
{
    size_t n = size > 0 ? count / size : 1;
    return n > 0 ? n : 1;
}

int snapshot_chunks_plan(struct snapshot_chunk_bounds *b, const char *const *keys, size_t count,
                         size_t size)
{
    snapshot_chunk_bounds_free(b);
    size_t n = snapshot_chunks_wanted(count, size) ? snapshot_chunks_pieces(count, size) : 1;
    if (!reserve(b, n))
        return -1;
    for (size_t p = 0; p < n; p++) {
        b->first[p] = strdup(p == 0 ? "" : keys[p * size]);
        if (b->first[p] == NULL) {
            b->count = p;
            snapshot_chunk_bounds_free(b);
            return -1;
        }
    }
    b->count = n;
    return 0;
}

/* strcmp of a NUL-terminated string with key (len bytes). */
static int compare_key(const char *bound, const char *key, size_t len)
{
    size_t blen = strlen(bound);
    int c = memcmp(bound, key, blen < len ? blen : len);
    if (c != 0)
        return c;
    return blen == len ? 0 : (blen < len ? -1 : 1);
}

size_t snapshot_chunks_find(const struct snapshot_chunk_bounds *b, const char *key, size_t len)
{
    size_t lo = 0, hi = b->count; /* the answer is in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare_key(b->first[mid], key, len) <= 0)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void snapshot_chunks_touch(const struct snapshot_chunk_bounds *b, const char *const *keys,
                           size_t count, bool *touched)
{
    for (size_t i = 0; i < count; i++)
        touched[snapshot_chunks_find(b, keys[i], strlen(keys[i]))] = true;
}

/* Removes chunk i (its range joins a neighbour); b->count > 1. */
static void drop_chunk(struct snapshot_chunk_bounds *b, size_t i)
{
    if (i == 0) { /* the next chunk now starts at "" */
        free(b->first[1]);
        b->first[1] = b->first[0];
    } else {
        free(b->first[i]);
    }
    memmove(&b->first[i], &b->first[i + 1], (b->count - i - 1) * sizeof *b->first);
    b->count--;
}

/* Puts the starts of pieces 1..n-1 of keys after chunk i. */
static int split_chunk(struct snapshot_chunk_bounds *b, size_t i, const char *const *keys, size_t n,
                       size_t size)
{
    if (!reserve(b, b->count + n - 1))
        return -1;
    char **added = calloc(n - 1, sizeof *added);
    if (added == NULL)
        return -1;
    for (size_t p = 1; p < n; p++) {
        added[p - 1] = strdup(keys[p * size]);
        if (added[p - 1] == NULL) {
            for (size_t q = 0; q < p - 1; q++)
                free(added[q]);
            free(added);
            return -1;
        }
    }
    memmove(&b->first[i + n], &b->first[i + 1], (b->count - i - 1) * sizeof *b->first);
    memcpy(&b->first[i + 1], added, (n - 1) * sizeof *added);
    b->count += n - 1;
    free(added);
    return 0;
}

int snapshot_chunks_replan(struct snapshot_chunk_bounds *b, size_t i, const char *const *keys,
                           size_t count, size_t size, size_t *pieces)
{
    *pieces = 1;
    if (count == 0 && b->count > 1) {
        drop_chunk(b, i);
        *pieces = 0;
        return 0;
    }
    if (size < SNAPSHOT_CHUNKS_MIN_SIZE || count <= 2 * size)
        return 0;
    size_t n = snapshot_chunks_pieces(count, size);
    if (split_chunk(b, i, keys, n, size) != 0)
        return -1;
    *pieces = n;
    return 0;
}
