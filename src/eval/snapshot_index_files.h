/*
 * snapshot_index_files.h - the names of the snapshot index files and the
 * step that makes a visible index the restart index.
 *
 * Each publication writes its index whole, without any sync, as
 * index-<generation>.bin in the state directory (the visible index: a
 * worker opens the one of the generation published in shared memory). Once
 * the pack bytes it names are durable, the refresher makes that file
 * durable and gives it the restart name snapshot.bin (SNAPSHOT_FILE_NAME)
 * by a hard link to snapshot.bin.tmp and the rename of that over
 * snapshot.bin, then an fsync of the directory: the restart name only ever
 * names a file whose every byte was durable before it got the name
 * (doc/choices.md "Visible before durable").
 *
 * Removal rule: a visible index is removed once neither the generation
 * published now nor the one published before it is its own (a worker that
 * read the previous generation a moment ago may still be opening it); at
 * start every index-* file is a leftover, but the served generation's when
 * the refresher restarts under running workers.
 *
 * Called by the refresher (src/daemon/refresher.c), the workers
 * (served_snapshot.c) and the unit tests; knows no SQL.
 */
#ifndef ENSIGN_SNAPSHOT_INDEX_FILES_H
#define ENSIGN_SNAPSHOT_INDEX_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAPSHOT_INDEX_PREFIX "index-"

/* Writes the path of the visible index of generation in dir into buf
 * (len bytes). False when it does not fit. */
bool snapshot_index_path(const char *dir, uint64_t generation, char *buf, size_t len);

/* True when name is a visible index file (index-<generation>.bin), with
 * *generation its generation. */
bool snapshot_index_parse(const char *name, uint64_t *generation);

/* True when name is an index-* file (a visible index or the temporary
 * file of one) that is neither keep nor previous's visible index (0: no
 * such generation). */
bool snapshot_index_removable(const char *name, uint64_t keep, uint64_t previous);

/* Removes the removable index files of dir (as snapshot_index_removable
 * says); how many were removed. */
size_t snapshot_index_remove(const char *dir, uint64_t keep, uint64_t previous);

/*
 * Makes the visible index of generation in dir the restart index: fsync of
 * it, a hard link to snapshot.bin.tmp, the rename of that over snapshot.bin
 * and an fsync of the directory. The caller made the pack bytes it names
 * durable first. 0, or -1 with err (snapshot.bin is then the old one or,
 * when only the directory's fsync failed, the new one not yet durable).
 */
int snapshot_index_make_durable(const char *dir, uint64_t generation, char *err, size_t errlen);

#endif
