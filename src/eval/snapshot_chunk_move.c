/*
 * snapshot_chunk_move.c - moving a chunked organization out of the pack
 * being reclaimed (see snapshot_chunk_move.h).
 *
 * Invariant: the header appended names, for every chunk, either its
 * published extent (outside the pack being reclaimed) or the verified
 * copy made by this move; it is checked as a reader checks it before it
 * is appended.
 */
#include "eval/snapshot_chunk_move.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/snapshot.h"

/* The bytes of the chunks of org in pack number victim. */
static uint64_t bytes_in(const struct snapshot_chunked_org *org, uint32_t victim)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < org->count; i++)
        if (org->chunks[i].pack == victim)
            bytes += org->chunks[i].length;
    return bytes;
}

bool snapshot_chunk_move_wanted(const struct snapshot_packs *packs,
                                const struct snapshot_part_file *header,
                                const struct snapshot_chunked_org *org)
{
    if (packs->victim == 0)
        return false;
    uint64_t chunks = bytes_in(org, packs->victim);
    bool header_in = snapshot_packs_number(header->name) == packs->victim;
    if (!header_in && chunks == 0)
        return false;
    uint64_t total = chunks + header->length;
    return total <= packs->budget || packs->budget == SNAPSHOT_PACK_RECLAIM_BYTES;
}

/* Copies chunk c of org (in the pack being reclaimed) to the open pack;
 * *moved gets its new extent. */
static int copy_chunk(struct snapshot_packs *packs, const struct snapshot_chunked_org *org,
                      size_t c, struct snapshot_chunk *moved, char *err, size_t errlen)
{
    struct snapshot_part_file from = {0}, to;
    snprintf(from.org, sizeof from.org, "%s", org->org);
    snapshot_packs_name(org->chunks[c].pack, from.name);
    from.generation = org->chunks[c].generation;
    from.offset = org->chunks[c].offset;
    from.length = org->chunks[c].length;
    if (snapshot_packs_copy(packs, &from, &to, err, errlen) != 0)
        return -1;
    *moved = org->chunks[c];
    moved->pack = snapshot_packs_number(to.name);
    moved->offset = to.offset;
    moved->length = to.length;
    return 0;
}

/* Writes chunks (count, the header's order) into the chunk records of the
 * header at bytes (s its opened view) and makes its checksum again. */
static void patch_header(unsigned char *bytes, const struct snapshot *s,
                         const struct snapshot_chunk *chunks, size_t count)
{
    struct snapshot_chunk *records =
        (struct snapshot_chunk *)(bytes + ((const unsigned char *)s->chunks - bytes));
    for (size_t i = 0; i < count; i++) {
        records[i].pack = chunks[i].pack;
        records[i].offset = chunks[i].offset;
        records[i].length = chunks[i].length;
    }
    struct snapshot_header *h = (struct snapshot_header *)bytes;
    h->checksum =
        snapshot_checksum(bytes + h->header_size, (size_t)(h->total_size - h->header_size));
}

/* Copies org's chunks in the pack being reclaimed into chunks (count of
 * org's, the others as published). */
static int copy_chunks(struct snapshot_packs *packs, const struct snapshot_chunked_org *org,
                       struct snapshot_chunk *chunks, char *err, size_t errlen)
{
    uint32_t victim = packs->victim;
    for (size_t i = 0; i < org->count; i++) {
        chunks[i] = org->chunks[i];
        if (org->chunks[i].pack == victim &&
            copy_chunk(packs, org, i, &chunks[i], err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* Whether the opened header names the same chunks as org. */
static bool header_matches(const struct snapshot *s, const struct snapshot_chunked_org *org)
{
    if (s->counts[SNAPSHOT_SEC_CHUNKS] != org->count)
        return false;
    for (size_t i = 0; i < org->count; i++)
        if (s->chunks[i].pack != org->chunks[i].pack ||
            s->chunks[i].offset != org->chunks[i].offset ||
            strcmp(snapshot_string(s, s->chunks[i].first_key), org->first_keys[i]) != 0)
            return false;
    return true;
}

int snapshot_chunk_move(struct snapshot_packs *packs, struct snapshot_chunk_table *table,
                        const struct snapshot_part_file *header,
                        const struct snapshot_chunked_org *org, struct snapshot_part_file *to,
                        char *err, size_t errlen)
{
    struct snapshot s;
    unsigned char *bytes = NULL;
    struct snapshot_chunk *chunks = calloc(org->count ? org->count : 1, sizeof *chunks);
    char why[256];
    uint64_t generation = 0;
    int rc = -1;
    if (chunks == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (snapshot_packs_open_part(packs, header, &s, &bytes, err, errlen) != 0) {
        free(chunks);
        return -1;
    }
    if (!header_matches(&s, org)) {
        snprintf(err, errlen, "the header of organization %s does not name its chunks", org->org);
    } else if (copy_chunks(packs, org, chunks, err, errlen) == 0) {
        patch_header(bytes, &s, chunks, org->count);
        rc = 0;
    }
    snapshot_close(&s);
    if (rc == 0 &&
        (snapshot_check_extent(bytes, (size_t)header->length, &generation, why, sizeof why) != 0 ||
         generation != header->generation)) {
        snprintf(err, errlen, "the moved header of organization %s: %s", org->org, why);
        rc = -1;
    }
    if (rc == 0) {
        *to = *header;
        rc = snapshot_packs_append_bytes(packs, bytes, header->length, to, err, errlen);
    }
    if (rc == 0) {
        packs->budget = packs->budget > header->length ? packs->budget - header->length : 0;
        if (snapshot_chunk_table_stage(table, org->org, org->generation,
                                       (const char *const *)org->first_keys, chunks,
                                       org->count) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    free(bytes);
    free(chunks);
    return rc;
}
