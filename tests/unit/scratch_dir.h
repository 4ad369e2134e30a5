/*
 * scratch_dir.h - a throwaway directory under /tmp for the unit tests that
 * write files (snapshot parts, packs, chunks): made empty, removed with
 * every file in it (one level: the tests make no subdirectories).
 */
#ifndef ENSIGN_SCRATCH_DIR_H
#define ENSIGN_SCRATCH_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Makes /tmp/ensign-<name>-XXXXXX into dir (len bytes); fails the test if it cannot. */
void scratch_dir_make(char *dir, size_t len, const char *name);

/* Removes dir and the files in it. */
void scratch_dir_remove(const char *dir);

/* Whether dir/name exists. */
bool scratch_file_exists(const char *dir, const char *name);

/* Writes text as the whole of dir/name; fails the test if it cannot. */
void scratch_file_write(const char *dir, const char *name, const char *text);

#endif
