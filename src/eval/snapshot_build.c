/*
 * snapshot_build.c - the snapshot builder: its life, its string table and
 * the rows it is given (see snapshot_build.h; its state and the other two
 * files are named in snapshot_builder.h).
 *
 * Owns: snapshot_builder_new/free, the string table and composite keys,
 * organizations, environments, SDK keys, parts, entity attributes, and
 * the flag and rule rows (whose serves and conditions snapshot_rules.c
 * compiles; snapshot_write.c orders and writes them).
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
#include "eval/snapshot_build.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "eval/snapshot.h"
#include "eval/snapshot_builder.h"

/* ------------------------------------------------------------------ */
/* The builder */

int builder_fail(struct snapshot_builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->error, sizeof b->error, fmt, ap);
    va_end(ap);
    return -1;
}

int out_of_memory(struct snapshot_builder *b)
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
    X(chunks, sizeof(struct snapshot_chunk))                                                       \
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
uint32_t intern_records(struct snapshot_builder *b, struct table *t, const void *recs, size_t count)
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
struct snapshot_str intern_bytes(struct snapshot_builder *b, const char *text, size_t len)
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

struct snapshot_str intern(struct snapshot_builder *b, const char *text)
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

const char *builder_string(const struct snapshot_builder *b, struct snapshot_str ref)
{
    return (const char *)b->strings.data + ref.off;
}

/* A composite key in keybuf: the bytes of head (head_len), then the parts
 * separated by NUL bytes (second may be NULL). */
const char *compose_key(struct snapshot_builder *b, const void *head, size_t head_len,
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

const char *indexed_key(struct snapshot_builder *b, uint32_t index, const char *first,
                        const char *second, size_t *len)
{
    return compose_key(b, &index, sizeof index, first, second, len);
}

bool lookup_index(const struct map *m, const char *key, size_t len, uint32_t *out)
{
    const struct map_slot *slot = key ? map_find(m, key, len) : NULL;
    if (slot != NULL)
        *out = slot->value;
    return slot != NULL;
}

bool lookup_text(const struct map *m, const char *text, uint32_t *out)
{
    return lookup_index(m, text, strlen(text), out);
}

/* Remembers key -> value in a cache map (keys in its own arena). */
void cache_put(struct snapshot_builder *b, struct map *m, const char *key, size_t len,
               uint32_t value)
{
    if (key != NULL && map_add(m, key, len, value) == NULL)
        out_of_memory(b);
}

/* ------------------------------------------------------------------ */
/* Environments, organizations, SDK keys */

int org_index(struct snapshot_builder *b, const char *org_id, uint32_t *out)
{
    if (lookup_text(&b->org_map, org_id, out))
        return 0;
    *out = (uint32_t)b->org_sealed.len;
    if (vec_push(&b->org_sealed) == NULL ||
        map_add(&b->org_map, org_id, strlen(org_id), *out) == NULL)
        return out_of_memory(b);
    return 0;
}

bool org_sealed(const struct snapshot_builder *b, uint32_t org)
{
    return (*(uint8_t *)vec_at(&b->org_sealed, org) & ORG_SEALED) != 0;
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

int snapshot_builder_append_environments(struct snapshot_builder *b, const char *org_id,
                                         const struct snapshot_env_input *envs, size_t count,
                                         uint32_t *first)
{
    uint32_t org;
    if (b->failed || org_index(b, org_id, &org) != 0)
        return -1;
    if (b->envs.len + count >= SNAPSHOT_NONE)
        return builder_fail(b, "too many environments");
    *first = (uint32_t)b->envs.len;
    struct snapshot_str org_ref = append_string(b, org_id);
    for (size_t i = 0; i < count; i++) {
        struct snapshot_env *env = vec_push(&b->envs);
        uint32_t *env_org = vec_push(&b->env_orgs);
        if (env == NULL || env_org == NULL)
            return out_of_memory(b);
        *env_org = org;
        env->id = append_string(b, envs[i].id);
        env->org = org_ref;
        env->key = intern(b, envs[i].key); /* a few distinct keys */
    }
    return b->failed ? -1 : 0;
}

int snapshot_builder_append_sdk_key(struct snapshot_builder *b, const char *digest_hex,
                                    uint32_t env)
{
    if (b->failed)
        return -1;
    if (env >= b->envs.len)
        return builder_fail(b, "SDK key for environment %u of %zu", env, b->envs.len);
    struct snapshot_sdk_key *key = vec_push(&b->sdk_keys);
    if (key == NULL)
        return out_of_memory(b);
    if (!hex_decode(digest_hex, key->digest, SNAPSHOT_DIGEST_LEN)) {
        b->sdk_keys.len--;
        return builder_fail(b, "SDK key digest is not 64 hex characters");
    }
    key->env = env;
    return 0;
}

int snapshot_builder_add_part(struct snapshot_builder *b, const char *org_id, const char *file_name,
                              uint64_t offset, uint64_t length, uint64_t generation)
{
    uint32_t org;
    if (b->failed)
        return -1;
    if (file_name[0] == '\0' || file_name[0] == '.' || strchr(file_name, '/') != NULL)
        return builder_fail(b, "part file name %s is not a plain name", file_name);
    if (org_index(b, org_id, &org) != 0)
        return -1;
    uint8_t *state = vec_at(&b->org_sealed, org);
    if (*state & ORG_HAS_PART)
        return builder_fail(b, "part of organization %s added twice", org_id);
    struct snapshot_part *part = vec_push(&b->parts);
    uint32_t *part_org = vec_push(&b->part_orgs);
    if (part == NULL || part_org == NULL)
        return out_of_memory(b);
    *part_org = org;
    *(uint8_t *)vec_at(&b->org_sealed, org) |= ORG_HAS_PART;
    part->org = append_string(b, org_id); /* unique: no lookup */
    part->file = append_string(b, file_name);
    part->generation = generation;
    part->offset = offset;
    part->length = length;
    return b->failed ? -1 : 0;
}

int snapshot_builder_add_chunk(struct snapshot_builder *b, const char *first_key,
                               const struct snapshot_chunk *extent)
{
    if (b->failed)
        return -1;
    if (!snapshot_chunk_extent_ok(extent))
        return builder_fail(
            b, "chunk %s: extent %" PRIu64 "+%" PRIu64 " of pack %" PRIu32 " cannot be one",
            first_key, extent->offset, extent->length, extent->pack);
    const struct snapshot_chunk *last =
        b->chunks.len > 0 ? vec_at(&b->chunks, b->chunks.len - 1) : NULL;
    bool in_order =
        last == NULL ? first_key[0] == '\0'
                     : strcmp((const char *)b->strings.data + last->first_key.off, first_key) < 0;
    if (!in_order)
        return builder_fail(b, "chunk first key %s out of order", first_key);
    struct snapshot_chunk *chunk = vec_push(&b->chunks);
    if (chunk == NULL)
        return out_of_memory(b);
    *chunk = *extent;
    chunk->reserved = 0;
    chunk->first_key = append_string(b, first_key);
    return b->failed ? -1 : 0;
}

/* Each environment's part (its organization's, if any) and generation. */
bool link_env_parts(struct snapshot_builder *b)
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
    if (b->chunks.len > 0)
        return builder_fail(b, "flag %s added to a header of chunks", in->flag_key);
    if (!lookup_text(&b->env_map, in->env_id, &env))
        return builder_fail(b, "flag %s for unknown environment %s", in->flag_key, in->env_id);
    const char *key = flag_map_key(b, env, in->flag_key, &len);
    if (key == NULL || lookup_index(&b->flag_map, key, len, &index))
        return key ? builder_fail(b, "flag %s added twice", in->flag_key) : -1;
    index = (uint32_t)b->flags.len;
    if (map_add(&b->flag_map, key, len, index) == NULL)
        return out_of_memory(b);
    *(uint8_t *)vec_at(&b->org_sealed, *(uint32_t *)vec_at(&b->env_orgs, env)) |= ORG_SEALED;
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
