/*
 * pack_maps.c - a process's mappings of the pack files (see pack_maps.h).
 *
 * Invariant: a slot with base != NULL holds one open descriptor and one
 * mapping of SNAPSHOT_PACK_MAP_BYTES, and `parts` counts the snapshots
 * opened in it and not yet released; a slot at zero parts is unmapped at
 * once (unless the maps linger). A slot whose file was replaced is marked stale and never handed
 * out again.
 */
#include "eval/pack_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/snapshot.h"
#include "eval/snapshot_packs.h"

struct pack_map {
    char name[SNAPSHOT_PART_NAME_MAX];
    int fd;
    dev_t dev;
    ino_t ino;
    const unsigned char *base; /* NULL: a free slot */
    size_t parts;
    bool stale; /* the file under this name was replaced */
};

struct pack_maps {
    char dir[4096];
    bool linger;
    struct pack_map *maps;
    size_t count;
};

struct pack_maps *pack_maps_new(const char *dir, bool linger)
{
    struct pack_maps *maps = calloc(1, sizeof *maps);
    if (maps == NULL)
        return NULL;
    snprintf(maps->dir, sizeof maps->dir, "%s", dir);
    maps->linger = linger;
    return maps;
}

static void unmap(struct pack_map *m)
{
    if (m->base != NULL)
        munmap((void *)m->base, SNAPSHOT_PACK_MAP_BYTES);
    if (m->base != NULL)
        close(m->fd);
    memset(m, 0, sizeof *m);
}

void pack_maps_free(struct pack_maps *maps)
{
    if (maps == NULL)
        return;
    for (size_t i = 0; i < maps->count; i++)
        unmap(&maps->maps[i]);
    free(maps->maps);
    free(maps);
}

size_t pack_maps_count(const struct pack_maps *maps)
{
    size_t n = 0;
    for (size_t i = 0; i < maps->count; i++)
        n += maps->maps[i].base != NULL;
    return n;
}

/* The slot mapping file as it is in the directory now (st), or -1. */
static int find(struct pack_maps *maps, const char *file, const struct stat *st)
{
    for (size_t i = 0; i < maps->count; i++) {
        struct pack_map *m = &maps->maps[i];
        if (m->base == NULL || m->stale || strcmp(m->name, file) != 0)
            continue;
        if (m->dev == st->st_dev && m->ino == st->st_ino)
            return (int)i;
        m->stale = true; /* replaced: its parts are released as they go */
    }
    return -1;
}

static int free_slot(struct pack_maps *maps)
{
    for (size_t i = 0; i < maps->count; i++)
        if (maps->maps[i].base == NULL)
            return (int)i;
    void *grown = realloc(maps->maps, (maps->count + 1) * sizeof *maps->maps);
    if (grown == NULL)
        return -1;
    maps->maps = grown;
    memset(&maps->maps[maps->count], 0, sizeof *maps->maps);
    return (int)maps->count++;
}

/* Maps file (opened as fd, st its status) into a new slot, or -1. */
static int map_new(struct pack_maps *maps, const char *file, int fd, const struct stat *st,
                   char *err, size_t errlen)
{
    int slot = free_slot(maps);
    if (slot < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    void *base = mmap(NULL, SNAPSHOT_PACK_MAP_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "mmap %s: %s", file, strerror(errno));
        return -1;
    }
    struct pack_map *m = &maps->maps[slot];
    snprintf(m->name, sizeof m->name, "%s", file);
    m->fd = fd;
    m->dev = st->st_dev;
    m->ino = st->st_ino;
    m->base = base;
    m->parts = 0;
    return slot;
}

/* The slot of file, mapped if it was not; *size its file's size now. */
static enum pack_extent_status slot_of(struct pack_maps *maps, const char *file, int *slot,
                                       uint64_t *size, char *err, size_t errlen)
{
    char path[sizeof maps->dir + SNAPSHOT_PART_NAME_MAX + 1];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", maps->dir, file);
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
        return errno == ENOENT ? PACK_EXTENT_GONE : PACK_EXTENT_BAD;
    }
    *slot = find(maps, file, &st);
    if (*slot >= 0) {
        *size = (uint64_t)st.st_size;
        return PACK_EXTENT_OK;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int saved = errno;
        snprintf(err, errlen, "open %s: %s", file, strerror(saved));
        if (fd >= 0)
            close(fd);
        return saved == ENOENT ? PACK_EXTENT_GONE : PACK_EXTENT_BAD;
    }
    if ((*slot = map_new(maps, file, fd, &st, err, errlen)) < 0) {
        close(fd);
        return PACK_EXTENT_BAD;
    }
    *size = (uint64_t)st.st_size;
    return PACK_EXTENT_OK;
}

enum pack_extent_status pack_maps_open(struct pack_maps *maps, const char *file, uint64_t offset,
                                       uint64_t length, struct snapshot *out, int *slot, char *err,
                                       size_t errlen)
{
    uint64_t size = 0;
    memset(out, 0, sizeof *out);
    enum pack_extent_status status = slot_of(maps, file, slot, &size, err, errlen);
    if (status != PACK_EXTENT_OK)
        return status;
    struct pack_map *m = &maps->maps[*slot];
    if (offset > SNAPSHOT_PACK_MAP_BYTES || length > SNAPSHOT_PACK_MAP_BYTES - offset ||
        offset + length > size) {
        snprintf(err, errlen,
                 "%s: extent %" PRIu64 "+%" PRIu64 " passes the file's end (%" PRIu64 " bytes)",
                 file, offset, length, size);
        status = PACK_EXTENT_BAD;
    } else if (snapshot_open_extent(m->base + offset, (size_t)length, out, err, errlen) != 0) {
        status = PACK_EXTENT_BAD;
    }
    if (status == PACK_EXTENT_OK)
        m->parts++;
    else if (m->parts == 0 && !maps->linger)
        unmap(m);
    return status;
}

void pack_maps_release(struct pack_maps *maps, int slot)
{
    if (slot < 0 || (size_t)slot >= maps->count || maps->maps[slot].base == NULL)
        return;
    struct pack_map *m = &maps->maps[slot];
    if (m->parts > 0)
        m->parts--;
    if (m->parts == 0 && (!maps->linger || m->stale))
        unmap(m);
}
