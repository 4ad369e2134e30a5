/*
 * shm.h - the one shared-memory region of an ensignd instance.
 *
 * The master maps it (anonymous MAP_SHARED) before forking, so it outlives
 * every child; it never reads it afterwards. Layout: a header (magic,
 * snapshot generation, process counters, the healthz checks of health.h),
 * then one area per user, each sized by that user's size function and
 * prepared by its init function
 * (the rate-limit buckets, the usage counters, the unknown-key counters). Fixed size from the
 * configuration: nothing is allocated after start.
 */
#ifndef ENSIGN_SHM_H
#define ENSIGN_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/health.h"

struct config;

#define SHM_MAGIC 0x454e5347u /* "ENSG" */

struct shm_header {
    uint32_t magic;
    uint32_t version;
    size_t total_size;
    _Atomic uint64_t snapshot_generation; /* published by the refresher */
    _Atomic uint64_t requests_served;     /* all workers, all routes */
    _Atomic uint64_t worker_restarts;     /* counted by the master */
    struct health_state health;           /* written by the refresher, read by healthz */
};

struct usage_table;
struct unknown_table;
struct ratelimit_table;
struct metrics_area;
struct heartbeat_table;
struct stream_slots;
struct accept_balance;

struct shm_region {
    struct shm_header *header;
    struct usage_table *usage;         /* evaluation counters (usage.h) */
    struct unknown_table *unknown;     /* unknown flag keys (unknown_flags.h) */
    struct ratelimit_table *ratelimit; /* token buckets (ratelimit.h) */
    struct metrics_area *metrics;      /* /metrics counters (metrics.h) */
    struct heartbeat_table *heartbeat; /* workers' liveness (heartbeat.h) */
    struct stream_slots *stream_slots; /* open streams per SDK key (stream_slots.h) */
    /* the workers' open connections (accept_balance.h) */
    struct accept_balance *accept_balance;
    void *base;
    size_t size;
};

/* Size of the whole region for cfg (header plus every user's area). */
size_t shm_size(const struct config *cfg);

/* Maps and initialises the region; returns 0 or -1 (errno set). */
int shm_create(const struct config *cfg, struct shm_region *out);

void shm_destroy(struct shm_region *shm);

#endif
