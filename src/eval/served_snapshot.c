/*
 * served_snapshot.c - a worker's mappings of the published snapshot index
 * and its parts (see served_snapshot.h).
 *
 * Invariants: view->index is either NULL or a validated mapping; parts[i]
 * belongs to the index's part i and is either empty (base NULL) or a
 * validated extent of a pack mapped in view->packs (the generation the
 * index names, or an older one kept because the new extent was bad), and
 * holds one count on its pack's slot until it is closed; a chunked
 * organization's part is its header (an extent like any part) with every
 * chunk it names opened from its pack (served_chunks.h), or none of them.
 * Mappings are replaced only after the new ones opened, and the usage batch is flushed before any
 * mapping it may name is closed or moved.
 */
#include "eval/served_snapshot.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "eval/pack_maps.h"
#include "eval/served_chunks.h"
#include "eval/shm.h"
#include "eval/snapshot.h"
#include "eval/snapshot_index_files.h"
#include "eval/usage_batch.h"

#define RETRY_MS 1000    /* after a part that failed to map */
#define INDEX_ATTEMPTS 3 /* reads of an index that names removed parts */

struct served_part {
    struct snapshot snap;        /* zeroed when not mapped */
    uint64_t generation;         /* snap's, read once: comparing it needs no visit
                                    of the mapping (10,000 of them per remap) */
    int slot;                    /* its pack's in view->packs */
    struct served_chunks chunks; /* a chunked organization's: all of snap's, or none */
};

struct served_snapshot {
    char dir[4096];
    struct shm_region *shm;
    struct usage_batch *batch;
    struct pack_maps *packs;   /* the pack files the parts are in */
    struct snapshot *index;    /* owned; NULL until one maps */
    struct served_part *parts; /* one per part of the index */
    uint64_t seen;             /* the published generation last acted on */
    long long retry_at_ms;     /* 0, or when to map a failed part again */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct served_snapshot *served_snapshot_new(const char *state_dir, struct shm_region *shm,
                                            struct usage_batch *batch)
{
    struct served_snapshot *view = calloc(1, sizeof *view);
    if (view == NULL)
        return NULL;
    snprintf(view->dir, sizeof view->dir, "%s", state_dir);
    if ((view->packs = pack_maps_new(state_dir, false)) == NULL) {
        free(view);
        return NULL;
    }
    view->shm = shm;
    view->batch = batch;
    return view;
}

static void close_parts(struct served_snapshot *view, struct served_part *parts, size_t count)
{
    for (size_t i = 0; parts != NULL && i < count; i++) {
        if (parts[i].snap.base != NULL) {
            snapshot_close(&parts[i].snap);
            pack_maps_release(view->packs, parts[i].slot);
        }
        served_chunks_close(view->packs, &parts[i].chunks);
    }
    free(parts);
}

static size_t part_count(const struct snapshot *index)
{
    return index != NULL ? index->counts[SNAPSHOT_SEC_PARTS] : 0;
}

/*
 * The mapped part of org_id in the current view, or NULL. Both indexes list
 * their parts sorted by organization (the refresher writes them so), so the
 * callers walk them together: *cursor only moves forward.
 */
static struct served_part *current_part(struct served_snapshot *view, const char *org_id,
                                        size_t *cursor)
{
    size_t count = part_count(view->index);
    for (; *cursor < count; ++*cursor) {
        const struct snapshot_part *p = &view->index->parts[*cursor];
        int c = strcmp(snapshot_string(view->index, p->org), org_id);
        if (c > 0)
            return NULL;
        if (c == 0)
            return view->parts[*cursor].snap.base != NULL ? &view->parts[*cursor] : NULL;
    }
    return NULL;
}

enum part_status { PART_MAPPED, PART_BAD, PART_GONE };

/* Opens the extent of part p of fresh into *out (*slot its pack's);
 * PART_BAD (logged) when it is bad or not of the generation the index
 * names, PART_GONE when its pack file is not there (the index was
 * superseded twice since it was read). */
static enum part_status open_part(const struct served_snapshot *view, const struct snapshot *fresh,
                                  const struct snapshot_part *p, struct snapshot *out, int *slot)
{
    char err[256];
    const char *file = snapshot_string(fresh, p->file);
    switch (pack_maps_open(view->packs, file, p->offset, p->length, out, slot, err, sizeof err)) {
    case PACK_EXTENT_GONE:
        return PART_GONE;
    case PACK_EXTENT_BAD:
        log_warn("snapshot part of organization %s in %s at %" PRIu64 ": %s",
                 snapshot_string(fresh, p->org), file, p->offset, err);
        return PART_BAD;
    case PACK_EXTENT_OK:
        break;
    }
    if (snapshot_generation(out) != p->generation) {
        log_warn("snapshot part of organization %s in %s at %" PRIu64 ": generation %" PRIu64
                 ", the index names %" PRIu64,
                 snapshot_string(fresh, p->org), file, p->offset, snapshot_generation(out),
                 p->generation);
        snapshot_close(out);
        pack_maps_release(view->packs, *slot);
        return PART_BAD;
    }
    return PART_MAPPED;
}

/* Opens part p of fresh, with its chunks when it is a chunked
 * organization's header (taking unchanged ones from old, may be NULL):
 * all of them or nothing. */
static enum part_status open_part_whole(const struct served_snapshot *view,
                                        const struct snapshot *fresh, const struct snapshot_part *p,
                                        struct served_part *old, struct served_part *out)
{
    enum part_status status = open_part(view, fresh, p, &out->snap, &out->slot);
    if (status != PART_MAPPED || out->snap.counts[SNAPSHOT_SEC_CHUNKS] == 0)
        return status;
    struct served_chunks none = {0};
    bool gone = false;
    if (served_chunks_open(view->packs, &out->snap, old != NULL ? &old->chunks : &none,
                           &out->chunks, &gone) == 0)
        return PART_MAPPED;
    snapshot_close(&out->snap);
    pack_maps_release(view->packs, out->slot);
    return gone ? PART_GONE : PART_BAD;
}

/* What map_parts found. */
struct mapped {
    bool complete; /* every part is of the generation the index names */
    bool gone;     /* some new part's file is not there */
};

/*
 * Fills parts (one per part of fresh) with the current mapping of each
 * organization when its generation is unchanged, else a new mapping (or
 * the current one, kept, when the new file is bad or gone). Moved mappings
 * are marked unmapped (base NULL) in the view. Only new parts touch the
 * file system, and unchanged ones are not even read (their generation is
 * kept beside the mapping).
 */
static struct mapped map_parts(struct served_snapshot *view, const struct snapshot *fresh,
                               struct served_part *parts)
{
    struct mapped result = {.complete = true};
    size_t cursor = 0;
    for (size_t i = 0; i < part_count(fresh); i++) {
        const struct snapshot_part *p = &fresh->parts[i];
        struct served_part *old = current_part(view, snapshot_string(fresh, p->org), &cursor);
        enum part_status status;
        if (old != NULL && old->generation == p->generation) {
            parts[i] = *old;
            old->snap.base = NULL; /* moved: not the view's to close */
            old->chunks = (struct served_chunks){0};
        } else if ((status = open_part_whole(view, fresh, p, old, &parts[i])) == PART_MAPPED) {
            parts[i].generation = p->generation;
            continue;
        } else {
            result.complete = false;
            result.gone |= status == PART_GONE;
            if (old != NULL) { /* keep serving what it had */
                parts[i] = *old;
                old->snap.base = NULL;
                old->chunks = (struct served_chunks){0};
            }
        }
    }
    return result;
}

enum index_status { INDEX_OPENED, INDEX_BAD, INDEX_GONE };

/* Opens the visible index of generation into *fresh
 * (snapshot_index_files.h); when there is none (the generation a start
 * published from disk), the restart index. INDEX_GONE when the visible
 * index is gone and the restart index is older: a newer generation
 * superseded it twice since it was published. */
static enum index_status open_index(const struct served_snapshot *view, uint64_t generation,
                                    struct snapshot *fresh)
{
    char path[4096 + 64], err[256] = "snapshot path too long";
    if (snapshot_index_path(view->dir, generation, path, sizeof path) &&
        snapshot_open(path, fresh, err, sizeof err) == 0)
        return INDEX_OPENED;
    if (access(path, F_OK) == 0 || errno != ENOENT) {
        log_warn("keeping the current snapshot: %s", err);
        return INDEX_BAD;
    }
    snprintf(path, sizeof path, "%s/%s", view->dir, SNAPSHOT_FILE_NAME);
    if (snapshot_open(path, fresh, err, sizeof err) != 0) {
        log_warn("keeping the current snapshot: %s", err);
        return INDEX_BAD;
    }
    if (snapshot_generation(fresh) >= generation) /* one that is not published yet: it will be */
        return INDEX_OPENED;
    snapshot_close(fresh);
    return INDEX_GONE;
}

/* Maps the parts of index (the fresh index, or the current one again)
 * in place of the view's; false when out of memory. *gone: some new part's
 * file was not there. */
static bool replace_parts(struct served_snapshot *view, const struct snapshot *index, bool *gone)
{
    size_t count = part_count(index);
    struct served_part *parts = calloc(count ? count : 1, sizeof *parts);
    if (parts == NULL)
        return false;
    if (view->batch != NULL) /* its entries name the old mappings */
        usage_batch_flush(view->batch, view->shm != NULL ? view->shm->usage : NULL);
    struct mapped mapped = map_parts(view, index, parts);
    if (!mapped.complete)
        view->retry_at_ms = now_ms() + RETRY_MS;
    *gone = mapped.gone;
    close_parts(view, view->parts, part_count(view->index));
    view->parts = parts;
    return true;
}

/* Whether two indexes name the same organizations' parts, in the same
 * order and at the same generations (their extents may differ). */
static bool same_parts(const struct snapshot *a, const struct snapshot *b)
{
    if (part_count(a) != part_count(b))
        return false;
    for (size_t i = 0; i < part_count(a); i++)
        if (a->parts[i].generation != b->parts[i].generation ||
            strcmp(snapshot_string(a, a->parts[i].org), snapshot_string(b, b->parts[i].org)) != 0)
            return false;
    return true;
}

/*
 * Maps the current index and its parts in place of the old ones. An index
 * of the generation already mapped holds the same environments and keys
 * (a generation is read once): the view keeps its mapping, so pointers
 * into it stay valid for as long as the generation does (ofrep.c caches
 * the SDK key's environment per generation). That happens when the view
 * read the index between its rename and its publication, and again once
 * it was published; and on the retry of a part that failed to map, where
 * only the parts are mapped again, from the extents the index on disk
 * names (a part found damaged is written again at the same generation,
 * elsewhere in a pack). True when a new part's pack was gone: the index
 * read was superseded twice since, and a newer one is on disk.
 */
static bool remap_once(struct served_snapshot *view, uint64_t published)
{
    struct snapshot fresh;
    bool gone = false;
    switch (open_index(view, published, &fresh)) {
    case INDEX_GONE:
        view->retry_at_ms = now_ms() + RETRY_MS; /* if nothing newer is published */
        return true;
    case INDEX_BAD:
        return false;
    case INDEX_OPENED:
        break;
    }
    if (view->index != NULL && view->index->base != NULL &&
        snapshot_generation(&fresh) == snapshot_generation(view->index)) {
        /* A part rebuilt at the same generation (its extent was bad) is
         * at a new extent: the parts are mapped from the fresh index when
         * it names the same parts, the index mapping is kept. */
        const struct snapshot *extents = same_parts(view->index, &fresh) ? &fresh : view->index;
        if (!replace_parts(view, extents, &gone))
            view->retry_at_ms = now_ms() + RETRY_MS;
        snapshot_close(&fresh);
        return gone;
    }
    struct snapshot *index = view->index != NULL ? view->index : calloc(1, sizeof *index);
    if (index == NULL || !replace_parts(view, &fresh, &gone)) {
        if (view->index == NULL)
            free(index);
        snapshot_close(&fresh);
        view->retry_at_ms = now_ms() + RETRY_MS;
        return false;
    }
    if (index->base != NULL)
        snapshot_close(index);
    *index = fresh;
    view->index = index;
    log_debug("serving snapshot generation %" PRIu64, snapshot_generation(index));
    return gone;
}

/* Follows the published generation: maps its index, and reads the one
 * published then again (a few times) while it names part files already
 * removed, or is itself removed. No file is looked at but the index and
 * the parts that are new to the view. */
static void remap(struct served_snapshot *view, uint64_t published)
{
    for (int attempt = 1;; attempt++) {
        view->seen = published;
        view->retry_at_ms = 0;
        if (!remap_once(view, published) || attempt >= INDEX_ATTEMPTS)
            break;
        log_debug("snapshot index superseded while it was mapped: reading it again");
        published =
            atomic_load_explicit(&view->shm->header->snapshot_generation, memory_order_acquire);
    }
}

const struct snapshot *served_snapshot_current(struct served_snapshot *view)
{
    if (view == NULL || view->shm == NULL || view->shm->header == NULL)
        return NULL;
    uint64_t published =
        atomic_load_explicit(&view->shm->header->snapshot_generation, memory_order_acquire);
    if (published != view->seen || (view->retry_at_ms != 0 && now_ms() >= view->retry_at_ms))
        remap(view, published);
    return view->index != NULL && view->index->base != NULL ? view->index : NULL;
}

const struct snapshot *served_snapshot_part(struct served_snapshot *view,
                                            const struct snapshot_env *env,
                                            const struct snapshot_env **part_env)
{
    if (env->part == SNAPSHOT_NONE) { /* a file without parts holds its flags */
        *part_env = env;
        return view->index;
    }
    const struct snapshot *part = &view->parts[env->part].snap;
    if (part->base == NULL)
        return NULL;
    *part_env = snapshot_env_by_id(part, snapshot_string(view->index, env->id), env->id.len);
    return *part_env != NULL ? part : NULL;
}

/* The served part of env (an index environment), or NULL when env's flags
 * are in the index itself. */
static const struct served_part *part_of(const struct served_snapshot *view,
                                         const struct snapshot_env *env)
{
    return env->part == SNAPSHOT_NONE ? NULL : &view->parts[env->part];
}

/* Chunk i of a served part and env's record in it, or NULL. */
static const struct snapshot *chunk_env(const struct served_snapshot *view,
                                        const struct served_part *part, size_t i,
                                        const struct snapshot_env *env,
                                        const struct snapshot_env **part_env)
{
    if (i >= part->chunks.count)
        return NULL;
    const struct snapshot *chunk = &part->chunks.maps[i].snap;
    *part_env = snapshot_env_by_id(chunk, snapshot_string(view->index, env->id), env->id.len);
    return *part_env != NULL ? chunk : NULL;
}

const struct snapshot *served_snapshot_flag_part(struct served_snapshot *view,
                                                 const struct snapshot_env *env, const char *key,
                                                 size_t len, const struct snapshot_env **part_env)
{
    const struct served_part *part = part_of(view, env);
    if (part == NULL || part->chunks.count == 0)
        return served_snapshot_part(view, env, part_env);
    return chunk_env(view, part, snapshot_chunk_find(&part->snap, key, len), env, part_env);
}

const struct snapshot *served_snapshot_chunk(struct served_snapshot *view,
                                             const struct snapshot_env *env, size_t i,
                                             const struct snapshot_env **part_env)
{
    const struct served_part *part = part_of(view, env);
    if (part == NULL || part->chunks.count == 0)
        return i == 0 ? served_snapshot_part(view, env, part_env) : NULL;
    return chunk_env(view, part, i, env, part_env);
}

void served_snapshot_free(struct served_snapshot *view)
{
    if (view == NULL)
        return;
    close_parts(view, view->parts, part_count(view->index));
    if (view->index != NULL && view->index->base != NULL)
        snapshot_close(view->index);
    free(view->index);
    pack_maps_free(view->packs);
    free(view);
}
