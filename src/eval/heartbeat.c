/*
 * heartbeat.c - the workers' heartbeats (see heartbeat.h).
 *
 * Relaxed atomics suffice: a slot is one 64-bit value written by one
 * process at a time (the master before the fork, then the child) and read
 * by the master; no other memory is published through it.
 */
#include "eval/heartbeat.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

struct heartbeat_table {
    _Atomic int64_t beat_ms[HEARTBEAT_SLOTS];
};

size_t heartbeat_area_size(void)
{
    return sizeof(struct heartbeat_table);
}

void heartbeat_area_init(void *area)
{
    struct heartbeat_table *t = area;
    for (size_t i = 0; i < HEARTBEAT_SLOTS; i++)
        atomic_init(&t->beat_ms[i], 0);
}

int64_t heartbeat_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void heartbeat_beat(struct heartbeat_table *t, unsigned slot, int64_t now_ms)
{
    if (t != NULL && slot < HEARTBEAT_SLOTS)
        atomic_store_explicit(&t->beat_ms[slot], now_ms, memory_order_relaxed);
}

int64_t heartbeat_last(const struct heartbeat_table *t, unsigned slot)
{
    if (t == NULL || slot >= HEARTBEAT_SLOTS)
        return 0;
    return atomic_load_explicit(&t->beat_ms[slot], memory_order_relaxed);
}

bool heartbeat_stale(const struct heartbeat_table *t, unsigned slot, int64_t now_ms,
                     int64_t stall_ms)
{
    if (stall_ms <= 0 || t == NULL || slot >= HEARTBEAT_SLOTS)
        return false;
    return now_ms - heartbeat_last(t, slot) > stall_ms;
}

int64_t heartbeat_interval_ms(int64_t stall_ms)
{
    int64_t every = stall_ms / 5;
    if (every < 10)
        every = 10;
    return every > 250 ? 250 : every;
}
