/*
 * unknown_flags.c - the unknown-key counters (see unknown_flags.h).
 *
 * The table is a usage table (usage.c) whose entries carry a zero flag id,
 * the environment id and the flag key where a usage entry has its variant
 * key: both are at most 63 bytes of the key pattern, so the slot layout,
 * the lock-free protocol and the reclaiming of old hours are usage.c's,
 * tested there. This file checks the key before anything is stored and
 * translates entries.
 */
#include "eval/unknown_flags.h"

#include <string.h>

static const uint8_t no_flag[USAGE_ID_BYTES];

_Static_assert(UNKNOWN_KEY_MAX == USAGE_VARIANT_MAX, "an unknown key fits a usage variant key");

static struct usage_table *as_usage(struct unknown_table *t)
{
    return (struct usage_table *)t;
}

bool unknown_flags_key_ok(const char *key, size_t len)
{
    if (key == NULL || len == 0 || len > UNKNOWN_KEY_MAX || key[0] == '-' || key[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    }
    return true;
}

size_t unknown_flags_area_size(size_t slots)
{
    return usage_area_size(slots);
}

struct unknown_table *unknown_flags_area_init(void *area, size_t slots)
{
    return (struct unknown_table *)usage_area_init(area, slots);
}

bool unknown_flags_add(struct unknown_table *t, const uint8_t environment_id[USAGE_ID_BYTES],
                       const char *key, size_t len, int64_t now_s, uint64_t n)
{
    if (!unknown_flags_key_ok(key, len))
        return false;
    return usage_add(as_usage(t), no_flag, environment_id, key, len, now_s, n);
}

bool unknown_flags_add_entry(struct unknown_table *t, const struct unknown_entry *e)
{
    size_t len = strnlen(e->key, sizeof e->key);
    if (!unknown_flags_key_ok(e->key, len))
        return false;
    struct usage_entry u = {.hour = e->hour, .count = e->count, .last_seen = e->last_seen};
    memcpy(u.environment_id, e->environment_id, USAGE_ID_BYTES);
    memcpy(u.variant, e->key, len);
    return usage_add_entry(as_usage(t), &u);
}

struct drain_call {
    unknown_drain_cb cb;
    void *arg;
};

static void hand_over(const struct usage_entry *u, void *arg)
{
    const struct drain_call *call = arg;
    struct unknown_entry e = {.hour = u->hour, .count = u->count, .last_seen = u->last_seen};
    memcpy(e.environment_id, u->environment_id, USAGE_ID_BYTES);
    memcpy(e.key, u->variant, UNKNOWN_KEY_MAX);
    e.key[UNKNOWN_KEY_MAX] = '\0';
    call->cb(&e, call->arg);
}

size_t unknown_flags_drain(struct unknown_table *t, int64_t now_s, unknown_drain_cb cb, void *arg)
{
    struct drain_call call = {cb, arg};
    return usage_drain(as_usage(t), now_s, hand_over, &call);
}

uint64_t unknown_flags_dropped(const struct unknown_table *t)
{
    return usage_dropped((const struct usage_table *)t);
}
