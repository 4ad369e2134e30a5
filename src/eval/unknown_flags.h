/*
 * unknown_flags.h - counters of the flag keys SDKs ask for that name no
 * flag, per (environment, key, hour), in shared memory.
 *
 * Owns the unknown-key table: a second table of the usage kind (usage.h:
 * fixed size, lock-free, drained by moving counts, slots of old hours
 * reclaimed), of unknown_flag_slots slots in its own area of the region
 * (shm.c), so a flood of made-up keys fills this table, never the one that
 * counts the flags that exist. An entry's key is the environment id and
 * the flag key (its flag id all zeros).
 *
 * Invariants: only keys that pass unknown_flags_key_ok (the flag key
 * pattern: 1 to 63 of [a-z0-9-], no dash at either end) are ever stored,
 * so a very long key, a NUL or bytes that are not UTF-8 can neither
 * spill into a neighbouring field nor reach the database; such a key is
 * not counted (unknown_flags_add answers false and counts nothing
 * dropped). Nothing is allocated after start.
 *
 * Called by usage_batch.c (a worker's batched counts), by the flusher
 * (unknown_flags_drain, and unknown_flags_add_entry to keep what it could
 * not write) and by shm.c (size and init).
 */
#ifndef ENSIGN_UNKNOWN_FLAGS_H
#define ENSIGN_UNKNOWN_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/usage.h"

#define UNKNOWN_KEY_MAX 63 /* the flag key limit: 1 to 63 characters */

struct unknown_table;

/* One drained counter, or one to put back. hour is unix seconds / 3600. */
struct unknown_entry {
    uint8_t environment_id[USAGE_ID_BYTES];
    char key[UNKNOWN_KEY_MAX + 1];
    int64_t hour;
    uint64_t count;
    int64_t last_seen; /* unix seconds of the latest request counted */
};

/* True when key (len bytes, any bytes) could be a flag's key. */
bool unknown_flags_key_ok(const char *key, size_t len);

/* Bytes of shared memory a table of slots slots needs. */
size_t unknown_flags_area_size(size_t slots);

/* Prepares area (unknown_flags_area_size(slots) bytes) as an empty table. */
struct unknown_table *unknown_flags_area_init(void *area, size_t slots);

/*
 * Counts n requests for key (len bytes) in the environment at unix time
 * now_s. false when not counted: a key that fails unknown_flags_key_ok
 * (nothing stored), or a full table (added to the dropped count).
 */
bool unknown_flags_add(struct unknown_table *t, const uint8_t environment_id[USAGE_ID_BYTES],
                       const char *key, size_t len, int64_t now_s, uint64_t n);

/* Adds e->count under e's key and hour (the flusher puts back what it
 * could not write). false when not counted, as unknown_flags_add. */
bool unknown_flags_add_entry(struct unknown_table *t, const struct unknown_entry *e);

/* Takes every non-zero count out of the table and hands each to cb,
 * reclaiming drained slots of hours two or more before now_s; returns how
 * many entries were handed over. */
typedef void (*unknown_drain_cb)(const struct unknown_entry *e, void *arg);
size_t unknown_flags_drain(struct unknown_table *t, int64_t now_s, unknown_drain_cb cb, void *arg);

/* Requests not counted because the table was full, since start. */
uint64_t unknown_flags_dropped(const struct unknown_table *t);

#endif
