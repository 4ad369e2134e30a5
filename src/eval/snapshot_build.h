/*
 * snapshot_build.h - the snapshot writer: plain data in, one file out.
 *
 * Owns the in-memory builder that the refresher feeds with rows it read
 * from PostgreSQL (the builder itself knows no SQL and links no libpq), the
 * compilation of conditions and serves into the file format of snapshot.h,
 * and the atomic publication of the file (write PATH.tmp, fsync, rename
 * over PATH, fsync the directory).
 *
 * Order of calls (each step may repeat; later steps rely on earlier ones):
 *   1. snapshot_builder_new(generation)
 *   2. snapshot_builder_add_environment() for every environment
 *   3. snapshot_builder_add_entity_attribute(), then
 *      snapshot_builder_add_segment() for every organization (segment
 *      conditions are compiled on the spot, with the entity data types
 *      known so far)
 *   4. snapshot_builder_add_flag() for every (flag, environment) row, and
 *      snapshot_builder_add_sdk_key() for every unrevoked key with an
 *      environment (any time after step 2)
 *   5. snapshot_builder_add_rule() for every rule, after its flag, in
 *      evaluation order within its (flag, environment): priority, then
 *      creation time
 *   6. snapshot_builder_write(), then snapshot_builder_free()
 * Adding an entity attribute or segment of an organization after a flag or
 * rule of that organization was added is refused (-1).
 *
 * Invariants: stored data that cannot resolve (a serve naming a missing
 * variant, a flag with no variants, an unparseable condition or serve, an
 * unknown operator) never fails the build; the flag (or the rule) is
 * compiled as broken and evaluates to error GENERAL. A segment condition
 * naming a segment that does not exist matches nothing (then `negate`
 * applies). The add functions return -1 only for misuse (unknown
 * environment, flag added twice, rule before its flag, wrong order) or out
 * of memory; snapshot_builder_error() then says why, and the builder stays
 * usable (the bad row is skipped).
 *
 * Implemented in snapshot_build.c (rows), snapshot_rules.c (the rule
 * compiler), snapshot_write.c (the file) and snapshot_containers.c, which
 * share snapshot_builder.h.
 *
 * Called by: the refresher (src/refresher.c), the unit tests and
 * contrib/bench-snapshot.c.
 */
#ifndef ENSIGN_SNAPSHOT_BUILD_H
#define ENSIGN_SNAPSHOT_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct snapshot_builder;
struct snapshot_chunk;

/* One variant of a flag: its key and its value as JSON text (jsonb output
 * is fine; it is validated and stored compact). */
struct snapshot_variant_input {
    const char *key;
    const char *value_json;
};

/* A new, empty builder for configuration generation `generation`; NULL when
 * out of memory. */
struct snapshot_builder *snapshot_builder_new(uint64_t generation);

void snapshot_builder_free(struct snapshot_builder *b);

/* The reason of the last -1 from an add or write function ("" if none). */
const char *snapshot_builder_error(const struct snapshot_builder *b);

/* ids are the uuid texts of the database; env_key e.g. "production". */
int snapshot_builder_add_environment(struct snapshot_builder *b, const char *env_id,
                                     const char *org_id, const char *env_key);

/* digest_hex: the 64 lowercase (or uppercase) hex characters of the key's
 * SHA-256 (sdk_keys.token_digest). Revoked keys are simply not added. */
int snapshot_builder_add_sdk_key(struct snapshot_builder *b, const char *digest_hex,
                                 const char *env_id);

/* An index's environments of one organization, appended without the
 * lookups of snapshot_builder_add_environment (for an index made whole at
 * every change: the refresher's catalog, snapshot_catalog.h). The ids come
 * from the database, unique; not checked. *first: the builder's index of
 * the first of them, for snapshot_builder_append_sdk_key. A builder given
 * environments this way takes no flags, and no environment or SDK key by
 * id (snapshot_builder_add_environment, _add_sdk_key). */
struct snapshot_env_input {
    const char *id, *key;
};
int snapshot_builder_append_environments(struct snapshot_builder *b, const char *org_id,
                                         const struct snapshot_env_input *envs, size_t count,
                                         uint32_t *first);

/* An SDK key of the environment of index env (from
 * snapshot_builder_append_environments). */
int snapshot_builder_append_sdk_key(struct snapshot_builder *b, const char *digest_hex,
                                    uint32_t env);

/* Index files (snapshot.h): organization org_id's flags are the length
 * bytes at offset (8-byte aligned) of the pack file file_name (a plain name
 * in the index's directory), whose header must carry generation. That
 * organization's environments then name the part and carry its
 * generation. At most one part per organization; any time before
 * snapshot_builder_write. */
int snapshot_builder_add_part(struct snapshot_builder *b, const char *org_id, const char *file_name,
                              uint64_t offset, uint64_t length, uint64_t generation);

/* A chunked organization's header (snapshot.h, "Chunks"): its flags are in
 * the chunk at extent (pack, offset, length; its first_key is ignored)
 * from first_key on, which must carry extent->generation. Chunks in byte
 * order of first_key, the first "". A builder given chunks takes no
 * flags. */
int snapshot_builder_add_chunk(struct snapshot_builder *b, const char *first_key,
                               const struct snapshot_chunk *extent);

/* data_type: "string", "number" or "boolean" (anything else: "string"). */
int snapshot_builder_add_entity_attribute(struct snapshot_builder *b, const char *org_id,
                                          const char *entity_key, const char *attr_key,
                                          const char *data_type);

/* conditions_json: the segment's conditions array as JSON text. */
int snapshot_builder_add_segment(struct snapshot_builder *b, const char *org_id,
                                 const char *segment_key, const char *conditions_json);

/* One (flag, environment) row. type: "boolean", "string", "number" or
 * "json". off_variant_key may be NULL. default_serve_json: the serve
 * object as JSON text. variants: the flag's variants in sort order. */
struct snapshot_flag_input {
    const char *env_id;
    const char *flag_id;
    const char *flag_key;
    const char *type;
    bool enabled;
    const char *off_variant_key;
    const char *default_serve_json;
    const struct snapshot_variant_input *variants;
    size_t variant_count;
};

int snapshot_builder_add_flag(struct snapshot_builder *b, const struct snapshot_flag_input *flag);

/* One rule of (flag_key, env_id), in evaluation order. conditions_json: the
 * conditions array as JSON text; serve_json: the serve object. */
int snapshot_builder_add_rule(struct snapshot_builder *b, const char *env_id, const char *flag_key,
                              const char *rule_id, const char *conditions_json,
                              const char *serve_json);

/* Writes the snapshot to path_final atomically (path_final.tmp, fsync,
 * rename, fsync of the directory). Returns 0, or -1 with a message in err
 * (the old file, if any, is left untouched). May be called once. */
int snapshot_builder_write(struct snapshot_builder *b, const char *path_final, char *err,
                           size_t errlen);

/* snapshot_builder_write without any fsync (temp file, rename): a visible
 * index (snapshot_index_files.h), made durable after it is published. */
int snapshot_builder_write_unsynced(struct snapshot_builder *b, const char *path_final, char *err,
                                    size_t errlen);

/* Writes the snapshot's bytes at offset of the open file fd (a pack file,
 * snapshot_packs.h), nothing else: no sync, no rename. *length is what was
 * written (the snapshot's total_size). 0, or -1 with err (bytes at and
 * after offset are then undefined). */
int snapshot_builder_write_at(struct snapshot_builder *b, int fd, uint64_t offset, uint64_t *length,
                              char *err, size_t errlen);

/* Writes count pieces (one writev, continued when partial) as the file
 * path_final, atomically and durably like snapshot_builder_write (temp
 * file, fsync, rename, fsync of the directory): for an index patched in
 * memory (snapshot_kept_index.h). 0, or -1 with err. */
struct iovec;
int snapshot_write_pieces(const char *path_final, const struct iovec *pieces, int count, char *err,
                          size_t errlen);

/* snapshot_write_pieces without any fsync (temp file, rename): a visible
 * index (snapshot_index_files.h), made durable after it is published. */
int snapshot_write_pieces_unsynced(const char *path_final, const struct iovec *pieces, int count,
                                   char *err, size_t errlen);

/* Counts of what was added (for logs and tests). */
size_t snapshot_builder_flag_count(const struct snapshot_builder *b);

#endif
