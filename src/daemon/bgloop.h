/*
 * bgloop.h - the shared skeleton of the background processes (refresher,
 * flusher): a blocking libpq connection kept alive with backoff, a wait
 * that wakes on a timer, a notification or a stop signal, and a stop flag
 * set by SIGTERM/SIGINT/SIGQUIT.
 */
#ifndef ENSIGN_BGLOOP_H
#define ENSIGN_BGLOOP_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct bgloop {
    const char *conninfo;
    const char *listen_channel; /* NULL: no LISTEN */
    PGconn *conn;               /* NULL while disconnected */
    unsigned long connections;  /* made so far: a new one holds no prepared statement */
    int backoff_ms;
    long long retry_at_ms;
    _Atomic uint64_t *errors; /* failed connections counted here (/metrics), or NULL */
    char last_error[256];     /* why the last connection failed or was lost */
};

/* Installs the stop-signal handlers (they only set a flag). */
void bgloop_install_signals(void);

/* True once a stop signal arrived. */
bool bgloop_stopping(void);

/* Connects (and LISTENs) if due; returns true when connected. */
bool bgloop_ensure_connected(struct bgloop *loop);

/* Drops the connection after a failure; the next connect backs off. */
void bgloop_disconnect(struct bgloop *loop);

/*
 * Sleeps up to timeout_ms, waking early on a NOTIFY or a stop signal.
 * Notifications libpq already holds (read while an earlier query ran) end
 * the wait at once, without sleeping. Returns the number consumed.
 */
int bgloop_wait(struct bgloop *loop, int timeout_ms);

long long bgloop_now_ms(void);

#endif
