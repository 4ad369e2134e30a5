/*
 * served_snapshot.h - the flag snapshot one worker serves from.
 *
 * Owns the worker's mapping of <state_dir>/snapshot.bin, the index, the
 * per-organization parts it names (extents of pack files, each pack mapped
 * once: pack_maps.h; snapshot.h; doc/choices.md "Incremental snapshots",
 * "Pack files"), and the last published generation it acted on.
 * served_snapshot_current() costs one atomic load while nothing changed;
 * when the refresher published a new generation, the index is mapped afresh
 * and, of its parts, only those whose organization or generation changed
 * (the worker's pending usage counts are moved to shared memory first,
 * since they name the old mappings). A bad index keeps everything as it
 * was; a bad part keeps that organization's previous mapping (or leaves it
 * unserved) and is retried a second later. Used by the OFREP handlers;
 * created and freed by the worker.
 */
#ifndef ENSIGN_SERVED_SNAPSHOT_H
#define ENSIGN_SERVED_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

/* The index file's name inside state_dir (written by the refresher). */
#define SNAPSHOT_FILE_NAME "snapshot.bin"

struct shm_region;
struct snapshot;
struct snapshot_env;
struct usage_batch;

struct served_snapshot;

/* A view of state_dir's snapshot; shm and batch may be NULL. NULL when out of memory. */
struct served_snapshot *served_snapshot_new(const char *state_dir, struct shm_region *shm,
                                            struct usage_batch *batch);

/*
 * The index to answer this request from, or NULL when none could be mapped
 * yet: snapshot_env_by_sdk_digest() finds an SDK key's environment in it
 * (across organizations), snapshot_generation() is the global generation,
 * and the environment's `generation` its configuration generation.
 */
const struct snapshot *served_snapshot_current(struct served_snapshot *view);

/*
 * The snapshot that holds the flags of env (an environment of the index
 * served_snapshot_current() returned), with *part_env set to env's record
 * in it; look flags up, evaluate and compute ETags there. NULL when that
 * organization's part could not be mapped. Valid until the next
 * served_snapshot_current().
 */
const struct snapshot *served_snapshot_part(struct served_snapshot *view,
                                            const struct snapshot_env *env,
                                            const struct snapshot_env **part_env);

/*
 * Chunked organizations (snapshot.h "Chunks"): served_snapshot_part gives
 * the header, where the environment holds no flags. The snapshot holding
 * the flag of key (len bytes) of env, with *part_env env's record in it:
 * the chunk covering key, or the part itself when it has no chunks. NULL
 * as served_snapshot_part.
 */
const struct snapshot *served_snapshot_flag_part(struct served_snapshot *view,
                                                 const struct snapshot_env *env, const char *key,
                                                 size_t len, const struct snapshot_env **part_env);

/* Chunk i (from 0) of env's part in key order, with *part_env; the part
 * itself is chunk 0 of an organization without chunks. NULL past the last
 * (or when the part is not mapped). Walking i = 0, 1, ... gives env's flags
 * in key order, as one part would. */
const struct snapshot *served_snapshot_chunk(struct served_snapshot *view,
                                             const struct snapshot_env *env, size_t i,
                                             const struct snapshot_env **part_env);

void served_snapshot_free(struct served_snapshot *view);

#endif
