/*
 * snapshot_containers.h - the snapshot builder's containers.
 *
 * Owns: big blocks (mapped memory that grows with mremap), growable arrays
 * (struct vec), hash maps from byte strings to uint32 (struct map) and
 * record tables that store each distinct sequence of records once (struct
 * table). Nothing here knows the snapshot format: records are bytes of a
 * given size. A failed allocation is reported by the return value
 * (false, NULL or SNAPSHOT_NONE); the caller decides what fails.
 *
 * Called by the snapshot builder only (snapshot_build.c, snapshot_rules.c,
 * snapshot_write.c).
 */
#ifndef ENSIGN_SNAPSHOT_CONTAINERS_H
#define ENSIGN_SNAPSHOT_CONTAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable array of elements of `size` bytes (big blocks underneath). */
struct vec {
    unsigned char *data;
    size_t len; /* elements */
    size_t cap;
    size_t size; /* bytes per element */
};

/* Hash maps: byte-string keys living in an arena (a vec) to uint32
 * values; open addressing, load at most one half. */
struct map_slot {
    uint32_t tag;     /* 0: empty; else the hash's high half, low bit set; the
                         other 31 bits choose the slot */
    uint32_t key_off; /* bytes into the arena */
    uint32_t key_len;
    uint32_t value;
};

struct map {
    struct map_slot *slots;
    size_t cap; /* power of two */
    size_t count;
    struct vec *arena; /* where keys live */
    struct vec own_arena;
};

/* A record table: a section's records, each distinct sequence stored once. */
struct table {
    struct vec recs;
    struct map index; /* record bytes -> index of the first record */
};

/* An empty vec of elements of size bytes (no allocation yet). */
void vec_init(struct vec *v, size_t size);

/* Room for extra more elements; false when out of memory. */
bool vec_reserve(struct vec *v, size_t extra);

/* A new zeroed element, or NULL when out of memory. */
void *vec_push(struct vec *v);

/* Appends count elements copied from data; false when out of memory. */
bool vec_append(struct vec *v, const void *data, size_t count);

/* An element, or NULL for an empty vec that has no storage yet (NULL + 0
 * is undefined behaviour in C). */
void *vec_at(const struct vec *v, size_t i);

/* Frees the storage (the vec may be initialized again). */
void vec_free(struct vec *v);

/* An empty map whose keys live in shared_arena, or in its own when NULL. */
void map_init(struct map *m, struct vec *shared_arena);

/* Frees the slots and the map's own arena (not a shared one). */
void map_free(struct map *m);

/* The slot of key (len bytes), or NULL when absent. */
struct map_slot *map_find(const struct map *m, const void *key, size_t len);

/* Adds a key known to be absent, appending its bytes and a NUL to the
 * arena. */
struct map_slot *map_add(struct map *m, const void *key, size_t len, uint32_t value);

/* An empty table of records of record_size bytes. */
void table_init(struct table *t, size_t record_size);

/* Frees the records and their index. */
void table_free(struct table *t);

/* The index of count records equal to recs, adding them when new;
 * SNAPSHOT_NONE when out of memory. */
uint32_t table_intern(struct table *t, const void *recs, size_t count);

/* Record i. */
const void *table_at(const struct table *t, size_t i);

#endif
