/*
 * stream_slots.c - the per-key stream counts in shared memory (see
 * stream_slots.h).
 *
 * An entry's owner field says what it is: 0 never used (ends a probe
 * chain), -1 freed (a tombstone: probing goes on), -2 being claimed (its
 * digest is being written), or the pid of the worker whose count it holds.
 * The digest is written before the owner is published (release order), so
 * a reader that sees a pid sees that pid's digest.
 */
#include "eval/stream_slots.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "base/config.h"
#include "eval/shm.h"

#define OWNER_EMPTY 0
#define OWNER_FREED (-1)
#define OWNER_CLAIMING (-2)
#define SLOTS_MIN 1024u
#define SLOTS_MAX (1u << 20)

struct stream_slot {
    _Atomic int32_t owner;
    _Atomic uint32_t count;
    uint8_t digest[STREAM_SLOTS_DIGEST_LEN];
};

struct stream_slots {
    uint64_t mask; /* slots - 1 */
    struct stream_slot slots[];
};

size_t stream_slots_count_for(const struct config *cfg)
{
    uint64_t wanted = (uint64_t)cfg->workers * (uint64_t)cfg->stream_max_per_worker * 4;
    size_t n = SLOTS_MIN;
    while (n < wanted && n < SLOTS_MAX)
        n *= 2;
    return n;
}

size_t stream_slots_area_size(size_t slots)
{
    return sizeof(struct stream_slots) + slots * sizeof(struct stream_slot);
}

void stream_slots_area_init(void *area, size_t slots)
{
    struct stream_slots *t = area;
    memset(area, 0, stream_slots_area_size(slots));
    t->mask = slots - 1;
    for (size_t i = 0; i < slots; i++) {
        atomic_init(&t->slots[i].owner, OWNER_EMPTY);
        atomic_init(&t->slots[i].count, 0);
    }
}

static size_t home(const struct stream_slots *t, const uint8_t *digest)
{
    uint64_t h;
    memcpy(&h, digest, sizeof h); /* a SHA-256: already uniform */
    return (size_t)(h & t->mask);
}

static bool holds(const struct stream_slot *e, int32_t owner, const uint8_t *digest)
{
    return owner > 0 && memcmp(e->digest, digest, STREAM_SLOTS_DIGEST_LEN) == 0;
}

/* Walks digest's probe chain: the node's total, and owner's entry if any. */
static uint32_t scan(struct stream_slots *t, const uint8_t *digest, int32_t owner,
                     struct stream_slot **mine)
{
    uint32_t total = 0;
    size_t i = home(t, digest);
    if (mine != NULL)
        *mine = NULL;
    for (size_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
        struct stream_slot *e = &t->slots[i];
        int32_t o = atomic_load_explicit(&e->owner, memory_order_acquire);
        if (o == OWNER_EMPTY)
            break;
        if (!holds(e, o, digest))
            continue;
        total += atomic_load_explicit(&e->count, memory_order_relaxed);
        if (o == owner && mine != NULL)
            *mine = e;
    }
    return total;
}

static struct stream_slot *claim(struct stream_slots *t, const uint8_t *digest, int32_t owner)
{
    size_t i = home(t, digest);
    for (size_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
        struct stream_slot *e = &t->slots[i];
        int32_t o = atomic_load_explicit(&e->owner, memory_order_relaxed);
        if (o != OWNER_EMPTY && o != OWNER_FREED)
            continue;
        if (!atomic_compare_exchange_strong(&e->owner, &o, OWNER_CLAIMING))
            continue;
        memcpy(e->digest, digest, STREAM_SLOTS_DIGEST_LEN);
        atomic_store_explicit(&e->count, 0, memory_order_relaxed);
        atomic_store_explicit(&e->owner, owner, memory_order_release);
        return e;
    }
    return NULL;
}

static void drop(struct stream_slot *e)
{
    if (atomic_fetch_sub_explicit(&e->count, 1, memory_order_relaxed) == 1)
        atomic_store_explicit(&e->owner, OWNER_FREED, memory_order_release);
}

bool stream_slots_acquire(struct stream_slots *t, const uint8_t digest[STREAM_SLOTS_DIGEST_LEN],
                          int32_t owner, uint32_t max)
{
    struct stream_slot *mine;
    if (owner <= 0 || scan(t, digest, owner, &mine) >= max)
        return false;
    if (mine == NULL && (mine = claim(t, digest, owner)) == NULL)
        return false;
    atomic_fetch_add_explicit(&mine->count, 1, memory_order_relaxed);
    if (scan(t, digest, owner, NULL) <= max)
        return true;
    drop(mine); /* another worker took the last place at the same instant */
    return false;
}

void stream_slots_release(struct stream_slots *t, const uint8_t digest[STREAM_SLOTS_DIGEST_LEN],
                          int32_t owner)
{
    struct stream_slot *mine;
    scan(t, digest, owner, &mine);
    if (mine != NULL && atomic_load_explicit(&mine->count, memory_order_relaxed) > 0)
        drop(mine);
}

uint32_t stream_slots_total(struct stream_slots *t, const uint8_t digest[STREAM_SLOTS_DIGEST_LEN])
{
    return scan(t, digest, 0, NULL);
}

size_t stream_slots_reap(struct stream_slots *t)
{
    size_t freed = 0;
    for (size_t i = 0; i <= t->mask; i++) {
        struct stream_slot *e = &t->slots[i];
        int32_t o = atomic_load_explicit(&e->owner, memory_order_acquire);
        if (o <= 0 || kill(o, 0) == 0 || errno != ESRCH)
            continue;
        atomic_store_explicit(&e->count, 0, memory_order_relaxed);
        if (atomic_compare_exchange_strong(&e->owner, &o, OWNER_FREED))
            freed++;
    }
    return freed;
}

size_t stream_slots_shm_size(const struct config *cfg)
{
    return stream_slots_area_size(stream_slots_count_for(cfg));
}

void stream_slots_shm_init(void *area, size_t size, const struct config *cfg)
{
    (void)size;
    stream_slots_area_init(area, stream_slots_count_for(cfg));
}

void stream_slots_shm_attach(struct shm_region *region, void *area)
{
    region->stream_slots = area;
}
