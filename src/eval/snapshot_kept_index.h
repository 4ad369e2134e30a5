/*
 * snapshot_kept_index.h - the published snapshot index, kept in the
 * refresher's memory from one build to the next, so a change that only
 * moves organizations' generations is published by patching their records
 * instead of making the index again (doc/choices.md, "The index kept
 * between builds").
 *
 * Owns a copy of the index file's bytes as last written (header and every
 * section, in the order the builder lays them out: strings first, then the
 * other sections back to back), the strings appended since (the new part
 * file names: the string table only grows), and per part of the index the
 * positions of its environments. A patch names a part's new file and
 * generation: the part record and the generation of each of its
 * environments are changed in place, the header takes the new global
 * generation. Nothing else of the index changes with a generation, so the
 * patched index holds the same records as one made again from the same
 * catalog (the tests compare them record by record); only the string
 * offsets differ, and the replaced file names stay in the table unused
 * until the index is made again (snapshot_kept_index_worn says when).
 *
 * Writing follows the publication rule of every snapshot file (temporary
 * file, fsync, rename, fsync of the directory) with one writev of the
 * header and the sections; the checksum is computed over the same pieces.
 *
 * Invariants: a kept index is either empty (loaded false) or a copy of a
 * validated index whose sections are in the builder's order; a failed
 * patch or write leaves it as it was before the call, except that a write
 * failure says nothing about the file on disk (the caller drops the kept
 * index and makes the next one again). Knows no SQL.
 *
 * Called by the refresher (src/daemon/refresher.c) and the unit tests.
 */
#ifndef ENSIGN_SNAPSHOT_KEPT_INDEX_H
#define ENSIGN_SNAPSHOT_KEPT_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/snapshot.h"

struct snapshot_kept_index {
    bool loaded;
    unsigned char *image;  /* the file as loaded: header, then the sections */
    size_t image_size;     /* its total_size */
    size_t strings_loaded; /* bytes of the string table in image */
    char *extra;           /* strings appended since (NUL-terminated each) */
    size_t extra_len, extra_cap;
    size_t unused;            /* bytes of strings no longer referenced */
    uint32_t *part_env_start; /* per part p: its environments are */
    uint32_t *part_envs;      /* part_envs[part_env_start[p] .. part_env_start[p + 1]) */
    uint64_t generation;      /* of the index as it will be written */
};

void snapshot_kept_index_init(struct snapshot_kept_index *k);

/* Frees everything; k is empty afterwards. */
void snapshot_kept_index_free(struct snapshot_kept_index *k);

/* Replaces k by a copy of index (a validated mapping). -1 (k empty) when
 * out of memory or when its sections are not in the builder's layout (an
 * index this cannot patch: it is then made again at each change). */
int snapshot_kept_index_load(struct snapshot_kept_index *k, const struct snapshot *index);

/* Names the extent (offset, length) of pack file_name (a plain name) at
 * generation as organization org_id's part, and gives its environments
 * that generation. 0; -1 when k holds no
 * part of org_id, or when out of memory (k unchanged either way). */
int snapshot_kept_index_set_part(struct snapshot_kept_index *k, const char *org_id,
                                 const char *file_name, uint64_t offset, uint64_t length,
                                 uint64_t generation);

/* The configuration generation the next write says. */
void snapshot_kept_index_set_generation(struct snapshot_kept_index *k, uint64_t generation);

/* True when a quarter of its string table is unused (replaced file names):
 * time to make the index again from the catalog. */
bool snapshot_kept_index_worn(const struct snapshot_kept_index *k);

/* Writes k to path atomically (path.tmp, fsync, rename, fsync of the
 * directory). 0, or -1 with a message in err. */
int snapshot_kept_index_write(const struct snapshot_kept_index *k, const char *path, char *err,
                              size_t errlen);

/* snapshot_kept_index_write without any fsync (path.tmp, rename): the
 * visible index of a publication (snapshot_index_files.h). */
int snapshot_kept_index_write_unsynced(const struct snapshot_kept_index *k, const char *path,
                                       char *err, size_t errlen);

#endif
