/*
 * server.h - what the HTTP layer knows of the process that serves it.
 *
 * One struct http_server per serving process (a worker): the event base
 * and evhttp instance, the configuration, the route table, and opaque
 * handles that the layers above own and this layer only carries to their
 * handlers (the database connection for management routes, shared memory
 * and the evaluation state for /ofrep). Handlers reach it through
 * http_request.server. The daemon fills it in (daemon/worker.c) and owns
 * every pointer in it; nothing below the daemon includes the daemon's
 * headers, so the layers point down: daemon -> api/db -> eval -> http -> base.
 */
#ifndef ENSIGN_HTTP_SERVER_H
#define ENSIGN_HTTP_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evhttp;
struct config;
struct route;
struct route_index;     /* http/router.h */
struct db;              /* db/db.h: management connection */
struct shm_region;      /* eval/shm.h: the node's shared memory */
struct served_snapshot; /* eval/served_snapshot.h */
struct eval_scratch;    /* eval/eval.h */
struct ofrep_state;     /* eval/ofrep.c: the OFREP handlers' caches */
struct usage_batch;     /* eval/usage_batch.h */
struct metrics_block;   /* http/metrics.h: this worker's counters */
struct stream_hub;      /* eval/streams.h: the worker's open event streams */
struct org_events;      /* accounts/org_events.h: the organization change streams */
struct answer_pool;     /* http/answer.h: blocks for answer bodies */
struct early_write;     /* http/early_write.h: answers written in their turn */
struct access_log;      /* http/access_log.h: this worker's access lines */
struct work_pool;       /* base/work_pool.h: helper threads for slow work (scrypt) */
struct ui_files;        /* http/ui_files.h: the dashboard's files */

struct http_server {
    int index; /* 0-based worker slot */
    struct event_base *base;
    struct evhttp *http;
    const struct config *cfg;
    const struct route *routes;
    size_t route_count;
    struct route_index *route_index;   /* routes by first segment; NULL: walk them all */
    char *openapi_json;                /* serialized on first use; owned by the daemon */
    char *api_doc;                     /* GET /docs/api text (api/apidoc.h); owned by the daemon */
    _Atomic uint64_t *requests_served; /* node-wide counter in shared memory, or NULL */
    struct metrics_block *metrics;     /* this worker's /metrics counters, or NULL */
    struct db *db;                     /* NULL where no database is used */
    struct shm_region *shm;            /* NULL in tests without shared memory */
    struct served_snapshot *snapshot;  /* the mapped flag snapshot */
    struct eval_scratch *eval_scratch; /* evaluator scratch space */
    struct ofrep_state *ofrep;         /* created by the OFREP handlers on first use */
    struct usage_batch *usage_batch;   /* evaluation counts not yet in shared memory */
    struct stream_hub *streams;        /* change streams (NULL: none offered) */
    struct org_events *org_events;     /* organization change streams (NULL: none offered) */
    struct answer_pool *answers;       /* created by the first pooled answer */
    struct early_write *early;         /* NULL: answers wait for the write event */
    struct access_log *access_log;     /* http/access_log.h; NULL: access_log = off */
    struct work_pool *passwords;       /* scrypt off the loop (db/password_pool.h), or NULL */
    const struct ui_files *ui;         /* the dashboard (the master's copy), or NULL */
    unsigned long in_flight;           /* dispatched, unanswered requests */
    bool draining;                     /* answers carry Connection: close */
};

#endif
