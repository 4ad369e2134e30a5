/*
 * migrate.h - applying the schema migrations compiled into the binary.
 *
 * Owns schema_migrations (name, applied_at): a migration whose name is
 * recorded there is never applied again. Each pending migration runs in its
 * own transaction together with its record, in name order, under a
 * session-level advisory lock so that concurrent runs serialize and the
 * second one finds nothing to do. Called by `ensignctl migrate`.
 */
#ifndef ENSIGN_MIGRATE_H
#define ENSIGN_MIGRATE_H

#include <stddef.h>
#include <stdio.h>

#include <libpq-fe.h>

/* One numbered file of sql/: its base name ("0001_init") and its text. */
struct migration {
    const char *name;
    const char *sql;
};

/* Generated from sql/[0-9]*.sql by build-aux/embed-sql (src/migrations.c),
 * sorted by name. */
extern const struct migration migrations[];
extern const size_t migration_count;

/*
 * Applies every pending migration on conn, printing "applied NAME" on out
 * for each one (nothing when none is pending). Returns 0, or -1 with the
 * reason in err; a failed migration is rolled back whole and later ones are
 * not attempted.
 */
int migrate_apply(PGconn *conn, FILE *out, char *err, size_t errlen);

/* The same with an explicit list (tests use their own). */
int migrate_apply_list(PGconn *conn, const struct migration *list, size_t count, FILE *out,
                       char *err, size_t errlen);

#endif
