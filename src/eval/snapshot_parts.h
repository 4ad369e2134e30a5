/*
 * snapshot_parts.h - the parts of the published snapshot index, as the
 * writer (the refresher) keeps track of them.
 *
 * Owns the list of parts the last published index names (organization,
 * generation, and the extent that holds it: pack file name, offset,
 * length; sorted by organization) and the names of files to delete: a pack
 * file (snapshot_packs.h) that a publication stops naming is deleted at
 * the next one, so a worker that read the previous index a moment ago can
 * still open what it names (snapshot.h, doc/choices.md "Incremental
 * snapshots", "Pack files"). The pack being appended to is never deleted.
 * The sweep of a first publication also deletes the per-organization part
 * files (org-<id>-<generation>.bin) an older ensignd wrote.
 * With durability lagging (snapshot_parts_lag_durability), a file is
 * deleted only once the durable index (the restart index) stopped naming
 * it too: not before snapshot_parts_durable says a publication at or after
 * the one that doomed it is durable (doc/choices.md "Visible before
 * durable").
 *
 * Called by the refresher (src/daemon/refresher.c) and the unit tests;
 * knows no SQL.
 */
#ifndef ENSIGN_SNAPSHOT_PARTS_H
#define ENSIGN_SNAPSHOT_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAPSHOT_PART_ORG_MAX 64   /* an organization id (uuid text) and its NUL */
#define SNAPSHOT_PART_NAME_MAX 128 /* a pack file name and its NUL */

struct snapshot_part_file {
    char org[SNAPSHOT_PART_ORG_MAX];
    uint64_t generation;
    char name[SNAPSHOT_PART_NAME_MAX]; /* the pack file holding it */
    uint64_t offset;                   /* its extent in that file */
    uint64_t length;
};

struct snapshot_parts {
    char dir[4096];
    struct snapshot_part_file *published; /* sorted by org */
    size_t count;
    char (*doomed)[SNAPSHOT_PART_NAME_MAX]; /* deleted at the next publication */
    uint64_t *doomed_at;                    /* the publication that doomed each */
    size_t doomed_count;
    uint64_t publications;                       /* publications recorded so far */
    uint64_t durable;                            /* the last of them made durable */
    bool lagging;                                /* durability lags publication */
    char keep[SNAPSHOT_PART_NAME_MAX];           /* the open pack: never doomed ("" none) */
    char (*chunk_packs)[SNAPSHOT_PART_NAME_MAX]; /* packs published chunks are in */
    size_t chunk_pack_count;
    char (*chunk_packs_before)[SNAPSHOT_PART_NAME_MAX]; /* the previous publication's */
    size_t chunk_packs_before_count;
    bool chunks_unknown; /* the last set was not known: nothing is deleted */
};

/* An empty record for the part files of directory dir. */
void snapshot_parts_init(struct snapshot_parts *parts, const char *dir);

void snapshot_parts_free(struct snapshot_parts *parts);

/* The file named keep (the pack being appended to) is never doomed. */
void snapshot_parts_keep(struct snapshot_parts *parts, const char *keep);

/* The published part of org, or NULL. */
const struct snapshot_part_file *snapshot_parts_find(const struct snapshot_parts *parts,
                                                     const char *org);

/* True when the published part of org has this generation (the shape of
 * snapshot_source_held_fn; ctx is a struct snapshot_parts). */
bool snapshot_parts_holds(void *ctx, const char *org, uint64_t generation);

/* True when the published part of org has a newer generation than
 * generation: replacing it by a part of generation would go back in time
 * (a refresher reading a lagging replica, doc/choices.md "Read replicas"). */
bool snapshot_parts_newer(const struct snapshot_parts *parts, const char *org, uint64_t generation);

/* The packs the chunks of the publication about to be recorded are in
 * (chunks: their extents, count of them; doc/choices.md "Chunks stored in
 * packs"): such a pack is named like one a part is in, never deleted, and
 * doomed once no publication names it. Called before each
 * snapshot_parts_published or _replaced (not calling it keeps the last
 * set), and may be called again after it (a smaller set: what the first
 * call named is doomed at the next publication unless named then).
 * chunks NULL with count > 0: not known (out of memory), so no pack is
 * deleted or doomed until a later call knows them. */
void snapshot_parts_set_chunks(struct snapshot_parts *parts,
                               const struct snapshot_part_file *chunks, size_t count);

/* From now on a publication counts as durable only once
 * snapshot_parts_durable says so. */
void snapshot_parts_lag_durability(struct snapshot_parts *parts);

/* The last publication recorded is durable: the files doomed by it or
 * before it and superseded by a later one are deleted now. */
void snapshot_parts_durable(struct snapshot_parts *parts);

/* Whether a doomed file of name waits only for durability (for tests). */
bool snapshot_parts_doomed(const struct snapshot_parts *parts, const char *name);

/*
 * After an index naming fresh (count parts, sorted by org; taken over,
 * malloc'd) was published: deletes the files doomed by the previous
 * publication, dooms the pack files previously published that fresh no
 * longer names, and records fresh. With sweep, also dooms every other
 * pack, per-organization part or temporary file in the directory
 * (leftovers of an earlier run or of an older ensignd), and deletes at
 * once the chunk files (chunk-*.bin and their temporaries) of an older
 * ensignd, which nothing of this one names or maps.
 */
void snapshot_parts_published(struct snapshot_parts *parts, struct snapshot_part_file *fresh,
                              size_t count, bool sweep);

/*
 * After an index that names the published parts with count of them
 * replaced (changed: their organizations' new files, each organization
 * published already) was published: what snapshot_parts_published does
 * with that whole list, without copying it (a change of a few parts among
 * many). 0; -1 (nothing changed) when an organization of changed has no
 * published part.
 */
int snapshot_parts_replaced(struct snapshot_parts *parts, const struct snapshot_part_file *changed,
                            size_t count);

#endif
