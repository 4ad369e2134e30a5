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
 * the caller's catalog of them, snapshot_catalog.h). Blocking libpq (dbsync.h): called only by the
 * refresher.
 */
#ifndef ENSIGN_SNAPSHOT_SOURCE_H
#define ENSIGN_SNAPSHOT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "eval/snapshot_catalog.h"

struct snapshot_builder;

/* The current configuration generation (one cheap query, a statement
 * prepared on conn: prepare is true on a connection that has not prepared
 * it yet). 0 or -1 with err. */
int snapshot_source_generation(PGconn *conn, bool prepare, uint64_t *out, char *err, size_t errlen);

/* One chunk of a chunked organization (doc/choices.md "Chunks of a large
 * organization"), in key order: read again (builder) or kept (kept set:
 * the extent and generation the caller's published header names, which
 * this file only carries back). */
struct snapshot_source_chunk {
    char *first_key;                  /* owned; "" for the first */
    struct snapshot_builder *builder; /* read again: its flags; NULL: kept */
    bool kept;
    uint32_t pack; /* kept: the pack number, offset and length of its extent */
    uint64_t offset;
    uint64_t length;
    uint64_t generation;
};

struct snapshot_source_chunks {
    struct snapshot_source_chunk *items; /* owned */
    size_t count;
};

void snapshot_source_chunks_free(struct snapshot_source_chunks *c);

/* The chunks of org the caller publishes (its header's), into *out (empty
 * when org is not chunked); 0, or -1 out of memory. */
typedef int (*snapshot_source_held_chunks_fn)(void *ctx, const char *org,
                                              struct snapshot_source_chunks *out);

/* How organizations are chunked: size flags a chunk (0: none is chunked
 * unless held says it is), held the caller's published chunks. */
struct snapshot_source_chunking {
    size_t size;
    snapshot_source_held_chunks_fn held;
    void *ctx;
};

/* One organization that has environments (in a patch: one whose
 * generation moved, with environments or not), as the read found it. */
struct snapshot_source_org {
    char id[64];                          /* uuid text */
    uint64_t generation;                  /* config_org_generation of it */
    struct snapshot_builder *builder;     /* its part, read again; NULL: the caller's
                                             part of this generation stands, or
                                             (written) part_done wrote it */
    bool read;                            /* read again (its builder made per batch) */
    bool written;                         /* handed to part_done (builder freed) */
    size_t flag_count;                    /* flag configurations read (when read again) */
    struct snapshot_source_chunks chunks; /* chunked: builder is the header (no
                                             flags), each chunk's flags here */
    size_t chunks_read;                   /* of them, read again */
};

/* The most flags, and organizations, of one batch when a read goes in
 * batches (an organization larger than that is one batch); it holds the
 * rows of two batches at once. */
#define SNAPSHOT_SOURCE_BATCH_FLAGS 20000
#define SNAPSHOT_SOURCE_BATCH_ORGS 1024

/* Writes the part of org (org->builder) as it is read; 0, or -1 with a
 * message in err (the read fails). */
typedef int (*snapshot_source_part_fn)(void *ctx, const struct snapshot_source_org *org, char *err,
                                       size_t errlen);

struct snapshot_source_result {
    uint64_t generation;              /* config_generation of what was read */
    struct snapshot_builder *index;   /* every environment and SDK key (no flags) */
    struct snapshot_source_org *orgs; /* sorted by id */
    size_t org_count;
    size_t generation_rows;          /* organization generations read */
    struct snapshot_catalog catalog; /* every organization as read now (the
                                        caller's next held catalog) */
    bool patch;                      /* the organizations that moved kept their environments
                                        and SDK keys: orgs is only those (read again when they
                                        have environments), catalog and index are not made;
                                        the caller applies their generations to its catalog and
                                        index (snapshot_kept_index.h) */
};

/*
 * Reads, in one consistent transaction, the organizations whose generation
 * differs from the one held (held NULL: every one): their environments, SDK
 * keys and the rows of their parts; and makes the new catalog (held's
 * unchanged organizations and those read, whole at out->generation) and
 * the index builder filled from it. When held is whole at a generation
 * (held->generation > 0) only the generation rows past it are read; when
 * the database's generation is below it, all of them. With part_done,
 * each part read is handed to it as soon as it is built and its builder
 * freed (org->written), and when many organizations are read (every one,
 * on a first build) they are read a batch at a time, the next batch read
 * on a thread while the current one is built, so memory holds the rows of
 * two batches (SNAPSHOT_SOURCE_BATCH_FLAGS) and the builders of one;
 * without, the builders stay in out.
 * With chunking and part_done, an organization of more than twice
 * chunking->size flags, or one the caller holds in chunks, is read in
 * chunks by flag key: whole when nothing is held or its whole_generation
 * moved past the held generation (sql/0021), else only the chunks covering
 * the flag keys changed since (config_flag_generation), each split past
 * twice the size or dropped when empty (snapshot_chunks.h); org->builder
 * is then its header and org->chunks its chunks.
 * The caller adds its parts to out->index, writes the builders, may take
 * out->catalog (moving it out and re-initializing it) and frees out with
 * snapshot_source_result_free. 0, or -1 with a message in err and out
 * empty (the transaction is rolled back; check PQstatus(conn) to tell a
 * lost connection).
 * With patch (the caller keeps the index of held and can patch it), a
 * read of a few organizations whose environments and SDK keys are as held
 * records them is a patch (out->patch), made without copying the catalog.
 */
int snapshot_source_read(PGconn *conn, const struct snapshot_catalog *held, bool patch,
                         snapshot_source_part_fn part_done, void *part_ctx,
                         const struct snapshot_source_chunking *chunking,
                         struct snapshot_source_result *out, char *err, size_t errlen);

void snapshot_source_result_free(struct snapshot_source_result *r);

#endif
