/*
 * snapshot_packs.h - the pack files the snapshot's parts are stored in, as
 * the writer (the refresher) appends to them.
 *
 * A part (one organization's snapshot, snapshot.h) is not a file of its
 * own but an extent of a pack file pack-<n>.bin in the state directory:
 * appended at the end of the open pack (8-byte aligned), named by the index
 * as (pack, offset, length, generation). Workers map each pack once, at
 * SNAPSHOT_PACK_MAP_BYTES whatever its size (pack_maps.h), so their
 * mappings do not grow with the number of organizations (doc/choices.md
 * "Pack files").
 *
 * Owns the open pack (its descriptor, where the next part goes, what the
 * last publication made durable), the size and live bytes of every pack
 * the last publication names (its parts' and its chunked organizations'
 * chunks', which are extents appended the same way: doc/choices.md
 * "Chunks stored in packs"), and the pack being reclaimed.
 *
 * Invariants: bytes are only appended past `committed`, the end of what
 * any published index may name, so an extent once named is never
 * overwritten; after a failed build (rollback) the next part goes at
 * `committed` again. A pack is sealed (never appended to again) when the next
 * part would pass the pack size, or when less than half of it is live; a
 * sealed pack whose live bytes fell below half is reclaimed: its parts are
 * copied (verified) to the open pack a budget per build, and the pack is
 * deleted when no index names it (snapshot_parts.h). Parts appended are
 * durable after snapshot_packs_sync (one fdatasync per pack touched), which
 * the caller does before it writes an index naming them.
 *
 * Called by the refresher (src/daemon/refresher.c) and the unit tests.
 */
#ifndef ENSIGN_SNAPSHOT_PACKS_H
#define ENSIGN_SNAPSHOT_PACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/snapshot_parts.h"

/* The length every worker maps a pack at (address space, not memory): the
 * largest a pack may grow. */
#define SNAPSHOT_PACK_MAP_BYTES (1ull << 30)

/* Bytes of parts copied out of a pack being reclaimed per build, at most
 * (or one part larger than that, alone). */
#define SNAPSHOT_PACK_RECLAIM_BYTES (2u << 20)

struct snapshot;
struct snapshot_builder;

struct snapshot_pack_stat {
    uint32_t number;
    uint64_t size; /* bytes in use (the open pack: its end) */
    uint64_t live; /* bytes of the parts the last publication names in it */
};

struct snapshot_packs {
    char dir[4096];
    uint64_t capacity;  /* seal a pack at this size (at most SNAPSHOT_PACK_MAP_BYTES) */
    int fd;             /* the open pack, or -1 */
    uint32_t open;      /* its number (with fd >= 0) */
    uint64_t end;       /* where the next part goes in it */
    uint64_t committed; /* its end at the last publication */
    bool unsynced;      /* appended to since the last sync */
    uint32_t next;      /* number of the next pack created */
    struct snapshot_pack_stat *stats; /* packs of the last publication */
    size_t stat_count;
    uint32_t victim; /* the pack being reclaimed, 0 none */
    uint64_t budget; /* reclaim bytes left in this build */
    char open_name[SNAPSHOT_PART_NAME_MAX];
    const struct snapshot_part_file *chunks; /* every chunk published (not owned) */
    size_t chunk_count;
};

void snapshot_packs_init(struct snapshot_packs *packs, const char *dir, uint64_t capacity);

void snapshot_packs_free(struct snapshot_packs *packs);

/* "pack-<number>.bin" into name (SNAPSHOT_PART_NAME_MAX bytes). */
void snapshot_packs_name(uint32_t number, char *name);

/* The number of a pack file name, or 0 when it is not one. */
uint32_t snapshot_packs_number(const char *name);

/* The name of the open pack ("" when none is open): snapshot_parts_keep. */
const char *snapshot_packs_open_name(const struct snapshot_packs *packs);

/* Appends the part built in b to the open pack (opening or rolling over to
 * a new one as needed) and names its extent in f (org and generation are
 * the caller's). 0, or -1 with err (the build fails). */
int snapshot_packs_append(struct snapshot_packs *packs, struct snapshot_builder *b,
                          struct snapshot_part_file *f, char *err, size_t errlen);

/* Appends len bytes (a part made from published bytes: a chunked
 * organization's header naming its chunks' new extents) to the open pack
 * like snapshot_packs_append; f names the extent. 0, or -1 with err. */
int snapshot_packs_append_bytes(struct snapshot_packs *packs, const unsigned char *buf,
                                uint64_t len, struct snapshot_part_file *f, char *err,
                                size_t errlen);

/* The chunks every header published names (snapshot_chunk_table.h's flat
 * list; not copied, valid until the next call): counted as live bytes of
 * their packs by the next snapshot_packs_published or _adopt, and, at
 * adopt, as named extents (never cut off). */
void snapshot_packs_set_chunks(struct snapshot_packs *packs,
                               const struct snapshot_part_file *chunks, size_t count);

/* Starts a build: the reclaim budget is refilled. */
void snapshot_packs_begin(struct snapshot_packs *packs);

/* Whether held (a published part no build rewrote) should be copied out
 * of the pack being reclaimed in this build (then snapshot_packs_copy). */
bool snapshot_packs_should_move(const struct snapshot_packs *packs,
                                const struct snapshot_part_file *held);

/* Copies the extent of from (verified: a valid snapshot of its generation)
 * to the open pack; *to names the copy. 0, or -1 with err. */
int snapshot_packs_copy(struct snapshot_packs *packs, const struct snapshot_part_file *from,
                        struct snapshot_part_file *to, char *err, size_t errlen);

/* Opens the published part f (a chunked organization's header, say) from
 * its pack: its bytes are read into *bytes (malloc'd; the caller frees
 * them after snapshot_close(out)) and verified as snapshot_open does, of
 * f's generation. 0, or -1 with err (nothing open, nothing to free). */
int snapshot_packs_open_part(const struct snapshot_packs *packs, const struct snapshot_part_file *f,
                             struct snapshot *out, unsigned char **bytes, char *err, size_t errlen);

/* Makes every part appended since the last sync durable. 0, or -1 with err. */
int snapshot_packs_sync(struct snapshot_packs *packs, char *err, size_t errlen);

/* A build failed: the next part goes where the last publication ended
 * (over what this build appended, never truncated: see the .c); when the
 * open pack's file is gone (state_dir removed), it is let go and the next
 * part starts a new pack. */
void snapshot_packs_rollback(struct snapshot_packs *packs);

/* An index naming parts (count) was published: what was appended is
 * committed, the packs' live bytes are counted, the open pack is sealed
 * when less than half of it is live (from a sixteenth of the pack size on),
 * and the next pack to reclaim is chosen. */
void snapshot_packs_published(struct snapshot_packs *packs, const struct snapshot_part_file *parts,
                              size_t count);

/*
 * At start: the index on disk (published already: workers may read any
 * extent it names) and of its parts those verified, parts (count), taken
 * as published, with the chunks set by snapshot_packs_set_chunks (the
 * headers' extents count as named). The highest-numbered pack the index
 * or a chunk names is opened to append again past the last extent named
 * in it, and with
 * truncate the garbage beyond (bytes appended by a build that crashed
 * before its index) is cut off; without (workers of a running node may
 * still read extents of an older index there), the next part goes after
 * the file's end. New packs are numbered above every pack file in the
 * directory.
 */
void snapshot_packs_adopt(struct snapshot_packs *packs, const struct snapshot *index,
                          const struct snapshot_part_file *parts, size_t count, bool truncate);

#endif
