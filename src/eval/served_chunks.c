/*
 * served_chunks.c - the chunks of one chunked organization, opened from
 * their packs (see served_chunks.h).
 *
 * Invariants: every chunk of a set is a validated snapshot of the
 * generation its header names, opened through pack_maps_open (so inside
 * its pack file as it is now) and holding one count on its slot; opening
 * is two steps, so a failure leaves the old set untouched: first each
 * chunk is found in the old set or opened, then, only when every one
 * succeeded, the found ones are moved.
 */
#include "eval/served_chunks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "eval/pack_maps.h"
#include "eval/snapshot_packs.h"

/* The index in old of the chunk at chunk's extent and generation, or -1. */
static long find_old(const struct served_chunks *old, const struct snapshot_chunk *chunk)
{
    for (size_t i = 0; i < old->count; i++) {
        const struct served_chunk *m = &old->maps[i];
        if (m->snap.base != NULL && m->pack == chunk->pack && m->offset == chunk->offset &&
            snapshot_generation(&m->snap) == chunk->generation)
            return (long)i;
    }
    return -1;
}

/* Opens chunk i of header into *into; -1 (logged; *gone when its pack is
 * not there). */
static int open_chunk(struct pack_maps *maps, const struct snapshot *header, uint32_t i,
                      struct served_chunk *into, bool *gone)
{
    const struct snapshot_chunk *chunk = &header->chunks[i];
    char pack[SNAPSHOT_PART_NAME_MAX], err[256];
    struct snapshot *out = &into->snap;
    snapshot_packs_name(chunk->pack, pack);
    switch (pack_maps_open(maps, pack, chunk->offset, chunk->length, out, &into->slot, err,
                           sizeof err)) {
    case PACK_EXTENT_GONE:
        *gone = true;
        return -1;
    case PACK_EXTENT_BAD:
        log_warn("snapshot chunk %" PRIu32 " in %s at %" PRIu64 ": %s", i, pack, chunk->offset,
                 err);
        return -1;
    case PACK_EXTENT_OK:
        break;
    }
    if (snapshot_generation(out) != chunk->generation || out->counts[SNAPSHOT_SEC_CHUNKS] != 0) {
        log_warn("snapshot chunk %" PRIu32 " in %s at %" PRIu64 ": generation %" PRIu64
                 ", its header names %" PRIu64,
                 i, pack, chunk->offset, snapshot_generation(out), chunk->generation);
        snapshot_close(out);
        pack_maps_release(maps, into->slot);
        return -1;
    }
    into->pack = chunk->pack;
    into->offset = chunk->offset;
    return 0;
}

static void close_chunk(struct pack_maps *maps, struct served_chunk *c)
{
    if (c->snap.base == NULL)
        return;
    snapshot_close(&c->snap);
    pack_maps_release(maps, c->slot);
    memset(c, 0, sizeof *c);
}

int served_chunks_open(struct pack_maps *maps, const struct snapshot *header,
                       struct served_chunks *old, struct served_chunks *out, bool *gone)
{
    uint32_t n = header->counts[SNAPSHOT_SEC_CHUNKS];
    out->maps = calloc(n ? n : 1, sizeof *out->maps);
    out->count = 0;
    long *from = calloc(n ? n : 1, sizeof *from);
    int rc = out->maps != NULL && from != NULL ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        from[i] = find_old(old, &header->chunks[i]);
        if (from[i] < 0)
            rc = open_chunk(maps, header, i, &out->maps[i], gone);
    }
    if (rc != 0) { /* nothing moved yet: close what was opened */
        for (uint32_t i = 0; out->maps != NULL && i < n; i++)
            close_chunk(maps, &out->maps[i]);
        free(out->maps);
        out->maps = NULL;
    } else {
        for (uint32_t i = 0; i < n; i++)
            if (from[i] >= 0) {
                out->maps[i] = old->maps[from[i]];
                memset(&old->maps[from[i]], 0, sizeof old->maps[from[i]]);
            }
        out->count = n;
    }
    free(from);
    return rc;
}

void served_chunks_close(struct pack_maps *maps, struct served_chunks *c)
{
    for (size_t i = 0; i < c->count; i++)
        close_chunk(maps, &c->maps[i]);
    free(c->maps);
    c->maps = NULL;
    c->count = 0;
}
