/*
 * served_chunks.c - the chunk mappings of one chunked organization (see
 * served_chunks.h).
 *
 * Invariants: every map of a set is a validated snapshot of the generation
 * its header names; opening is two steps, so a failure leaves the old set
 * untouched: first each chunk is found in the old set or opened, then,
 * only when every one succeeded, the found ones are moved.
 */
#include "eval/served_chunks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

/* The index in old of a mapping of file at generation, or -1. */
static long find_old(const struct served_chunks *old, const struct snapshot *header,
                     const struct snapshot_chunk *chunk)
{
    for (size_t i = 0; i < old->count; i++) {
        const struct served_chunk *m = &old->maps[i];
        if (m->snap.base != NULL && snapshot_generation(&m->snap) == chunk->generation &&
            strcmp(m->file, snapshot_string(header, chunk->file)) == 0)
            return (long)i;
    }
    return -1;
}

/* Opens chunk i of header into *out; -1 (logged; *gone when missing). */
static int open_chunk(const char *dir, const struct snapshot *header, uint32_t i,
                      struct served_chunk *into, bool *gone)
{
    const struct snapshot_chunk *chunk = &header->chunks[i];
    const char *file = snapshot_string(header, chunk->file);
    char path[4096 + 256], err[256];
    struct snapshot *out = &into->snap;
    if (chunk->file.len >= sizeof into->file) {
        log_warn("snapshot chunk %s: name too long", file);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (snapshot_open(path, out, err, sizeof err) != 0) {
        if (access(path, F_OK) != 0 && errno == ENOENT)
            *gone = true;
        else
            log_warn("snapshot chunk %s: %s", file, err);
        return -1;
    }
    if (snapshot_generation(out) != chunk->generation || out->counts[SNAPSHOT_SEC_CHUNKS] != 0) {
        log_warn("snapshot chunk %s: generation %" PRIu64 ", its header names %" PRIu64, file,
                 snapshot_generation(out), chunk->generation);
        snapshot_close(out);
        return -1;
    }
    snprintf(into->file, sizeof into->file, "%s", file);
    return 0;
}

int served_chunks_open(const char *dir, const struct snapshot *header, struct served_chunks *old,
                       struct served_chunks *out, bool *gone)
{
    uint32_t n = header->counts[SNAPSHOT_SEC_CHUNKS];
    out->maps = calloc(n ? n : 1, sizeof *out->maps);
    out->count = 0;
    long *from = calloc(n ? n : 1, sizeof *from);
    int rc = out->maps != NULL && from != NULL ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        from[i] = find_old(old, header, &header->chunks[i]);
        if (from[i] < 0)
            rc = open_chunk(dir, header, i, &out->maps[i], gone);
    }
    if (rc != 0) { /* nothing moved yet: close what was opened */
        for (uint32_t i = 0; out->maps != NULL && i < n; i++)
            if (out->maps[i].snap.base != NULL)
                snapshot_close(&out->maps[i].snap);
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

void served_chunks_close(struct served_chunks *c)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->maps[i].snap.base != NULL)
            snapshot_close(&c->maps[i].snap);
    free(c->maps);
    c->maps = NULL;
    c->count = 0;
}
