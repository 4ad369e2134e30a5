/*
 * served_chunks.h - a worker's chunks of one chunked organization's header
 * part (snapshot.h "Chunks"; doc/choices.md "Chunks of a large
 * organization", "Chunks stored in packs").
 *
 * Owns the opened chunks of one header, in the header's order: each an
 * extent of a pack file opened through the worker's pack maps
 * (pack_maps.h), holding one count on its pack's slot, so a chunked
 * organization costs no mapping beyond its packs'. A set is opened whole
 * or not at all: a chunk that is bad, of another generation than the
 * header names, past its pack's end, or whose pack is gone fails the set
 * (the caller then keeps the organization's previous header and chunks,
 * never a mix). Chunks at the same extent and generation as one the
 * previous set holds are moved from it, not opened again. Used by
 * served_snapshot.c only.
 */
#ifndef ENSIGN_SERVED_CHUNKS_H
#define ENSIGN_SERVED_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/snapshot.h"

struct pack_maps;

struct served_chunk {
    struct snapshot snap;
    int slot;      /* its pack's in the pack maps */
    uint32_t pack; /* its extent, to find it again */
    uint64_t offset;
};

struct served_chunks {
    struct served_chunk *maps; /* one per chunk of the header; NULL when count is 0 */
    size_t count;
};

/*
 * Opens the chunks header names (extents of packs in maps) into *out,
 * taking from *old (the organization's current set, may be empty) those
 * of the same extent and generation, zeroed there. 0 when all opened; -1
 * otherwise (the first failure logged, *gone set when a pack file is not
 * there; *old as it was, *out empty).
 */
int served_chunks_open(struct pack_maps *maps, const struct snapshot *header,
                       struct served_chunks *old, struct served_chunks *out, bool *gone);

/* Closes every chunk, releasing its pack; leaves *c empty. */
void served_chunks_close(struct pack_maps *maps, struct served_chunks *c);

#endif
