/*
 * flusher.h - the process that moves usage counters into PostgreSQL.
 *
 * Wakes every usage_flush_interval_ms and on shutdown. (The evaluation
 * issue adds the counters in shared memory and the additive upserts; here
 * it keeps a connection and reports its state.) At most one interval of
 * counts can be lost in a crash.
 */
#ifndef ENSIGN_FLUSHER_H
#define ENSIGN_FLUSHER_H

struct config;
struct shm_region;

int flusher_main(const struct config *cfg, struct shm_region *shm);

#endif
