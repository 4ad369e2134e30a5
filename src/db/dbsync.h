/*
 * dbsync.h - small blocking libpq helpers for ensignctl and the background
 * processes (refresher, flusher) that may wait on PostgreSQL.
 *
 * Never used by a worker: a blocking call there would stall evaluation
 * (workers use db.h). SQL is always a constant with $n text parameters;
 * results come back in text format. Every failure fills a struct
 * dbsync_error so callers can both print a message and react to the
 * SQLSTATE (e.g. "23505" unique violation) and the constraint name.
 */
#ifndef ENSIGN_DBSYNC_H
#define ENSIGN_DBSYNC_H

#include <stdbool.h>
#include <stddef.h>

#include <libpq-fe.h>

#define DBSYNC_UNIQUE_VIOLATION "23505"

struct dbsync_error {
    char sqlstate[6];    /* "" when the server did not report one */
    char constraint[64]; /* violated constraint or index, else "" */
    char message[512];   /* one line, no trailing newline */
};

/*
 * Opens a connection with conninfo (a libpq connection string) and quiets
 * NOTICE messages. Returns NULL with the reason in error on failure.
 */
PGconn *dbsync_connect(const char *conninfo, struct dbsync_error *error);

/*
 * Runs sql with nparams text parameters (NULL values are SQL NULL). Returns
 * the result (caller PQclears it) when the command succeeded, or NULL with
 * error filled.
 */
PGresult *dbsync_exec(PGconn *conn, const char *sql, int nparams, const char *const *values,
                      struct dbsync_error *error);

/* dbsync_exec for statements whose result is not needed. 0 or -1. */
int dbsync_command(PGconn *conn, const char *sql, int nparams, const char *const *values,
                   struct dbsync_error *error);

/*
 * Runs a constant script of several statements separated by semicolons
 * (simple query protocol, no parameters): for the SQL compiled into the
 * binary, such as migrations, never for anything built from input. 0 or -1.
 */
int dbsync_script(PGconn *conn, const char *script, struct dbsync_error *error);

int dbsync_begin(PGconn *conn, struct dbsync_error *error);
int dbsync_commit(PGconn *conn, struct dbsync_error *error);
/* Best effort: a failed rollback leaves the connection to be closed. */
void dbsync_rollback(PGconn *conn);

/* Reads and drops whatever a pipeline still holds up to its sync point,
 * and leaves pipeline mode (nothing when conn is not in one). */
void dbsync_finish_pipeline(PGconn *conn);

/* Fills error from a failed result (NULL: from the connection's message). */
void dbsync_error_from_result(struct dbsync_error *error, const PGresult *res, PGconn *conn);

/* True when error carries the given SQLSTATE. */
bool dbsync_error_is(const struct dbsync_error *error, const char *sqlstate);

#endif
