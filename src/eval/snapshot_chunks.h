/*
 * snapshot_chunks.h - how a large organization's flags are cut into chunks
 * by key, and which chunks a change touched (doc/choices.md, "Chunks of a
 * large organization").
 *
 * Owns the chunk boundaries of one organization: the first key of each
 * chunk, in byte order (strcmp, the order of flags in a snapshot). Chunk i
 * covers the keys k with first[i] <= k < first[i + 1] (the last one has no
 * upper bound), and first[0] is always "" so that every key has a chunk: a
 * flag inserted between boundaries falls into the chunk covering its key,
 * one inserted below every flag into the first.
 *
 * Rules (the refresher applies them, this file computes them):
 * - an organization of more than 2 * size flags is chunked; a whole
 *   rebuild plans chunks of `size` flags (the last may be larger, up to
 *   2 * size - 1, instead of a small remainder);
 * - after a change, each touched chunk is replanned from its flags alone:
 *   more than 2 * size flags split it in pieces of about `size`; none drop
 *   it (its range joins the chunk before it, whose file does not change;
 *   the first chunk's range joins the next one's, which then starts at "");
 *   otherwise its first key stays, so untouched chunks keep their files.
 *
 * Pure computation on strings: no I/O, no SQL. Called by the refresher and
 * the unit tests; the worker's lookup of a key's chunk uses
 * snapshot_chunks_find's rule (the last boundary <= key).
 */
#ifndef ENSIGN_SNAPSHOT_CHUNKS_H
#define ENSIGN_SNAPSHOT_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>

/* The chunk size bounds a configuration may set (snapshot_chunk_flags). */
#define SNAPSHOT_CHUNKS_MIN_SIZE 2
#define SNAPSHOT_CHUNKS_MAX_SIZE 1000000

struct snapshot_chunk_bounds {
    char **first; /* owned strings; first[0] is "" */
    size_t count;
    size_t cap;
};

void snapshot_chunk_bounds_init(struct snapshot_chunk_bounds *b);
void snapshot_chunk_bounds_free(struct snapshot_chunk_bounds *b);

/* How many chunks count flags (count > 0) make at this size (>= 1): a
 * remainder smaller than size joins the last; piece p starts at key
 * p * size. */
size_t snapshot_chunks_pieces(size_t count, size_t size);

/* Whether an organization of flag_count flags is chunked at this size. */
bool snapshot_chunks_wanted(size_t flag_count, size_t size);

/*
 * Plans the chunks of an organization whose flag keys are keys (count of
 * them, sorted in byte order, distinct) in *b (emptied first): one chunk
 * when it is not chunked, else every size-th key starts a chunk (a last
 * remainder smaller than size joins the chunk before it). 0, or -1 out of
 * memory (*b empty).
 */
int snapshot_chunks_plan(struct snapshot_chunk_bounds *b, const char *const *keys, size_t count,
                         size_t size);

/* The chunk covering key (len bytes, need not be NUL-terminated): the last
 * whose first key is <= key in byte order. Binary search; b->count > 0. */
size_t snapshot_chunks_find(const struct snapshot_chunk_bounds *b, const char *key, size_t len);

/* Sets touched[i] for the chunk of each of the count keys (touched holds
 * b->count entries, not cleared first). */
void snapshot_chunks_touch(const struct snapshot_chunk_bounds *b, const char *const *keys,
                           size_t count, bool *touched);

/*
 * Replaces chunk i of *b by what its flags now make (keys: the flag keys
 * in its range, sorted, distinct; count of them): itself when 1 <= count
 * <= 2 * size; pieces of about size when more (its first key stays the
 * first piece's); nothing when count is 0 and b has another chunk (the
 * range joins a neighbour, see above). *pieces: how many chunks now stand
 * at i (0, 1 or more), so a caller walking the touched chunks from the
 * last to the first keeps the indexes of those before i. 0, or -1 out of
 * memory (*b unchanged).
 */
int snapshot_chunks_replan(struct snapshot_chunk_bounds *b, size_t i, const char *const *keys,
                           size_t count, size_t size, size_t *pieces);

#endif
