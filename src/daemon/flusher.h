/*
 * flusher.h - the process that moves usage counters into PostgreSQL.
 *
 * Wakes every usage_flush_interval_ms and on shutdown, drains the usage
 * table (usage.h) and adds the counts to usage_counters in one upsert per
 * flush; counts it cannot write (database down) go back into the table for
 * the next flush. The master stops it only after every worker has exited,
 * so its final flush carries the last evaluations. At most one interval of
 * counts can be lost in a crash.
 */
#ifndef ENSIGN_FLUSHER_H
#define ENSIGN_FLUSHER_H

struct config;
struct shm_region;

int flusher_main(const struct config *cfg, struct shm_region *shm);

#endif
