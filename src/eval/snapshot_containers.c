/*
 * snapshot_containers.c - big blocks, growable arrays, hash maps and
 * record tables of the snapshot builder (see snapshot_containers.h).
 */
#include "eval/snapshot_containers.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "eval/snapshot.h"

/* Big blocks: mapped memory that grows with mremap (no copying, no second
 * round of page faults) and asks for transparent huge pages. A snapshot of
 * 100,000 flags touches a few hundred megabytes while building. */

#define BIG_BLOCK_BYTES ((size_t)1 << 20)

static void advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (bytes >= 2 * BIG_BLOCK_BYTES)
        (void)madvise(p, bytes, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

/* A zeroed block of bytes; from malloc below BIG_BLOCK_BYTES, mapped above. */
static void *block_alloc(size_t bytes)
{
    if (bytes < BIG_BLOCK_BYTES)
        return calloc(1, bytes);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    advise_huge(p, bytes);
    return p;
}

static void block_free(void *p, size_t bytes)
{
    if (p == NULL)
        return;
    if (bytes < BIG_BLOCK_BYTES)
        free(p);
    else
        munmap(p, bytes);
}

/* Resizes a block from old_bytes to new_bytes (larger), keeping its
 * contents; NULL when out of memory (the old block is kept). */
static void *block_grow(void *p, size_t old_bytes, size_t new_bytes)
{
    if (new_bytes < BIG_BLOCK_BYTES)
        return realloc(p, new_bytes);
    if (old_bytes >= BIG_BLOCK_BYTES) {
        void *q = mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE);
        if (q == MAP_FAILED)
            return NULL;
        advise_huge(q, new_bytes);
        return q;
    }
    void *q = block_alloc(new_bytes);
    if (q != NULL && p != NULL) {
        memcpy(q, p, old_bytes);
        free(p);
    }
    return q;
}

/* ------------------------------------------------------------------ */
/* Growable arrays */

void vec_init(struct vec *v, size_t size)
{
    memset(v, 0, sizeof *v);
    v->size = size;
}

bool vec_reserve(struct vec *v, size_t extra)
{
    if (v->len + extra <= v->cap)
        return true;
    size_t cap = v->cap ? v->cap : 16;
    while (cap < v->len + extra)
        cap *= 2;
    void *data = block_grow(v->data, v->cap * v->size, cap * v->size);
    if (data == NULL)
        return false;
    v->data = data;
    v->cap = cap;
    return true;
}

/* A new zeroed element, or NULL when out of memory. */
void *vec_push(struct vec *v)
{
    if (!vec_reserve(v, 1))
        return NULL;
    void *at = v->data + v->len++ * v->size;
    memset(at, 0, v->size);
    return at;
}

bool vec_append(struct vec *v, const void *data, size_t count)
{
    if (count == 0)
        return true;
    if (!vec_reserve(v, count))
        return false;
    memcpy(v->data + v->len * v->size, data, count * v->size);
    v->len += count;
    return true;
}

/* An element, or NULL for an empty vec that has no storage yet (NULL + 0
 * is undefined behaviour in C). */
void *vec_at(const struct vec *v, size_t i)
{
    return v->data != NULL ? v->data + i * v->size : NULL;
}

void vec_free(struct vec *v)
{
    block_free(v->data, v->cap * v->size);
    vec_init(v, v->size);
}

/* ------------------------------------------------------------------ */
/* Hash maps: byte-string keys living in an arena (a vec) to uint32
 * values; open addressing, load at most one half. */

void map_init(struct map *m, struct vec *shared_arena)
{
    memset(m, 0, sizeof *m);
    vec_init(&m->own_arena, 1);
    m->arena = shared_arena ? shared_arena : &m->own_arena;
}

void map_free(struct map *m)
{
    block_free(m->slots, m->cap * sizeof *m->slots);
    vec_free(&m->own_arena);
    m->slots = NULL;
}

#define HASH_K1 UINT64_C(0x9e3779b97f4a7c15)
#define HASH_K2 UINT64_C(0xbf58476d1ce4e5b9)

static uint64_t hash_key(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = len * HASH_K2, w;
    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        h = ((h ^ (w * HASH_K1)) << 29 | (h ^ (w * HASH_K1)) >> 35) * HASH_K2;
    }
    w = 0;
    memcpy(&w, p, len);
    h = (h ^ (w * HASH_K1)) * HASH_K2;
    h ^= h >> 32; /* avalanche, so that the low bits used as index depend on every byte */
    h *= HASH_K1;
    h ^= h >> 29;
    h *= HASH_K2;
    return h ^ (h >> 32);
}

static uint32_t hash_tag(uint64_t h)
{
    return (uint32_t)(h >> 32) | 1u;
}

struct map_slot *map_find(const struct map *m, const void *key, size_t len)
{
    if (m->cap == 0)
        return NULL;
    uint32_t tag = hash_tag(hash_key(key, len));
    for (size_t i = (tag >> 1) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct map_slot *slot = &m->slots[i];
        if (slot->tag == 0)
            return NULL;
        if (slot->tag == tag && slot->key_len == len &&
            memcmp(m->arena->data + slot->key_off, key, len) == 0)
            return slot;
    }
}

static struct map_slot *map_place(struct map_slot *slots, size_t cap, const struct map_slot *entry)
{
    size_t i = (entry->tag >> 1) & (cap - 1);
    while (slots[i].tag != 0)
        i = (i + 1) & (cap - 1);
    slots[i] = *entry;
    return &slots[i];
}

static bool map_grow(struct map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct map_slot *slots = block_alloc(cap * sizeof *slots);
    if (slots == NULL)
        return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].tag != 0)
            map_place(slots, cap, &m->slots[i]);
    block_free(m->slots, m->cap * sizeof *m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

/* Indexes a key whose bytes are already in the arena at key_off. */
static struct map_slot *map_insert(struct map *m, size_t key_off, size_t key_len, uint32_t value)
{
    if (key_off + key_len > UINT32_MAX || ((m->count + 1) * 2 > m->cap && !map_grow(m)))
        return NULL;
    struct map_slot entry = {hash_tag(hash_key(m->arena->data + key_off, key_len)),
                             (uint32_t)key_off, (uint32_t)key_len, value};
    m->count++;
    return map_place(m->slots, m->cap, &entry);
}

/* Adds a key known to be absent, appending its bytes and a NUL to the
 * arena. */
struct map_slot *map_add(struct map *m, const void *key, size_t len, uint32_t value)
{
    size_t off = m->arena->len;
    if (!vec_reserve(m->arena, len + 1))
        return NULL;
    vec_append(m->arena, key, len);
    vec_append(m->arena, "", 1);
    return map_insert(m, off, len, value);
}

/* ------------------------------------------------------------------ */
/* Record tables: a section's records, each distinct sequence stored once. */

void table_init(struct table *t, size_t record_size)
{
    vec_init(&t->recs, record_size);
    map_init(&t->index, &t->recs);
}

void table_free(struct table *t)
{
    map_free(&t->index);
    vec_free(&t->recs);
}

/* The index of count records equal to recs, adding them when new;
 * SNAPSHOT_NONE when out of memory. */
uint32_t table_intern(struct table *t, const void *recs, size_t count)
{
    if (count == 0)
        return 0;
    size_t bytes = count * t->recs.size;
    const struct map_slot *slot = map_find(&t->index, recs, bytes);
    if (slot != NULL)
        return slot->value;
    size_t first = t->recs.len;
    if (!vec_append(&t->recs, recs, count) ||
        map_insert(&t->index, first * t->recs.size, bytes, (uint32_t)first) == NULL)
        return SNAPSHOT_NONE;
    return (uint32_t)first;
}

const void *table_at(const struct table *t, size_t i)
{
    return vec_at(&t->recs, i);
}
