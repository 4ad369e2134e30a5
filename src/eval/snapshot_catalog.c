/*
 * snapshot_catalog.c - the refresher's per-organization record of the
 * published index (see snapshot_catalog.h).
 *
 * Arrays grow by doubling; text is appended NUL-terminated to one arena and
 * referred to by offset (the arena moves when it grows).
 */
#include "eval/snapshot_catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"

void snapshot_catalog_init(struct snapshot_catalog *c)
{
    memset(c, 0, sizeof *c);
}

void snapshot_catalog_free(struct snapshot_catalog *c)
{
    free(c->orgs);
    free(c->envs);
    free(c->keys);
    free(c->text);
    snapshot_catalog_init(c);
}

/* Room for one more record of size in *items (*cap of them); false, with
 * the catalog failed, when out of memory. */
static bool reserve(struct snapshot_catalog *c, void **items, size_t *cap, size_t len, size_t add,
                    size_t size)
{
    if (c->failed)
        return false;
    if (len + add <= *cap)
        return true;
    size_t grown = *cap ? *cap * 2 : 64;
    while (grown < len + add)
        grown *= 2;
    void *p = realloc(*items, grown * size);
    if (p == NULL) {
        c->failed = true;
        return false;
    }
    *items = p;
    *cap = grown;
    return true;
}

/* Appends text to the arena; its offset, or SIZE_MAX when out of memory. */
static size_t add_text(struct snapshot_catalog *c, const char *text)
{
    size_t n = strlen(text) + 1;
    void *arena = c->text;
    if (!reserve(c, &arena, &c->text_cap, c->text_len, n, 1))
        return SIZE_MAX;
    c->text = arena;
    size_t off = c->text_len;
    memcpy(c->text + off, text, n);
    c->text_len += n;
    return off;
}

static int compare_org(const void *key, const void *item)
{
    return strcmp(key, ((const struct snapshot_catalog_org *)item)->id);
}

const struct snapshot_catalog_org *snapshot_catalog_find(const struct snapshot_catalog *c,
                                                         const char *org_id)
{
    if (c == NULL || c->org_count == 0)
        return NULL;
    return bsearch(org_id, c->orgs, c->org_count, sizeof *c->orgs, compare_org);
}

int snapshot_catalog_set_generation(struct snapshot_catalog *c, const char *org_id,
                                    uint64_t generation)
{
    struct snapshot_catalog_org *org =
        (struct snapshot_catalog_org *)snapshot_catalog_find(c, org_id);
    if (org == NULL)
        return -1;
    org->generation = generation;
    return 0;
}

int snapshot_catalog_add_org(struct snapshot_catalog *c, const char *org_id, uint64_t generation)
{
    if (strlen(org_id) >= SNAPSHOT_PART_ORG_MAX ||
        (c->org_count > 0 && strcmp(c->orgs[c->org_count - 1].id, org_id) >= 0))
        return -1;
    void *orgs = c->orgs;
    if (!reserve(c, &orgs, &c->org_cap, c->org_count, 1, sizeof *c->orgs))
        return -1;
    c->orgs = orgs;
    struct snapshot_catalog_org *org = &c->orgs[c->org_count++];
    memset(org, 0, sizeof *org);
    memcpy(org->id, org_id, strlen(org_id) + 1);
    org->generation = generation;
    org->env_first = c->env_count;
    org->key_first = c->key_count;
    return 0;
}

int snapshot_catalog_add_env(struct snapshot_catalog *c, const char *env_id, const char *key)
{
    void *envs = c->envs;
    if (c->org_count == 0 || !reserve(c, &envs, &c->env_cap, c->env_count, 1, sizeof *c->envs))
        return -1;
    c->envs = envs;
    size_t id = add_text(c, env_id), text = add_text(c, key);
    if (id == SIZE_MAX || text == SIZE_MAX)
        return -1;
    c->envs[c->env_count++] = (struct snapshot_catalog_env){id, text};
    c->orgs[c->org_count - 1].env_count++;
    return 0;
}

int snapshot_catalog_add_key(struct snapshot_catalog *c, const char *digest_hex, const char *env_id)
{
    void *keys = c->keys;
    if (c->org_count == 0 || !reserve(c, &keys, &c->key_cap, c->key_count, 1, sizeof *c->keys))
        return -1;
    c->keys = keys;
    size_t digest = add_text(c, digest_hex), env = add_text(c, env_id);
    if (digest == SIZE_MAX || env == SIZE_MAX)
        return -1;
    c->keys[c->key_count++] = (struct snapshot_catalog_key){digest, env};
    c->orgs[c->org_count - 1].key_count++;
    return 0;
}

int snapshot_catalog_copy_org(struct snapshot_catalog *c, const struct snapshot_catalog *src,
                              const struct snapshot_catalog_org *org)
{
    if (snapshot_catalog_add_org(c, org->id, org->generation) != 0)
        return -1;
    for (size_t i = org->env_first; i < org->env_first + org->env_count; i++)
        if (snapshot_catalog_add_env(c, snapshot_catalog_text(src, src->envs[i].id),
                                     snapshot_catalog_text(src, src->envs[i].key)) != 0)
            return -1;
    for (size_t i = org->key_first; i < org->key_first + org->key_count; i++)
        if (snapshot_catalog_add_key(c, snapshot_catalog_text(src, src->keys[i].digest),
                                     snapshot_catalog_text(src, src->keys[i].env_id)) != 0)
            return -1;
    return 0;
}

/* A refusal of b: -1 when it is for good (out of memory), else counted. */
static int refused(const struct snapshot_builder *b, size_t *skipped)
{
    (*skipped)++;
    return strcmp(snapshot_builder_error(b), "out of memory") == 0 ? -1 : 0;
}

/* The position of environment env_id among org's, or SNAPSHOT_NONE. */
static uint32_t env_position(const struct snapshot_catalog *c,
                             const struct snapshot_catalog_org *org, const char *env_id)
{
    for (size_t i = 0; i < org->env_count; i++)
        if (strcmp(snapshot_catalog_text(c, c->envs[org->env_first + i].id), env_id) == 0)
            return (uint32_t)i;
    return SNAPSHOT_NONE;
}

/* Appends org's environments and keys to b. */
static int fill_org(const struct snapshot_catalog *c, const struct snapshot_catalog_org *org,
                    struct snapshot_builder *b, struct snapshot_env_input *inputs, size_t *skipped)
{
    for (size_t i = 0; i < org->env_count; i++)
        inputs[i] =
            (struct snapshot_env_input){snapshot_catalog_text(c, c->envs[org->env_first + i].id),
                                        snapshot_catalog_text(c, c->envs[org->env_first + i].key)};
    uint32_t first;
    if (snapshot_builder_append_environments(b, org->id, inputs, org->env_count, &first) != 0)
        return refused(b, skipped);
    for (size_t i = org->key_first; i < org->key_first + org->key_count; i++) {
        uint32_t at = env_position(c, org, snapshot_catalog_text(c, c->keys[i].env_id));
        if (at == SNAPSHOT_NONE) {
            (*skipped)++;
            continue;
        }
        if (snapshot_builder_append_sdk_key(b, snapshot_catalog_text(c, c->keys[i].digest),
                                            first + at) != 0 &&
            refused(b, skipped) != 0)
            return -1;
    }
    return 0;
}

int snapshot_catalog_fill(const struct snapshot_catalog *c, struct snapshot_builder *b,
                          size_t *skipped)
{
    size_t most = 1;
    for (size_t o = 0; o < c->org_count; o++)
        if (c->orgs[o].env_count > most)
            most = c->orgs[o].env_count;
    struct snapshot_env_input *inputs = malloc(most * sizeof *inputs);
    if (inputs == NULL)
        return -1;
    int rc = 0;
    for (size_t o = 0; rc == 0 && o < c->org_count; o++)
        if (c->orgs[o].env_count > 0)
            rc = fill_org(c, &c->orgs[o], b, inputs, skipped);
    free(inputs);
    return rc;
}

/* ---- loading an index ---- */

/* Per part of the index, its environments (indexes into index->envs) and
 * SDK keys (indexes into index->sdk_keys), grouped by counting. */
struct grouping {
    uint32_t *env_start, *envs; /* env_start[p] .. env_start[p + 1] in envs */
    uint32_t *key_start, *keys;
};

static void grouping_free(struct grouping *g)
{
    free(g->env_start);
    free(g->envs);
    free(g->key_start);
    free(g->keys);
}

/* Counting sort of count items by their part (part_of, SNAPSHOT_NONE or
 * out of range: left out) into start (parts + 1) and items. */
static bool group(size_t parts, size_t count, uint32_t (*part_of)(const struct snapshot *, size_t),
                  const struct snapshot *index, uint32_t **start, uint32_t **items)
{
    *start = calloc(parts + 2, sizeof **start);
    *items = malloc((count ? count : 1) * sizeof **items);
    if (*start == NULL || *items == NULL)
        return false;
    for (size_t i = 0; i < count; i++) {
        uint32_t p = part_of(index, i);
        if (p < parts)
            (*start)[p + 2]++;
    }
    for (size_t p = 0; p < parts; p++)
        (*start)[p + 2] += (*start)[p + 1];
    for (size_t i = 0; i < count; i++) {
        uint32_t p = part_of(index, i);
        if (p < parts)
            (*items)[(*start)[p + 1]++] = (uint32_t)i;
    }
    return true;
}

static uint32_t env_part(const struct snapshot *index, size_t i)
{
    return index->envs[i].part;
}

static uint32_t key_part(const struct snapshot *index, size_t i)
{
    return index->envs[index->sdk_keys[i].env].part;
}

/* Appends part p of index to c, with its environments and keys. */
static int load_part(struct snapshot_catalog *c, const struct snapshot *index,
                     const struct grouping *g, size_t p)
{
    const struct snapshot_part *part = &index->parts[p];
    if (snapshot_catalog_add_org(c, snapshot_string(index, part->org), part->generation) != 0)
        return -1;
    for (uint32_t i = g->env_start[p]; i < g->env_start[p + 1]; i++) {
        const struct snapshot_env *env = &index->envs[g->envs[i]];
        if (snapshot_catalog_add_env(c, snapshot_string(index, env->id),
                                     snapshot_string(index, env->key)) != 0)
            return -1;
    }
    char digest[2 * SNAPSHOT_DIGEST_LEN + 1];
    for (uint32_t i = g->key_start[p]; i < g->key_start[p + 1]; i++) {
        const struct snapshot_sdk_key *key = &index->sdk_keys[g->keys[i]];
        hex_encode(key->digest, SNAPSHOT_DIGEST_LEN, digest);
        if (snapshot_catalog_add_key(c, digest, snapshot_string(index, index->envs[key->env].id)) !=
            0)
            return -1;
    }
    return 0;
}

/* Whether part p can be taken: a plain organization id above the last one
 * taken, and a file part_ok accepts. */
static bool part_usable(const struct snapshot_catalog *c, const struct snapshot *index, size_t p,
                        snapshot_catalog_part_ok_fn part_ok, void *ctx)
{
    const struct snapshot_part *part = &index->parts[p];
    const char *org = snapshot_string(index, part->org);
    if (strlen(org) >= SNAPSHOT_PART_ORG_MAX ||
        strlen(snapshot_string(index, part->file)) >= SNAPSHOT_PART_NAME_MAX ||
        (c->org_count > 0 && strcmp(c->orgs[c->org_count - 1].id, org) >= 0))
        return false;
    return part_ok(ctx, org, snapshot_string(index, part->file), part->generation);
}

int snapshot_catalog_load(struct snapshot_catalog *c, const struct snapshot *index,
                          snapshot_catalog_part_ok_fn part_ok, void *ctx,
                          struct snapshot_part_file **parts, size_t *count)
{
    size_t n = index->counts[SNAPSHOT_SEC_PARTS];
    struct grouping g = {0};
    *count = 0;
    *parts = calloc(n ? n : 1, sizeof **parts);
    int rc = *parts != NULL &&
                     group(n, index->counts[SNAPSHOT_SEC_ENVS], env_part, index, &g.env_start,
                           &g.envs) &&
                     group(n, index->counts[SNAPSHOT_SEC_SDK_KEYS], key_part, index, &g.key_start,
                           &g.keys)
                 ? 0
                 : -1;
    for (size_t p = 0; rc == 0 && p < n; p++) {
        if (!part_usable(c, index, p, part_ok, ctx))
            continue;
        if ((rc = load_part(c, index, &g, p)) != 0)
            break;
        struct snapshot_part_file *f = &(*parts)[(*count)++];
        const struct snapshot_part *part = &index->parts[p];
        snprintf(f->org, sizeof f->org, "%s", snapshot_string(index, part->org));
        snprintf(f->name, sizeof f->name, "%s", snapshot_string(index, part->file));
        f->generation = part->generation;
    }
    grouping_free(&g);
    if (rc == 0 && *count == n)
        c->generation = snapshot_generation(index);
    if (rc != 0) {
        snapshot_catalog_free(c);
        free(*parts);
        *parts = NULL;
        *count = 0;
    }
    return rc;
}
