/*
 * usage.h - evaluation counters in shared memory, per (flag, environment,
 * served variant, hour).
 *
 * Owns the usage table: a fixed-size open-addressing hash table of
 * usage_slots slots laid out in the shared-memory region (shm.c sizes and
 * initialises it), updated lock-free with C11 atomics by every worker and
 * drained by the flusher. Nothing is allocated after start.
 *
 * Invariants:
 *  - A slot is EMPTY, BUSY (being claimed or reclaimed), a TOMBSTONE
 *    (reclaimed, reusable) or READY with the key's 64-bit hash as its tag.
 *    Key words are written only while the slot is BUSY and published by the
 *    release store of the tag; readers load the tag with acquire.
 *  - Counts are only ever moved, never copied: workers add with
 *    fetch_add, the flusher takes them with exchange(0), so concurrent
 *    flushers (old and new generation during a reload) never count twice.
 *  - A full table (or a probe run longer than USAGE_MAX_PROBES) drops the
 *    count and adds it to the dropped counter instead.
 *  - A race can leave two slots with the same key; whoever writes drained
 *    entries to the database sums duplicates (flusher: GROUP BY).
 *  - Slots of hours at least two hours old whose count drained to zero are
 *    reclaimed by the drain, so the table holds about two hours of keys.
 *
 * Called by workers (usage_batch.c moves each worker's counts here in
 * batches), by the flusher (usage_drain, and usage_add_entry to keep counts
 * it could not write) and by shm.c (size and init).
 */
#ifndef ENSIGN_USAGE_H
#define ENSIGN_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USAGE_ID_BYTES 16    /* a uuid, binary */
#define USAGE_VARIANT_MAX 63 /* variant keys follow the key pattern: 1 to 63 */
#define USAGE_MAX_PROBES 64

struct usage_table;

/* One drained counter, or one to put back. hour is unix seconds / 3600. */
struct usage_entry {
    uint8_t flag_id[USAGE_ID_BYTES];
    uint8_t environment_id[USAGE_ID_BYTES];
    char variant[USAGE_VARIANT_MAX + 1];
    int64_t hour;
    uint64_t count;
    int64_t last_seen; /* unix seconds of the latest evaluation counted */
};

/* Bytes of shared memory a table of slots slots needs. */
size_t usage_area_size(size_t slots);

/* Prepares area (usage_area_size(slots) bytes) as an empty table. */
struct usage_table *usage_area_init(void *area, size_t slots);

/*
 * Counts n evaluations of variant (variant_len bytes, 1 to
 * USAGE_VARIANT_MAX) at unix time now_s. Returns false when the count was
 * dropped (table full, or a variant key too long).
 */
bool usage_add(struct usage_table *t, const uint8_t flag_id[USAGE_ID_BYTES],
               const uint8_t environment_id[USAGE_ID_BYTES], const char *variant,
               size_t variant_len, int64_t now_s, uint64_t n);

/* Adds e->count under e's key and hour (the flusher puts back what it
 * could not write). false when dropped. */
bool usage_add_entry(struct usage_table *t, const struct usage_entry *e);

/*
 * Takes every non-zero count out of the table and hands each to cb (the
 * entry is valid during the call), reclaiming drained slots of hours two
 * or more before now_s. Returns the number of entries handed over.
 */
typedef void (*usage_drain_cb)(const struct usage_entry *e, void *arg);
size_t usage_drain(struct usage_table *t, int64_t now_s, usage_drain_cb cb, void *arg);

/* Evaluations dropped because the table was full, since start. */
uint64_t usage_dropped(const struct usage_table *t);

/* Slots of the table (as sized at start). */
size_t usage_slot_count(const struct usage_table *t);

/* A uuid's text form (36 characters, either case) to its 16 bytes; false
 * when text is not one. */
bool usage_uuid_parse(const char *text, uint8_t out[USAGE_ID_BYTES]);

/* The 16 bytes back to lowercase text (37 bytes with the NUL). */
void usage_uuid_format(const uint8_t id[USAGE_ID_BYTES], char out[37]);

#endif
