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

struct event_base;
struct evhttp;
struct config;
struct db;
struct shm_region;
struct route;

struct worker {
    int index; /* 0-based worker slot */
    struct event_base *base;
    struct evhttp *http;
    const struct config *cfg;
    struct db *db; /* management connection; NULL where no database is used */
    struct shm_region *shm;
    const struct route *routes;
    size_t route_count;
    char *openapi_json; /* serialized once per worker; owned */
    unsigned long in_flight;
    bool draining;
};

/* Runs a worker until it drains; returns the process exit status. */
int worker_main(int index, const struct config *cfg, struct shm_region *shm, const int *fds,
                size_t nfds);

#endif
