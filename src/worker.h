/*
 * worker.h - the state one worker process owns while it serves HTTP.
 *
 * A worker runs one libevent loop on the listening sockets the master gave
 * it, answers every route from the route table, and keeps its own
 * PostgreSQL connection for management routes. Handlers reach this state
 * through http_request.worker. Created and freed by worker.c only.
 */
#ifndef ENSIGN_WORKER_H
#define ENSIGN_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evhttp;
struct config;
struct db;
struct shm_region;
struct route;
struct snapshot;
struct eval_scratch;
struct ofrep_state;
struct usage_batch;

struct worker {
    int index; /* 0-based worker slot */
    struct event_base *base;
    struct evhttp *http;
    const struct config *cfg;
    struct db *db; /* management connection; NULL where no database is used */
    struct shm_region *shm;
    const struct route *routes;
    size_t route_count;
    char *openapi_json;                /* serialized once per worker; owned */
    struct snapshot *snapshot;         /* mapped flag snapshot; owned, NULL until one maps */
    uint64_t snapshot_seen;            /* the published generation last acted on */
    struct eval_scratch *eval_scratch; /* owned */
    struct ofrep_state *ofrep;         /* OFREP handlers' caches; ofrep_state_free */
    struct usage_batch *usage_batch;   /* evaluation counts not yet in shared memory; owned */
    unsigned long in_flight;
    bool draining;
};

/*
 * The worker's snapshot for this request, or NULL when none could be
 * mapped yet. One atomic load of the published generation; when it moved,
 * the file <state_dir>/snapshot.bin is mapped afresh (pending usage counts
 * are flushed to shared memory first), and a file that fails validation is
 * logged and the old mapping kept until the next generation.
 */
const struct snapshot *worker_snapshot(struct worker *w);

/* Runs a worker until it drains; returns the process exit status. */
int worker_main(int index, const struct config *cfg, struct shm_region *shm, const int *fds,
                size_t nfds);

#endif
