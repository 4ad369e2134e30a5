/*
 * served_snapshot.h - the flag snapshot one worker serves from.
 *
 * Owns the worker's mapping of <state_dir>/snapshot.bin and the last
 * published generation it acted on. served_snapshot_current() costs one
 * atomic load while nothing changed; when the refresher published a new
 * generation, the file is mapped afresh (the worker's pending usage counts
 * are moved to shared memory first, since they name the old mapping), and
 * a file that fails validation is logged and the old mapping kept until
 * the next generation. Used by the OFREP handlers; created and freed by
 * the worker.
 */
#ifndef ENSIGN_SERVED_SNAPSHOT_H
#define ENSIGN_SERVED_SNAPSHOT_H

#include <stdint.h>

/* The snapshot file's name inside state_dir (written by the refresher). */
#define SNAPSHOT_FILE_NAME "snapshot.bin"

struct shm_region;
struct snapshot;
struct usage_batch;

struct served_snapshot;

/* A view of state_dir's snapshot; shm and batch may be NULL. NULL when out of memory. */
struct served_snapshot *served_snapshot_new(const char *state_dir, struct shm_region *shm,
                                            struct usage_batch *batch);

/* The snapshot to answer this request from, or NULL when none could be mapped yet. */
const struct snapshot *served_snapshot_current(struct served_snapshot *view);

void served_snapshot_free(struct served_snapshot *view);

#endif
