/*
 * snapshot_catalog.h - the refresher's record of what the published
 * snapshot index holds, organization by organization, so a change re-reads
 * and re-adds only the organizations it touched (doc/choices.md,
 * "Incremental index and restart").
 *
 * Owns, per organization (sorted by id): the generation it was last read
 * at, its environments (id, key, in the order they were read) and the
 * unrevoked SDK keys (digest as 64 hex characters) of those environments.
 * An organization without environments is recorded too (a deleted one, or
 * one not set up yet), so it is not read again until its generation moves.
 * With the generation it is whole at (0 when not known): the watermark of
 * the next read (doc/choices.md, "Reading only the organizations that
 * moved").
 * All text lives in one arena; records refer to it by offset, so a
 * catalog is a handful of allocations whatever its size.
 *
 * Invariants: organizations are appended in strictly increasing id order
 * (strcmp, which is the uuid order of PostgreSQL); environments and keys
 * are appended to the last organization. A failed allocation makes the
 * catalog failed (every later call returns -1) and it must be freed.
 *
 * Filled by the database side (src/db/snapshot_source.c) from the rows of
 * the changed organizations and the previous catalog's unchanged ones, and
 * at start from the index file on disk (snapshot_catalog_load); fed into
 * the index builder by the refresher (src/daemon/refresher.c). Knows no
 * SQL.
 */
#ifndef ENSIGN_SNAPSHOT_CATALOG_H
#define ENSIGN_SNAPSHOT_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/snapshot_parts.h"

struct snapshot;
struct snapshot_builder;

struct snapshot_catalog_org {
    char id[SNAPSHOT_PART_ORG_MAX];
    uint64_t generation;
    size_t env_first, env_count; /* in envs */
    size_t key_first, key_count; /* in keys */
};

struct snapshot_catalog_env {
    size_t id, key; /* offsets in text */
};

struct snapshot_catalog_key {
    size_t digest, env_id; /* offsets in text */
};

struct snapshot_catalog {
    struct snapshot_catalog_org *orgs;
    size_t org_count, org_cap;
    struct snapshot_catalog_env *envs;
    size_t env_count, env_cap;
    struct snapshot_catalog_key *keys;
    size_t key_count, key_cap;
    char *text;
    size_t text_len, text_cap;
    /* The configuration generation it is whole at: every organization whose
     * generation is at most this one is in it as of that generation (or
     * has no environments), so the next read asks only for organizations
     * past it. 0: not known (the next read compares every organization). */
    uint64_t generation;
    bool failed;
};

void snapshot_catalog_init(struct snapshot_catalog *c);

/* Frees everything; c is empty (as after init) afterwards. */
void snapshot_catalog_free(struct snapshot_catalog *c);

/* The record of org_id, or NULL. */
const struct snapshot_catalog_org *snapshot_catalog_find(const struct snapshot_catalog *c,
                                                         const char *org_id);

/* Text at offset off of c's arena. */
static inline const char *snapshot_catalog_text(const struct snapshot_catalog *c, size_t off)
{
    return c->text + off;
}

/* Sets the generation of org_id's record in place (a change that moved
 * only its generation: its environments and keys are as recorded). -1
 * when c has no such organization. */
int snapshot_catalog_set_generation(struct snapshot_catalog *c, const char *org_id,
                                    uint64_t generation);

/* Appends an organization (its id above every one before it). */
int snapshot_catalog_add_org(struct snapshot_catalog *c, const char *org_id, uint64_t generation);

/* Appends an environment, or an SDK key of one, to the last organization. */
int snapshot_catalog_add_env(struct snapshot_catalog *c, const char *env_id, const char *key);
int snapshot_catalog_add_key(struct snapshot_catalog *c, const char *digest_hex,
                             const char *env_id);

/* Appends org (a record of src) whole: generation, environments, keys. */
int snapshot_catalog_copy_org(struct snapshot_catalog *c, const struct snapshot_catalog *src,
                              const struct snapshot_catalog_org *org);

/* Appends every organization's environments and their SDK keys to the
 * index builder b (snapshot_builder_append_environments: no lookups, so a
 * whole index of 10,000 organizations is made in milliseconds). A row b
 * refuses is counted in *skipped (the first refusal's message stays in b);
 * -1 only when b failed for good (out of memory). */
int snapshot_catalog_fill(const struct snapshot_catalog *c, struct snapshot_builder *b,
                          size_t *skipped);

/* Whether the part file `file` of organization org at generation is usable
 * (the shape of the check snapshot_catalog_load asks of each part). */
typedef bool (*snapshot_catalog_part_ok_fn)(void *ctx, const char *org, const char *file,
                                            uint64_t generation);

/*
 * Fills the empty c from an index (a validated mapping): one organization
 * per part that part_ok accepts, at the part's generation, with the
 * environments and SDK keys the index gives it, and appends each accepted
 * part to *parts (malloc'd, sorted by organization; *count of them), as
 * the published parts of that index. Organizations whose part is refused
 * are left out (they are read again): c's generation is the index's only
 * when every part is accepted, else 0 (the next read compares every
 * organization, so those left out are found). 0, or -1 when out of memory (c and
 * *parts freed).
 */
int snapshot_catalog_load(struct snapshot_catalog *c, const struct snapshot *index,
                          snapshot_catalog_part_ok_fn part_ok, void *ctx,
                          struct snapshot_part_file **parts, size_t *count);

#endif
