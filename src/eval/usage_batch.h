/*
 * usage_batch.h - one worker's evaluation counts, gathered in private
 * memory and moved into the shared usage table (usage.h) in batches.
 *
 * Owns a small fixed-size hash map from (snapshot, flag entry, variant) to a
 * count, and a second one from (snapshot, environment entry, key) to a count
 * for the keys asked for that name no flag (unknown_flags.h); the snapshot is the mapped part the
 * flag was found in. Counting an evaluation is an increment in this worker's own memory: no
 * atomics, no shared cache lines, no uuid parsing on the evaluation path. usage_batch_flush turns
 * each entry into the usage table's key (flag id, environment id, variant key, hour) and adds it
 * there; the worker flushes on a timer every USAGE_BATCH_FLUSH_MS (usage_batch_tick: a batch of
 * many entries waits a few ticks more), before it unmaps the snapshot the entries refer to, and
 * before it exits, so the flusher (stopped after the last worker) sees every count.
 *
 * Invariants: every entry refers to the snapshot it was counted in, which
 * its owner keeps mapped until the next flush (served_snapshot.c flushes
 * before it unmaps or moves any), and all entries to the one hour they were
 * counted in; counting in another hour flushes first, and so does counting
 * into a half-full map that may not grow (the flags' map doubles, a few
 * times at most, to hold the pairs of one flush interval: a bulk
 * evaluation of a large environment is counted without a flush every few
 * hundred flags). A worker that dies loses the counts of its batch: at
 * most USAGE_BATCH_FLUSH_MS of them, USAGE_BATCH_HOLD_MAX_MS for a batch
 * of large environments; its private memory for them is bounded
 * (usage_batch.c).
 *
 * Counting an unknown key is about the work of counting a flag: a hash of
 * at most 63 bytes (eight at a time) and a probe of private memory of the
 * same size as the flags' (as many distinct keys between two flushes);
 * the caller checked the key against the flag key pattern, and the
 * shared table checks it again once per flush (a key that fails it is
 * not counted).
 *
 * Called by the OFREP handlers (usage_batch_count, usage_batch_count_unknown)
 * and the worker (usage_batch_set_unknown at start, usage_batch_flush on its
 * timer, remap and exit).
 */
#ifndef ENSIGN_USAGE_BATCH_H
#define ENSIGN_USAGE_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct snapshot;
struct usage_table;
struct unknown_table;
struct usage_batch;

#define USAGE_BATCH_FLUSH_MS 100
/* Entries a tick may hand over: a batch of more waits one tick more for
 * each USAGE_BATCH_TICK_ENTRIES (so a flush costs the worker about 1% of
 * its time however large the environments it counts), at most
 * USAGE_BATCH_HOLD_MAX_MS. */
#define USAGE_BATCH_TICK_ENTRIES 4096
#define USAGE_BATCH_HOLD_MAX_MS 1700

/* A new, empty batch (NULL when out of memory). */
struct usage_batch *usage_batch_new(void);

/* Flushes nothing: call usage_batch_flush first. NULL is fine. */
void usage_batch_free(struct usage_batch *b);

/* How many distinct (part, flag, variant) pairs b holds now before it must
 * grow or flush (0 for NULL). */
size_t usage_batch_capacity(const struct usage_batch *b);

/*
 * Counts one evaluation of s->flags[flag] that served s->variants[variant]
 * at unix time now_s. s must stay mapped until the next flush.
 */
void usage_batch_count(struct usage_batch *b, struct usage_table *table, const struct snapshot *s,
                       uint32_t flag, uint32_t variant, int64_t now_s);

/* Asks the processor for the slots where s->flags[flag]'s counts go,
 * without waiting: a bulk evaluation calls it a few flags ahead, so that a
 * map larger than the cache costs no more per count than a small one. */
void usage_batch_prefetch(const struct usage_batch *b, const struct snapshot *s, uint32_t flag);

/* Where the unknown keys' counts go at each flush (NULL: nowhere). */
void usage_batch_set_unknown(struct usage_batch *b, struct unknown_table *unknown);

/*
 * Counts one request for key (len bytes) that names no flag in
 * s->envs[env] at unix time now_s; a key outside the flag key pattern is
 * not counted (dropped here when longer than 63 bytes, at the flush
 * otherwise). s must stay mapped until the next flush.
 */
void usage_batch_count_unknown(struct usage_batch *b, struct usage_table *table,
                               const struct snapshot *s, uint32_t env, const char *key, size_t len,
                               int64_t now_s);

/* Adds every pending count to table (the unknown keys' to the table of
 * usage_batch_set_unknown) and empties the batch. */
void usage_batch_flush(struct usage_batch *b, struct usage_table *table);

/*
 * The worker's timer, every USAGE_BATCH_FLUSH_MS: flushes b when its
 * counts have waited 1 + (pending entries / USAGE_BATCH_TICK_ENTRIES)
 * ticks, so every tick for an ordinary batch and, for the tens of
 * thousands of entries of large environments' bulk evaluations, less often
 * (their flush is then shared by more requests), never later than
 * USAGE_BATCH_HOLD_MAX_MS after the first count. Returns true when it
 * flushed.
 */
bool usage_batch_tick(struct usage_batch *b, struct usage_table *table);

#endif
