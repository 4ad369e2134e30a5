/*
 * dbsync.c - blocking libpq helpers: connect, parameterized statements,
 * transactions, and error reports that keep the SQLSTATE.
 *
 * Owns nothing beyond the call: results go to the caller, connections are
 * closed by the caller with PQfinish. Used by ensignctl and the background
 * processes, never by a worker (see dbsync.h).
 */
#include "db/dbsync.h"

#include <stdio.h>
#include <string.h>

static void error_clear(struct dbsync_error *error)
{
    error->sqlstate[0] = '\0';
    error->constraint[0] = '\0';
    error->message[0] = '\0';
}

/* Copies text into error->message as one line without a trailing newline. */
static void error_set_message(struct dbsync_error *error, const char *text)
{
    snprintf(error->message, sizeof error->message, "%s", text ? text : "unknown error");
    size_t len = strcspn(error->message, "\n");
    error->message[len] = '\0';
}

void dbsync_error_from_result(struct dbsync_error *error, const PGresult *res, PGconn *conn)
{
    error_clear(error);
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    error_set_message(error, primary ? primary : PQerrorMessage(conn));
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state)
        snprintf(error->sqlstate, sizeof error->sqlstate, "%s", state);
    const char *constraint = res ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : NULL;
    if (constraint)
        snprintf(error->constraint, sizeof error->constraint, "%s", constraint);
}

/* NOTICE and INFO messages (e.g. "relation already exists, skipping") are
 * noise for a command-line tool; warnings still reach stderr. */
static void quiet_notices(void *arg, const PGresult *res)
{
    (void)arg;
    const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (severity && strcmp(severity, "WARNING") == 0)
        fprintf(stderr, "%s", PQresultErrorMessage(res));
}

PGconn *dbsync_connect(const char *conninfo, struct dbsync_error *error)
{
    error_clear(error);
    PGconn *conn = PQconnectdb(conninfo);
    if (conn == NULL) {
        error_set_message(error, "out of memory");
        return NULL;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        error_set_message(error, PQerrorMessage(conn));
        PQfinish(conn);
        return NULL;
    }
    PQsetNoticeReceiver(conn, quiet_notices, NULL);
    return conn;
}

PGresult *dbsync_exec(PGconn *conn, const char *sql, int nparams, const char *const *values,
                      struct dbsync_error *error)
{
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL, 0);
    ExecStatusType status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
        error_clear(error);
        return res;
    }
    dbsync_error_from_result(error, res, conn);
    PQclear(res);
    return NULL;
}

int dbsync_command(PGconn *conn, const char *sql, int nparams, const char *const *values,
                   struct dbsync_error *error)
{
    PGresult *res = dbsync_exec(conn, sql, nparams, values, error);
    if (res == NULL)
        return -1;
    PQclear(res);
    return 0;
}

int dbsync_script(PGconn *conn, const char *script, struct dbsync_error *error)
{
    PGresult *res = PQexec(conn, script);
    ExecStatusType status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) {
        error_clear(error);
        PQclear(res);
        return 0;
    }
    dbsync_error_from_result(error, res, conn);
    PQclear(res);
    return -1;
}

int dbsync_begin(PGconn *conn, struct dbsync_error *error)
{
    return dbsync_command(conn, "BEGIN", 0, NULL, error);
}

int dbsync_commit(PGconn *conn, struct dbsync_error *error)
{
    return dbsync_command(conn, "COMMIT", 0, NULL, error);
}

void dbsync_rollback(PGconn *conn)
{
    struct dbsync_error ignored;
    (void)dbsync_command(conn, "ROLLBACK", 0, NULL, &ignored);
}

bool dbsync_error_is(const struct dbsync_error *error, const char *sqlstate)
{
    return strcmp(error->sqlstate, sqlstate) == 0;
}

void dbsync_finish_pipeline(PGconn *conn)
{
    if (PQpipelineStatus(conn) == PQ_PIPELINE_OFF)
        return;
    for (int nulls = 0; nulls < 2 && PQstatus(conn) == CONNECTION_OK;) {
        PGresult *res = PQgetResult(conn);
        if (res == NULL) {
            nulls++;
            continue;
        }
        nulls = 0;
        bool sync = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
        PQclear(res);
        if (sync)
            break;
    }
    PQexitPipelineMode(conn);
}
