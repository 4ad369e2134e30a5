/*
 * snapshot_chunk_move.h - a chunked organization moved out of the pack
 * being reclaimed (doc/choices.md "Chunks stored in packs").
 *
 * A header names its chunks by extent (pack number, offset, length), so a
 * chunk cannot move alone: its header is rewritten at the same generation
 * with the new extents. A move copies the organization's chunks that are
 * in the pack being reclaimed (each verified, as snapshot_packs_copy does
 * for a part) to the open pack, then a copy of the published header whose
 * chunk records name the new extents (checksum made again, the result
 * verified as a reader would) after them, and stages the new chunk list in
 * the chunk table; the caller names the new header in the index like any
 * moved part. The chunks outside that pack stay where they are. A failed
 * move appended bytes no index names (the build goes on; rollback or the
 * next publication's end covers them) and leaves everything published as
 * it was.
 *
 * Called by the refresher; knows no SQL.
 */
#ifndef ENSIGN_SNAPSHOT_CHUNK_MOVE_H
#define ENSIGN_SNAPSHOT_CHUNK_MOVE_H

#include <stdbool.h>
#include <stddef.h>

#include "eval/snapshot_chunk_table.h"
#include "eval/snapshot_packs.h"

/* Whether org (published header at header) has its header or a chunk in
 * the pack being reclaimed, and moving them fits what is left of this
 * build's budget (or is the first move of the build). */
bool snapshot_chunk_move_wanted(const struct snapshot_packs *packs,
                                const struct snapshot_part_file *header,
                                const struct snapshot_chunked_org *org);

/* Moves org as said above; *to names its new header. 0, or -1 with err. */
int snapshot_chunk_move(struct snapshot_packs *packs, struct snapshot_chunk_table *table,
                        const struct snapshot_part_file *header,
                        const struct snapshot_chunked_org *org, struct snapshot_part_file *to,
                        char *err, size_t errlen);

#endif
