/*
 * bgloop.c - see bgloop.h. Blocking libpq is fine here: these processes
 * serve no requests, so waiting on PostgreSQL stalls nobody.
 */
#include "daemon/bgloop.h"

#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "db/dbsync.h"
#include "base/log.h"

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

void bgloop_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop; /* no SA_RESTART: poll(2) must wake */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
}

bool bgloop_stopping(void)
{
    return stop_requested != 0;
}

long long bgloop_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void schedule_retry(struct bgloop *loop)
{
    loop->backoff_ms = loop->backoff_ms == 0 ? BACKOFF_FIRST_MS : loop->backoff_ms * 2;
    if (loop->backoff_ms > BACKOFF_MAX_MS)
        loop->backoff_ms = BACKOFF_MAX_MS;
    loop->retry_at_ms = bgloop_now_ms() + loop->backoff_ms;
}

bool bgloop_ensure_connected(struct bgloop *loop)
{
    if (loop->conn != NULL)
        return true;
    if (bgloop_now_ms() < loop->retry_at_ms)
        return false;
    struct dbsync_error error;
    loop->conn = dbsync_connect(loop->conninfo, &error);
    if (loop->conn != NULL && loop->listen_channel != NULL) {
        /* LISTEN takes an identifier, not a parameter: the channel is a
         * compile-time constant, never input. */
        char sql[96];
        snprintf(sql, sizeof sql, "LISTEN %s", loop->listen_channel);
        if (dbsync_command(loop->conn, sql, 0, NULL, &error) != 0) {
            PQfinish(loop->conn);
            loop->conn = NULL;
        }
    }
    if (loop->conn == NULL) {
        snprintf(loop->last_error, sizeof loop->last_error, "%.200s", error.message);
        if (loop->errors != NULL)
            atomic_fetch_add_explicit(loop->errors, 1, memory_order_relaxed);
        if (loop->backoff_ms == 0)
            log_warn("database unavailable: %s", error.message);
        schedule_retry(loop);
        return false;
    }
    loop->connections++;
    if (loop->backoff_ms != 0)
        log_info("database connection restored");
    loop->backoff_ms = 0;
    return true;
}

void bgloop_disconnect(struct bgloop *loop)
{
    if (loop->conn == NULL)
        return;
    snprintf(loop->last_error, sizeof loop->last_error, "connection lost: %.200s",
             PQerrorMessage(loop->conn));
    log_warn("database connection lost: %s", PQerrorMessage(loop->conn));
    if (loop->errors != NULL)
        atomic_fetch_add_explicit(loop->errors, 1, memory_order_relaxed);
    PQfinish(loop->conn);
    loop->conn = NULL;
    schedule_retry(loop);
}

static int drain_notifications(struct bgloop *loop)
{
    int count = 0;
    if (PQconsumeInput(loop->conn) == 0) {
        bgloop_disconnect(loop);
        return 0;
    }
    PGnotify *note;
    while ((note = PQnotifies(loop->conn)) != NULL) {
        count++;
        PQfreemem(note);
    }
    return count;
}

int bgloop_wait(struct bgloop *loop, int timeout_ms)
{
    if (stop_requested)
        return 0;
    /* A NOTIFY that arrived while a query ran (PostgreSQL sends it just
     * before the ReadyForQuery that ends the transaction) is already in
     * libpq's queue or input buffer: the socket has nothing new, so poll
     * would sleep through it. Act on those first. */
    if (loop->conn != NULL) {
        int queued = drain_notifications(loop);
        if (queued > 0 || loop->conn == NULL)
            return queued;
    }
    struct pollfd pfd = {.fd = loop->conn != NULL ? PQsocket(loop->conn) : -1, .events = POLLIN};
    int ready = poll(&pfd, 1, timeout_ms);
    if (ready > 0 && loop->conn != NULL)
        return drain_notifications(loop);
    return 0;
}
