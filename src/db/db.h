/*
 * db.h - a worker's asynchronous PostgreSQL connection on its event base.
 *
 * Owns one libpq connection per worker, driven by libevent events on
 * PQsocket: connect (PQconnectStart/PQconnectPoll), reconnect with backoff
 * after a failure, statement_timeout set on every new session, and a FIFO of
 * parameterized queries (PQsendQueryParams; one in flight at a time). SQL is
 * always a constant with $n parameters: never build SQL from input.
 *
 * Every db_query callback runs exactly once, always from the event loop
 * (never inside db_query): with the result (a PGRES_FATAL_ERROR result
 * comes with its error text too: callers check PQresultStatus), or with
 * res == NULL and an error text when the database is unreachable or the
 * query failed at the connection level. The callback must not PQclear the
 * result: db.c clears it after the callback returns. While the connection
 * is down (after a failure, until the next session is ready), db_query
 * fails fast instead of queueing. Every session runs with TimeZone UTC and
 * DateStyle ISO (timestamptz text "2025-01-31 12:00:00.123+00", which
 * api/pgtime.c reads). Statements are prepared once per session (db.c).
 *
 * Not used on the evaluation path, and not linked into the core library.
 */
#ifndef ENSIGN_DB_H
#define ENSIGN_DB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <libpq-fe.h>

struct event_base;
struct db;

typedef void (*db_result_cb)(PGresult *res, const char *error, void *arg);

/* Starts connecting in the background; never blocks. */
struct db *db_open(struct event_base *base, const char *conninfo, int statement_timeout_ms);

/*
 * Where db counts its failures for /metrics (NULL: nowhere): each lost or
 * refused connection, and each statement that failed for a reason on the
 * server's side (SQLSTATE classes 08, 53, 57, 58, XX; not constraint
 * violations, which are answers).
 */
void db_count_errors(struct db *db, _Atomic uint64_t *counter);

/* Fails queued queries (callbacks run with res NULL, synchronously),
 * closes, frees. Not to be called from inside a db_query callback. */
void db_close(struct db *db);

/*
 * Queues sql with nparams text parameters (values copied; NULL is SQL NULL).
 * Results come back in text format. Returns 0, or -1 when the query cannot
 * even be queued (db NULL or closing, out of memory; the callback is then
 * not called). A full queue or a connection that is down is not -1: the
 * callback runs soon with res NULL.
 */
int db_query(struct db *db, const char *sql, int nparams, const char *const *values,
             db_result_cb cb, void *arg);

/*
 * The one listener of db's notifications (LISTEN is a db_query of the
 * caller's): cb(channel, payload, arg) for each NOTIFY the session
 * receives, and cb(NULL, NULL, arg) each time a new session is ready (the
 * previous session's LISTENs are gone, and notifications sent meanwhile
 * were missed). Replaces any earlier listener; cb NULL removes it.
 */
typedef void (*db_notify_cb)(const char *channel, const char *payload, void *arg);
void db_listen(struct db *db, db_notify_cb cb, void *arg);

/* A SQLSTATE of a failed result, or "" (e.g. "23505" unique violation). */
const char *db_sqlstate(const PGresult *res);

/* True when res is a successful result (PGRES_TUPLES_OK or PGRES_COMMAND_OK). */
bool db_result_ok(const PGresult *res);

/*
 * True when a failure is the database's state rather than the query's: no
 * result at all, or a SQLSTATE of class 08 (connection), 53 (resources),
 * 57 (operator intervention, statement_timeout included) or 40
 * (serialization, deadlock). Callers answer those 503, others 500.
 */
bool db_unavailable(const PGresult *res);

#endif
