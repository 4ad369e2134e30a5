/*
 * usage_batch.c - a worker's private evaluation counts (see usage_batch.h).
 *
 * Open addressing over BATCH_SLOTS slots keyed by the snapshot (one
 * organization's part) and flag index << 32 | variant index, plus one (0
 * marks an empty slot); flushed when half full.
 */
#include "eval/usage_batch.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "eval/snapshot.h"
#include "eval/usage.h"

#define BATCH_SLOTS 1024 /* a power of two */
#define BATCH_MAX_USED (BATCH_SLOTS / 2)

struct batch_slot {
    const struct snapshot *s; /* the part the entry's indexes refer to */
    uint64_t key;             /* 0: empty */
    uint64_t count;
};

struct usage_batch {
    int64_t hour;
    int64_t last_seen;
    size_t used;
    struct batch_slot slots[BATCH_SLOTS];
};

struct usage_batch *usage_batch_new(void)
{
    return calloc(1, sizeof(struct usage_batch));
}

void usage_batch_free(struct usage_batch *b)
{
    free(b);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    return x ^ (x >> 33);
}

/* Moves one entry into the shared table under the batch's hour. */
static void publish_entry(const struct usage_batch *b, struct usage_table *table,
                          const struct batch_slot *slot)
{
    const struct snapshot *s = slot->s;
    uint32_t flag_index = (uint32_t)((slot->key - 1) >> 32);
    uint32_t variant_index = (uint32_t)(slot->key - 1);
    const struct snapshot_flag *flag = &s->flags[flag_index];
    const struct snapshot_variant *variant = &s->variants[variant_index];
    uint8_t flag_id[USAGE_ID_BYTES], env_id[USAGE_ID_BYTES];
    if (!usage_uuid_parse(snapshot_string(s, flag->id), flag_id) ||
        !usage_uuid_parse(snapshot_string(s, s->envs[flag->env].id), env_id))
        return;
    struct usage_entry e = {.hour = b->hour, .count = slot->count, .last_seen = b->last_seen};
    memcpy(e.flag_id, flag_id, sizeof flag_id);
    memcpy(e.environment_id, env_id, sizeof env_id);
    if (variant->key.len > USAGE_VARIANT_MAX)
        return;
    memcpy(e.variant, snapshot_string(s, variant->key), variant->key.len + 1);
    usage_add_entry(table, &e);
}

void usage_batch_flush(struct usage_batch *b, struct usage_table *table)
{
    if (b == NULL || b->used == 0)
        return;
    for (size_t i = 0; i < BATCH_SLOTS; i++) {
        if (b->slots[i].key == 0)
            continue;
        if (table != NULL)
            publish_entry(b, table, &b->slots[i]);
        b->slots[i] = (struct batch_slot){NULL, 0, 0};
    }
    b->used = 0;
}

/* True when the pending entries cannot take a count made at hour. */
static bool must_flush(const struct usage_batch *b, int64_t hour)
{
    return b->used > 0 && (b->used >= BATCH_MAX_USED || b->hour != hour);
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
    size_t i = (size_t)mix(key ^ (uint64_t)(uintptr_t)s) & (BATCH_SLOTS - 1);
    while (b->slots[i].key != 0 && (b->slots[i].key != key || b->slots[i].s != s))
        i = (i + 1) & (BATCH_SLOTS - 1);
    if (b->slots[i].key == 0) {
        b->slots[i].key = key;
        b->slots[i].s = s;
        b->used++;
    }
    b->slots[i].count++;
}
