/*
 * snapshot_chunk_table.c - the published chunks of chunked organizations
 * (see snapshot_chunk_table.h).
 *
 * Invariant: an entry owns its first keys and extents; commit moves the
 * pending entries into orgs (sorted insert or replacement), so nothing is
 * copied twice.
 */
#include "eval/snapshot_chunk_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "eval/snapshot_packs.h"

void snapshot_chunk_table_init(struct snapshot_chunk_table *t)
{
    memset(t, 0, sizeof *t);
}

static void free_entry(struct snapshot_chunked_org *e)
{
    for (size_t i = 0; e->first_keys != NULL && i < e->count; i++)
        free(e->first_keys[i]);
    free(e->first_keys);
    free(e->chunks);
    memset(e, 0, sizeof *e);
}

void snapshot_chunk_table_discard(struct snapshot_chunk_table *t)
{
    for (size_t i = 0; i < t->pending_count; i++)
        free_entry(&t->pending[i]);
    free(t->pending);
    t->pending = NULL;
    t->pending_count = 0;
}

void snapshot_chunk_table_free(struct snapshot_chunk_table *t)
{
    snapshot_chunk_table_discard(t);
    for (size_t i = 0; i < t->count; i++)
        free_entry(&t->orgs[i]);
    free(t->orgs);
    free(t->extents);
    memset(t, 0, sizeof *t);
}

static int compare_org(const void *key, const void *item)
{
    return strcmp(key, ((const struct snapshot_chunked_org *)item)->org);
}

const struct snapshot_chunked_org *snapshot_chunk_table_find(const struct snapshot_chunk_table *t,
                                                             const char *org)
{
    if (t->count == 0)
        return NULL;
    return bsearch(org, t->orgs, t->count, sizeof *t->orgs, compare_org);
}

int snapshot_chunk_table_stage(struct snapshot_chunk_table *t, const char *org, uint64_t generation,
                               const char *const *first_keys, const struct snapshot_chunk *chunks,
                               size_t count)
{
    struct snapshot_chunked_org e = {.generation = generation, .count = count};
    snprintf(e.org, sizeof e.org, "%s", org);
    e.first_keys = calloc(count ? count : 1, sizeof *e.first_keys);
    e.chunks = malloc((count ? count : 1) * sizeof *e.chunks);
    bool ok = e.first_keys != NULL && e.chunks != NULL;
    for (size_t i = 0; ok && i < count; i++)
        ok = (e.first_keys[i] = strdup(first_keys[i])) != NULL;
    void *grown = ok ? realloc(t->pending, (t->pending_count + 1) * sizeof *t->pending) : NULL;
    if (grown == NULL) {
        free_entry(&e);
        return -1;
    }
    if (count > 0)
        memcpy(e.chunks, chunks, count * sizeof *chunks);
    t->pending = grown;
    t->pending[t->pending_count++] = e;
    return 0;
}

int snapshot_chunk_table_stage_header(struct snapshot_chunk_table *t, const char *org,
                                      const struct snapshot *header)
{
    uint32_t n = header->counts[SNAPSHOT_SEC_CHUNKS];
    if (n == 0)
        return 0;
    const char **keys = malloc(n * sizeof *keys);
    if (keys == NULL)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        keys[i] = snapshot_string(header, header->chunks[i].first_key);
    int rc =
        snapshot_chunk_table_stage(t, org, snapshot_generation(header), keys, header->chunks, n);
    free(keys);
    return rc;
}

/* Puts e (taken over) in orgs, replacing org's entry or inserted in order. */
static void put(struct snapshot_chunk_table *t, struct snapshot_chunked_org *e)
{
    size_t lo = 0, hi = t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(t->orgs[mid].org, e->org) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool found = lo < t->count && strcmp(t->orgs[lo].org, e->org) == 0;
    if (found)
        free_entry(&t->orgs[lo]);
    if (found && e->count > 0) {
        t->orgs[lo] = *e;
        return;
    }
    if (found || e->count == 0) { /* removed */
        if (found)
            memmove(&t->orgs[lo], &t->orgs[lo + 1], (t->count-- - lo - 1) * sizeof *t->orgs);
        free_entry(e);
        return;
    }
    void *grown = realloc(t->orgs, (t->count + 1) * sizeof *t->orgs);
    if (grown == NULL) { /* read whole at its next change; its packs' bytes not known */
        log_warn("out of memory: the chunks of organization %s are forgotten; no pack is"
                 " removed until the next start",
                 e->org);
        free_entry(e);
        t->lost = true;
        return;
    }
    t->orgs = grown;
    memmove(&t->orgs[lo + 1], &t->orgs[lo], (t->count - lo) * sizeof *t->orgs);
    t->orgs[lo] = *e;
    t->count++;
}

static void make_extents(struct snapshot_chunk_table *t);

void snapshot_chunk_table_commit(struct snapshot_chunk_table *t)
{
    for (size_t i = 0; i < t->pending_count; i++)
        put(t, &t->pending[i]);
    free(t->pending);
    t->pending = NULL;
    t->pending_count = 0;
    make_extents(t);
}

/* The flat list of every entry's extents; out of memory, extents is NULL
 * with extent_count the number it should hold (snapshot_parts then
 * deletes no pack, not knowing which hold chunks). */
static void make_extents(struct snapshot_chunk_table *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++)
        n += t->orgs[i].count;
    free(t->extents);
    t->extent_count = 0;
    t->extents = t->lost ? NULL : malloc((n ? n : 1) * sizeof *t->extents);
    if (t->extents == NULL) {
        log_warn("out of memory: the chunks' extents are not counted, no pack is removed");
        t->extent_count = n + 1; /* not known: never 0 */
        return;
    }
    for (size_t i = 0; i < t->count; i++)
        for (size_t c = 0; c < t->orgs[i].count; c++) {
            const struct snapshot_chunk *chunk = &t->orgs[i].chunks[c];
            struct snapshot_part_file *f = &t->extents[t->extent_count++];
            memset(f, 0, sizeof *f);
            snprintf(f->org, sizeof f->org, "%s", t->orgs[i].org);
            snapshot_packs_name(chunk->pack, f->name);
            f->generation = chunk->generation;
            f->offset = chunk->offset;
            f->length = chunk->length;
        }
}

static int compare_part_org(const void *key, const void *item)
{
    return strcmp(key, ((const struct snapshot_part_file *)item)->org);
}

void snapshot_chunk_table_prune(struct snapshot_chunk_table *t,
                                const struct snapshot_part_file *parts, size_t count)
{
    size_t kept = 0;
    for (size_t i = 0; i < t->count; i++) {
        const struct snapshot_part_file *f =
            count > 0 ? bsearch(t->orgs[i].org, parts, count, sizeof *parts, compare_part_org)
                      : NULL;
        if (f != NULL && f->generation == t->orgs[i].generation)
            t->orgs[kept++] = t->orgs[i];
        else
            free_entry(&t->orgs[i]);
    }
    t->count = kept;
    make_extents(t);
}
