/*
 * accept_balance.c - the workers' open connections in shared memory and
 * the rule that spreads new ones (see accept_balance.h).
 *
 * Invariants: entry i is written only by the worker of child slot i (and
 * by the master while no such worker runs); `high` is one more than the
 * highest slot ever published, so readers scan a short prefix of the
 * table instead of all ACCEPT_BALANCE_SLOTS entries. No allocation, no
 * lock.
 */
#include "http/accept_balance.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <string.h>

#define CACHE_LINE 64

struct accept_balance_entry {
    alignas(CACHE_LINE) _Atomic int32_t open;
};

struct accept_balance {
    alignas(CACHE_LINE) _Atomic uint32_t high;
    struct accept_balance_entry entries[ACCEPT_BALANCE_SLOTS];
};

bool accept_balance_decide(int32_t mine, const int32_t *siblings, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (siblings[i] != ACCEPT_BALANCE_ABSENT && siblings[i] < mine)
            return false;
    return true;
}

size_t accept_balance_area_size(void)
{
    return sizeof(struct accept_balance);
}

void accept_balance_area_init(void *area)
{
    struct accept_balance *t = area;
    memset(t, 0, sizeof *t);
    atomic_init(&t->high, 0);
    for (size_t i = 0; i < ACCEPT_BALANCE_SLOTS; i++)
        atomic_init(&t->entries[i].open, ACCEPT_BALANCE_ABSENT);
}

size_t accept_balance_shm_size(const struct config *cfg)
{
    (void)cfg;
    return accept_balance_area_size();
}

void accept_balance_shm_init(void *area, size_t size, const struct config *cfg)
{
    (void)size;
    (void)cfg;
    accept_balance_area_init(area);
}

void accept_balance_publish(struct accept_balance *t, unsigned slot, int32_t open)
{
    if (t == NULL || slot >= ACCEPT_BALANCE_SLOTS)
        return;
    atomic_store(&t->entries[slot].open, open);
    uint32_t high = atomic_load(&t->high);
    while (open != ACCEPT_BALANCE_ABSENT && high < slot + 1 &&
           !atomic_compare_exchange_weak(&t->high, &high, slot + 1))
        continue;
}

bool accept_balance_may_accept(struct accept_balance *t, unsigned slot, int32_t mine)
{
    if (t == NULL || slot >= ACCEPT_BALANCE_SLOTS)
        return true;
    int32_t siblings[ACCEPT_BALANCE_SLOTS];
    size_t n = 0;
    uint32_t high = atomic_load(&t->high);
    for (uint32_t i = 0; i < high && i < ACCEPT_BALANCE_SLOTS; i++)
        if (i != slot)
            siblings[n++] = atomic_load(&t->entries[i].open);
    return accept_balance_decide(mine, siblings, n);
}
