/*
 * snapshot_builder.h - the snapshot builder's state, shared by its three
 * files (private to src/eval/snapshot_*.c; the API is snapshot_build.h).
 *
 * Owns struct snapshot_builder: the string table, the record tables and
 * the maps and caches that let identical input compile to the same index.
 * The builder is in three files, one concept each:
 *   snapshot_build.c  the builder's life, its string table and the rows
 *                     (environments, SDK keys, parts, entity attributes,
 *                     flags, rules);
 *   snapshot_rules.c  the rule compiler: JSON values, serves, conditions
 *                     and segments into their compiled records (the
 *                     operators from cond_ops.h);
 *   snapshot_write.c  the final ordering, the file layout, the checksum and
 *                     the atomic publication (temporary file, fsync,
 *                     rename).
 * Their containers are in snapshot_containers.h.
 *
 * Invariants: see snapshot_build.c.
 */
#ifndef ENSIGN_SNAPSHOT_BUILDER_H
#define ENSIGN_SNAPSHOT_BUILDER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_containers.h"

/* A flag row and its rules as added (linked in the order they came). */
struct builder_flag {
    struct snapshot_flag rec;
    uint32_t serve_signature; /* see add_variants */
    uint32_t rule_head;       /* first added rule, SNAPSHOT_NONE when none */
    uint32_t rule_tail;
};

struct builder_rule {
    struct snapshot_rule rec;
    uint32_t next;
};

/* What compiling a conditions list produced, cached by its text. */
struct cond_result {
    uint32_t first;
    uint32_t count;
    bool broken;
    bool opaque;         /* uses $currentTime otherwise than before/after/exists */
    uint32_t time_first; /* its $currentTime instants, in result_times */
    uint32_t time_count;
};

/* A $currentTime instant an environment's conditions name. */
struct env_time {
    uint32_t env;
    int64_t t;
};

/* A variant value, checked and compacted once per distinct text. */
struct json_value_entry {
    struct snapshot_str compact; /* len 0: not valid JSON */
    json_type type;
};

/* Bits of org_sealed: flags were added (no more attributes or segments);
 * a part was added (a second one is refused without a scan). */
#define ORG_SEALED 1u
#define ORG_HAS_PART 2u

/* The builder (opaque to users of snapshot_build.h). */
struct snapshot_builder {
    uint64_t generation;
    bool failed;
    char error[256];
    json_tokener *tok;
    struct vec strings; /* the string table (also the arena of string_map) */
    struct map string_map;
    struct vec envs;            /* struct snapshot_env */
    struct vec env_orgs;        /* uint32_t: the environment's organization index */
    struct map env_map;         /* env id -> index */
    struct map org_map;         /* org id -> organization index */
    struct vec org_sealed;      /* uint8_t per organization: ORG_SEALED | ORG_HAS_PART */
    struct vec sdk_keys;        /* struct snapshot_sdk_key */
    struct vec parts;           /* struct snapshot_part (index files) */
    struct vec part_orgs;       /* uint32_t: the part's organization index */
    struct vec chunks;          /* struct snapshot_chunk (a chunked organization's header) */
    struct vec flags;           /* struct builder_flag */
    uint32_t last_flag;         /* the flag of the last rule (a hint) */
    struct map flag_map;        /* env index + flag key -> flag index */
    struct vec rules;           /* struct builder_rule */
    struct vec segments;        /* struct snapshot_segment */
    struct vec segment_results; /* struct cond_result, per segment */
    struct map segment_map;     /* org index + segment key -> segment index */
    struct map attr_map;        /* org index + entity + NUL + attribute -> data type */
    struct table variants, serves, items, conds, values, paths, patterns;
    struct table variant_keys; /* variant key lists (not written): serve signatures */
    struct map json_cache;     /* value JSON text -> json_values index */
    struct vec json_values;    /* struct json_value_entry */
    struct map serve_cache;    /* variants signature + serve text -> serve index */
    struct map cond_cache;     /* org + context + conditions text -> cond_results index */
    struct vec cond_results;   /* struct cond_result */
    struct vec result_times;   /* int64_t */
    struct vec env_times;      /* struct env_time */
    struct vec keybuf;         /* scratch for composite keys */
    struct vec tmp_conds, tmp_values, tmp_paths, tmp_items; /* sequences being built */
    struct vec pending_times; /* int64_t: $currentTime instants of the row */
    bool pending_opaque;
};

/* ---- snapshot_build.c: errors, strings and keys, organizations ---- */

/* Records the error message; returns -1. */
int builder_fail(struct snapshot_builder *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Sets the sticky failure ("out of memory"); returns -1. */
int out_of_memory(struct snapshot_builder *b);

/* table_intern, failing the builder when out of memory. */
uint32_t intern_records(struct snapshot_builder *b, struct table *t, const void *recs,
                        size_t count);

/* The string's reference in the table, adding it once; {0, 0} ("") and a
 * sticky failure when out of memory. */
struct snapshot_str intern_bytes(struct snapshot_builder *b, const char *text, size_t len);

/* intern_bytes of a NUL-terminated text. */
struct snapshot_str intern(struct snapshot_builder *b, const char *text);

/* The text of a string-table reference (NUL-terminated). */
const char *builder_string(const struct snapshot_builder *b, struct snapshot_str ref);

/* A composite key in keybuf: the bytes of head (head_len), then the parts
 * separated by NUL bytes (second may be NULL). */
const char *compose_key(struct snapshot_builder *b, const void *head, size_t head_len,
                        const char *first, const char *second, size_t *len);

/* compose_key with a uint32 index (an organization, an environment) as
 * the head. */
const char *indexed_key(struct snapshot_builder *b, uint32_t index, const char *first,
                        const char *second, size_t *len);

/* The value of key (len bytes; NULL finds nothing) into *out. */
bool lookup_index(const struct map *m, const char *key, size_t len, uint32_t *out);

/* lookup_index of a NUL-terminated text. */
bool lookup_text(const struct map *m, const char *text, uint32_t *out);

/* Remembers key -> value in a cache map (keys in its own arena). */
void cache_put(struct snapshot_builder *b, struct map *m, const char *key, size_t len,
               uint32_t value);

/* The index of organization org_id, added when new; -1 when out of
 * memory. */
int org_index(struct snapshot_builder *b, const char *org_id, uint32_t *out);

/* Whether flags of organization org were added already. */
bool org_sealed(const struct snapshot_builder *b, uint32_t org);

/* Each environment's part (its organization's, if any) and generation. */
bool link_env_parts(struct snapshot_builder *b);

/* ---- snapshot_rules.c: the rule compiler ---- */

/* A variant value: validated and compacted once per distinct text. */
const struct json_value_entry *json_value(struct snapshot_builder *b, const char *text);

/* SNAPSHOT_TYPE_* of an API flag type name, SNAPSHOT_TYPE_UNKNOWN. */
uint32_t flag_type_from_text(const char *type);

/* Whether a variant value of JSON type value fits the flag type. */
bool value_fits_type(json_type value, uint32_t flag_type);

/* Compiles a serve object given as JSON text for flag f; returns its serve
 * index. The result depends only on the text, the flag's type and its
 * variant keys (when every value is usable), so it is cached by those:
 * signature names f's key list, SNAPSHOT_NONE disables the cache. */
uint32_t compile_serve(struct snapshot_builder *b, const struct snapshot_flag *f,
                       uint32_t signature, const char *serve_json);

/* The serve of the off variant (or the serve error saying why none). */
uint32_t compile_off_serve(struct snapshot_builder *b, const struct snapshot_flag *f,
                           const char *off_variant_key);

/* Compiles a conditions array (once per distinct text in an organization)
 * and notes its clock use as pending; returns the result. */
struct cond_result compile_conditions(struct snapshot_builder *b, uint32_t org, const char *json,
                                      bool in_segment);

/* Forgets the $currentTime use noted for the row being added. */
void reset_pending_clock(struct snapshot_builder *b);

/* Adds the row's noted $currentTime use to environment env_index. */
void flush_pending_clock(struct snapshot_builder *b, uint32_t env_index);

#endif
