/*
 * usage.c - the lock-free usage-counter table (see usage.h).
 *
 * A slot is two cache lines: the tag, the count, the latest evaluation
 * time, the hour and the key (flag id, environment id, variant key) as
 * twelve 64-bit words. Every shared field is a C11 atomic; key words are
 * accessed relaxed and ordered by the tag (release on publish, acquire on
 * read), so a reader that sees a READY tag sees the whole key.
 */
#include "eval/usage.h"

#include <stdatomic.h>
#include <string.h>

#include "base/hex.h"

#define KEY_WORDS 12 /* 2 flag id + 2 environment id + 8 variant */

#define TAG_EMPTY 0u
#define TAG_TOMBSTONE 1u
#define TAG_BUSY 2u
#define TAG_READY_BIT (UINT64_C(1) << 63)

#define BUSY_SPINS 256
#define CLAIM_RETRIES 4

struct usage_slot {
    _Atomic uint64_t tag;
    _Atomic uint64_t count;
    _Atomic int64_t last_seen;
    _Atomic int64_t hour;
    _Atomic uint64_t key[KEY_WORDS];
};

struct usage_table {
    size_t slots;
    _Atomic uint64_t dropped;
    char pad[64 - sizeof(size_t) - sizeof(uint64_t)];
    struct usage_slot slot[];
};

_Static_assert(sizeof(struct usage_slot) == 128, "a usage slot is two cache lines");
_Static_assert(sizeof(struct usage_table) == 64, "the usage table header is one cache line");

/* The key as the table stores it. */
struct packed_key {
    uint64_t w[KEY_WORDS];
    int64_t hour;
};

size_t usage_area_size(size_t slots)
{
    return sizeof(struct usage_table) + slots * sizeof(struct usage_slot);
}

struct usage_table *usage_area_init(void *area, size_t slots)
{
    struct usage_table *t = area;
    memset(area, 0, usage_area_size(slots));
    t->slots = slots;
    atomic_init(&t->dropped, 0);
    return t;
}

uint64_t usage_dropped(const struct usage_table *t)
{
    return atomic_load_explicit(&t->dropped, memory_order_relaxed);
}

size_t usage_slot_count(const struct usage_table *t)
{
    return t->slots;
}

static bool pack_key(const uint8_t *flag_id, const uint8_t *env_id, const char *variant,
                     size_t variant_len, int64_t hour, struct packed_key *out)
{
    if (variant_len == 0 || variant_len > USAGE_VARIANT_MAX)
        return false;
    unsigned char bytes[KEY_WORDS * 8];
    memset(bytes, 0, sizeof bytes);
    memcpy(bytes, flag_id, USAGE_ID_BYTES);
    memcpy(bytes + USAGE_ID_BYTES, env_id, USAGE_ID_BYTES);
    memcpy(bytes + 2 * USAGE_ID_BYTES, variant, variant_len);
    memcpy(out->w, bytes, sizeof bytes);
    out->hour = hour;
    return true;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t key_tag(const struct packed_key *k)
{
    uint64_t h = mix64((uint64_t)k->hour);
    for (size_t i = 0; i < KEY_WORDS; i++)
        h = mix64(h ^ k->w[i]);
    return h | TAG_READY_BIT;
}

static bool slot_has_key(struct usage_slot *s, const struct packed_key *k)
{
    if (atomic_load_explicit(&s->hour, memory_order_relaxed) != k->hour)
        return false;
    for (size_t i = 0; i < KEY_WORDS; i++)
        if (atomic_load_explicit(&s->key[i], memory_order_relaxed) != k->w[i])
            return false;
    return true;
}

static void slot_count(struct usage_slot *s, uint64_t n, int64_t seen)
{
    atomic_fetch_add_explicit(&s->count, n, memory_order_relaxed);
    int64_t last = atomic_load_explicit(&s->last_seen, memory_order_relaxed);
    while (last < seen &&
           !atomic_compare_exchange_weak_explicit(&s->last_seen, &last, seen, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* Waits (briefly) for a slot someone is claiming; returns its tag then. */
static uint64_t settled_tag(struct usage_slot *s)
{
    uint64_t tag = atomic_load_explicit(&s->tag, memory_order_acquire);
    for (int i = 0; tag == TAG_BUSY && i < BUSY_SPINS; i++)
        tag = atomic_load_explicit(&s->tag, memory_order_acquire);
    return tag;
}

/* Writes the key into a slot we hold BUSY, then publishes it. */
static void publish_key(struct usage_slot *s, const struct packed_key *k, uint64_t tag)
{
    for (size_t i = 0; i < KEY_WORDS; i++)
        atomic_store_explicit(&s->key[i], k->w[i], memory_order_relaxed);
    atomic_store_explicit(&s->hour, k->hour, memory_order_relaxed);
    atomic_store_explicit(&s->last_seen, 0, memory_order_relaxed);
    atomic_store_explicit(&s->tag, tag, memory_order_release);
}

static bool try_claim(struct usage_slot *s, uint64_t expected)
{
    return atomic_compare_exchange_strong_explicit(&s->tag, &expected, TAG_BUSY,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

enum probe_result { PROBE_FOUND, PROBE_CLAIMED, PROBE_RETRY, PROBE_FULL };

/* One probe run from the key's home slot; *out is the slot to count in. */
static enum probe_result probe(struct usage_table *t, const struct packed_key *k, uint64_t tag,
                               struct usage_slot **out)
{
    struct usage_slot *reusable = NULL;
    size_t home = (size_t)(tag % t->slots);
    size_t limit = t->slots < USAGE_MAX_PROBES ? t->slots : USAGE_MAX_PROBES;
    for (size_t i = 0; i < limit; i++) {
        struct usage_slot *s = &t->slot[(home + i) % t->slots];
        uint64_t seen = settled_tag(s);
        if (seen == tag && slot_has_key(s, k)) {
            *out = s;
            return PROBE_FOUND;
        }
        if (seen == TAG_TOMBSTONE && reusable == NULL)
            reusable = s;
        if (seen == TAG_EMPTY) {
            struct usage_slot *target = reusable != NULL ? reusable : s;
            if (!try_claim(target, reusable != NULL ? TAG_TOMBSTONE : TAG_EMPTY))
                return PROBE_RETRY;
            publish_key(target, k, tag);
            *out = target;
            return PROBE_CLAIMED;
        }
    }
    if (reusable != NULL && try_claim(reusable, TAG_TOMBSTONE)) {
        publish_key(reusable, k, tag);
        *out = reusable;
        return PROBE_CLAIMED;
    }
    return reusable != NULL ? PROBE_RETRY : PROBE_FULL;
}

static bool add_packed(struct usage_table *t, const struct packed_key *k, uint64_t n, int64_t seen)
{
    uint64_t tag = key_tag(k);
    for (int attempt = 0; attempt < CLAIM_RETRIES; attempt++) {
        struct usage_slot *s = NULL;
        enum probe_result result = probe(t, k, tag, &s);
        if (result == PROBE_FOUND || result == PROBE_CLAIMED) {
            slot_count(s, n, seen);
            return true;
        }
        if (result == PROBE_FULL)
            break;
    }
    atomic_fetch_add_explicit(&t->dropped, n, memory_order_relaxed);
    return false;
}

bool usage_add(struct usage_table *t, const uint8_t flag_id[USAGE_ID_BYTES],
               const uint8_t environment_id[USAGE_ID_BYTES], const char *variant,
               size_t variant_len, int64_t now_s, uint64_t n)
{
    struct packed_key k;
    if (!pack_key(flag_id, environment_id, variant, variant_len, now_s / 3600, &k)) {
        atomic_fetch_add_explicit(&t->dropped, n, memory_order_relaxed);
        return false;
    }
    return add_packed(t, &k, n, now_s);
}

bool usage_add_entry(struct usage_table *t, const struct usage_entry *e)
{
    struct packed_key k;
    size_t len = strnlen(e->variant, sizeof e->variant);
    if (!pack_key(e->flag_id, e->environment_id, e->variant, len, e->hour, &k)) {
        atomic_fetch_add_explicit(&t->dropped, e->count, memory_order_relaxed);
        return false;
    }
    return add_packed(t, &k, e->count, e->last_seen);
}

static void read_entry(struct usage_slot *s, struct usage_entry *e)
{
    unsigned char bytes[KEY_WORDS * 8];
    uint64_t w[KEY_WORDS];
    for (size_t i = 0; i < KEY_WORDS; i++)
        w[i] = atomic_load_explicit(&s->key[i], memory_order_relaxed);
    memcpy(bytes, w, sizeof bytes);
    memcpy(e->flag_id, bytes, USAGE_ID_BYTES);
    memcpy(e->environment_id, bytes + USAGE_ID_BYTES, USAGE_ID_BYTES);
    memcpy(e->variant, bytes + 2 * USAGE_ID_BYTES, USAGE_VARIANT_MAX);
    e->variant[USAGE_VARIANT_MAX] = '\0';
    e->hour = atomic_load_explicit(&s->hour, memory_order_relaxed);
    e->last_seen = atomic_load_explicit(&s->last_seen, memory_order_relaxed);
}

/* Reclaims a drained slot of an old hour: BUSY while the last count is
 * taken, then TOMBSTONE. Returns a count that arrived meanwhile. */
static uint64_t reclaim(struct usage_slot *s, uint64_t tag)
{
    if (!try_claim(s, tag))
        return 0;
    uint64_t late = atomic_exchange_explicit(&s->count, 0, memory_order_acq_rel);
    atomic_store_explicit(&s->tag, TAG_TOMBSTONE, memory_order_release);
    return late;
}

size_t usage_drain(struct usage_table *t, int64_t now_s, usage_drain_cb cb, void *arg)
{
    size_t handed = 0;
    int64_t current_hour = now_s / 3600;
    for (size_t i = 0; i < t->slots; i++) {
        struct usage_slot *s = &t->slot[i];
        uint64_t tag = atomic_load_explicit(&s->tag, memory_order_acquire);
        if ((tag & TAG_READY_BIT) == 0)
            continue;
        struct usage_entry e;
        read_entry(s, &e);
        e.count = atomic_exchange_explicit(&s->count, 0, memory_order_acq_rel);
        if (atomic_load_explicit(&s->tag, memory_order_acquire) != tag) {
            /* Reclaimed and reused by a concurrent drain: the count is the new key's. */
            atomic_fetch_add_explicit(&s->count, e.count, memory_order_relaxed);
            continue;
        }
        if (e.count == 0 && e.hour <= current_hour - 2)
            e.count = reclaim(s, tag);
        if (e.count == 0)
            continue;
        cb(&e, arg);
        handed++;
    }
    return handed;
}

bool usage_uuid_parse(const char *text, uint8_t out[USAGE_ID_BYTES])
{
    size_t byte = 0;
    for (size_t i = 0; i < 36; i += 2) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i] != '-')
                return false;
            i++;
        }
        int hi = hex_value(text[i]);
        int lo = hi < 0 ? -1 : hex_value(text[i + 1]);
        if (lo < 0)
            return false;
        out[byte++] = (uint8_t)(hi << 4 | lo);
    }
    return text[36] == '\0';
}

void usage_uuid_format(const uint8_t id[USAGE_ID_BYTES], char out[37])
{
    static const char digits[] = "0123456789abcdef";
    size_t pos = 0;
    for (size_t i = 0; i < USAGE_ID_BYTES; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[pos++] = '-';
        out[pos++] = digits[id[i] >> 4];
        out[pos++] = digits[id[i] & 15];
    }
    out[pos] = '\0';
}
