/*
 * metrics.h - the node's counters for GET /metrics (doc/choices.md "Metrics").
 *
 * Owns the metrics area of shared memory: one block of counters per
 * worker slot (and one for the background processes), plus the node-wide
 * snapshot gauges that the refresher alone writes. A process counts into
 * its own block with relaxed atomic adds: no lock, and in the normal case
 * no other process touches that cache line (an old and a new worker share
 * a slot only while a reload drains the old one, which is why the adds
 * stay atomic). Whichever worker answers a scrape sums every block
 * (metrics_render). Every label has a fixed, small set of values: route
 * class, status code from a fixed list, limit kind.
 *
 * Called by shm.c (size and init), http.c (requests), the OFREP handlers
 * (evaluations, rate limits), the management path (rate limits), db.c and
 * the background loop (database errors), the refresher (snapshot gauges)
 * and the /metrics route.
 */
#ifndef ENSIGN_METRICS_H
#define ENSIGN_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/health.h"

struct config;

/* What kind of route a request went to; the "class" label. */
enum metrics_class {
    METRICS_CLASS_EVALUATION, /* /ofrep */
    METRICS_CLASS_MANAGEMENT, /* /v1 flag management */
    METRICS_CLASS_ACCOUNTS,   /* /v1/me, the root API */
    METRICS_CLASS_META,       /* healthz, openapi.json, docs/api, metrics */
    METRICS_CLASS_OTHER,      /* no such path, malformed */
    METRICS_CLASS_COUNT
};

/* Which limit refused a request with 429; the "limit" label. */
enum metrics_limit {
    METRICS_LIMIT_EVALUATION,
    METRICS_LIMIT_MANAGEMENT,
    METRICS_LIMIT_WAITLIST,
    METRICS_LIMIT_LOGIN,
    METRICS_LIMIT_COUNT
};

/* Status codes counted one by one; any other falls into "other". */
#define METRICS_STATUS_SLOTS 24

struct metrics_block {
    _Atomic uint64_t requests[METRICS_CLASS_COUNT][METRICS_STATUS_SLOTS];
    _Atomic uint64_t response_bytes;
    _Atomic uint64_t request_microseconds;
    _Atomic uint64_t flag_evaluations;
    _Atomic uint64_t ratelimited[METRICS_LIMIT_COUNT];
    _Atomic uint64_t database_errors;
} __attribute__((aligned(64)));

struct metrics_area {
    uint32_t nblocks;
    _Atomic uint64_t snapshot_builds;        /* files written by the refresher */
    _Atomic uint64_t snapshot_built_unix_ms; /* when the served snapshot was written */
    _Atomic uint64_t snapshot_build_us;      /* how long the last build took */
    struct metrics_block blocks[] __attribute__((aligned(64)));
};

/* Block of the background processes (refresher, flusher). */
#define METRICS_BACKGROUND_BLOCK(area) (&(area)->blocks[(area)->nblocks - 1])

/* Shared-memory size and initialisation (shm.c). */
size_t metrics_area_size(const struct config *cfg);
void metrics_area_init(void *area, const struct config *cfg);

/* The block of worker slot (wraps around, never out of bounds). */
struct metrics_block *metrics_worker_block(struct metrics_area *area, int slot);

static inline void metrics_add(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* The class of a request path (percent-encoded, no query). */
enum metrics_class metrics_class_of(const char *path);

/* Counts one answered request; a NULL block counts nothing. */
void metrics_count_request(struct metrics_block *b, enum metrics_class cls, int status,
                           size_t bytes, uint64_t microseconds);

/* What the scrape adds beyond the counter blocks (from the shm header). */
struct metrics_node {
    uint64_t snapshot_generation;
    uint64_t worker_restarts;
    uint64_t now_unix_ms;
    bool health_failing[HEALTH_CHECKS]; /* the checks healthz reports as failing */
};

/*
 * Writes the Prometheus text format (0.0.4) of the sums over every block
 * into a malloc'ed string (caller frees), or NULL when out of memory.
 */
char *metrics_render(const struct metrics_area *area, const struct metrics_node *node);

#endif
