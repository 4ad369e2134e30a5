/*
 * murmur3.c - MurmurHash3_x86_32 (see murmur3.h).
 *
 * Invariant: bytes are consumed as little-endian 32-bit blocks whatever the
 * host, so the incremental and the whole-buffer forms agree for any split.
 */
#include "eval/murmur3.h"

#define MURMUR3_C1 0xcc9e2d51u
#define MURMUR3_C2 0x1b873593u

static uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

static uint32_t scramble(uint32_t k)
{
    k *= MURMUR3_C1;
    k = rotl32(k, 15);
    return k * MURMUR3_C2;
}

static uint32_t mix_block(uint32_t h, uint32_t k)
{
    h ^= scramble(k);
    h = rotl32(h, 13);
    return h * 5 + 0xe6546b64u;
}

static uint32_t final_mix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

void murmur3_init(struct murmur3_state *st, uint32_t seed)
{
    st->h = seed;
    st->tail = 0;
    st->tail_len = 0;
    st->total_len = 0;
}

/* Takes bytes into the partial block; a full block is mixed in. */
static void take_bytes(struct murmur3_state *st, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        st->tail |= (uint32_t)p[i] << (8 * st->tail_len);
        if (++st->tail_len == 4) {
            st->h = mix_block(st->h, st->tail);
            st->tail = 0;
            st->tail_len = 0;
        }
    }
}

static uint32_t load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void murmur3_update(struct murmur3_state *st, const void *data, size_t len)
{
    const unsigned char *p = data;
    st->total_len += (uint32_t)len;
    size_t head = st->tail_len == 0 ? 0 : 4 - st->tail_len;
    if (head > len)
        head = len;
    take_bytes(st, p, head); /* completes the partial block, if any */
    p += head;
    len -= head;
    uint32_t h = st->h;
    for (; len >= 4; p += 4, len -= 4) /* whole blocks: the common case */
        h = mix_block(h, load_le32(p));
    st->h = h;
    take_bytes(st, p, len);
}

uint32_t murmur3_final(const struct murmur3_state *st)
{
    uint32_t h = st->h;
    if (st->tail_len > 0)
        h ^= scramble(st->tail);
    h ^= st->total_len;
    return final_mix(h);
}

uint32_t murmur3_x86_32(const void *data, size_t len, uint32_t seed)
{
    struct murmur3_state st;
    murmur3_init(&st, seed);
    murmur3_update(&st, data, len);
    return murmur3_final(&st);
}
