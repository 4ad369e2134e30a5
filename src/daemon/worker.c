/*
 * worker.c - a worker process: one libevent loop serving HTTP.
 *
 * The master hands every worker all the listening sockets (one
 * SO_REUSEPORT socket per worker slot; the master keeps them open, so a
 * worker's death or replacement never closes a socket or drops its accept
 * queue). Every worker polls every socket and joins the node's accept
 * balance (accept_balance.h, through intake.h) as its heartbeat slot, so
 * connections spread evenly over the workers whatever socket the kernel
 * queued them on.
 * The worker answers every route of the route table, keeps its own
 * asynchronous PostgreSQL connection for management routes, and on
 * SIGTERM/SIGINT/SIGQUIT drains: it ends its change streams (streams.h;
 * they are not in-flight requests), stops accepting, lets in-flight
 * requests finish (answers then carry "Connection: close"), and exits 0,
 * or after shutdown_timeout_ms at the latest.
 *
 * With metrics_listen set, a second evhttp instance accepts on that
 * socket (shared by every worker) and serves only /metrics there.
 *
 * It fills in the struct http_server that the layers below serve from and
 * owns everything in it: its view of the flag snapshot (served_snapshot.h)
 * and its batch of usage counts, moved to shared memory on a timer every
 * USAGE_BATCH_FLUSH_MS (usage_batch_tick: a large batch waits a few ticks),
 * before each re-map and at exit.
 *
 * Password checks and hashes (scrypt, tens of milliseconds each) run on
 * the worker's helper threads (password_pool.h), never on its loop; the
 * threads are joined at exit before the HTTP server goes.
 *
 * A timer beats the worker's heartbeat in shared memory (heartbeat.h);
 * the master kills a worker whose loop stops turning. The same timer
 * follows the published snapshot, so an idle worker maps a new one too.
 *
 * The access log (access_log.h) goes to stderr, or to the file the master
 * opened for this generation (access_log_path): then a timer writes the
 * worker's buffer every second, and teardown writes the rest, so a worker
 * replaced on SIGHUP leaves its last lines in the file it was given
 * (the one logrotate renamed) and its successor appends to the new one.
 */
#include "daemon/worker.h"

#include <event2/event.h>
#include <event2/http.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "http/access_log.h"
#include "http/answer.h"
#include "api/apidoc.h"
#include "base/config.h"
#include "db/db.h"
#include "http/early_write.h"
#include "http/router.h"
#include "eval/eval.h"
#include "eval/heartbeat.h"
#include "http/http.h"
#include "http/intake.h"
#include "base/log.h"
#include "http/metrics.h"
#include "eval/ofrep.h"
#include "db/password_pool.h"
#include "daemon/proctitle.h"
#include "http/query_method.h"
#include "daemon/routes.h"
#include "eval/shm.h"
#include "eval/served_snapshot.h"
#include "http/server.h"
#include "eval/streams.h"
#include "accounts/org_events.h"
#include "eval/usage_batch.h"
#include "base/work_pool.h"

#define WORKER_MAX_SOCKETS 256
#define DRAIN_POLL_MS 20
/* A connection accepted just before the drain may not have sent its
 * request yet; evhttp does not count connections, so wait this long for
 * such requests before leaving. */
#define DRAIN_GRACE_MS 200

struct worker_runtime {
    struct http_server w;
    struct evhttp_bound_socket *bound[WORKER_MAX_SOCKETS];
    size_t nbound;
    struct evhttp *metrics_http; /* on metrics_listen's socket, or NULL */
    struct evhttp_bound_socket *metrics_bound;
    struct event *signals[3];
    struct event *drain_timer;
    struct event *usage_timer;
    struct event *heartbeat_timer;
    struct event *access_log_timer;
    unsigned heartbeat_slot;
    struct timespec drain_deadline;
    struct timespec grace_end;
};

static long elapsed_ms_until(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (deadline->tv_sec - now.tv_sec) * 1000L + (deadline->tv_nsec - now.tv_nsec) / 1000000L;
}

static void drain_check(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker_runtime *rt = arg;
    if (rt->w.in_flight == 0 && streams_ending(rt->w.streams) == 0 &&
        elapsed_ms_until(&rt->grace_end) <= 0) {
        event_base_loopexit(rt->w.base, NULL);
        return;
    }
    if (elapsed_ms_until(&rt->drain_deadline) <= 0) {
        log_warn("drain timeout with %lu requests in flight", rt->w.in_flight);
        event_base_loopexit(rt->w.base, NULL);
    }
}

static void start_drain(struct worker_runtime *rt)
{
    if (rt->w.draining)
        return;
    rt->w.draining = true;
    intake_forget_listeners();
    streams_close_all(rt->w.streams); /* streams end now: clients reconnect elsewhere */
    for (size_t i = 0; i < rt->nbound; i++)
        evhttp_del_accept_socket(rt->w.http, rt->bound[i]);
    rt->nbound = 0;
    if (rt->metrics_bound != NULL)
        evhttp_del_accept_socket(rt->metrics_http, rt->metrics_bound);
    rt->metrics_bound = NULL;
    clock_gettime(CLOCK_MONOTONIC, &rt->drain_deadline);
    rt->grace_end = rt->drain_deadline;
    rt->grace_end.tv_nsec += DRAIN_GRACE_MS * 1000000L;
    rt->drain_deadline.tv_sec += rt->w.cfg->shutdown_timeout_ms / 1000;
    rt->drain_deadline.tv_nsec += (long)(rt->w.cfg->shutdown_timeout_ms % 1000) * 1000000L;
    log_debug("draining, %lu requests in flight", rt->w.in_flight);
    struct timeval every = {0, DRAIN_POLL_MS * 1000};
    rt->drain_timer = event_new(rt->w.base, -1, EV_PERSIST, drain_check, rt);
    event_add(rt->drain_timer, &every);
}

static void flush_usage(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_server *w = arg;
    usage_batch_tick(w->usage_batch, w->shm != NULL ? w->shm->usage : NULL);
}

static void start_usage_timer(struct worker_runtime *rt)
{
    struct timeval every = {0, USAGE_BATCH_FLUSH_MS * 1000};
    rt->usage_timer = event_new(rt->w.base, -1, EV_PERSIST, flush_usage, &rt->w);
    if (rt->usage_timer != NULL)
        event_add(rt->usage_timer, &every);
}

static void beat(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct worker_runtime *rt = arg;
    if (rt->w.shm != NULL)
        heartbeat_beat(rt->w.shm->heartbeat, rt->heartbeat_slot, heartbeat_now_ms());
    /* Follow the published snapshot between requests too (one atomic load
     * when nothing moved): an idle worker then holds the last good mapping
     * like a busy one, and serves from it even if state_dir goes away
     * before its next evaluation. */
    served_snapshot_current(rt->w.snapshot);
}

static void start_heartbeat(struct worker_runtime *rt)
{
    int64_t ms = heartbeat_interval_ms(rt->w.cfg->worker_stall_ms);
    struct timeval every = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    rt->heartbeat_timer = event_new(rt->w.base, -1, EV_PERSIST, beat, rt);
    if (rt->heartbeat_timer != NULL)
        event_add(rt->heartbeat_timer, &every);
    beat(-1, 0, rt);
}

static void flush_access_log(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    access_log_flush(arg);
}

/* access_log = off: none; to a file: a log whose buffer a timer writes. */
static void start_access_log(struct worker_runtime *rt, int fd)
{
    if (rt->w.cfg->access_log == CONFIG_ACCESS_LOG_OFF ||
        (fd < 0 && !log_enabled(LOG_LEVEL_INFO))) {
        if (fd >= 0)
            close(fd);
        return;
    }
    rt->w.access_log = access_log_new(fd);
    if (!access_log_buffered(rt->w.access_log))
        return;
    struct timeval every = {ACCESS_LOG_FLUSH_MS / 1000, (ACCESS_LOG_FLUSH_MS % 1000) * 1000};
    rt->access_log_timer =
        event_new(rt->w.base, -1, EV_PERSIST, flush_access_log, rt->w.access_log);
    if (rt->access_log_timer != NULL)
        event_add(rt->access_log_timer, &every);
}

static void on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    start_drain(arg);
}

static int setup_http(struct worker_runtime *rt, const int *fds, size_t nfds)
{
    struct http_server *w = &rt->w;
    w->http = evhttp_new(w->base);
    if (w->http == NULL)
        return -1;
    evhttp_set_max_body_size(w->http, (ev_ssize_t)w->cfg->max_body_bytes);
    evhttp_set_max_headers_size(w->http, (ev_ssize_t)w->cfg->max_header_bytes);
    evhttp_set_allowed_methods(w->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                            EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_timeout(w->http, 60);
    evhttp_set_gencb(w->http, http_dispatch, w);
    size_t max_connections = (size_t)w->cfg->max_connections_per_worker;
    if (intake_start(w, max_connections, w->cfg->request_timeout_ms) != 0)
        return -1;
    w->early = early_write_new(w->base, max_connections);
    if (w->early == NULL)
        return -1;
    evhttp_set_bevcb(w->http, query_method_bufferevent, NULL);
    for (size_t i = 0; i < nfds && rt->nbound < WORKER_MAX_SOCKETS; i++) {
        rt->bound[rt->nbound] = evhttp_accept_socket_with_handle(w->http, fds[i]);
        if (rt->bound[rt->nbound] == NULL)
            return -1;
        intake_add_listener(evhttp_bound_socket_get_listener(rt->bound[rt->nbound]));
        rt->nbound++;
    }
    return 0;
}

static int setup_metrics_http(struct worker_runtime *rt, int metrics_fd)
{
    if (metrics_fd < 0)
        return 0;
    rt->metrics_http = evhttp_new(rt->w.base);
    if (rt->metrics_http == NULL)
        return -1;
    evhttp_set_max_body_size(rt->metrics_http, 0);
    evhttp_set_max_headers_size(rt->metrics_http, (ev_ssize_t)rt->w.cfg->max_header_bytes);
    evhttp_set_allowed_methods(rt->metrics_http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_timeout(rt->metrics_http, 60);
    evhttp_set_gencb(rt->metrics_http, http_dispatch_metrics_listener, &rt->w);
    rt->metrics_bound = evhttp_accept_socket_with_handle(rt->metrics_http, metrics_fd);
    return rt->metrics_bound != NULL ? 0 : -1;
}

static void setup_signals(struct worker_runtime *rt)
{
    static const int stop_signals[3] = {SIGTERM, SIGINT, SIGQUIT};
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN); /* reloads are the master's business */
    for (size_t i = 0; i < 3; i++) {
        rt->signals[i] = evsignal_new(rt->w.base, stop_signals[i], on_stop_signal, rt);
        evsignal_add(rt->signals[i], NULL);
    }
}

static void teardown(struct worker_runtime *rt)
{
    for (size_t i = 0; i < 3; i++)
        if (rt->signals[i] != NULL)
            event_free(rt->signals[i]);
    if (rt->drain_timer != NULL)
        event_free(rt->drain_timer);
    if (rt->usage_timer != NULL)
        event_free(rt->usage_timer);
    if (rt->heartbeat_timer != NULL)
        event_free(rt->heartbeat_timer);
    if (rt->access_log_timer != NULL)
        event_free(rt->access_log_timer);
    flush_usage(-1, 0, &rt->w);
    usage_batch_free(rt->w.usage_batch);
    /* Joins the scrypt threads; what they had not handed back is answered
     * 503 now, while the connections still exist. */
    work_pool_free(rt->w.passwords);
    rt->w.passwords = NULL;
    streams_close_all(rt->w.streams);
    intake_forget_listeners(); /* evhttp_free frees them before the connections */
    if (rt->w.http != NULL)
        evhttp_free(rt->w.http);
    if (rt->metrics_http != NULL)
        evhttp_free(rt->metrics_http);
    early_write_free(rt->w.early); /* after evhttp_free: drops the last connections' references */
    access_log_free(rt->w.access_log); /* after the last answer: writes the buffer's rest */
    rt->w.access_log = NULL;
    streams_hub_free(rt->w.streams);
    intake_end();
    if (rt->w.db != NULL)
        db_close(rt->w.db);
    org_events_free(rt->w.org_events); /* after db_close: none of its reads is pending */
    free(rt->w.openapi_json);
    free(rt->w.api_doc);
    route_index_free(rt->w.route_index);
    served_snapshot_free(rt->w.snapshot);
    eval_scratch_free(rt->w.eval_scratch);
    ofrep_state_free(rt->w.ofrep);
    http_answer_pool_free(rt->w.answers); /* after evhttp_free: its blocks came home */
    if (rt->w.base != NULL)
        event_base_free(rt->w.base);
}

/*
 * The worker's event base. With the epoll changelist, event changes made
 * while handling a request are applied once at the next epoll_wait, so the
 * disable/enable pairs that evhttp makes around every request with a body
 * cancel out instead of costing an epoll_ctl each (about 5 us of a POST's
 * 30). libevent warns that the changelist is unsafe with fds cloned by
 * dup() in one process; a worker has none (the listening sockets are
 * inherited across fork, each registered once in this process's epoll).
 */
static struct event_base *new_event_base(void)
{
    struct event_config *config = event_config_new();
    if (config == NULL)
        return NULL;
    event_config_set_flag(config, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(config);
    event_config_free(config);
    return base;
}

/*
 * glibc returns the top of the heap to the kernel once 128 KB of it is
 * free (and serves blocks of 128 KB and more with mmap, the threshold
 * moving up as they are freed): a 1,000-flag list (libpq's result of a
 * few hundred KB, the 585 KB body) gave its pages back after every
 * request and faulted them in again on the next, a third of the worker's
 * time for that request. A worker keeps up to 64 MB of free heap instead
 * and takes blocks below 32 MB (the largest threshold glibc allows) from
 * the heap; its memory is then what its busiest moment needed.
 */
#define WORKER_TRIM_THRESHOLD (64 * 1024 * 1024)
#define WORKER_MMAP_THRESHOLD (32 * 1024 * 1024)

static void tune_malloc(void)
{
    mallopt(M_TRIM_THRESHOLD, WORKER_TRIM_THRESHOLD);
    mallopt(M_MMAP_THRESHOLD, WORKER_MMAP_THRESHOLD);
}

int worker_main(int index, unsigned heartbeat_slot, const struct config *cfg,
                struct shm_region *shm, const int *fds, size_t nfds, int metrics_fd, int ready_fd,
                int access_log_fd, const struct ui_files *ui)
{
    char role[32];
    snprintf(role, sizeof role, "worker %d", index);
    log_set_role(role);
    proctitle_set("ensignd: worker %d", index);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    tune_malloc();

    struct worker_runtime *rt = calloc(1, sizeof *rt);
    if (rt == NULL) {
        if (access_log_fd >= 0)
            close(access_log_fd);
        return EXIT_FAILURE;
    }
    rt->w.index = index;
    rt->heartbeat_slot = heartbeat_slot;
    rt->w.cfg = cfg;
    rt->w.shm = shm;
    rt->w.ui = ui;
    rt->w.routes = routes_table(&rt->w.route_count);
    rt->w.api_doc = apidoc_markdown(rt->w.routes, rt->w.route_count);
    rt->w.route_index = route_index_new(rt->w.routes, rt->w.route_count);
    rt->w.base = new_event_base();
    if (rt->w.base != NULL)
        start_access_log(rt, access_log_fd);
    else if (access_log_fd >= 0)
        close(access_log_fd);
    rt->w.eval_scratch = eval_scratch_new();
    rt->w.usage_batch = usage_batch_new();
    usage_batch_set_unknown(rt->w.usage_batch, shm != NULL ? shm->unknown : NULL);
    rt->w.snapshot = served_snapshot_new(cfg->state_dir, shm, rt->w.usage_batch);
    /* Map what is published now rather than at the first evaluation: a
     * worker then serves from its own mapping even if state_dir goes away
     * before that evaluation arrives (the last good snapshot stays served). */
    served_snapshot_current(rt->w.snapshot);
    rt->w.requests_served =
        shm != NULL && shm->header != NULL ? &shm->header->requests_served : NULL;
#ifndef ENSIGN_NO_METRICS_COUNTING /* benchmark builds only: measures what counting costs */
    rt->w.metrics = shm != NULL ? metrics_worker_block(shm->metrics, index) : NULL;
#endif
    int status = EXIT_FAILURE;
    if (rt->w.base != NULL && rt->w.eval_scratch != NULL && rt->w.usage_batch != NULL &&
        rt->w.snapshot != NULL && setup_http(rt, fds, nfds) == 0 &&
        setup_metrics_http(rt, metrics_fd) == 0) {
        intake_balance_join(shm != NULL ? shm->accept_balance : NULL, heartbeat_slot);
        http_bind_server(&rt->w);
        setup_signals(rt);
        start_usage_timer(rt);
        start_heartbeat(rt);
        rt->w.streams = streams_hub_new(&rt->w);
        rt->w.db = db_open(rt->w.base, cfg->database, cfg->statement_timeout_ms);
        rt->w.org_events = rt->w.db != NULL ? org_events_new(&rt->w) : NULL;
        rt->w.passwords = password_pool_new(rt->w.base); /* NULL: logins answer 503 */
        if (rt->w.metrics != NULL)
            db_count_errors(rt->w.db, &rt->w.metrics->database_errors);
        log_debug("serving on %zu sockets", nfds);
        if (ready_fd >= 0) { /* the master's READY=1 waits for this byte */
            ssize_t ignored = write(ready_fd, "r", 1);
            (void)ignored;
            close(ready_fd);
        }
        event_base_dispatch(rt->w.base);
        status = EXIT_SUCCESS;
    } else {
        log_error("cannot set up the HTTP server");
    }
    http_bind_server(NULL);
    teardown(rt);
    free(rt);
    return status;
}
