/*
 * snapshot_source.h - the database side of the snapshot: what evaluation
 * needs, read from PostgreSQL and fed to the builder.
 *
 * Owns the SQL that reads environments, entity attributes, segments,
 * flags with their variants and per-environment configuration, rules and
 * unrevoked SDK keys, all in one REPEATABLE READ READ ONLY transaction
 * together with config_generation and the per-organization generations,
 * so a snapshot is always one consistent generation; and the choice of
 * which organizations' rows to read (those whose generation moved since
 * the caller's part of them). Blocking libpq (dbsync.h): called only by the refresher.
 */
#ifndef ENSIGN_SNAPSHOT_SOURCE_H
#define ENSIGN_SNAPSHOT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

struct snapshot_builder;

/* The current configuration generation (one cheap query, a statement
 * prepared on conn: prepare is true on a connection that has not prepared
 * it yet). 0 or -1 with err. */
int snapshot_source_generation(PGconn *conn, bool prepare, uint64_t *out, char *err,
                               size_t errlen);

/* One organization that has environments, as the read found it. */
struct snapshot_source_org {
    char id[64];                      /* uuid text */
    uint64_t generation;              /* config_org_generation of it */
    struct snapshot_builder *builder; /* its part, read again; NULL: the caller's
                                         part of this generation stands */
};

struct snapshot_source_result {
    uint64_t generation;              /* config_generation of what was read */
    struct snapshot_builder *index;   /* every environment and SDK key (no flags) */
    struct snapshot_source_org *orgs; /* sorted by id */
    size_t org_count;
};

/* True when the caller already holds organization org_id's part at this
 * generation, so the read skips its rows. */
typedef bool (*snapshot_source_held_fn)(void *ctx, const char *org_id, uint64_t generation);

/*
 * Reads, in one consistent transaction, the index (every environment and
 * unrevoked SDK key) and the parts of the organizations held() does not
 * already hold (held NULL: every one). The caller adds its parts to
 * out->index, writes the builders and frees out with
 * snapshot_source_result_free. 0, or -1 with a message in err and out
 * empty (the transaction is rolled back; check PQstatus(conn) to tell a
 * lost connection).
 */
int snapshot_source_read(PGconn *conn, snapshot_source_held_fn held, void *held_ctx,
                         struct snapshot_source_result *out, char *err, size_t errlen);

void snapshot_source_result_free(struct snapshot_source_result *r);

#endif
