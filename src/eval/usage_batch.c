/*
 * usage_batch.c - a worker's private evaluation counts (see usage_batch.h).
 *
 * Open addressing over a power-of-two number of slots keyed by the
 * snapshot (one organization's part) and flag index << 32 | variant index,
 * plus one (0 marks an empty slot), with the list of the slots in use in
 * the order they were taken (a flush visits only those); the unknown keys
 * in UNKNOWN_SLOTS more, keyed by the snapshot, the environment index and
 * the key's bytes (a count of 0 marks an empty one).
 *
 * The flags' map starts at BATCH_MIN_SLOTS and doubles, up to
 * BATCH_MAX_SLOTS, when it is half full: it grows to hold the distinct
 * (flag, variant) pairs one worker counts between two flushes, so a bulk
 * evaluation of a large environment adds to the entries of the one before
 * it instead of flushing every few hundred flags (each entry flushed costs
 * two uuid parses and a probe of the shared table, several times the
 * count itself; doc/choices.md, "The database side of a change"). Growing
 * allocates, a few times in a worker's life (log2(BATCH_MAX_SLOTS /
 * BATCH_MIN_SLOTS) at most), never per request; a worker that cannot grow
 * flushes as before. At BATCH_MAX_SLOTS, or when either map is half full
 * and cannot grow, the batch flushes.
 */
#include "eval/usage_batch.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "eval/snapshot.h"
#include "eval/unknown_flags.h"
#include "eval/usage.h"

#define BATCH_MIN_SLOTS 1024    /* a power of two */
#define BATCH_MAX_SLOTS 131072u /* a power of two: 3 MB, 65,536 pairs */

struct batch_slot {
    const struct snapshot *s; /* the part the entry's indexes refer to */
    uint64_t key;             /* 0: empty */
    uint64_t count;
};

#define UNKNOWN_SLOTS 1024 /* a power of two */
#define UNKNOWN_MAX_USED (UNKNOWN_SLOTS / 2)

struct unknown_slot {
    const struct snapshot *s; /* the part the environment index refers to */
    uint64_t count;           /* 0: empty */
    uint64_t hash;            /* of (s, env, key): compared before the key */
    uint32_t env;
    uint32_t len;
    char key[UNKNOWN_KEY_MAX + 1];
};

struct usage_batch {
    int64_t hour;
    int64_t last_seen;
    size_t cap;               /* slots: BATCH_MIN_SLOTS .. BATCH_MAX_SLOTS */
    size_t used;              /* slots in use, at most cap / 2 */
    struct batch_slot *slots; /* cap of them */
    uint32_t *taken;          /* the used slots' indexes, cap / 2 of them */
    size_t unknown_used;
    unsigned ticks; /* timer ticks since the last flush */
    struct unknown_table *unknown;
    struct unknown_slot unknown_slots[UNKNOWN_SLOTS];
};

/* The bound of usage_batch.h holds: the most ticks a full batch waits. */
_Static_assert((BATCH_MAX_SLOTS / 2 / USAGE_BATCH_TICK_ENTRIES + 1) * USAGE_BATCH_FLUSH_MS <=
                   USAGE_BATCH_HOLD_MAX_MS,
               "a full batch waits longer than USAGE_BATCH_HOLD_MAX_MS");

/* Gives b a map of cap empty slots (and its list); false when out of
 * memory, b unchanged. */
static bool set_slots(struct usage_batch *b, size_t cap)
{
    struct batch_slot *slots = calloc(cap, sizeof *slots);
    uint32_t *taken = malloc(cap / 2 * sizeof *taken);
    if (slots == NULL || taken == NULL) {
        free(slots);
        free(taken);
        return false;
    }
    free(b->slots);
    free(b->taken);
    b->slots = slots;
    b->taken = taken;
    b->cap = cap;
    b->used = 0;
    return true;
}

struct usage_batch *usage_batch_new(void)
{
    struct usage_batch *b = calloc(1, sizeof *b);
    if (b != NULL && !set_slots(b, BATCH_MIN_SLOTS)) {
        free(b);
        return NULL;
    }
    return b;
}

void usage_batch_free(struct usage_batch *b)
{
    if (b == NULL)
        return;
    free(b->slots);
    free(b->taken);
    free(b);
}

size_t usage_batch_capacity(const struct usage_batch *b)
{
    return b != NULL ? b->cap / 2 : 0;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    return x ^ (x >> 33);
}

/* The environment whose id was parsed last (most entries of a flush share
 * one). */
struct env_cache {
    const struct snapshot *s;
    uint32_t env;
    bool ok;
    uint8_t id[USAGE_ID_BYTES];
};

/* Parses the id of environment env of s into cache unless it holds it. */
static bool env_id_of(struct env_cache *cache, const struct snapshot *s, uint32_t env)
{
    if (cache->s != s || cache->env != env) {
        cache->s = s;
        cache->env = env;
        cache->ok = usage_uuid_parse(snapshot_string(s, s->envs[env].id), cache->id);
    }
    return cache->ok;
}

/* Moves one entry into the shared table under the batch's hour. */
static void publish_entry(const struct usage_batch *b, struct usage_table *table,
                          const struct batch_slot *slot, struct env_cache *cache)
{
    const struct snapshot *s = slot->s;
    uint32_t flag_index = (uint32_t)((slot->key - 1) >> 32);
    uint32_t variant_index = (uint32_t)(slot->key - 1);
    const struct snapshot_flag *flag = &s->flags[flag_index];
    const struct snapshot_variant *variant = &s->variants[variant_index];
    struct usage_entry e = {.hour = b->hour, .count = slot->count, .last_seen = b->last_seen};
    if (variant->key.len > USAGE_VARIANT_MAX ||
        !usage_uuid_parse(snapshot_string(s, flag->id), e.flag_id) ||
        !env_id_of(cache, s, flag->env))
        return;
    memcpy(e.environment_id, cache->id, USAGE_ID_BYTES);
    memcpy(e.variant, snapshot_string(s, variant->key), variant->key.len + 1);
    usage_add_entry(table, &e);
}

void usage_batch_set_unknown(struct usage_batch *b, struct unknown_table *unknown)
{
    if (b != NULL)
        b->unknown = unknown;
}

/* Moves one unknown key's count into the shared table, if its len bytes
 * follow the key pattern (no NUL among them either). */
static void publish_unknown(const struct usage_batch *b, const struct unknown_slot *slot,
                            struct env_cache *cache)
{
    const struct snapshot *s = slot->s;
    if (!unknown_flags_key_ok(slot->key, slot->len))
        return;
    if (!env_id_of(cache, s, slot->env))
        return;
    struct unknown_entry e = {.hour = b->hour, .count = slot->count, .last_seen = b->last_seen};
    memcpy(e.environment_id, cache->id, USAGE_ID_BYTES);
    memcpy(e.key, slot->key, slot->len + 1);
    unknown_flags_add_entry(b->unknown, &e);
}

static void flush_unknown(struct usage_batch *b)
{
    struct env_cache cache = {.s = NULL};
    for (size_t i = 0; i < UNKNOWN_SLOTS && b->unknown_used > 0; i++) {
        if (b->unknown_slots[i].count == 0)
            continue;
        if (b->unknown != NULL)
            publish_unknown(b, &b->unknown_slots[i], &cache);
        b->unknown_slots[i].count = 0;
        b->unknown_used--;
    }
    b->unknown_used = 0;
}

void usage_batch_flush(struct usage_batch *b, struct usage_table *table)
{
    if (b == NULL)
        return;
    b->ticks = 0;
    if (b->unknown_used > 0)
        flush_unknown(b);
    struct env_cache cache = {.s = NULL};
    for (size_t i = 0; i < b->used; i++) {
        struct batch_slot *slot = &b->slots[b->taken[i]];
        if (table != NULL)
            publish_entry(b, table, slot, &cache);
        *slot = (struct batch_slot){NULL, 0, 0};
    }
    b->used = 0;
}

bool usage_batch_tick(struct usage_batch *b, struct usage_table *table)
{
    if (b == NULL || (b->used == 0 && b->unknown_used == 0))
        return false;
    if (++b->ticks < 1 + b->used / USAGE_BATCH_TICK_ENTRIES)
        return false;
    usage_batch_flush(b, table);
    return true;
}

/* Consecutive flags of a part share a run of 2 * FLAG_RUN slots placed by
 * the hash, two slots a flag (by its variant's parity): a bulk evaluation,
 * which counts a part's flags in order, walks memory in order instead of
 * missing the cache once a flag. */
#define FLAG_RUN 8

/* Where the probe for (flag, variant) of part s starts. */
static size_t home_slot(const struct usage_batch *b, const struct snapshot *s, uint64_t flag,
                        uint64_t variant)
{
    uint64_t run = mix((uint64_t)(uintptr_t)s ^ (flag / FLAG_RUN * UINT64_C(0x9e3779b97f4a7c15)));
    return (size_t)(run * (2 * FLAG_RUN) + flag % FLAG_RUN * 2 + (variant & 1)) & (b->cap - 1);
}

void usage_batch_prefetch(const struct usage_batch *b, const struct snapshot *s, uint32_t flag)
{
    if (b != NULL)
        __builtin_prefetch(&b->slots[home_slot(b, s, flag, 0)], 1);
}

/* The slot of key (flag << 32 | variant, plus one) of part s, or the empty
 * slot where it goes. */
static size_t slot_of(const struct usage_batch *b, const struct snapshot *s, uint64_t key)
{
    size_t mask = b->cap - 1;
    size_t i = home_slot(b, s, (key - 1) >> 32, (key - 1) & UINT32_MAX);
    while (b->slots[i].key != 0 && (b->slots[i].key != key || b->slots[i].s != s))
        i = (i + 1) & mask;
    return i;
}

/* Doubles the flags' map, keeping its entries; false when it may not (at
 * BATCH_MAX_SLOTS) or cannot (out of memory), b unchanged. */
static bool grow(struct usage_batch *b)
{
    if (b->cap >= BATCH_MAX_SLOTS)
        return false;
    struct usage_batch old = *b;
    b->slots = NULL;
    b->taken = NULL;
    if (!set_slots(b, old.cap * 2)) {
        b->slots = old.slots;
        b->taken = old.taken;
        return false;
    }
    for (size_t i = 0; i < old.used; i++) {
        const struct batch_slot *from = &old.slots[old.taken[i]];
        size_t to = slot_of(b, from->s, from->key);
        b->slots[to] = *from;
        b->taken[b->used++] = (uint32_t)to;
    }
    free(old.slots);
    free(old.taken);
    return true;
}

/* True when the pending entries cannot take a count made at hour (the
 * flags' map grows first when it can). */
static bool must_flush(struct usage_batch *b, int64_t hour)
{
    bool pending = b->used > 0 || b->unknown_used > 0;
    if (!pending)
        return false;
    if (b->hour != hour || b->unknown_used >= UNKNOWN_MAX_USED)
        return true;
    return b->used >= b->cap / 2 && !grow(b);
}

void usage_batch_count(struct usage_batch *b, struct usage_table *table, const struct snapshot *s,
                       uint32_t flag, uint32_t variant, int64_t now_s)
{
    if (b == NULL)
        return;
    int64_t hour = now_s / 3600;
    if (must_flush(b, hour))
        usage_batch_flush(b, table);
    b->hour = hour;
    b->last_seen = now_s;
    uint64_t key = ((uint64_t)flag << 32 | variant) + 1;
    size_t i = slot_of(b, s, key);
    if (b->slots[i].key == 0) {
        b->slots[i].key = key;
        b->slots[i].s = s;
        b->taken[b->used++] = (uint32_t)i;
    }
    b->slots[i].count++;
}

/* A hash of the key, eight bytes at a time (the last word overlaps the one
 * before it: fixed-size loads only), with the part and the environment. */
static uint64_t unknown_hash(const struct snapshot *s, uint32_t env, const char *key, size_t len)
{
    uint64_t h = mix((uint64_t)(uintptr_t)s ^ ((uint64_t)env << 32 | len));
    uint64_t word = 0;
    if (len < 8) {
        for (size_t i = 0; i < len; i++)
            word = word << 8 | (unsigned char)key[i];
        return mix(h ^ word) | 1;
    }
    for (size_t i = 0; i + 8 < len; i += 8) {
        memcpy(&word, key + i, 8);
        h = mix(h ^ word);
    }
    memcpy(&word, key + len - 8, 8);
    return mix(h ^ word) | 1; /* never 0 */
}

void usage_batch_count_unknown(struct usage_batch *b, struct usage_table *table,
                               const struct snapshot *s, uint32_t env, const char *key, size_t len,
                               int64_t now_s)
{
    /* the length bounds the copy; the pattern is checked once per flush
     * (publish_unknown), not per count (the caller checked it too) */
    if (b == NULL || len == 0 || len > UNKNOWN_KEY_MAX)
        return;
    int64_t hour = now_s / 3600;
    if (must_flush(b, hour))
        usage_batch_flush(b, table);
    b->hour = hour;
    b->last_seen = now_s;
    uint64_t hash = unknown_hash(s, env, key, len);
    size_t i = (size_t)hash & (UNKNOWN_SLOTS - 1);
    struct unknown_slot *slot = &b->unknown_slots[i];
    while (slot->count != 0 && (slot->hash != hash || slot->s != s || slot->env != env ||
                                slot->len != len || memcmp(slot->key, key, len) != 0)) {
        i = (i + 1) & (UNKNOWN_SLOTS - 1);
        slot = &b->unknown_slots[i];
    }
    if (slot->count == 0) {
        slot->s = s;
        slot->hash = hash;
        slot->env = env;
        slot->len = (uint32_t)len;
        memcpy(slot->key, key, len);
        slot->key[len] = '\0';
        b->unknown_used++;
    }
    slot->count++;
}
