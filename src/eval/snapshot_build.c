/*
 * snapshot_build.c - the snapshot writer (see snapshot_build.h).
 *
 * Owns: growable arrays and hash maps private to the builder, the string
 * table, the record tables, the compilation of conditions, segments and
 * serves, and the file layout and atomic publication.
 *
 * Invariants: every record in the builder's tables is already in file form
 * (indexes, not pointers). Strings, and records or record sequences of the
 * shared tables (variant lists, serves, rollout items, condition lists,
 * values, paths, patterns), are stored once: identical input compiles to
 * the same index, and compiled serves and condition lists are cached by
 * their JSON text. Flags and rules are one per row and are reordered at
 * write time (flags by environment then key; each flag's rules made
 * contiguous, in the order they were added). A failed allocation sets a
 * sticky error: later calls return -1 and nothing is written.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "snapshot_build.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "eval.h"
#include "hex.h"
#include "isotime.h"
#include "cond_ops.h"
#include "semver.h"
#include "snapshot.h"

#define MAX_ROLLOUT_ITEMS 64
#define MAX_ROLLOUT_WEIGHT 1000000

/* ------------------------------------------------------------------ */
/* Big blocks: mapped memory that grows with mremap (no copying, no second
 * round of page faults) and asks for transparent huge pages. A snapshot of
 * 100,000 flags touches a few hundred megabytes while building. */

#define BIG_BLOCK_BYTES ((size_t)1 << 20)

static void advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (bytes >= 2 * BIG_BLOCK_BYTES)
        (void)madvise(p, bytes, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

/* A zeroed block of bytes; from malloc below BIG_BLOCK_BYTES, mapped above. */
static void *block_alloc(size_t bytes)
{
    if (bytes < BIG_BLOCK_BYTES)
        return calloc(1, bytes);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    advise_huge(p, bytes);
    return p;
}

static void block_free(void *p, size_t bytes)
{
    if (p == NULL)
        return;
    if (bytes < BIG_BLOCK_BYTES)
        free(p);
    else
        munmap(p, bytes);
}

/* Resizes a block from old_bytes to new_bytes (larger), keeping its
 * contents; NULL when out of memory (the old block is kept). */
static void *block_grow(void *p, size_t old_bytes, size_t new_bytes)
{
    if (new_bytes < BIG_BLOCK_BYTES)
        return realloc(p, new_bytes);
    if (old_bytes >= BIG_BLOCK_BYTES) {
        void *q = mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE);
        if (q == MAP_FAILED)
            return NULL;
        advise_huge(q, new_bytes);
        return q;
    }
    void *q = block_alloc(new_bytes);
    if (q != NULL && p != NULL) {
        memcpy(q, p, old_bytes);
        free(p);
    }
    return q;
}

/* ------------------------------------------------------------------ */
/* Growable arrays */

struct vec {
    unsigned char *data;
    size_t len; /* elements */
    size_t cap;
    size_t size; /* bytes per element */
};

static void vec_init(struct vec *v, size_t size)
{
    memset(v, 0, sizeof *v);
    v->size = size;
}

static bool vec_reserve(struct vec *v, size_t extra)
{
    if (v->len + extra <= v->cap)
        return true;
    size_t cap = v->cap ? v->cap : 16;
    while (cap < v->len + extra)
        cap *= 2;
    void *data = block_grow(v->data, v->cap * v->size, cap * v->size);
    if (data == NULL)
        return false;
    v->data = data;
    v->cap = cap;
    return true;
}

/* A new zeroed element, or NULL when out of memory. */
static void *vec_push(struct vec *v)
{
    if (!vec_reserve(v, 1))
        return NULL;
    void *at = v->data + v->len++ * v->size;
    memset(at, 0, v->size);
    return at;
}

static bool vec_append(struct vec *v, const void *data, size_t count)
{
    if (count == 0)
        return true;
    if (!vec_reserve(v, count))
        return false;
    memcpy(v->data + v->len * v->size, data, count * v->size);
    v->len += count;
    return true;
}

/* An element, or NULL for an empty vec that has no storage yet (NULL + 0
 * is undefined behaviour in C). */
static void *vec_at(const struct vec *v, size_t i)
{
    return v->data != NULL ? v->data + i * v->size : NULL;
}

static void vec_free(struct vec *v)
{
    block_free(v->data, v->cap * v->size);
    vec_init(v, v->size);
}

/* ------------------------------------------------------------------ */
/* Hash maps: byte-string keys living in an arena (a vec) to uint32
 * values; open addressing, load at most one half. */

struct map_slot {
    uint32_t tag;     /* 0: empty; else the hash's high half, low bit set; the
                         other 31 bits choose the slot */
    uint32_t key_off; /* bytes into the arena */
    uint32_t key_len;
    uint32_t value;
};

struct map {
    struct map_slot *slots;
    size_t cap; /* power of two */
    size_t count;
    struct vec *arena; /* where keys live */
    struct vec own_arena;
};

static void map_init(struct map *m, struct vec *shared_arena)
{
    memset(m, 0, sizeof *m);
    vec_init(&m->own_arena, 1);
    m->arena = shared_arena ? shared_arena : &m->own_arena;
}

static void map_free(struct map *m)
{
    block_free(m->slots, m->cap * sizeof *m->slots);
    vec_free(&m->own_arena);
    m->slots = NULL;
}

#define HASH_K1 UINT64_C(0x9e3779b97f4a7c15)
#define HASH_K2 UINT64_C(0xbf58476d1ce4e5b9)

static uint64_t hash_key(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = len * HASH_K2, w;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        h = ((h ^ (w * HASH_K1)) << 29 | (h ^ (w * HASH_K1)) >> 35) * HASH_K2;
    }
    w = 0;
    memcpy(&w, p, len);
    h = (h ^ (w * HASH_K1)) * HASH_K2;
    h ^= h >> 32; /* avalanche, so that the low bits used as index depend on every byte */
    h *= HASH_K1;
    h ^= h >> 29;
    h *= HASH_K2;
    return h ^ (h >> 32);
}

static uint32_t hash_tag(uint64_t h)
{
    return (uint32_t)(h >> 32) | 1u;
}

static struct map_slot *map_find(const struct map *m, const void *key, size_t len)
{
    if (m->cap == 0)
        return NULL;
    uint32_t tag = hash_tag(hash_key(key, len));
    for (size_t i = (tag >> 1) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct map_slot *slot = &m->slots[i];
        if (slot->tag == 0)
            return NULL;
        if (slot->tag == tag && slot->key_len == len &&
            memcmp(m->arena->data + slot->key_off, key, len) == 0)
            return slot;
    }
}

static struct map_slot *map_place(struct map_slot *slots, size_t cap, const struct map_slot *entry)
{
    size_t i = (entry->tag >> 1) & (cap - 1);
    while (slots[i].tag != 0)
        i = (i + 1) & (cap - 1);
    slots[i] = *entry;
    return &slots[i];
}

static bool map_grow(struct map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct map_slot *slots = block_alloc(cap * sizeof *slots);
    if (slots == NULL)
        return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].tag != 0)
            map_place(slots, cap, &m->slots[i]);
    block_free(m->slots, m->cap * sizeof *m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

/* Indexes a key whose bytes are already in the arena at key_off. */
static struct map_slot *map_insert(struct map *m, size_t key_off, size_t key_len, uint32_t value)
{
    if (key_off + key_len > UINT32_MAX || ((m->count + 1) * 2 > m->cap && !map_grow(m)))
        return NULL;
    struct map_slot entry = {hash_tag(hash_key(m->arena->data + key_off, key_len)),
                             (uint32_t)key_off, (uint32_t)key_len, value};
    m->count++;
    return map_place(m->slots, m->cap, &entry);
}

/* Adds a key known to be absent, appending its bytes and a NUL to the
 * arena. */
static struct map_slot *map_add(struct map *m, const void *key, size_t len, uint32_t value)
{
    size_t off = m->arena->len;
    if (!vec_reserve(m->arena, len + 1))
        return NULL;
    vec_append(m->arena, key, len);
    vec_append(m->arena, "", 1);
    return map_insert(m, off, len, value);
}

/* ------------------------------------------------------------------ */
/* Record tables: a section's records, each distinct sequence stored once. */

struct table {
    struct vec recs;
    struct map index; /* record bytes -> index of the first record */
};

static void table_init(struct table *t, size_t record_size)
{
    vec_init(&t->recs, record_size);
    map_init(&t->index, &t->recs);
}

static void table_free(struct table *t)
{
    map_free(&t->index);
    vec_free(&t->recs);
}

/* The index of count records equal to recs, adding them when new;
 * SNAPSHOT_NONE when out of memory. */
static uint32_t table_intern(struct table *t, const void *recs, size_t count)
{
    if (count == 0)
        return 0;
    size_t bytes = count * t->recs.size;
    const struct map_slot *slot = map_find(&t->index, recs, bytes);
    if (slot != NULL)
        return slot->value;
    size_t first = t->recs.len;
    if (!vec_append(&t->recs, recs, count) ||
        map_insert(&t->index, first * t->recs.size, bytes, (uint32_t)first) == NULL)
        return SNAPSHOT_NONE;
    return (uint32_t)first;
}

static const void *table_at(const struct table *t, size_t i)
{
    return vec_at(&t->recs, i);
}

/* ------------------------------------------------------------------ */
/* The builder */

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

struct env_time {
    uint32_t env;
    int64_t t;
};

struct json_value_entry {
    struct snapshot_str compact; /* len 0: not valid JSON */
    json_type type;
};

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
    struct vec org_sealed;      /* uint8_t per organization: flags were added */
    struct vec sdk_keys;        /* struct snapshot_sdk_key */
    struct vec parts;           /* struct snapshot_part (index files) */
    struct vec part_orgs;       /* uint32_t: the part's organization index */
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

static int builder_fail(struct snapshot_builder *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int builder_fail(struct snapshot_builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->error, sizeof b->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int out_of_memory(struct snapshot_builder *b)
{
    b->failed = true;
    return builder_fail(b, "out of memory");
}

/* Every vec of the builder with its record size, for init and free. */
#define BUILDER_VECS(X)                                                                            \
    X(strings, 1)                                                                                  \
    X(envs, sizeof(struct snapshot_env))                                                           \
    X(env_orgs, sizeof(uint32_t))                                                                  \
    X(org_sealed, sizeof(uint8_t))                                                                 \
    X(sdk_keys, sizeof(struct snapshot_sdk_key))                                                   \
    X(parts, sizeof(struct snapshot_part))                                                         \
    X(part_orgs, sizeof(uint32_t))                                                                 \
    X(flags, sizeof(struct builder_flag))                                                          \
    X(rules, sizeof(struct builder_rule))                                                          \
    X(segments, sizeof(struct snapshot_segment))                                                   \
    X(segment_results, sizeof(struct cond_result))                                                 \
    X(json_values, sizeof(struct json_value_entry))                                                \
    X(cond_results, sizeof(struct cond_result))                                                    \
    X(result_times, sizeof(int64_t))                                                               \
    X(env_times, sizeof(struct env_time))                                                          \
    X(keybuf, 1)                                                                                   \
    X(tmp_conds, sizeof(struct snapshot_cond))                                                     \
    X(tmp_values, sizeof(struct snapshot_value))                                                   \
    X(tmp_paths, sizeof(struct snapshot_str))                                                      \
    X(tmp_items, sizeof(struct snapshot_item))                                                     \
    X(pending_times, sizeof(int64_t))

#define BUILDER_MAPS(X)                                                                            \
    X(env_map)                                                                                     \
    X(org_map) X(flag_map) X(segment_map) X(attr_map) X(json_cache) X(serve_cache) X(cond_cache)

#define BUILDER_TABLES(X)                                                                          \
    X(variants, sizeof(struct snapshot_variant))                                                   \
    X(serves, sizeof(struct snapshot_serve))                                                       \
    X(items, sizeof(struct snapshot_item))                                                         \
    X(conds, sizeof(struct snapshot_cond))                                                         \
    X(values, sizeof(struct snapshot_value))                                                       \
    X(paths, sizeof(struct snapshot_str))                                                          \
    X(patterns, sizeof(struct snapshot_pattern))                                                   \
    X(variant_keys, sizeof(struct snapshot_str))

struct snapshot_builder *snapshot_builder_new(uint64_t generation)
{
    struct snapshot_builder *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->generation = generation;
    b->last_flag = SNAPSHOT_NONE;
#define INIT_VEC(name, size) vec_init(&b->name, size);
#define INIT_MAP(name) map_init(&b->name, NULL);
#define INIT_TABLE(name, size) table_init(&b->name, size);
    BUILDER_VECS(INIT_VEC)
    BUILDER_MAPS(INIT_MAP)
    BUILDER_TABLES(INIT_TABLE)
    map_init(&b->string_map, &b->strings);
    b->tok = json_tokener_new();
    if (b->tok != NULL)
        json_tokener_set_flags(b->tok, JSON_TOKENER_STRICT); /* what is copied out is JSON */
    if (b->tok == NULL || !vec_append(&b->strings, "", 1)) {
        snapshot_builder_free(b);
        return NULL;
    }
    return b;
}

void snapshot_builder_free(struct snapshot_builder *b)
{
    if (b == NULL)
        return;
    if (b->tok != NULL)
        json_tokener_free(b->tok);
#define FREE_VEC(name, size) vec_free(&b->name);
#define FREE_MAP(name) map_free(&b->name);
#define FREE_TABLE(name, size) table_free(&b->name);
    BUILDER_VECS(FREE_VEC)
    BUILDER_MAPS(FREE_MAP)
    BUILDER_TABLES(FREE_TABLE)
    map_free(&b->string_map);
    free(b);
}

const char *snapshot_builder_error(const struct snapshot_builder *b)
{
    return b->error;
}

size_t snapshot_builder_flag_count(const struct snapshot_builder *b)
{
    return b->flags.len;
}

/* table_intern, failing the builder when out of memory. */
static uint32_t intern_records(struct snapshot_builder *b, struct table *t, const void *recs,
                               size_t count)
{
    uint32_t first = table_intern(t, recs, count);
    if (first == SNAPSHOT_NONE) {
        out_of_memory(b);
        return 0;
    }
    return first;
}

/* ------------------------------------------------------------------ */
/* Strings and keys */

/* The string's reference in the table, adding it once; {0, 0} ("") and a
 * sticky failure when out of memory. */
static struct snapshot_str intern_bytes(struct snapshot_builder *b, const char *text, size_t len)
{
    if (len == 0)
        return (struct snapshot_str){0, 0};
    struct map_slot *slot = map_find(&b->string_map, text, len);
    if (slot == NULL)
        slot = map_add(&b->string_map, text, len, 0);
    if (slot == NULL) {
        out_of_memory(b);
        return (struct snapshot_str){0, 0};
    }
    return (struct snapshot_str){slot->key_off, (uint32_t)len};
}

static struct snapshot_str intern(struct snapshot_builder *b, const char *text)
{
    return intern_bytes(b, text, strlen(text));
}

/* Adds a string without looking for an equal one (ids and keys, which
 * rarely repeat: cheaper than a lookup). */
static struct snapshot_str append_string(struct snapshot_builder *b, const char *text)
{
    size_t len = strlen(text), off = b->strings.len;
    if (len == 0)
        return (struct snapshot_str){0, 0};
    if (off + len + 1 > UINT32_MAX || !vec_append(&b->strings, text, len + 1)) {
        out_of_memory(b);
        return (struct snapshot_str){0, 0};
    }
    return (struct snapshot_str){(uint32_t)off, (uint32_t)len};
}

static const char *builder_string(const struct snapshot_builder *b, struct snapshot_str ref)
{
    return (const char *)b->strings.data + ref.off;
}

/* A composite key in keybuf: the bytes of head (head_len), then the parts
 * separated by NUL bytes (second may be NULL). */
static const char *compose_key(struct snapshot_builder *b, const void *head, size_t head_len,
                               const char *first, const char *second, size_t *len)
{
    b->keybuf.len = 0;
    bool ok =
        vec_append(&b->keybuf, head, head_len) && vec_append(&b->keybuf, first, strlen(first));
    if (ok && second != NULL)
        ok = vec_append(&b->keybuf, "", 1) && vec_append(&b->keybuf, second, strlen(second));
    if (!ok) {
        out_of_memory(b);
        return NULL;
    }
    *len = b->keybuf.len;
    return (const char *)b->keybuf.data;
}

static const char *indexed_key(struct snapshot_builder *b, uint32_t index, const char *first,
                               const char *second, size_t *len)
{
    return compose_key(b, &index, sizeof index, first, second, len);
}

static bool lookup_index(const struct map *m, const char *key, size_t len, uint32_t *out)
{
    const struct map_slot *slot = key ? map_find(m, key, len) : NULL;
    if (slot != NULL)
        *out = slot->value;
    return slot != NULL;
}

static bool lookup_text(const struct map *m, const char *text, uint32_t *out)
{
    return lookup_index(m, text, strlen(text), out);
}

/* Remembers key -> value in a cache map (keys in its own arena). */
static void cache_put(struct snapshot_builder *b, struct map *m, const char *key, size_t len,
                      uint32_t value)
{
    if (key != NULL && map_add(m, key, len, value) == NULL)
        out_of_memory(b);
}

/* ------------------------------------------------------------------ */
/* Environments, organizations, SDK keys */

static int org_index(struct snapshot_builder *b, const char *org_id, uint32_t *out)
{
    if (lookup_text(&b->org_map, org_id, out))
        return 0;
    *out = (uint32_t)b->org_sealed.len;
    if (vec_push(&b->org_sealed) == NULL ||
        map_add(&b->org_map, org_id, strlen(org_id), *out) == NULL)
        return out_of_memory(b);
    return 0;
}

static bool org_sealed(const struct snapshot_builder *b, uint32_t org)
{
    return *(uint8_t *)vec_at(&b->org_sealed, org) != 0;
}

int snapshot_builder_add_environment(struct snapshot_builder *b, const char *env_id,
                                     const char *org_id, const char *env_key)
{
    uint32_t index, org;
    if (b->failed)
        return -1;
    if (lookup_text(&b->env_map, env_id, &index))
        return builder_fail(b, "environment %s added twice", env_id);
    if (org_index(b, org_id, &org) != 0)
        return -1;
    index = (uint32_t)b->envs.len;
    struct snapshot_env *env = vec_push(&b->envs);
    uint32_t *env_org = vec_push(&b->env_orgs);
    if (env == NULL || env_org == NULL ||
        map_add(&b->env_map, env_id, strlen(env_id), index) == NULL)
        return out_of_memory(b);
    *env_org = org;
    env->id = intern(b, env_id);
    env->org = intern(b, org_id);
    env->key = intern(b, env_key);
    return b->failed ? -1 : 0;
}

int snapshot_builder_add_sdk_key(struct snapshot_builder *b, const char *digest_hex,
                                 const char *env_id)
{
    uint32_t env;
    uint8_t digest[SNAPSHOT_DIGEST_LEN];
    if (b->failed)
        return -1;
    if (!hex_decode(digest_hex, digest, SNAPSHOT_DIGEST_LEN))
        return builder_fail(b, "SDK key digest is not 64 hex characters");
    if (!lookup_text(&b->env_map, env_id, &env))
        return builder_fail(b, "SDK key for unknown environment %s", env_id);
    struct snapshot_sdk_key *key = vec_push(&b->sdk_keys);
    if (key == NULL)
        return out_of_memory(b);
    memcpy(key->digest, digest, sizeof digest);
    key->env = env;
    return 0;
}

int snapshot_builder_add_part(struct snapshot_builder *b, const char *org_id, const char *file_name,
                              uint64_t generation)
{
    uint32_t org;
    if (b->failed)
        return -1;
    if (file_name[0] == '\0' || file_name[0] == '.' || strchr(file_name, '/') != NULL)
        return builder_fail(b, "part file name %s is not a plain name", file_name);
    if (org_index(b, org_id, &org) != 0)
        return -1;
    for (size_t i = 0; i < b->part_orgs.len; i++)
        if (*(uint32_t *)vec_at(&b->part_orgs, i) == org)
            return builder_fail(b, "part of organization %s added twice", org_id);
    struct snapshot_part *part = vec_push(&b->parts);
    uint32_t *part_org = vec_push(&b->part_orgs);
    if (part == NULL || part_org == NULL)
        return out_of_memory(b);
    *part_org = org;
    part->org = intern(b, org_id);
    part->file = intern(b, file_name);
    part->generation = generation;
    return b->failed ? -1 : 0;
}

/* Each environment's part (its organization's, if any) and generation. */
static bool link_env_parts(struct snapshot_builder *b)
{
    size_t orgs = b->org_sealed.len;
    uint32_t *part_of_org = malloc((orgs ? orgs : 1) * sizeof *part_of_org);
    if (part_of_org == NULL)
        return false;
    for (size_t o = 0; o < orgs; o++)
        part_of_org[o] = SNAPSHOT_NONE;
    for (size_t i = 0; i < b->part_orgs.len; i++)
        part_of_org[*(uint32_t *)vec_at(&b->part_orgs, i)] = (uint32_t)i;
    for (size_t e = 0; e < b->envs.len; e++) {
        struct snapshot_env *env = vec_at(&b->envs, e);
        uint32_t part = part_of_org[*(uint32_t *)vec_at(&b->env_orgs, e)];
        env->part = part;
        env->generation = part == SNAPSHOT_NONE
                              ? b->generation
                              : ((struct snapshot_part *)vec_at(&b->parts, part))->generation;
    }
    free(part_of_org);
    return true;
}

int snapshot_builder_add_entity_attribute(struct snapshot_builder *b, const char *org_id,
                                          const char *entity_key, const char *attr_key,
                                          const char *data_type)
{
    uint32_t org, type = SNAPSHOT_DATA_STRING;
    size_t len;
    if (b->failed || org_index(b, org_id, &org) != 0)
        return -1;
    if (org_sealed(b, org))
        return builder_fail(b, "entity attribute added after flags of organization %s", org_id);
    if (strcmp(data_type, "number") == 0)
        type = SNAPSHOT_DATA_NUMBER;
    else if (strcmp(data_type, "boolean") == 0)
        type = SNAPSHOT_DATA_BOOLEAN;
    const char *key = indexed_key(b, org, entity_key, attr_key, &len);
    if (key == NULL)
        return -1;
    struct map_slot *slot = map_find(&b->attr_map, key, len);
    if (slot == NULL)
        slot = map_add(&b->attr_map, key, len, type);
    if (slot == NULL)
        return out_of_memory(b);
    slot->value = type;
    return 0;
}

/* ------------------------------------------------------------------ */
/* JSON */

/* Parses text completely (trailing white space allowed); NULL when it is
 * not JSON or is JSON null. The caller puts the object. */
static json_object *parse_json(struct snapshot_builder *b, const char *text)
{
    if (text == NULL)
        return NULL;
    size_t len = strlen(text);
    if (len >= INT_MAX)
        return NULL;
    json_tokener_reset(b->tok);
    /* The NUL is passed too: it ends a top-level number or literal. */
    json_object *obj = json_tokener_parse_ex(b->tok, text, (int)len + 1);
    if (json_tokener_get_error(b->tok) != json_tokener_success) {
        json_object_put(obj);
        return NULL;
    }
    for (size_t i = json_tokener_get_parse_end(b->tok); i < len; i++) {
        if (strchr(" \t\r\n", text[i]) == NULL) {
            json_object_put(obj);
            return NULL;
        }
    }
    return obj;
}

static const char *json_member_string(json_object *obj, const char *name)
{
    json_object *v;
    if (!json_object_object_get_ex(obj, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static bool json_member_true(json_object *obj, const char *name)
{
    json_object *v;
    return json_object_object_get_ex(obj, name, &v) && json_object_is_type(v, json_type_boolean) &&
           json_object_get_boolean(v);
}

/* A strict RFC 8259 check of variant values, writing the text without the
 * white space between tokens: the exact bytes a response copies (json-c
 * alone would accept NaN, single quotes and raw control characters). */

#define JSON_MAX_DEPTH 64

struct json_scan {
    const char *p;
    struct vec *out;
    bool ok;
};

static void scan_emit(struct json_scan *sc, const char *from, size_t len)
{
    if (sc->ok && !vec_append(sc->out, from, len))
        sc->ok = false;
}

static void scan_space(struct json_scan *sc)
{
    while (*sc->p == ' ' || *sc->p == '\t' || *sc->p == '\n' || *sc->p == '\r')
        sc->p++;
}

static bool scan_literal(struct json_scan *sc, const char *word)
{
    size_t len = strlen(word);
    if (strncmp(sc->p, word, len) != 0)
        return false;
    scan_emit(sc, sc->p, len);
    sc->p += len;
    return true;
}

static const char *skip_digits_at(const char *p)
{
    while (*p >= '0' && *p <= '9')
        p++;
    return p;
}

static bool scan_number(struct json_scan *sc)
{
    const char *p = sc->p + (*sc->p == '-');
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        p = skip_digits_at(p);
    else
        return false;
    if (*p == '.') {
        const char *q = skip_digits_at(p + 1);
        if (q == p + 1)
            return false;
        p = q;
    }
    if (*p == 'e' || *p == 'E') {
        p += (p[1] == '+' || p[1] == '-') ? 2 : 1;
        const char *q = skip_digits_at(p);
        if (q == p)
            return false;
        p = q;
    }
    scan_emit(sc, sc->p, (size_t)(p - sc->p));
    sc->p = p;
    return true;
}

/* One UTF-8 character at p (not '"', '\\' or a control); its length or 0. */
static size_t utf8_char_len(const unsigned char *p)
{
    size_t n = p[0] < 0x80             ? 1
               : (p[0] & 0xe0) == 0xc0 ? 2
               : (p[0] & 0xf0) == 0xe0 ? 3
               : (p[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 0 || (n == 2 && p[0] < 0xc2) || (n == 4 && p[0] > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

static bool scan_escape(const char *p, size_t *len)
{
    if (strchr("\"\\/bfnrt", p[1]) != NULL && p[1] != '\0') {
        *len = 2;
        return true;
    }
    for (int i = 2; i < 6; i++)
        if (p[1] != 'u' || strchr("0123456789abcdefABCDEF", p[i]) == NULL || p[i] == '\0')
            return false;
    *len = 6;
    return true;
}

static bool scan_string(struct json_scan *sc)
{
    const char *start = sc->p++;
    for (;;) {
        size_t len;
        unsigned char c = (unsigned char)*sc->p;
        if (c == '"')
            break;
        if (c < 0x20)
            return false;
        if (c == '\\' ? !scan_escape(sc->p, &len)
                      : (len = utf8_char_len((const unsigned char *)sc->p)) == 0)
            return false;
        sc->p += len;
    }
    sc->p++;
    scan_emit(sc, start, (size_t)(sc->p - start));
    return true;
}

static bool scan_value(struct json_scan *sc, int depth);

/* The members of an object or the items of an array, after the opener. */
static bool scan_container(struct json_scan *sc, char close, int depth)
{
    scan_space(sc);
    if (*sc->p == close) {
        scan_emit(sc, sc->p++, 1);
        return true;
    }
    for (;;) {
        if (close == '}') {
            if (*sc->p != '"' || !scan_string(sc))
                return false;
            scan_space(sc);
            if (*sc->p != ':')
                return false;
            scan_emit(sc, sc->p++, 1);
        }
        if (!scan_value(sc, depth + 1))
            return false;
        scan_space(sc);
        if (*sc->p == close) {
            scan_emit(sc, sc->p++, 1);
            return true;
        }
        if (*sc->p != ',')
            return false;
        scan_emit(sc, sc->p++, 1);
        scan_space(sc);
    }
}

static bool scan_value(struct json_scan *sc, int depth)
{
    scan_space(sc);
    switch (*sc->p) {
    case '{':
    case '[':
        if (depth >= JSON_MAX_DEPTH)
            return false;
        scan_emit(sc, sc->p, 1);
        return scan_container(sc, *sc->p++ == '{' ? '}' : ']', depth);
    case '"':
        return scan_string(sc);
    case 't':
        return scan_literal(sc, "true");
    case 'f':
        return scan_literal(sc, "false");
    case 'n':
        return scan_literal(sc, "null");
    default:
        return scan_number(sc);
    }
}

/* The JSON type of valid text (json_type_null when invalid or null), its
 * compact form left in b->keybuf. */
static json_type scan_json(struct snapshot_builder *b, const char *text)
{
    struct json_scan sc = {text, &b->keybuf, true};
    b->keybuf.len = 0;
    scan_space(&sc);
    char first = *sc.p;
    if (!scan_value(&sc, 0))
        return json_type_null;
    scan_space(&sc);
    if (*sc.p != '\0' || !sc.ok)
        return json_type_null;
    switch (first) {
    case '{':
        return json_type_object;
    case '[':
        return json_type_array;
    case '"':
        return json_type_string;
    case 't':
    case 'f':
        return json_type_boolean;
    case 'n':
        return json_type_null;
    default:
        return json_type_double; /* any number */
    }
}

/* A variant value: validated and compacted once per distinct text. */
static const struct json_value_entry *json_value(struct snapshot_builder *b, const char *text)
{
    uint32_t index;
    if (text == NULL)
        text = "";
    if (lookup_text(&b->json_cache, text, &index))
        return vec_at(&b->json_values, index);
    struct json_value_entry entry = {{0, 0}, scan_json(b, text)};
    if (entry.type != json_type_null)
        entry.compact = intern_bytes(b, (const char *)b->keybuf.data, b->keybuf.len);
    index = (uint32_t)b->json_values.len;
    if (!vec_append(&b->json_values, &entry, 1) ||
        map_add(&b->json_cache, text, strlen(text), index) == NULL) {
        out_of_memory(b);
        return NULL;
    }
    return vec_at(&b->json_values, index);
}

/* ------------------------------------------------------------------ */
/* Serves */

static uint32_t flag_type_from_text(const char *type)
{
    static const char *const names[] = {"boolean", "string", "number", "json"};
    for (uint32_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (type != NULL && strcmp(type, names[i]) == 0)
            return i;
    return SNAPSHOT_TYPE_UNKNOWN;
}

static bool value_fits_type(json_type value, uint32_t flag_type)
{
    switch (flag_type) {
    case SNAPSHOT_TYPE_BOOLEAN:
        return value == json_type_boolean;
    case SNAPSHOT_TYPE_STRING:
        return value == json_type_string;
    case SNAPSHOT_TYPE_NUMBER:
        return value == json_type_int || value == json_type_double;
    case SNAPSHOT_TYPE_JSON:
        return value == json_type_object || value == json_type_array;
    default:
        return false;
    }
}

/* The index among f's variants of the one named key; SNAPSHOT_NONE when
 * there is none. */
static uint32_t find_variant(const struct snapshot_builder *b, const struct snapshot_flag *f,
                             const char *key)
{
    for (uint32_t i = 0; key != NULL && i < f->variant_count; i++) {
        const struct snapshot_variant *v = table_at(&b->variants, f->variant_first + i);
        if (strcmp(builder_string(b, v->key), key) == 0)
            return i;
    }
    return SNAPSHOT_NONE;
}

/* Whether f's variant (relative index) can be served. */
static uint32_t check_variant(const struct snapshot_builder *b, const struct snapshot_flag *f,
                              uint32_t variant)
{
    if (variant == SNAPSHOT_NONE)
        return SNAPSHOT_SERVE_MISSING_VARIANT;
    const struct snapshot_variant *v = table_at(&b->variants, f->variant_first + variant);
    return v->value_json.len == 0 ? SNAPSHOT_SERVE_BAD_VALUE : SNAPSHOT_SERVE_OK;
}

/* Splits a dotted key into path parts, stored once; returns the first. */
static uint32_t add_path(struct snapshot_builder *b, const char *key, uint32_t *count)
{
    b->tmp_paths.len = 0;
    for (const char *part = key;;) {
        const char *dot = strchr(part, '.');
        size_t len = dot ? (size_t)(dot - part) : strlen(part);
        struct snapshot_str ref = intern_bytes(b, part, len);
        if (!vec_append(&b->tmp_paths, &ref, 1)) {
            out_of_memory(b);
            break;
        }
        if (dot == NULL)
            break;
        part = dot + 1;
    }
    *count = (uint32_t)b->tmp_paths.len;
    return intern_records(b, &b->paths, b->tmp_paths.data, b->tmp_paths.len);
}

static bool rollout_item(struct snapshot_builder *b, const struct snapshot_flag *f,
                         json_object *item, uint64_t *total, uint32_t *error)
{
    json_object *weight;
    const char *key = json_member_string(item, "variant");
    if (key == NULL || !json_object_object_get_ex(item, "weight", &weight) ||
        !json_object_is_type(weight, json_type_int) || json_object_get_int64(weight) < 0 ||
        json_object_get_int64(weight) > MAX_ROLLOUT_WEIGHT) {
        *error = SNAPSHOT_SERVE_MALFORMED;
        return false;
    }
    struct snapshot_item out = {find_variant(b, f, key), (uint32_t)json_object_get_int64(weight)};
    *error = check_variant(b, f, out.variant);
    if (*error != SNAPSHOT_SERVE_OK)
        return false;
    if (!vec_append(&b->tmp_items, &out, 1)) {
        out_of_memory(b);
        return false;
    }
    *total += out.weight;
    return true;
}

static void set_bucket_by(struct snapshot_builder *b, json_object *obj, struct snapshot_serve *v)
{
    const char *bucket_by = json_member_string(obj, "bucketBy");
    if (bucket_by == NULL || *bucket_by == '\0' || strcmp(bucket_by, "targetingKey") == 0)
        return;
    v->bucket_by = intern(b, bucket_by);
    v->bucket_path_first = add_path(b, bucket_by, &v->bucket_path_count);
}

static void compile_rollout(struct snapshot_builder *b, const struct snapshot_flag *f,
                            json_object *obj, json_object *rollout, struct snapshot_serve *v)
{
    size_t n = json_object_array_length(rollout);
    uint64_t total = 0;
    v->error = SNAPSHOT_SERVE_MALFORMED;
    if (n == 0 || n > MAX_ROLLOUT_ITEMS)
        return;
    b->tmp_items.len = 0;
    for (size_t i = 0; i < n; i++)
        if (!rollout_item(b, f, json_object_array_get_idx(rollout, i), &total, &v->error))
            return;
    if (total == 0) {
        v->error = SNAPSHOT_SERVE_MALFORMED;
        return;
    }
    v->kind = SNAPSHOT_SERVE_ROLLOUT;
    v->error = SNAPSHOT_SERVE_OK;
    v->item_first = intern_records(b, &b->items, b->tmp_items.data, n);
    v->item_count = (uint32_t)n;
    v->total_weight = total;
    set_bucket_by(b, obj, v);
}

static void compile_serve_object(struct snapshot_builder *b, const struct snapshot_flag *f,
                                 json_object *obj, struct snapshot_serve *v)
{
    json_object *rollout;
    const char *key = json_member_string(obj, "variant");
    if (f->type == SNAPSHOT_TYPE_UNKNOWN) {
        v->error = SNAPSHOT_SERVE_UNKNOWN_TYPE;
    } else if (f->variant_count == 0) {
        v->error = SNAPSHOT_SERVE_NO_VARIANTS;
    } else if (key != NULL) {
        v->variant = find_variant(b, f, key);
        v->error = check_variant(b, f, v->variant);
        v->kind = v->error == SNAPSHOT_SERVE_OK ? SNAPSHOT_SERVE_VARIANT : SNAPSHOT_SERVE_INVALID;
    } else if (json_object_object_get_ex(obj, "rollout", &rollout) &&
               json_object_is_type(rollout, json_type_array)) {
        compile_rollout(b, f, obj, rollout, v);
    } else {
        v->error = SNAPSHOT_SERVE_MALFORMED;
    }
}

/* Stores a serve record once; returns its index. */
static uint32_t store_serve(struct snapshot_builder *b, struct snapshot_serve *v)
{
    if (v->kind != SNAPSHOT_SERVE_VARIANT)
        v->variant = 0;
    return intern_records(b, &b->serves, v, 1);
}

/* The cache key of a serve for f: f's variant list, its type, the text. */
static const char *serve_cache_key(struct snapshot_builder *b, const struct snapshot_flag *f,
                                   uint32_t signature, const char *serve_json, size_t *len)
{
    uint32_t head[3] = {signature, f->variant_count, f->type};
    return compose_key(b, head, sizeof head, serve_json, NULL, len);
}

static void note_serve_clock(struct snapshot_builder *b, uint32_t serve)
{
    const struct snapshot_serve *v = table_at(&b->serves, serve);
    if (v->bucket_by.len > 0 && strcmp(builder_string(b, v->bucket_by), "$currentTime") == 0)
        b->pending_opaque = true;
}

/* Compiles a serve object given as JSON text for flag f; returns its serve
 * index. The result depends only on the text, the flag's type and its
 * variant keys (when every value is usable), so it is cached by those:
 * signature names f's key list, SNAPSHOT_NONE disables the cache. */
static uint32_t compile_serve(struct snapshot_builder *b, const struct snapshot_flag *f,
                              uint32_t signature, const char *serve_json)
{
    size_t len = 0;
    uint32_t index;
    if (serve_json == NULL)
        serve_json = "";
    const char *key = NULL;
    if (signature != SNAPSHOT_NONE)
        key = serve_cache_key(b, f, signature, serve_json, &len);
    if (key == NULL || !lookup_index(&b->serve_cache, key, len, &index)) {
        struct snapshot_serve v = {.kind = SNAPSHOT_SERVE_INVALID,
                                   .error = SNAPSHOT_SERVE_MALFORMED};
        json_object *obj = parse_json(b, serve_json);
        if (json_object_is_type(obj, json_type_object))
            compile_serve_object(b, f, obj, &v);
        json_object_put(obj);
        index = store_serve(b, &v);
        if (signature != SNAPSHOT_NONE) {
            key = serve_cache_key(b, f, signature, serve_json, &len);
            cache_put(b, &b->serve_cache, key, len, index);
        }
    }
    note_serve_clock(b, index);
    return index;
}

static uint32_t compile_off_serve(struct snapshot_builder *b, const struct snapshot_flag *f,
                                  const char *off_variant_key)
{
    struct snapshot_serve v = {.kind = SNAPSHOT_SERVE_INVALID};
    if (f->type == SNAPSHOT_TYPE_UNKNOWN)
        v.error = SNAPSHOT_SERVE_UNKNOWN_TYPE;
    else if (f->variant_count == 0)
        v.error = SNAPSHOT_SERVE_NO_VARIANTS;
    else if (off_variant_key == NULL)
        v.error = SNAPSHOT_SERVE_NO_OFF_VARIANT;
    else {
        v.variant = find_variant(b, f, off_variant_key);
        v.error = check_variant(b, f, v.variant);
        if (v.error == SNAPSHOT_SERVE_OK)
            v.kind = SNAPSHOT_SERVE_VARIANT;
    }
    return store_serve(b, &v);
}

/* ------------------------------------------------------------------ */
/* Condition values */

static bool scalar_value(struct snapshot_builder *b, json_object *j, struct snapshot_value *v)
{
    switch (json_object_get_type(j)) {
    case json_type_string:
        v->type = SNAPSHOT_VALUE_STRING;
        v->text = intern_bytes(b, json_object_get_string(j), (size_t)json_object_get_string_len(j));
        return true;
    case json_type_int:
        v->type = SNAPSHOT_VALUE_NUMBER;
        v->integer = json_object_get_int64(j);
        v->number = (double)v->integer;
        v->is_integer = 1;
        return true;
    case json_type_double:
        v->type = SNAPSHOT_VALUE_NUMBER;
        v->number = json_object_get_double(j);
        return true;
    case json_type_boolean:
        v->type = SNAPSHOT_VALUE_BOOLEAN;
        v->boolean = json_object_get_boolean(j) ? 1 : 0;
        return true;
    default:
        return false;
    }
}

/* Coerces a value to an entity attribute's dataType, as the evaluator
 * coerces context values. */
static bool coerce_value(struct snapshot_builder *b, uint32_t data_type, struct snapshot_value *v)
{
    const char *text = builder_string(b, v->text);
    if (data_type == SNAPSHOT_DATA_STRING && v->type == SNAPSHOT_VALUE_NUMBER) {
        char buf[EVAL_NUMBER_TEXT_SIZE];
        size_t n = eval_number_text(v->number, v->is_integer, v->integer, buf);
        v->text = intern_bytes(b, buf, n);
        v->type = SNAPSHOT_VALUE_STRING;
    } else if (data_type == SNAPSHOT_DATA_STRING && v->type == SNAPSHOT_VALUE_BOOLEAN) {
        v->text = intern(b, v->boolean ? "true" : "false");
        v->type = SNAPSHOT_VALUE_STRING;
    } else if (data_type == SNAPSHOT_DATA_NUMBER && v->type != SNAPSHOT_VALUE_NUMBER) {
        bool is_integer = false;
        if (v->type != SNAPSHOT_VALUE_STRING ||
            !eval_text_to_number(text, v->text.len, &v->number, &is_integer, &v->integer))
            return false;
        v->is_integer = is_integer;
        v->type = SNAPSHOT_VALUE_NUMBER;
    } else if (data_type == SNAPSHOT_DATA_BOOLEAN && v->type != SNAPSHOT_VALUE_BOOLEAN) {
        bool value;
        if (v->type != SNAPSHOT_VALUE_STRING || !eval_text_to_boolean(text, v->text.len, &value))
            return false;
        v->boolean = value;
        v->type = SNAPSHOT_VALUE_BOOLEAN;
    }
    return true;
}

static bool pattern_compiles(const char *text, size_t len, bool caseless)
{
    int code;
    PCRE2_SIZE offset;
    uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (caseless ? PCRE2_CASELESS : 0);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)text, len, options, &code, &offset, NULL);
    pcre2_code_free(re);
    return re != NULL;
}

static bool add_pattern(struct snapshot_builder *b, const struct snapshot_cond *c,
                        struct snapshot_value *v)
{
    struct snapshot_pattern p = {v->text, (c->flags & SNAPSHOT_COND_CASELESS) != 0, 0};
    const struct map_slot *known = map_find(&b->patterns.index, &p, sizeof p);
    if (known == NULL && !pattern_compiles(builder_string(b, v->text), v->text.len, p.caseless))
        return false;
    v->pattern = known ? known->value : intern_records(b, &b->patterns, &p, 1);
    return true;
}

static bool add_time(struct snapshot_builder *b, const struct snapshot_cond *c,
                     struct snapshot_value *v)
{
    if (v->type != SNAPSHOT_VALUE_STRING ||
        !isotime_parse(builder_string(b, v->text), v->text.len, &v->time_us))
        return false;
    if ((c->flags & SNAPSHOT_COND_CURRENT_TIME) && !vec_append(&b->pending_times, &v->time_us, 1))
        out_of_memory(b);
    return true;
}

/* Checks (and completes) one value for the condition's operator. */
static bool typed_value(struct snapshot_builder *b, const struct snapshot_cond *c,
                        struct snapshot_value *v)
{
    struct semver version;
    switch (cond_ops[c->op].kind) {
    case COND_VALUES_SCALAR:
        return coerce_value(b, c->data_type, v);
    case COND_VALUES_STRING:
        return v->type == SNAPSHOT_VALUE_STRING;
    case COND_VALUES_PATTERN:
        return v->type == SNAPSHOT_VALUE_STRING && add_pattern(b, c, v);
    case COND_VALUES_NUMBER:
        return v->type == SNAPSHOT_VALUE_NUMBER;
    case COND_VALUES_SEMVER:
        return v->type == SNAPSHOT_VALUE_STRING &&
               semver_parse(builder_string(b, v->text), v->text.len, &version);
    case COND_VALUES_TIMESTAMP:
        return add_time(b, c, v);
    default:
        return false;
    }
}

static bool compile_values(struct snapshot_builder *b, struct snapshot_cond *c, json_object *cond)
{
    json_object *values = NULL;
    json_object_object_get_ex(cond, "values", &values);
    size_t n = json_object_is_type(values, json_type_array) ? json_object_array_length(values) : 0;
    if (cond_ops[c->op].kind == COND_VALUES_NONE)
        return values == NULL || (json_object_is_type(values, json_type_array) && n == 0);
    if (n == 0 || (cond_ops[c->op].single_value && n != 1))
        return false;
    b->tmp_values.len = 0;
    for (size_t i = 0; i < n; i++) {
        struct snapshot_value v = {.pattern = SNAPSHOT_NONE};
        if (!scalar_value(b, json_object_array_get_idx(values, i), &v) || !typed_value(b, c, &v))
            return false;
        if (!vec_append(&b->tmp_values, &v, 1)) {
            out_of_memory(b);
            return false;
        }
    }
    c->value_first = intern_records(b, &b->values, b->tmp_values.data, n);
    c->value_count = (uint32_t)n;
    return true;
}

/* ------------------------------------------------------------------ */
/* Conditions */

/* The entity dataType of a dotted attribute "entity.attr..." in org. */
static uint32_t attribute_data_type(struct snapshot_builder *b, uint32_t org, const char *attribute)
{
    const char *dot = strchr(attribute, '.');
    uint32_t type;
    size_t len;
    if (dot == NULL || b->attr_map.count == 0)
        return SNAPSHOT_DATA_ANY;
    char entity[128];
    size_t entity_len = (size_t)(dot - attribute);
    if (entity_len >= sizeof entity)
        return SNAPSHOT_DATA_ANY;
    memcpy(entity, attribute, entity_len);
    entity[entity_len] = '\0';
    const char *key = indexed_key(b, org, entity, dot + 1, &len);
    return lookup_index(&b->attr_map, key, len, &type) ? type : SNAPSHOT_DATA_ANY;
}

static bool compile_attribute(struct snapshot_builder *b, uint32_t org, json_object *cond,
                              const char *attribute, struct snapshot_cond *c)
{
    uint32_t op = cond_op_from_name(json_member_string(cond, "operator"));
    if (*attribute == '\0' || op == SNAPSHOT_OP_COUNT)
        return false;
    c->kind = SNAPSHOT_COND_ATTRIBUTE;
    c->op = op;
    if (json_member_true(cond, "caseInsensitive"))
        c->flags |= SNAPSHOT_COND_CASELESS;
    c->attribute = intern(b, attribute);
    if (strcmp(attribute, "$currentTime") == 0) {
        c->flags |= SNAPSHOT_COND_CURRENT_TIME;
        if (!cond_op_reads_instants(c->op))
            b->pending_opaque = true;
    } else {
        c->data_type = attribute_data_type(b, org, attribute);
        if (strchr(attribute, '.') == NULL) { /* one part: the attribute itself */
            c->path_first = intern_records(b, &b->paths, &c->attribute, 1);
            c->path_count = 1;
        } else {
            c->path_first = add_path(b, attribute, &c->path_count);
        }
    }
    return compile_values(b, c, cond);
}

/* A segment reference: records the segment's clock use for the rule's
 * environment; false when the segment cannot resolve. */
static bool compile_segment_ref(struct snapshot_builder *b, uint32_t org, const char *key,
                                struct snapshot_cond *c)
{
    size_t len;
    uint32_t index;
    const char *map_key = indexed_key(b, org, key, NULL, &len);
    if (!lookup_index(&b->segment_map, map_key, len, &index)) {
        c->kind = SNAPSHOT_COND_MISSING_SEGMENT;
        return true;
    }
    c->kind = SNAPSHOT_COND_SEGMENT;
    c->segment = index;
    const struct cond_result *result = vec_at(&b->segment_results, index);
    if (!vec_append(&b->pending_times, vec_at(&b->result_times, result->time_first),
                    result->time_count))
        out_of_memory(b);
    b->pending_opaque |= result->opaque;
    return !result->broken;
}

/* Compiles one condition and pushes it; false when it cannot resolve. */
static bool compile_condition(struct snapshot_builder *b, uint32_t org, json_object *cond,
                              bool in_segment)
{
    struct snapshot_cond c = {.kind = SNAPSHOT_COND_BROKEN, .segment = SNAPSHOT_NONE};
    const char *attribute = json_member_string(cond, "attribute");
    const char *segment = json_member_string(cond, "segment");
    bool ok = false;
    if (json_object_is_type(cond, json_type_object)) {
        if (json_member_true(cond, "negate"))
            c.flags |= SNAPSHOT_COND_NEGATE;
        if (attribute != NULL && segment == NULL)
            ok = compile_attribute(b, org, cond, attribute, &c);
        else if (segment != NULL && attribute == NULL && !in_segment)
            ok = compile_segment_ref(b, org, segment, &c);
    }
    if (!ok && c.kind != SNAPSHOT_COND_SEGMENT)
        c = (struct snapshot_cond){.kind = SNAPSHOT_COND_BROKEN, .segment = SNAPSHOT_NONE};
    if (!vec_append(&b->tmp_conds, &c, 1))
        out_of_memory(b);
    return ok;
}

/* Compiles a conditions array into r (conditions stored once). */
static void compile_condition_list(struct snapshot_builder *b, uint32_t org, const char *json,
                                   bool in_segment, struct cond_result *r)
{
    json_object *list = parse_json(b, json);
    bool ok = json_object_is_type(list, json_type_array);
    size_t n = ok ? json_object_array_length(list) : 0;
    size_t times_before = b->pending_times.len;
    bool opaque_before = b->pending_opaque;
    b->pending_opaque = false;
    b->tmp_conds.len = 0;
    for (size_t i = 0; i < n; i++)
        ok &= compile_condition(b, org, json_object_array_get_idx(list, i), in_segment);
    json_object_put(list);
    r->first = intern_records(b, &b->conds, b->tmp_conds.data, b->tmp_conds.len);
    r->count = (uint32_t)b->tmp_conds.len;
    r->broken = !ok;
    r->opaque = b->pending_opaque;
    b->pending_opaque |= opaque_before;
    r->time_first = (uint32_t)b->result_times.len;
    r->time_count = (uint32_t)(b->pending_times.len - times_before);
    if (!vec_append(&b->result_times, vec_at(&b->pending_times, times_before), r->time_count))
        out_of_memory(b);
}

/* The cache key of a conditions list: organization, context, text. */
static const char *cond_cache_key(struct snapshot_builder *b, uint32_t org, bool in_segment,
                                  const char *json, size_t *len)
{
    uint32_t head[2] = {org, in_segment};
    return compose_key(b, head, sizeof head, json, NULL, len);
}

/* Compiles a conditions array (once per distinct text in an organization)
 * and notes its clock use as pending; returns the result. */
static struct cond_result compile_conditions(struct snapshot_builder *b, uint32_t org,
                                             const char *json, bool in_segment)
{
    size_t len;
    uint32_t index;
    struct cond_result r = {0};
    if (json == NULL)
        json = "";
    const char *key = cond_cache_key(b, org, in_segment, json, &len);
    if (lookup_index(&b->cond_cache, key, len, &index)) {
        r = *(struct cond_result *)vec_at(&b->cond_results, index);
        if (!vec_append(&b->pending_times, vec_at(&b->result_times, r.time_first), r.time_count))
            out_of_memory(b);
        b->pending_opaque |= r.opaque;
        return r;
    }
    compile_condition_list(b, org, json, in_segment, &r);
    index = (uint32_t)b->cond_results.len;
    if (!vec_append(&b->cond_results, &r, 1))
        out_of_memory(b);
    key = cond_cache_key(b, org, in_segment, json, &len);
    cache_put(b, &b->cond_cache, key, len, index);
    return r;
}

static void reset_pending_clock(struct snapshot_builder *b)
{
    b->pending_times.len = 0;
    b->pending_opaque = false;
}

static void flush_pending_clock(struct snapshot_builder *b, uint32_t env_index)
{
    struct snapshot_env *env = vec_at(&b->envs, env_index);
    if (b->pending_opaque)
        env->clock_opaque = 1;
    for (size_t i = 0; i < b->pending_times.len; i++) {
        struct env_time *t = vec_push(&b->env_times);
        if (t == NULL) {
            out_of_memory(b);
            return;
        }
        t->env = env_index;
        t->t = *(int64_t *)vec_at(&b->pending_times, i);
    }
    reset_pending_clock(b);
}

int snapshot_builder_add_segment(struct snapshot_builder *b, const char *org_id,
                                 const char *segment_key, const char *conditions_json)
{
    uint32_t org, index;
    size_t len;
    if (b->failed || org_index(b, org_id, &org) != 0)
        return -1;
    if (org_sealed(b, org))
        return builder_fail(b, "segment %s added after flags of organization %s", segment_key,
                            org_id);
    const char *key = indexed_key(b, org, segment_key, NULL, &len);
    if (key == NULL || lookup_index(&b->segment_map, key, len, &index))
        return key ? builder_fail(b, "segment %s added twice", segment_key) : -1;
    index = (uint32_t)b->segments.len;
    if (map_add(&b->segment_map, key, len, index) == NULL)
        return out_of_memory(b);
    reset_pending_clock(b);
    struct cond_result r = compile_conditions(b, org, conditions_json, true);
    reset_pending_clock(b);
    struct snapshot_segment segment = {.org = intern(b, org_id),
                                       .key = intern(b, segment_key),
                                       .cond_first = r.first,
                                       .cond_count = r.count,
                                       .broken = r.broken};
    if (!vec_append(&b->segments, &segment, 1) || !vec_append(&b->segment_results, &r, 1))
        return out_of_memory(b);
    return b->failed ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Flags and rules */

/* The flag's variants, stored once per distinct list. *signature names
 * the list of keys (for the serve cache), SNAPSHOT_NONE when a value is
 * unusable. */
static bool add_variants(struct snapshot_builder *b, const struct snapshot_flag_input *in,
                         struct snapshot_flag *f, uint32_t *signature)
{
    size_t n = in->variant_count;
    struct snapshot_variant *list = calloc(n ? n : 1, sizeof *list);
    struct snapshot_str *keys = calloc(n ? n : 1, sizeof *keys);
    bool usable = true;
    for (size_t i = 0; list != NULL && keys != NULL && i < n; i++) {
        const struct json_value_entry *value = json_value(b, in->variants[i].value_json);
        if (value == NULL)
            break;
        list[i].key = keys[i] = intern(b, in->variants[i].key ? in->variants[i].key : "");
        if (value_fits_type(value->type, f->type))
            list[i].value_json = value->compact;
        usable &= list[i].value_json.len > 0;
    }
    if (list == NULL || keys == NULL)
        out_of_memory(b);
    else {
        f->variant_first = intern_records(b, &b->variants, list, n);
        f->variant_count = (uint32_t)n;
        *signature = usable ? intern_records(b, &b->variant_keys, keys, n) : SNAPSHOT_NONE;
    }
    free(list);
    free(keys);
    return !b->failed;
}

static const char *flag_map_key(struct snapshot_builder *b, uint32_t env, const char *flag_key,
                                size_t *len)
{
    return indexed_key(b, env, flag_key, NULL, len);
}

int snapshot_builder_add_flag(struct snapshot_builder *b, const struct snapshot_flag_input *in)
{
    uint32_t env, index;
    size_t len;
    if (b->failed)
        return -1;
    if (!lookup_text(&b->env_map, in->env_id, &env))
        return builder_fail(b, "flag %s for unknown environment %s", in->flag_key, in->env_id);
    const char *key = flag_map_key(b, env, in->flag_key, &len);
    if (key == NULL || lookup_index(&b->flag_map, key, len, &index))
        return key ? builder_fail(b, "flag %s added twice", in->flag_key) : -1;
    index = (uint32_t)b->flags.len;
    if (map_add(&b->flag_map, key, len, index) == NULL)
        return out_of_memory(b);
    *(uint8_t *)vec_at(&b->org_sealed, *(uint32_t *)vec_at(&b->env_orgs, env)) = 1;
    struct builder_flag flag = {.rule_head = SNAPSHOT_NONE, .rule_tail = SNAPSHOT_NONE};
    struct snapshot_flag *f = &flag.rec;
    f->key = append_string(b, in->flag_key);
    f->id = append_string(b, in->flag_id);
    f->env = env;
    f->type = flag_type_from_text(in->type);
    f->enabled = in->enabled;
    if (!add_variants(b, in, f, &flag.serve_signature))
        return -1;
    reset_pending_clock(b);
    f->default_serve = compile_serve(b, f, flag.serve_signature, in->default_serve_json);
    f->off_serve = compile_off_serve(b, f, in->off_variant_key);
    flush_pending_clock(b, env);
    if (!vec_append(&b->flags, &flag, 1))
        return out_of_memory(b);
    b->last_flag = index;
    return b->failed ? -1 : 0;
}

static void link_rule(struct snapshot_builder *b, struct builder_flag *flag, uint32_t rule)
{
    if (flag->rule_tail == SNAPSHOT_NONE)
        flag->rule_head = rule;
    else
        ((struct builder_rule *)vec_at(&b->rules, flag->rule_tail))->next = rule;
    flag->rule_tail = rule;
    flag->rec.rule_count++;
}

/* The flag a rule belongs to: the last one looked up when it matches (rules
 * come grouped by flag), else from the map. */
static bool find_flag(struct snapshot_builder *b, uint32_t env, const char *flag_key,
                      uint32_t *index)
{
    size_t len;
    if (b->last_flag < b->flags.len) {
        const struct snapshot_flag *f =
            &((struct builder_flag *)vec_at(&b->flags, b->last_flag))->rec;
        if (f->env == env && strcmp(builder_string(b, f->key), flag_key) == 0) {
            *index = b->last_flag;
            return true;
        }
    }
    const char *key = flag_map_key(b, env, flag_key, &len);
    if (!lookup_index(&b->flag_map, key, len, index))
        return false;
    b->last_flag = *index;
    return true;
}

int snapshot_builder_add_rule(struct snapshot_builder *b, const char *env_id, const char *flag_key,
                              const char *rule_id, const char *conditions_json,
                              const char *serve_json)
{
    uint32_t env, index;
    if (b->failed)
        return -1;
    if (!lookup_text(&b->env_map, env_id, &env))
        return builder_fail(b, "rule for unknown environment %s", env_id);
    if (!find_flag(b, env, flag_key, &index))
        return b->failed ? -1 : builder_fail(b, "rule %s before its flag %s", rule_id, flag_key);
    uint32_t org = *(uint32_t *)vec_at(&b->env_orgs, env);
    reset_pending_clock(b);
    struct cond_result r = compile_conditions(b, org, conditions_json, false);
    struct builder_rule rule = {.next = SNAPSHOT_NONE};
    rule.rec.id = append_string(b, rule_id);
    rule.rec.cond_first = r.first;
    rule.rec.cond_count = r.count;
    rule.rec.broken = r.broken;
    const struct builder_flag *flag = vec_at(&b->flags, index);
    rule.rec.serve = compile_serve(b, &flag->rec, flag->serve_signature, serve_json);
    flush_pending_clock(b, env);
    if (!vec_append(&b->rules, &rule, 1))
        return out_of_memory(b);
    link_rule(b, vec_at(&b->flags, index), (uint32_t)(b->rules.len - 1));
    return b->failed ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Final ordering */

struct final_tables {
    struct vec flags; /* struct snapshot_flag */
    struct vec rules; /* struct snapshot_rule */
    struct vec times; /* int64_t */
};

static int compare_flags(const void *a, const void *b, void *arg)
{
    const struct snapshot_builder *builder = arg;
    const struct snapshot_flag *fa =
        &((const struct builder_flag *)vec_at(&builder->flags, *(const uint32_t *)a))->rec;
    const struct snapshot_flag *fb =
        &((const struct builder_flag *)vec_at(&builder->flags, *(const uint32_t *)b))->rec;
    if (fa->env != fb->env)
        return fa->env < fb->env ? -1 : 1;
    size_t n = fa->key.len < fb->key.len ? fa->key.len : fb->key.len;
    int c = memcmp(builder_string(builder, fa->key), builder_string(builder, fb->key), n);
    if (c != 0)
        return c;
    return fa->key.len == fb->key.len ? 0 : (fa->key.len < fb->key.len ? -1 : 1);
}

static bool emit_flag(const struct snapshot_builder *b, const struct builder_flag *flag,
                      struct final_tables *t)
{
    struct snapshot_flag rec = flag->rec;
    rec.rule_first = (uint32_t)t->rules.len;
    for (uint32_t r = flag->rule_head; r != SNAPSHOT_NONE;) {
        const struct builder_rule *rule = vec_at(&b->rules, r);
        if (!vec_append(&t->rules, &rule->rec, 1))
            return false;
        r = rule->next;
    }
    return vec_append(&t->flags, &rec, 1);
}

static bool order_flags(struct snapshot_builder *b, struct final_tables *t)
{
    size_t n = b->flags.len;
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (order == NULL || !vec_reserve(&t->flags, n) || !vec_reserve(&t->rules, b->rules.len)) {
        free(order);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    if (n > 1)
        qsort_r(order, n, sizeof *order, compare_flags, b);
    size_t k = 0;
    for (uint32_t e = 0; e < b->envs.len; e++) {
        struct snapshot_env *env = vec_at(&b->envs, e);
        env->flag_first = (uint32_t)t->flags.len;
        for (; k < n && ((struct builder_flag *)vec_at(&b->flags, order[k]))->rec.env == e; k++)
            emit_flag(b, vec_at(&b->flags, order[k]), t); /* room reserved above */
        env->flag_count = (uint32_t)t->flags.len - env->flag_first;
    }
    free(order);
    return true;
}

static int compare_env_times(const void *a, const void *b)
{
    const struct env_time *x = a, *y = b;
    if (x->env != y->env)
        return x->env < y->env ? -1 : 1;
    return x->t < y->t ? -1 : (x->t > y->t ? 1 : 0);
}

static bool order_times(struct snapshot_builder *b, struct final_tables *t)
{
    struct vec *pairs = &b->env_times;
    if (pairs->len > 1)
        qsort(pairs->data, pairs->len, pairs->size, compare_env_times);
    size_t k = 0;
    for (uint32_t e = 0; e < b->envs.len; e++) {
        struct snapshot_env *env = vec_at(&b->envs, e);
        env->time_first = (uint32_t)t->times.len;
        for (; k < pairs->len && ((struct env_time *)vec_at(pairs, k))->env == e; k++) {
            int64_t v = ((struct env_time *)vec_at(pairs, k))->t;
            size_t have = t->times.len - env->time_first;
            if (have > 0 && *(int64_t *)vec_at(&t->times, t->times.len - 1) == v)
                continue;
            if (!vec_append(&t->times, &v, 1))
                return false;
        }
        env->time_count = (uint32_t)t->times.len - env->time_first;
    }
    return true;
}

static int compare_sdk_keys(const void *a, const void *b)
{
    return memcmp(((const struct snapshot_sdk_key *)a)->digest,
                  ((const struct snapshot_sdk_key *)b)->digest, SNAPSHOT_DIGEST_LEN);
}

static void order_sdk_keys(struct snapshot_builder *b)
{
    struct vec *keys = &b->sdk_keys;
    if (keys->len > 1)
        qsort(keys->data, keys->len, keys->size, compare_sdk_keys);
    size_t out = 0;
    for (size_t i = 0; i < keys->len; i++) {
        if (out > 0 && compare_sdk_keys(vec_at(keys, out - 1), vec_at(keys, i)) == 0)
            continue;
        memmove(vec_at(keys, out++), vec_at(keys, i), keys->size);
    }
    keys->len = out;
}

/* ------------------------------------------------------------------ */
/* Layout and publication */

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* The file: a header, then each section padded to 8 bytes. */
struct file_plan {
    struct snapshot_header header;
    const struct vec *sections[SNAPSHOT_SEC_COUNT];
};

static const unsigned char zero_pad[8];

static size_t section_bytes(const struct vec *v)
{
    return v->len * v->size;
}

static void plan_file(struct snapshot_builder *b, const struct final_tables *t,
                      struct file_plan *plan)
{
    const struct vec *sections[SNAPSHOT_SEC_COUNT] = {
        [SNAPSHOT_SEC_STRINGS] = &b->strings,
        [SNAPSHOT_SEC_ENVS] = &b->envs,
        [SNAPSHOT_SEC_SDK_KEYS] = &b->sdk_keys,
        [SNAPSHOT_SEC_FLAGS] = &t->flags,
        [SNAPSHOT_SEC_VARIANTS] = &b->variants.recs,
        [SNAPSHOT_SEC_RULES] = &t->rules,
        [SNAPSHOT_SEC_SERVES] = &b->serves.recs,
        [SNAPSHOT_SEC_ITEMS] = &b->items.recs,
        [SNAPSHOT_SEC_CONDS] = &b->conds.recs,
        [SNAPSHOT_SEC_VALUES] = &b->values.recs,
        [SNAPSHOT_SEC_PATHS] = &b->paths.recs,
        [SNAPSHOT_SEC_SEGMENTS] = &b->segments,
        [SNAPSHOT_SEC_PATTERNS] = &b->patterns.recs,
        [SNAPSHOT_SEC_TIMES] = &t->times,
        [SNAPSHOT_SEC_PARTS] = &b->parts,
    };
    struct snapshot_header *h = &plan->header;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, SNAPSHOT_MAGIC, SNAPSHOT_MAGIC_LEN);
    h->version = SNAPSHOT_FORMAT_VERSION;
    h->header_size = sizeof *h;
    h->generation = b->generation;
    size_t size = sizeof *h;
    struct snapshot_checksum_state sum;
    snapshot_checksum_init(&sum);
    for (int i = 0; i < SNAPSHOT_SEC_COUNT; i++) {
        plan->sections[i] = sections[i];
        h->sections[i].offset = size;
        h->sections[i].count = sections[i]->len;
        size_t bytes = section_bytes(sections[i]);
        snapshot_checksum_update(&sum, sections[i]->data, bytes);
        snapshot_checksum_update(&sum, zero_pad, align8(bytes) - bytes);
        size += align8(bytes);
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    h->built_at_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    h->total_size = size;
    h->checksum = snapshot_checksum_final(&sum);
}

static int write_all(int fd, const unsigned char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int fsync_directory_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int write_plan(int fd, const struct file_plan *plan)
{
    if (write_all(fd, (const unsigned char *)&plan->header, sizeof plan->header) != 0)
        return -1;
    for (int i = 0; i < SNAPSHOT_SEC_COUNT; i++) {
        size_t bytes = section_bytes(plan->sections[i]);
        if (write_all(fd, plan->sections[i]->data, bytes) != 0 ||
            write_all(fd, zero_pad, align8(bytes) - bytes) != 0)
            return -1;
    }
    return 0;
}

static int publish_file(const char *path, const struct file_plan *plan, bool sync_dir, char *err,
                        size_t errlen)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "snapshot path too long");
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "open %s: %s", tmp, strerror(errno));
        return -1;
    }
    if (write_plan(fd, plan) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (sync_dir && fsync_directory_of(path) != 0) {
        snprintf(err, errlen, "fsync directory of %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int write_file(struct snapshot_builder *b, const char *path_final, bool sync_dir, char *err,
                      size_t errlen)
{
    struct final_tables t;
    vec_init(&t.flags, sizeof(struct snapshot_flag));
    vec_init(&t.rules, sizeof(struct snapshot_rule));
    vec_init(&t.times, sizeof(int64_t));
    int rc = -1;
    if (b->failed) {
        snprintf(err, errlen, "snapshot builder failed: %s", b->error);
    } else if (b->strings.len > UINT32_MAX) {
        snprintf(err, errlen, "string table exceeds 4 GiB");
    } else if (!order_flags(b, &t) || !order_times(b, &t) || !link_env_parts(b)) {
        snprintf(err, errlen, "out of memory");
    } else {
        struct file_plan plan;
        order_sdk_keys(b);
        plan_file(b, &t, &plan);
        rc = publish_file(path_final, &plan, sync_dir, err, errlen);
    }
    vec_free(&t.flags);
    vec_free(&t.rules);
    vec_free(&t.times);
    return rc;
}

int snapshot_builder_write(struct snapshot_builder *b, const char *path_final, char *err,
                           size_t errlen)
{
    return write_file(b, path_final, true, err, errlen);
}

int snapshot_builder_write_part(struct snapshot_builder *b, const char *path_final, char *err,
                                size_t errlen)
{
    return write_file(b, path_final, false, err, errlen);
}
