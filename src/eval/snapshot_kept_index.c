/*
 * snapshot_kept_index.c - the refresher's copy of the published index,
 * patched in place (see snapshot_kept_index.h).
 *
 * Layout kept: the image is the file as the builder wrote it, the string
 * table first and the other sections back to back after it (8-byte
 * aligned). Strings added since live in `extra` and are written right
 * after the loaded table, so only the sections after it move, all by the
 * same amount; their records refer to strings by offset in the table,
 * which does not change.
 */
#include "eval/snapshot_kept_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "eval/snapshot_build.h"

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

void snapshot_kept_index_init(struct snapshot_kept_index *k)
{
    memset(k, 0, sizeof *k);
}

void snapshot_kept_index_free(struct snapshot_kept_index *k)
{
    free(k->image);
    free(k->extra);
    free(k->part_env_start);
    free(k->part_envs);
    snapshot_kept_index_init(k);
}

static const struct snapshot_header *header_of(const struct snapshot_kept_index *k)
{
    return (const struct snapshot_header *)k->image;
}

static void *section_of(const struct snapshot_kept_index *k, enum snapshot_section_id id)
{
    return k->image + header_of(k)->sections[id].offset;
}

static size_t count_of(const struct snapshot_kept_index *k, enum snapshot_section_id id)
{
    return (size_t)header_of(k)->sections[id].count;
}

/* The string at offset off of the table (loaded or appended). */
static const char *string_at(const struct snapshot_kept_index *k, uint32_t off)
{
    if (off < k->strings_loaded)
        return (const char *)section_of(k, SNAPSHOT_SEC_STRINGS) + off;
    return k->extra + (off - k->strings_loaded);
}

/* Whether the sections of h follow each other in id order from the end of
 * the header, each padded to 8 bytes, up to the end of the file. */
static bool builder_layout(const struct snapshot_header *h)
{
    uint64_t at = h->header_size;
    for (int i = 0; i < SNAPSHOT_SEC_COUNT; i++) {
        if (h->sections[i].offset != at)
            return false;
        at += align8((size_t)h->sections[i].count * snapshot_section_record_size(i));
    }
    return at == h->total_size;
}

/* Groups the environments of index by part (counting sort) into k. */
static bool group_envs(struct snapshot_kept_index *k, const struct snapshot *index)
{
    size_t parts = index->counts[SNAPSHOT_SEC_PARTS], envs = index->counts[SNAPSHOT_SEC_ENVS];
    k->part_env_start = calloc(parts + 2, sizeof *k->part_env_start);
    k->part_envs = malloc((envs ? envs : 1) * sizeof *k->part_envs);
    if (k->part_env_start == NULL || k->part_envs == NULL)
        return false;
    for (size_t e = 0; e < envs; e++)
        if (index->envs[e].part < parts)
            k->part_env_start[index->envs[e].part + 2]++;
    for (size_t p = 0; p < parts; p++)
        k->part_env_start[p + 2] += k->part_env_start[p + 1];
    for (size_t e = 0; e < envs; e++)
        if (index->envs[e].part < parts)
            k->part_envs[k->part_env_start[index->envs[e].part + 1]++] = (uint32_t)e;
    return true;
}

int snapshot_kept_index_load(struct snapshot_kept_index *k, const struct snapshot *index)
{
    snapshot_kept_index_free(k);
    if (!builder_layout(index->header))
        return -1;
    k->image = malloc(index->size);
    if (k->image == NULL || !group_envs(k, index)) {
        snapshot_kept_index_free(k);
        return -1;
    }
    memcpy(k->image, index->base, index->size);
    k->image_size = index->size;
    k->strings_loaded = index->counts[SNAPSHOT_SEC_STRINGS];
    k->generation = snapshot_generation(index);
    k->loaded = true;
    return 0;
}

/* The index of the part of org_id (parts are sorted by organization), or
 * SNAPSHOT_NONE. */
static uint32_t find_part(const struct snapshot_kept_index *k, const char *org_id)
{
    const struct snapshot_part *parts = section_of(k, SNAPSHOT_SEC_PARTS);
    size_t lo = 0, hi = count_of(k, SNAPSHOT_SEC_PARTS);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(string_at(k, parts[mid].org.off), org_id);
        if (c == 0)
            return (uint32_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SNAPSHOT_NONE;
}

/* Appends text to the table; its reference, or len 0 when out of memory
 * or past what an offset can say. */
static struct snapshot_str append_string(struct snapshot_kept_index *k, const char *text)
{
    size_t len = strlen(text), off = k->strings_loaded + k->extra_len;
    if (off + len + 1 > UINT32_MAX)
        return (struct snapshot_str){0, 0};
    if (k->extra_len + len + 1 > k->extra_cap) {
        size_t cap = k->extra_cap ? k->extra_cap * 2 : 4096;
        while (cap < k->extra_len + len + 1)
            cap *= 2;
        char *grown = realloc(k->extra, cap);
        if (grown == NULL)
            return (struct snapshot_str){0, 0};
        k->extra = grown;
        k->extra_cap = cap;
    }
    memcpy(k->extra + k->extra_len, text, len + 1);
    k->extra_len += len + 1;
    return (struct snapshot_str){(uint32_t)off, (uint32_t)len};
}

int snapshot_kept_index_set_part(struct snapshot_kept_index *k, const char *org_id,
                                 const char *file_name, uint64_t offset, uint64_t length,
                                 uint64_t generation)
{
    if (!k->loaded || file_name[0] == '\0')
        return -1;
    uint32_t p = find_part(k, org_id);
    if (p == SNAPSHOT_NONE)
        return -1;
    struct snapshot_part *part = (struct snapshot_part *)section_of(k, SNAPSHOT_SEC_PARTS) + p;
    if (strcmp(string_at(k, part->file.off), file_name) != 0) {
        struct snapshot_str file = append_string(k, file_name);
        if (file.len == 0)
            return -1;
        k->unused += part->file.len + 1;
        part->file = file;
    }
    part->generation = generation;
    part->offset = offset;
    part->length = length;
    struct snapshot_env *envs = section_of(k, SNAPSHOT_SEC_ENVS);
    for (uint32_t i = k->part_env_start[p]; i < k->part_env_start[p + 1]; i++)
        envs[k->part_envs[i]].generation = generation;
    return 0;
}

void snapshot_kept_index_set_generation(struct snapshot_kept_index *k, uint64_t generation)
{
    k->generation = generation;
}

bool snapshot_kept_index_worn(const struct snapshot_kept_index *k)
{
    return k->unused * 4 > k->strings_loaded + k->extra_len;
}

static int write_kept(const struct snapshot_kept_index *k, const char *path, bool durable,
                      char *err, size_t errlen)
{
    static const unsigned char zeros[8];
    if (!k->loaded) {
        snprintf(err, errlen, "no index kept");
        return -1;
    }
    const struct snapshot_header *loaded = header_of(k);
    size_t strings = k->strings_loaded + k->extra_len;
    size_t rest = loaded->sections[SNAPSHOT_SEC_ENVS].offset; /* the sections after strings */
    size_t shift = align8(strings) - align8(k->strings_loaded);
    struct snapshot_header h = *loaded;
    h.generation = k->generation;
    h.sections[SNAPSHOT_SEC_STRINGS].count = strings;
    for (int i = SNAPSHOT_SEC_STRINGS + 1; i < SNAPSHOT_SEC_COUNT; i++)
        h.sections[i].offset += shift;
    h.total_size = k->image_size + shift;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    h.built_at_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    struct iovec pieces[] = {
        {&h, sizeof h},
        {k->image + loaded->header_size, k->strings_loaded},
        {k->extra, k->extra_len},
        {(void *)zeros, align8(strings) - strings},
        {k->image + rest, k->image_size - rest},
    };
    int count = (int)(sizeof pieces / sizeof pieces[0]);
    struct snapshot_checksum_state sum;
    snapshot_checksum_init(&sum);
    for (int i = 1; i < count; i++)
        snapshot_checksum_update(&sum, pieces[i].iov_base, pieces[i].iov_len);
    h.checksum = snapshot_checksum_final(&sum);
    return durable ? snapshot_write_pieces(path, pieces, count, err, errlen)
                   : snapshot_write_pieces_unsynced(path, pieces, count, err, errlen);
}

int snapshot_kept_index_write(const struct snapshot_kept_index *k, const char *path, char *err,
                              size_t errlen)
{
    return write_kept(k, path, true, err, errlen);
}

int snapshot_kept_index_write_unsynced(const struct snapshot_kept_index *k, const char *path,
                                       char *err, size_t errlen)
{
    return write_kept(k, path, false, err, errlen);
}
