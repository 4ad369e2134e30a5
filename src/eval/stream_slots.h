/*
 * stream_slots.h - how many change streams each SDK key holds on this node.
 *
 * A fixed-size table in the node's shared memory (shm.h), so that the cap
 * stream_max_per_key counts the streams of every worker of the node. An
 * entry is one (SDK key digest, worker pid) pair with that worker's count:
 * each entry is written only by its owner, so counting needs no lock, and
 * the entries of a worker that died without releasing them are freed by
 * the next worker to start (stream_slots_reap). The node's count for a key
 * is the sum over the key's entries.
 *
 * Open addressing with linear probing; a freed entry becomes a tombstone
 * that a later claim reuses, so probe chains never break. An admission
 * adds itself, recounts, and backs out when over the cap: two opens racing
 * on two workers for the last place may both be refused, never both
 * admitted.
 *
 * Size and init functions are called by shm.c; acquire/release/reap by
 * streams.c in the workers.
 */
#ifndef ENSIGN_STREAM_SLOTS_H
#define ENSIGN_STREAM_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STREAM_SLOTS_DIGEST_LEN 32

struct stream_slots;
struct config;

/* Entries for cfg: twice the streams two generations of workers may hold
 * (a reload overlaps them), a power of two in [1024, 2^20]. */
size_t stream_slots_count_for(const struct config *cfg);

size_t stream_slots_area_size(size_t slots);
void stream_slots_area_init(void *area, size_t slots);

/* The shared-memory user functions (shm.c's table). */
struct shm_region;
size_t stream_slots_shm_size(const struct config *cfg);
void stream_slots_shm_init(void *area, size_t size, const struct config *cfg);
void stream_slots_shm_attach(struct shm_region *region, void *area);

/* Counts one more stream of digest for owner (a pid, > 0). False, counting
 * nothing, when the node already holds max streams of the key or the table
 * has no free entry. */
bool stream_slots_acquire(struct stream_slots *t, const uint8_t digest[STREAM_SLOTS_DIGEST_LEN],
                          int32_t owner, uint32_t max);

/* Counts one stream fewer (acquired by owner before). */
void stream_slots_release(struct stream_slots *t, const uint8_t digest[STREAM_SLOTS_DIGEST_LEN],
                          int32_t owner);

/* The node's streams of digest. */
uint32_t stream_slots_total(struct stream_slots *t, const uint8_t digest[STREAM_SLOTS_DIGEST_LEN]);

/* Frees the entries whose owner process no longer exists; returns how many. */
size_t stream_slots_reap(struct stream_slots *t);

#endif
