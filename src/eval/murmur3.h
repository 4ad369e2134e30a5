/*
 * murmur3.h - MurmurHash3_x86_32, whole-buffer and incremental.
 *
 * Owns the hash that places a context in a rollout bucket
 * (doc/choices.md "Environment configuration and evaluation"):
 * h = MurmurHash3_x86_32(flagKey +
 * bucketValue, seed 0), the same input as flagd's fractional rollout. The
 * incremental form hashes the two parts without concatenating them, so the
 * evaluator needs no buffer. Pure functions, no allocation.
 *
 * Called by: the evaluator (src/eval.c) and the unit tests.
 */
#ifndef ENSIGN_MURMUR3_H
#define ENSIGN_MURMUR3_H

#include <stddef.h>
#include <stdint.h>

struct murmur3_state {
    uint32_t h;
    uint32_t tail;     /* pending bytes, little-endian */
    uint32_t tail_len; /* 0 to 3 */
    uint32_t total_len;
};

void murmur3_init(struct murmur3_state *st, uint32_t seed);
void murmur3_update(struct murmur3_state *st, const void *data, size_t len);
uint32_t murmur3_final(const struct murmur3_state *st);

/* The whole-buffer form: murmur3_init + murmur3_update + murmur3_final. */
uint32_t murmur3_x86_32(const void *data, size_t len, uint32_t seed);

#endif
