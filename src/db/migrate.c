/*
 * migrate.c - brings a database up to the schema compiled into the binary.
 *
 * Invariants: migrations run in name order; each runs with its record in
 * schema_migrations inside one transaction, so it is applied exactly once
 * or not at all; concurrent runs serialize on a session-level advisory lock
 * (released before returning, or by the server when the session ends).
 * Called by `ensignctl migrate`.
 */
#include "db/migrate.h"

#include <stdbool.h>
#include <string.h>

#include "db/dbsync.h"

/* pg_advisory_lock key: the bytes of "ensign" read as a number. */
static const char sql_lock[] = "SELECT pg_advisory_lock(111525057095534)";
static const char sql_unlock[] = "SELECT pg_advisory_unlock(111525057095534)";

static const char sql_create_table[] = "CREATE TABLE IF NOT EXISTS schema_migrations ("
                                       " name text PRIMARY KEY,"
                                       " applied_at timestamptz NOT NULL DEFAULT now())";

static const char sql_applied[] = "SELECT name FROM schema_migrations";
static const char sql_record[] = "INSERT INTO schema_migrations (name) VALUES ($1)";

static bool already_applied(const PGresult *applied, const char *name)
{
    for (int row = 0; row < PQntuples(applied); row++)
        if (strcmp(PQgetvalue(applied, row, 0), name) == 0)
            return true;
    return false;
}

static int apply_one(PGconn *conn, const struct migration *m, struct dbsync_error *error)
{
    if (dbsync_begin(conn, error) != 0)
        return -1;
    const char *params[] = {m->name};
    if (dbsync_script(conn, m->sql, error) != 0 ||
        dbsync_command(conn, sql_record, 1, params, error) != 0) {
        dbsync_rollback(conn);
        return -1;
    }
    return dbsync_commit(conn, error);
}

/* Applies what is pending; the caller holds the lock. */
static int apply_pending(PGconn *conn, const struct migration *list, size_t count, FILE *out,
                         char *err, size_t errlen)
{
    struct dbsync_error error;
    if (dbsync_command(conn, sql_create_table, 0, NULL, &error) != 0) {
        snprintf(err, errlen, "cannot create schema_migrations: %s", error.message);
        return -1;
    }
    PGresult *applied = dbsync_exec(conn, sql_applied, 0, NULL, &error);
    if (applied == NULL) {
        snprintf(err, errlen, "cannot read schema_migrations: %s", error.message);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        if (already_applied(applied, list[i].name))
            continue;
        if (apply_one(conn, &list[i], &error) != 0) {
            snprintf(err, errlen, "migration %s failed: %s", list[i].name, error.message);
            rc = -1;
        } else {
            fprintf(out, "applied %s\n", list[i].name);
            fflush(out);
        }
    }
    PQclear(applied);
    return rc;
}

int migrate_apply_list(PGconn *conn, const struct migration *list, size_t count, FILE *out,
                       char *err, size_t errlen)
{
    struct dbsync_error error;
    if (dbsync_command(conn, sql_lock, 0, NULL, &error) != 0) {
        snprintf(err, errlen, "cannot take the migration lock: %s", error.message);
        return -1;
    }
    int rc = apply_pending(conn, list, count, out, err, errlen);
    (void)dbsync_command(conn, sql_unlock, 0, NULL, &error);
    return rc;
}

int migrate_apply(PGconn *conn, FILE *out, char *err, size_t errlen)
{
    return migrate_apply_list(conn, migrations, migration_count, out, err, errlen);
}
