/*
 * heartbeat.h - the workers' heartbeats in shared memory.
 *
 * One slot per child of the master (HEARTBEAT_SLOTS, the master's child
 * table size), each the CLOCK_MONOTONIC time in milliseconds of the last
 * beat. A worker beats from a timer in its event loop, so a stale beat
 * means the loop is not turning (SIGSTOP, an endless loop, a blocking
 * call). The master stamps a slot when it forks the child that owns it
 * and compares it with worker_stall_ms.
 *
 * This is the one area of shared memory the master reads after start-up
 * (the rest of shared memory the master never reads): a stuck worker cannot tell
 * anyone it is stuck, and a timestamp array read with relaxed atomic
 * loads has no lock, pointer or invariant a dying child could corrupt.
 */
#ifndef ENSIGN_HEARTBEAT_H
#define ENSIGN_HEARTBEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEARTBEAT_SLOTS 256

struct heartbeat_table;

size_t heartbeat_area_size(void);
void heartbeat_area_init(void *area);

/* Milliseconds of CLOCK_MONOTONIC (the same clock in every process). */
int64_t heartbeat_now_ms(void);

/* Records a beat at now_ms in slot (ignored when out of range). */
void heartbeat_beat(struct heartbeat_table *t, unsigned slot, int64_t now_ms);

/* The last beat of slot, 0 when never stamped. */
int64_t heartbeat_last(const struct heartbeat_table *t, unsigned slot);

/* True when slot's last beat is more than stall_ms before now_ms;
 * stall_ms 0 disables the check (never stale). */
bool heartbeat_stale(const struct heartbeat_table *t, unsigned slot, int64_t now_ms,
                     int64_t stall_ms);

/* How often a worker should beat for a given stall limit (10..250 ms). */
int64_t heartbeat_interval_ms(int64_t stall_ms);

#endif
