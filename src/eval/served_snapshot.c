/*
 * served_snapshot.c - a worker's mapping of the published snapshot (see
 * served_snapshot.h).
 *
 * Invariant: view->snapshot is either NULL or a validated mapping; a new
 * mapping replaces it only after snapshot_open accepted the file.
 */
#include "served_snapshot.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "shm.h"
#include "snapshot.h"
#include "usage_batch.h"

struct served_snapshot {
    char path[4096];
    struct shm_region *shm;
    struct usage_batch *batch;
    struct snapshot *snapshot; /* owned; NULL until a file maps */
    uint64_t seen;             /* the published generation last acted on */
};

struct served_snapshot *served_snapshot_new(const char *state_dir, struct shm_region *shm,
                                            struct usage_batch *batch)
{
    struct served_snapshot *view = calloc(1, sizeof *view);
    if (view == NULL)
        return NULL;
    snprintf(view->path, sizeof view->path, "%s/%s", state_dir, SNAPSHOT_FILE_NAME);
    view->shm = shm;
    view->batch = batch;
    return view;
}

/* Maps the current snapshot file in place of the old one (kept on failure). */
static void remap(struct served_snapshot *view, uint64_t published)
{
    char err[256];
    struct snapshot fresh;
    view->seen = published;
    if (snapshot_open(view->path, &fresh, err, sizeof err) != 0) {
        log_warn("keeping the current snapshot: %s", err);
        return;
    }
    if (view->batch != NULL) /* its entries name the old mapping */
        usage_batch_flush(view->batch, view->shm != NULL ? view->shm->usage : NULL);
    if (view->snapshot == NULL && (view->snapshot = calloc(1, sizeof *view->snapshot)) == NULL) {
        snapshot_close(&fresh);
        return;
    }
    if (view->snapshot->base != NULL)
        snapshot_close(view->snapshot);
    *view->snapshot = fresh;
    log_debug("serving snapshot generation %" PRIu64, snapshot_generation(view->snapshot));
}

const struct snapshot *served_snapshot_current(struct served_snapshot *view)
{
    if (view == NULL || view->shm == NULL || view->shm->header == NULL)
        return NULL;
    uint64_t published =
        atomic_load_explicit(&view->shm->header->snapshot_generation, memory_order_acquire);
    if (published != view->seen)
        remap(view, published);
    return view->snapshot != NULL && view->snapshot->base != NULL ? view->snapshot : NULL;
}

void served_snapshot_free(struct served_snapshot *view)
{
    if (view == NULL)
        return;
    if (view->snapshot != NULL && view->snapshot->base != NULL)
        snapshot_close(view->snapshot);
    free(view->snapshot);
    free(view);
}
