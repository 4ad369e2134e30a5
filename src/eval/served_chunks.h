/*
 * served_chunks.h - a worker's mappings of the chunk files of one chunked
 * organization's header part (snapshot.h "Chunks"; doc/choices.md "Chunks
 * of a large organization").
 *
 * Owns the mapped chunks of one header, in the header's order. A set is
 * opened whole or not at all: a chunk that is bad, of another generation
 * than the header names, or gone fails the set (the caller then keeps the
 * organization's previous header and chunks, never a mix). Chunks whose
 * file and generation the previous set already maps are moved from it,
 * not opened again. Used by served_snapshot.c only.
 */
#ifndef ENSIGN_SERVED_CHUNKS_H
#define ENSIGN_SERVED_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>

#include "eval/snapshot.h"

#define SERVED_CHUNK_FILE_MAX 128 /* a chunk file name and its NUL */

struct served_chunk {
    struct snapshot snap;
    char file[SERVED_CHUNK_FILE_MAX]; /* its file name, to find it again */
};

struct served_chunks {
    struct served_chunk *maps; /* one per chunk of the header; NULL when count is 0 */
    size_t count;
};

/*
 * Maps the chunks header names (files in dir) into *out, taking from *old
 * (the organization's current set, may be empty) the mappings of the same
 * file and generation, zeroed there. 0 when all mapped; -1 otherwise (the
 * first failure logged, *gone set when a file is not there; *old as it
 * was, *out empty).
 */
int served_chunks_open(const char *dir, const struct snapshot *header, struct served_chunks *old,
                       struct served_chunks *out, bool *gone);

/* Unmaps every chunk; leaves *c empty. */
void served_chunks_close(struct served_chunks *c);

#endif
