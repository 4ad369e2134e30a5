/*
 * snapshot_chunk_table.h - the chunks the last publication names, per
 * chunked organization, as the writer (the refresher) keeps them in
 * memory (doc/choices.md "Chunks stored in packs").
 *
 * Owns, per chunked organization published, its header's generation and
 * its chunks: first key and extent (pack number, offset, length,
 * generation), in key order; the entries a build under way staged
 * (pending, applied by commit after its publication, dropped by discard
 * when it fails); and the flat list of every published chunk's extent (as
 * struct snapshot_part_file records: org, generation, pack file name,
 * offset, length), which the pack bookkeeping counts as live bytes
 * (snapshot_packs_set_chunks) and never deletes (snapshot_parts_set_chunks).
 *
 * Why in memory: a change in a chunked organization needs the boundaries
 * of its chunks (to pick the touched ones) and the extents of those it
 * keeps; reading them from the published header costs a read of the
 * header part on every change, and the live bytes of every pack need every
 * chunk's length at every publication. The table is small (a record per
 * chunk: a hundred for 100,000 flags) and is rebuilt at start from the
 * headers the start check reads anyway.
 *
 * Invariants: orgs sorted by org id, one entry each; every entry's chunks
 * count > 0, first keys strictly increasing from "". Called by the
 * refresher and the unit tests; knows no SQL.
 */
#ifndef ENSIGN_SNAPSHOT_CHUNK_TABLE_H
#define ENSIGN_SNAPSHOT_CHUNK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/snapshot.h"
#include "eval/snapshot_parts.h"

struct snapshot_chunked_org {
    char org[SNAPSHOT_PART_ORG_MAX];
    uint64_t generation;           /* its header's */
    char **first_keys;             /* owned, count of them */
    struct snapshot_chunk *chunks; /* extents (their first_key field unused) */
    size_t count;
};

struct snapshot_chunk_table {
    struct snapshot_chunked_org *orgs; /* published, sorted by org */
    size_t count;
    struct snapshot_chunked_org *pending; /* staged by the build under way */
    size_t pending_count;
    struct snapshot_part_file *extents; /* every published chunk, by org (NULL with a
                                           count: out of memory, unknown) */
    size_t extent_count;
    bool lost; /* an entry was forgotten (out of memory): extents stay unknown */
};

void snapshot_chunk_table_init(struct snapshot_chunk_table *t);

void snapshot_chunk_table_free(struct snapshot_chunk_table *t);

/* The published chunks of org, or NULL when it is not chunked. */
const struct snapshot_chunked_org *snapshot_chunk_table_find(const struct snapshot_chunk_table *t,
                                                             const char *org);

/* Stages org's chunks at generation (copied): they replace its entry at
 * commit; count 0 removes it (org written again unchunked). 0, or -1 out
 * of memory (nothing staged). */
int snapshot_chunk_table_stage(struct snapshot_chunk_table *t, const char *org, uint64_t generation,
                               const char *const *first_keys, const struct snapshot_chunk *chunks,
                               size_t count);

/* Stages the chunks a header part of org names (a header with none stages
 * nothing). 0, or -1 out of memory. */
int snapshot_chunk_table_stage_header(struct snapshot_chunk_table *t, const char *org,
                                      const struct snapshot *header);

/* The build under way failed: what it staged is dropped. */
void snapshot_chunk_table_discard(struct snapshot_chunk_table *t);

/* The build under way was published: what it staged replaces the entries
 * of those organizations (the later staging of one organization wins),
 * and the flat list of extents is made again. */
void snapshot_chunk_table_commit(struct snapshot_chunk_table *t);

/* Drops the entries of organizations whose part published (parts, count
 * of them, sorted by org) is missing or of another generation than their
 * entry's (deleted, or written again otherwise), and makes the flat list
 * of extents again. */
void snapshot_chunk_table_prune(struct snapshot_chunk_table *t,
                                const struct snapshot_part_file *parts, size_t count);

#endif
