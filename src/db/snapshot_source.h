/*
 * snapshot_source.h - the database side of the snapshot: what evaluation
 * needs, read from PostgreSQL and fed to the builder.
 *
 * Owns the SQL that reads environments, entity attributes, segments,
 * flags with their variants and per-environment configuration, rules and
 * unrevoked SDK keys, all in one REPEATABLE READ READ ONLY transaction
 * together with config_generation, so a snapshot is always one consistent
 * generation. Blocking libpq (dbsync.h): called only by the refresher.
 */
#ifndef ENSIGN_SNAPSHOT_SOURCE_H
#define ENSIGN_SNAPSHOT_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

struct snapshot_builder;

/* The current configuration generation (one cheap query). 0 or -1 with err. */
int snapshot_source_generation(PGconn *conn, uint64_t *out, char *err, size_t errlen);

/*
 * Reads the whole configuration into a new builder (the caller writes and
 * frees it); *generation receives the generation of what was read. NULL
 * with a message in err when a query failed (the transaction is rolled
 * back; check PQstatus(conn) to tell a lost connection).
 */
struct snapshot_builder *snapshot_source_read(PGconn *conn, uint64_t *generation, char *err,
                                              size_t errlen);

#endif
