/*
 * pack_maps.h - one process's read-only mappings of the snapshot's pack
 * files (snapshot_packs.h), each mapped once.
 *
 * Owns, per pack file in use, its descriptor and one mapping of
 * SNAPSHOT_PACK_MAP_BYTES (PROT_READ, MAP_SHARED; longer than the file:
 * pages become readable as the file grows, so a part appended later needs
 * no new mapping), and a count of the parts opened in it. A pack is
 * unmapped when its last part is released, so a worker's mappings are the
 * packs its parts are in, whatever the number of organizations.
 *
 * Invariant: an extent is handed out only when it lies inside the file as
 * it is now (fstat), so no byte past the file's end is ever touched (that
 * would be SIGBUS); a pack file replaced under the same name (state_dir
 * made again) is mapped afresh, never read through the old mapping.
 *
 * Used by a worker's view (served_snapshot.c) and the refresher's check of
 * the index on disk at start (src/daemon/refresher.c).
 */
#ifndef ENSIGN_PACK_MAPS_H
#define ENSIGN_PACK_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct snapshot;
struct pack_maps;

/* The mappings of the packs in directory dir; NULL when out of memory.
 * With linger, a pack stays mapped at zero parts until pack_maps_free (a
 * check of many parts in turn). */
struct pack_maps *pack_maps_new(const char *dir, bool linger);

/* Unmaps every pack (every part opened must have been released). */
void pack_maps_free(struct pack_maps *maps);

enum pack_extent_status { PACK_EXTENT_OK, PACK_EXTENT_BAD, PACK_EXTENT_GONE };

/*
 * Opens the part at [offset, offset + length) of pack file `file` into
 * *out (snapshot_open_extent: the same validation as a file), with *slot
 * the pack's, to pass to pack_maps_release when *out is closed.
 * PACK_EXTENT_GONE when there is no such file, PACK_EXTENT_BAD (err says
 * why) when the extent passes the file's end or is not a valid snapshot.
 */
enum pack_extent_status pack_maps_open(struct pack_maps *maps, const char *file, uint64_t offset,
                                       uint64_t length, struct snapshot *out, int *slot, char *err,
                                       size_t errlen);

/* A part opened in slot was closed: the pack is unmapped with its last. */
void pack_maps_release(struct pack_maps *maps, int slot);

/* Packs mapped now (for tests and logs). */
size_t pack_maps_count(const struct pack_maps *maps);

#endif
