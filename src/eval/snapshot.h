/*
 * snapshot.h - the snapshot file format and its reader.
 *
 * A snapshot is one read-only file, used in place after mmap: no pointers,
 * only offsets and indexes. Layout (all integers little-endian, fixed width,
 * every section 8-byte aligned):
 *
 *   struct snapshot_header        magic, format version, generation, sizes,
 *                                 checksum of every byte after the header,
 *                                 one {offset, count} per section
 *   sections (arrays of the records below):
 *     strings      NUL-terminated UTF-8, referenced by struct snapshot_str
 *     envs         environments, with their flag range and time boundaries
 *     sdk_keys     SHA-256 digests -> environment, sorted by digest
 *     flags        grouped by environment, sorted by key (byte order) inside
 *     variants     per flag, with the value JSON pre-serialized
 *     rules        per flag, in evaluation order
 *     serves       single variant, rollout, or invalid (error GENERAL);
 *                  variant indexes are relative to the flag's first variant
 *     items        rollout items {variant, weight}
 *     conds        compiled conditions (rules' and segments')
 *     values       typed condition values
 *     paths        attribute paths split on dots (struct snapshot_str each)
 *     segments     per organization, referenced by index from conditions
 *     patterns     PCRE2 pattern texts of `matches` values
 *     times        per environment the sorted, distinct instants (us since
 *                  the epoch) named by its `$currentTime` before/after
 *                  conditions (for the bulk ETag fast form)
 *     parts        index files only: per organization its part (an extent
 *                  of a pack file)
 *     chunks       a chunked organization's part only: its chunks (extents
 *                  of pack files) by first flag key (see below)
 *
 * Index and parts (doc/choices.md, "Incremental snapshots"): the file the
 * workers open first (snapshot.bin) is an index: the environments of every
 * organization and every SDK key, no flags, and a `parts` section naming
 * per organization the extent (pack file, offset, length) that holds its
 * flags (a snapshot of that one organization, in this same format, stored
 * in the pack as it would be in a file of its own; doc/choices.md "Pack
 * files") and the generation it must carry. An
 * index environment's `part` names its part; in a part (or a file written
 * without parts) it is SNAPSHOT_NONE. An environment's `generation` is its
 * organization's configuration generation (the file's own generation in a
 * file without parts).
 *
 * Chunks (doc/choices.md, "Chunks of a large organization"): the part of
 * a large organization may instead be a header: its environments,
 * attributes and segments, no flags, and a `chunks` section naming, in
 * byte order of their first flag key (the first is ""), the chunks that
 * hold its flags, each an extent (pack number, offset, length) of a pack
 * file (doc/choices.md "Chunks stored in packs"). A chunk is a part of
 * that organization in this same format holding
 * the flags whose keys fall in [its first key, the next chunk's first
 * key), with the generation the header names; the flags of a key are in
 * the last chunk whose first key is <= it (snapshot_chunk_find).
 *
 * Identical records and record sequences (variant lists, serves, rollout
 * items, conditions of a rule or segment, values, paths, patterns) are
 * stored once and shared; only flags and rules are one per row.
 *
 * Reader invariants: snapshot_open validates magic, version, size, checksum
 * and every offset and index before it returns 0, so lookups never check
 * bounds again; on failure nothing stays mapped or allocated. A struct
 * snapshot is immutable after open and owned by one worker (the compiled
 * PCRE2 patterns live beside the mapping, one set per worker per
 * generation). A worker opens the new file into a fresh struct and keeps
 * the old one if that fails.
 *
 * Called by: workers (src/eval/ofrep.c) and the evaluator (src/eval/eval.c);
 * written by the builder (snapshot_build.h; the file by snapshot_write.c).
 */
#ifndef ENSIGN_SNAPSHOT_H
#define ENSIGN_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAPSHOT_MAGIC "ENSIGNSS"
#define SNAPSHOT_MAGIC_LEN 8
#define SNAPSHOT_FORMAT_VERSION 4u
#define SNAPSHOT_NONE UINT32_MAX /* "no index" in any index field */
#define SNAPSHOT_DIGEST_LEN 32   /* raw SHA-256 */

/* A string: offset into the strings section and length in bytes (a NUL
 * follows every string). */
struct snapshot_str {
    uint32_t off;
    uint32_t len;
};

struct snapshot_section {
    uint64_t offset; /* from the start of the file */
    uint64_t count;  /* records (bytes for strings) */
};

enum snapshot_section_id {
    SNAPSHOT_SEC_STRINGS,
    SNAPSHOT_SEC_ENVS,
    SNAPSHOT_SEC_SDK_KEYS,
    SNAPSHOT_SEC_FLAGS,
    SNAPSHOT_SEC_VARIANTS,
    SNAPSHOT_SEC_RULES,
    SNAPSHOT_SEC_SERVES,
    SNAPSHOT_SEC_ITEMS,
    SNAPSHOT_SEC_CONDS,
    SNAPSHOT_SEC_VALUES,
    SNAPSHOT_SEC_PATHS,
    SNAPSHOT_SEC_SEGMENTS,
    SNAPSHOT_SEC_PATTERNS,
    SNAPSHOT_SEC_TIMES,
    SNAPSHOT_SEC_PARTS,
    SNAPSHOT_SEC_CHUNKS,
    SNAPSHOT_SEC_COUNT
};

struct snapshot_header {
    char magic[SNAPSHOT_MAGIC_LEN];
    uint32_t version;
    uint32_t header_size; /* sizeof(struct snapshot_header) */
    uint64_t generation;
    uint64_t total_size; /* of the whole file */
    uint64_t checksum;   /* snapshot_checksum() of bytes [header_size, total_size) */
    int64_t built_at_us; /* wall clock when written, us since the epoch */
    struct snapshot_section sections[SNAPSHOT_SEC_COUNT];
};

enum snapshot_flag_type {
    SNAPSHOT_TYPE_BOOLEAN,
    SNAPSHOT_TYPE_STRING,
    SNAPSHOT_TYPE_NUMBER,
    SNAPSHOT_TYPE_JSON,
    SNAPSHOT_TYPE_UNKNOWN /* stored type not understood: evaluates GENERAL */
};

struct snapshot_env {
    struct snapshot_str id;  /* environments.id */
    struct snapshot_str org; /* environments.org_id */
    struct snapshot_str key; /* e.g. "production" */
    uint32_t flag_first;     /* this environment's flags, sorted by key */
    uint32_t flag_count;
    uint32_t time_first; /* this environment's time boundaries */
    uint32_t time_count;
    uint32_t clock_opaque; /* 1: a condition uses $currentTime otherwise than
                              before/after/exists (see eval_bulk_etag) */
    uint32_t part;         /* index files: the part holding its flags, else NONE */
    uint64_t generation;   /* the organization's configuration generation */
};

/* Index files: one organization's part, an extent of a pack file
 * (snapshot_packs.h). */
struct snapshot_part {
    struct snapshot_str org;  /* organization id */
    struct snapshot_str file; /* the pack file's name inside the index's directory */
    uint64_t generation;      /* what the part's header must say */
    uint64_t offset;          /* of the part's first byte in the pack, 8-byte aligned */
    uint64_t length;          /* the part's bytes (its header's total_size) */
};

/* A chunked organization's header: one chunk of its flags, an extent of a
 * pack file like a part (doc/choices.md "Chunks stored in packs"). */
struct snapshot_chunk {
    struct snapshot_str first_key; /* "" for the first chunk */
    uint32_t pack;                 /* the pack file pack-<pack>.bin in the header's directory */
    uint32_t reserved;
    uint64_t generation; /* what the chunk's header must say */
    uint64_t offset;     /* of the chunk's first byte in the pack, 8-byte aligned */
    uint64_t length;     /* the chunk's bytes, inside the largest pack */
};

struct snapshot_sdk_key {
    uint8_t digest[SNAPSHOT_DIGEST_LEN];
    uint32_t env;
    uint32_t reserved;
};

struct snapshot_flag {
    struct snapshot_str key;
    struct snapshot_str id; /* flags.id */
    uint32_t env;
    uint32_t type; /* enum snapshot_flag_type */
    uint32_t enabled;
    uint32_t off_serve;     /* serve index: the off variant (or invalid) */
    uint32_t default_serve; /* serve index */
    uint32_t rule_first;
    uint32_t rule_count;
    uint32_t variant_first;
    uint32_t variant_count;
    uint32_t reserved;
};

struct snapshot_variant {
    struct snapshot_str key;
    struct snapshot_str value_json; /* compact JSON, copied as-is into answers */
};

struct snapshot_rule {
    struct snapshot_str id; /* rules.id */
    uint32_t cond_first;
    uint32_t cond_count;
    uint32_t serve;
    uint32_t broken; /* 1: a condition (or a segment it uses) cannot resolve */
};

enum snapshot_serve_kind { SNAPSHOT_SERVE_VARIANT, SNAPSHOT_SERVE_ROLLOUT, SNAPSHOT_SERVE_INVALID };

enum snapshot_serve_error {
    SNAPSHOT_SERVE_OK,
    SNAPSHOT_SERVE_NO_VARIANTS,     /* the flag has no variants */
    SNAPSHOT_SERVE_MISSING_VARIANT, /* names a variant the flag lacks */
    SNAPSHOT_SERVE_BAD_VALUE,       /* the variant's value is unusable */
    SNAPSHOT_SERVE_MALFORMED,       /* not a serve object */
    SNAPSHOT_SERVE_NO_OFF_VARIANT,  /* disabled, and no off variant set */
    SNAPSHOT_SERVE_UNKNOWN_TYPE     /* flag type not understood */
};

struct snapshot_serve {
    uint32_t kind;       /* enum snapshot_serve_kind */
    uint32_t error;      /* enum snapshot_serve_error when kind is INVALID */
    uint32_t variant;    /* kind VARIANT: index among the flag's variants */
    uint32_t item_first; /* rollout items (kind ROLLOUT) */
    uint32_t item_count;
    uint32_t bucket_path_first; /* bucketBy split on dots; count 0: targetingKey */
    uint32_t bucket_path_count;
    struct snapshot_str bucket_by; /* bucketBy as written ("" when absent) */
    uint32_t reserved;
    uint64_t total_weight; /* sum of the items' weights, > 0 */
};

struct snapshot_item {
    uint32_t variant; /* index among the flag's variants */
    uint32_t weight;
};

enum snapshot_cond_kind {
    SNAPSHOT_COND_ATTRIBUTE,
    SNAPSHOT_COND_SEGMENT,         /* segment: index into segments */
    SNAPSHOT_COND_MISSING_SEGMENT, /* names no segment: matches nothing */
    SNAPSHOT_COND_BROKEN           /* cannot resolve: the rule is broken */
};

enum snapshot_op {
    SNAPSHOT_OP_EQ,
    SNAPSHOT_OP_NEQ,
    SNAPSHOT_OP_IN,
    SNAPSHOT_OP_NOT_IN,
    SNAPSHOT_OP_CONTAINS,
    SNAPSHOT_OP_NOT_CONTAINS,
    SNAPSHOT_OP_STARTS_WITH,
    SNAPSHOT_OP_ENDS_WITH,
    SNAPSHOT_OP_MATCHES,
    SNAPSHOT_OP_GT,
    SNAPSHOT_OP_GTE,
    SNAPSHOT_OP_LT,
    SNAPSHOT_OP_LTE,
    SNAPSHOT_OP_SEMVER_EQ,
    SNAPSHOT_OP_SEMVER_GT,
    SNAPSHOT_OP_SEMVER_GTE,
    SNAPSHOT_OP_SEMVER_LT,
    SNAPSHOT_OP_SEMVER_LTE,
    SNAPSHOT_OP_BEFORE,
    SNAPSHOT_OP_AFTER,
    SNAPSHOT_OP_EXISTS,
    SNAPSHOT_OP_NOT_EXISTS,
    SNAPSHOT_OP_COUNT
};

/* How context values are read before comparison: as they are, or coerced
 * to an entity attribute's dataType. */
enum snapshot_data_type {
    SNAPSHOT_DATA_ANY,
    SNAPSHOT_DATA_STRING,
    SNAPSHOT_DATA_NUMBER,
    SNAPSHOT_DATA_BOOLEAN
};

#define SNAPSHOT_COND_NEGATE 1u
#define SNAPSHOT_COND_CASELESS 2u
#define SNAPSHOT_COND_CURRENT_TIME 4u /* the attribute is $currentTime */

struct snapshot_cond {
    uint32_t kind;                 /* enum snapshot_cond_kind */
    uint32_t op;                   /* enum snapshot_op */
    uint32_t flags;                /* SNAPSHOT_COND_* */
    uint32_t data_type;            /* enum snapshot_data_type */
    struct snapshot_str attribute; /* the whole key, looked up as-is first */
    uint32_t path_first;           /* then the key split on dots */
    uint32_t path_count;
    uint32_t value_first;
    uint32_t value_count;
    uint32_t segment;
    uint32_t reserved;
};

enum snapshot_value_type { SNAPSHOT_VALUE_STRING, SNAPSHOT_VALUE_NUMBER, SNAPSHOT_VALUE_BOOLEAN };

struct snapshot_value {
    uint32_t type;            /* enum snapshot_value_type */
    uint32_t pattern;         /* `matches`: index into patterns, else SNAPSHOT_NONE */
    struct snapshot_str text; /* strings (and semver/time values as written) */
    double number;
    int64_t integer;     /* numbers that are integers, exactly */
    uint32_t is_integer; /* numbers: `integer` holds the exact value */
    uint32_t boolean;
    int64_t time_us; /* before/after: the parsed instant */
};

struct snapshot_segment {
    struct snapshot_str org;
    struct snapshot_str key;
    uint32_t cond_first;
    uint32_t cond_count;
    uint32_t broken;
    uint32_t reserved;
};

struct snapshot_pattern {
    struct snapshot_str text;
    uint32_t caseless;
    uint32_t reserved;
};

struct snapshot_regexes; /* compiled PCRE2 patterns, private to snapshot.c */

/* An open snapshot. Fields are read-only for users; the section pointers
 * point into the mapping. */
struct snapshot {
    const unsigned char *base;
    size_t size;
    const struct snapshot_header *header;
    const char *strings;
    const struct snapshot_env *envs;
    const struct snapshot_sdk_key *sdk_keys;
    const struct snapshot_flag *flags;
    const struct snapshot_variant *variants;
    const struct snapshot_rule *rules;
    const struct snapshot_serve *serves;
    const struct snapshot_item *items;
    const struct snapshot_cond *conds;
    const struct snapshot_value *values;
    const struct snapshot_str *paths;
    const struct snapshot_segment *segments;
    const struct snapshot_pattern *patterns;
    const int64_t *times;
    const struct snapshot_part *parts;
    const struct snapshot_chunk *chunks;
    uint32_t counts[SNAPSHOT_SEC_COUNT];
    struct snapshot_regexes *regexes;
    bool borrowed; /* base is inside a mapping its caller owns (an extent) */
};

/* Maps and validates the file, compiles its patterns. Returns 0, or -1 with
 * a message in err and *out zeroed (nothing mapped, nothing allocated). */
int snapshot_open(const char *path, struct snapshot *out, char *err, size_t errlen);

/* Validates the snapshot of size bytes at base (an extent of a mapping the
 * caller owns and keeps for as long as *out is open; base 8-byte aligned)
 * and compiles its patterns, as snapshot_open does for a file. */
int snapshot_open_extent(const unsigned char *base, size_t size, struct snapshot *out, char *err,
                         size_t errlen);

/* Validates the snapshot of size bytes at base (8-byte aligned) as
 * snapshot_open does, without compiling its patterns or keeping anything;
 * *generation is its generation. 0, or -1 with err. */
int snapshot_check_extent(const unsigned char *base, size_t size, uint64_t *generation, char *err,
                          size_t errlen);

/* Unmaps (unless borrowed) and frees; safe on a zeroed struct; leaves *s
 * zeroed. */
void snapshot_close(struct snapshot *s);

uint64_t snapshot_generation(const struct snapshot *s);

/* The size of one record of section (SNAPSHOT_SEC_*; 1 for the strings). */
size_t snapshot_section_record_size(int section);

/* The string a reference names (NUL-terminated, inside the mapping). */
static inline const char *snapshot_string(const struct snapshot *s, struct snapshot_str ref)
{
    return s->strings + ref.off;
}

/* The environment an SDK key digest (64 hex characters, either case) may
 * evaluate, or NULL. Binary search. */
const struct snapshot_env *snapshot_env_by_sdk_digest(const struct snapshot *s,
                                                      const char *digest_hex);

/* The environment with this id (len bytes), or NULL. Linear: meant for a
 * part's few environments. */
const struct snapshot_env *snapshot_env_by_id(const struct snapshot *s, const char *env_id,
                                              size_t len);

/* The environment of an organization by key, or NULL (linear; not for the
 * hot path). */
const struct snapshot_env *snapshot_env_by_key(const struct snapshot *s, const char *org_id,
                                               const char *env_key);

/* A flag of env by key (len bytes, need not be NUL-terminated), or NULL.
 * Binary search. */
const struct snapshot_flag *snapshot_flag_by_key(const struct snapshot *s,
                                                 const struct snapshot_env *env, const char *key,
                                                 size_t len);

/* The flags of env in key byte order: returns the first, sets *count. */
const struct snapshot_flag *snapshot_env_flags(const struct snapshot *s,
                                               const struct snapshot_env *env, size_t *count);

/* The chunk of a header (s->counts[SNAPSHOT_SEC_CHUNKS] > 0) holding the
 * flags of key (len bytes): the last whose first key is <= key in byte
 * order. Binary search. */
uint32_t snapshot_chunk_find(const struct snapshot *s, const char *key, size_t len);

/* Whether chunk c's extent can be one of a pack (snapshot_open refuses a
 * header naming one that cannot: past the largest pack, unaligned, no
 * pack number). */
bool snapshot_chunk_extent_ok(const struct snapshot_chunk *c);

/* "boolean", "string", "number", "json" (or "unknown"). */
const char *snapshot_flag_type_name(uint32_t type);

/* The compiled pattern for a value's pattern index: an opaque pcre2_code *
 * (NULL when it failed to compile: the value matches nothing). */
const void *snapshot_regex(const struct snapshot *s, uint32_t pattern);

/* The file checksum: a fast 64-bit hash of len bytes (used by the writer
 * and the reader; not cryptographic). The incremental form gives the same
 * value for any split of the bytes. */
uint64_t snapshot_checksum(const void *data, size_t len);

struct snapshot_checksum_state {
    uint64_t lanes[4];
    unsigned char block[32];
    size_t block_len;
    uint64_t total_len;
};
void snapshot_checksum_init(struct snapshot_checksum_state *st);
void snapshot_checksum_update(struct snapshot_checksum_state *st, const void *data, size_t len);
uint64_t snapshot_checksum_final(const struct snapshot_checksum_state *st);

#endif
