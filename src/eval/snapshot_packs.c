/*
 * snapshot_packs.c - the writer's pack files (see snapshot_packs.h).
 *
 * Invariant: with fd >= 0, committed <= end, both 8-byte aligned, and no
 * index published names bytes of the open pack at or past committed.
 */
#include "eval/snapshot_packs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"

#define PACK_ALIGN 64 /* a part starts on a cache line (8 would do for the format) */
#define CREATE_ATTEMPTS 64

static uint64_t align_up(uint64_t n)
{
    return (n + PACK_ALIGN - 1) & ~(uint64_t)(PACK_ALIGN - 1);
}

void snapshot_packs_init(struct snapshot_packs *packs, const char *dir, uint64_t capacity)
{
    memset(packs, 0, sizeof *packs);
    snprintf(packs->dir, sizeof packs->dir, "%s", dir);
    packs->capacity = capacity < SNAPSHOT_PACK_MAP_BYTES ? capacity : SNAPSHOT_PACK_MAP_BYTES;
    packs->fd = -1;
    packs->next = 1;
}

static void let_go(struct snapshot_packs *packs)
{
    if (packs->fd >= 0)
        close(packs->fd);
    packs->fd = -1;
    packs->open_name[0] = '\0';
}

void snapshot_packs_free(struct snapshot_packs *packs)
{
    let_go(packs);
    free(packs->stats);
    packs->stats = NULL;
    packs->stat_count = 0;
}

void snapshot_packs_name(uint32_t number, char *name)
{
    snprintf(name, SNAPSHOT_PART_NAME_MAX, "pack-%" PRIu32 ".bin", number);
}

uint32_t snapshot_packs_number(const char *name)
{
    unsigned long n = 0;
    const char *p = name + strlen("pack-");
    if (strncmp(name, "pack-", strlen("pack-")) != 0 || *p < '1' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (unsigned long)(*p - '0')) > UINT32_MAX)
            return 0;
    return strcmp(p, ".bin") == 0 ? (uint32_t)n : 0;
}

const char *snapshot_packs_open_name(const struct snapshot_packs *packs)
{
    return packs->fd >= 0 ? packs->open_name : "";
}

static void path_of(const struct snapshot_packs *packs, const char *name, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", packs->dir, name);
}

/* Creates the next pack and makes it the open one. */
static int open_new(struct snapshot_packs *packs, char *err, size_t errlen)
{
    char name[SNAPSHOT_PART_NAME_MAX], path[sizeof packs->dir + SNAPSHOT_PART_NAME_MAX + 1];
    for (int attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
        uint32_t number = packs->next++;
        snapshot_packs_name(number, name);
        path_of(packs, name, path, sizeof path);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue; /* a leftover of an earlier run: not ours to append to */
        if (fd < 0) {
            snprintf(err, errlen, "create %s: %s", path, strerror(errno));
            return -1;
        }
        packs->fd = fd;
        packs->open = number;
        packs->end = packs->committed = 0;
        packs->unsynced = false;
        snprintf(packs->open_name, sizeof packs->open_name, "%s", name);
        log_debug("snapshot pack %s opened", name);
        return 0;
    }
    snprintf(err, errlen, "no free pack file name in %s", packs->dir);
    return -1;
}

static struct snapshot_pack_stat *stat_of(struct snapshot_pack_stat *stats, size_t count,
                                          uint32_t number)
{
    for (size_t i = 0; i < count; i++)
        if (stats[i].number == number)
            return &stats[i];
    return NULL;
}

/* Closes the open pack for good, durable (its bytes may be named by the
 * index of the build under way). */
static int seal(struct snapshot_packs *packs, char *err, size_t errlen)
{
    if (packs->unsynced && fdatasync(packs->fd) != 0) {
        snprintf(err, errlen, "fdatasync %s: %s", packs->open_name, strerror(errno));
        return -1;
    }
    struct snapshot_pack_stat *st = stat_of(packs->stats, packs->stat_count, packs->open);
    if (st != NULL)
        st->size = packs->end;
    log_debug("snapshot pack %s sealed at %" PRIu64 " bytes", packs->open_name, packs->end);
    let_go(packs);
    return 0;
}

static int write_all_at(int fd, const unsigned char *buf, size_t len, uint64_t at)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, buf, len, (off_t)at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENOSPC;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
        at += (uint64_t)n;
    }
    return 0;
}

static int read_all_at(int fd, unsigned char *buf, size_t len, uint64_t at)
{
    while (len > 0) {
        ssize_t n = pread(fd, buf, len, (off_t)at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO; /* the extent passes the file's end */
            return -1;
        }
        buf += n;
        len -= (size_t)n;
        at += (uint64_t)n;
    }
    return 0;
}

/* Records the extent [at, at + len) of the open pack in f. */
static void appended(struct snapshot_packs *packs, uint64_t at, uint64_t len,
                     struct snapshot_part_file *f)
{
    snprintf(f->name, sizeof f->name, "%s", packs->open_name);
    f->offset = at;
    f->length = len;
    packs->end = align_up(at + len);
    packs->unsynced = true;
}

/* Appends len bytes of buf to the open pack, rolling over when they do not
 * fit in it. */
int snapshot_packs_append_bytes(struct snapshot_packs *packs, const unsigned char *buf,
                                uint64_t len, struct snapshot_part_file *f, char *err,
                                size_t errlen)
{
    if (len > SNAPSHOT_PACK_MAP_BYTES) {
        snprintf(err, errlen, "a part of %" PRIu64 " bytes exceeds the largest pack", len);
        return -1;
    }
    if (packs->fd >= 0 && packs->end > 0 && packs->end + len > packs->capacity &&
        seal(packs, err, errlen) != 0)
        return -1;
    if (packs->fd < 0 && open_new(packs, err, errlen) != 0)
        return -1;
    if (write_all_at(packs->fd, buf, (size_t)len, packs->end) != 0) {
        snprintf(err, errlen, "write %s: %s", packs->open_name, strerror(errno));
        return -1;
    }
    appended(packs, packs->end, len, f);
    return 0;
}

/* The len bytes at `at` of the open pack, read back (malloc'd), or NULL. */
static unsigned char *read_back(struct snapshot_packs *packs, uint64_t at, uint64_t len, char *err,
                                size_t errlen)
{
    unsigned char *buf = malloc(len ? (size_t)len : 1);
    if (buf == NULL || read_all_at(packs->fd, buf, (size_t)len, at) != 0) {
        snprintf(err, errlen, "read back %s: %s", packs->open_name,
                 buf == NULL ? "out of memory" : strerror(errno));
        free(buf);
        return NULL;
    }
    return buf;
}

int snapshot_packs_append(struct snapshot_packs *packs, struct snapshot_builder *b,
                          struct snapshot_part_file *f, char *err, size_t errlen)
{
    uint64_t len = 0;
    if (packs->fd >= 0 && packs->end >= packs->capacity && seal(packs, err, errlen) != 0)
        return -1; /* full (a part larger than the pack size alone made it so) */
    if (packs->fd < 0 && open_new(packs, err, errlen) != 0)
        return -1;
    uint64_t at = packs->end;
    if (snapshot_builder_write_at(b, packs->fd, at, &len, err, errlen) != 0)
        return -1;
    if (at == 0 || at + len <= packs->capacity) {
        if (at + len > SNAPSHOT_PACK_MAP_BYTES) {
            snprintf(err, errlen, "a part of %" PRIu64 " bytes exceeds the largest pack", len);
            return -1;
        }
        appended(packs, at, len, f);
        return 0;
    }
    /* It does not fit: moved to a new pack, cut off this one. */
    unsigned char *buf = read_back(packs, at, len, err, errlen);
    if (buf == NULL)
        return -1;
    if (ftruncate(packs->fd, (off_t)at) != 0)
        log_warn("cannot cut snapshot pack %s back: %s", packs->open_name, strerror(errno));
    int rc = snapshot_packs_append_bytes(packs, buf, len, f, err, errlen);
    free(buf);
    return rc;
}

void snapshot_packs_begin(struct snapshot_packs *packs)
{
    packs->budget = SNAPSHOT_PACK_RECLAIM_BYTES;
}

bool snapshot_packs_should_move(const struct snapshot_packs *packs,
                                const struct snapshot_part_file *held)
{
    /* what is left of the budget, or any one part first in a build */
    bool fits = held->length <= packs->budget || packs->budget == SNAPSHOT_PACK_RECLAIM_BYTES;
    return packs->victim != 0 && fits && snapshot_packs_number(held->name) == packs->victim;
}

/* The extent of from, read from its pack (malloc'd), or NULL. */
static unsigned char *read_extent(const struct snapshot_packs *packs,
                                  const struct snapshot_part_file *from, char *err, size_t errlen)
{
    char path[sizeof packs->dir + SNAPSHOT_PART_NAME_MAX + 1];
    path_of(packs, from->name, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unsigned char *buf = from->length <= SNAPSHOT_PACK_MAP_BYTES && fd >= 0
                             ? malloc(from->length ? (size_t)from->length : 1)
                             : NULL;
    if (buf == NULL || read_all_at(fd, buf, (size_t)from->length, from->offset) != 0) {
        snprintf(err, errlen, "read %s at %" PRIu64 ": %s", from->name, from->offset,
                 fd < 0        ? strerror(errno)
                 : buf == NULL ? "out of memory"
                               : strerror(errno));
        free(buf);
        buf = NULL;
    }
    if (fd >= 0)
        close(fd);
    return buf;
}

int snapshot_packs_copy(struct snapshot_packs *packs, const struct snapshot_part_file *from,
                        struct snapshot_part_file *to, char *err, size_t errlen)
{
    unsigned char *buf = read_extent(packs, from, err, errlen);
    if (buf == NULL)
        return -1;
    char why[256];
    uint64_t generation = 0;
    int rc = -1;
    if (snapshot_check_extent(buf, (size_t)from->length, &generation, why, sizeof why) != 0) {
        snprintf(err, errlen, "part of organization %s in %s: %s", from->org, from->name, why);
    } else if (generation != from->generation) {
        snprintf(err, errlen, "part of organization %s in %s: generation %" PRIu64 ", not %" PRIu64,
                 from->org, from->name, generation, from->generation);
    } else {
        *to = *from;
        rc = snapshot_packs_append_bytes(packs, buf, from->length, to, err, errlen);
    }
    free(buf);
    if (rc == 0)
        packs->budget = packs->budget > from->length ? packs->budget - from->length : 0;
    return rc;
}

int snapshot_packs_open_part(const struct snapshot_packs *packs, const struct snapshot_part_file *f,
                             struct snapshot *out, unsigned char **bytes, char *err, size_t errlen)
{
    char why[256];
    *bytes = read_extent(packs, f, err, errlen);
    if (*bytes == NULL)
        return -1;
    if (snapshot_open_extent(*bytes, (size_t)f->length, out, why, sizeof why) != 0) {
        snprintf(err, errlen, "part of organization %s in %s: %s", f->org, f->name, why);
    } else if (snapshot_generation(out) != f->generation) {
        snprintf(err, errlen, "part of organization %s in %s: generation %" PRIu64 ", not %" PRIu64,
                 f->org, f->name, snapshot_generation(out), f->generation);
        snapshot_close(out);
    } else {
        return 0;
    }
    free(*bytes);
    *bytes = NULL;
    return -1;
}

int snapshot_packs_sync(struct snapshot_packs *packs, char *err, size_t errlen)
{
    if (packs->fd < 0 || !packs->unsynced)
        return 0;
    if (fdatasync(packs->fd) != 0) {
        snprintf(err, errlen, "fdatasync %s: %s", packs->open_name, strerror(errno));
        return -1;
    }
    packs->unsynced = false;
    return 0;
}

/* Whether the open pack's file is still the one in the directory. */
static bool open_pack_in_place(const struct snapshot_packs *packs)
{
    char path[sizeof packs->dir + SNAPSHOT_PART_NAME_MAX + 1];
    struct stat held, named;
    path_of(packs, packs->open_name, path, sizeof path);
    return fstat(packs->fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
           held.st_ino == named.st_ino;
}

void snapshot_packs_rollback(struct snapshot_packs *packs)
{
    if (packs->fd < 0)
        return;
    if (!open_pack_in_place(packs)) {
        log_warn("snapshot pack %s is gone: a new one is started", packs->open_name);
        let_go(packs);
        return;
    }
    /* Not truncated: an index renamed into place before the build failed
     * (its directory's fsync did) may name those bytes, and a worker
     * reading past a file's end would die of SIGBUS; the next parts are
     * written over them instead. */
    packs->end = packs->committed;
    /* unsynced stays: bytes published before may still wait for the
     * durable step's fdatasync. */
}

/* The size of pack number's file (0 when it cannot be read). */
static uint64_t file_size(const struct snapshot_packs *packs, uint32_t number)
{
    char name[SNAPSHOT_PART_NAME_MAX], path[sizeof packs->dir + SNAPSHOT_PART_NAME_MAX + 1];
    struct stat st;
    snapshot_packs_name(number, name);
    path_of(packs, name, path, sizeof path);
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The stats of the packs parts name: live bytes counted, sizes carried
 * over from old (or read from the file for a pack new to them). */
static struct snapshot_pack_stat *count_live(const struct snapshot_packs *packs,
                                             const struct snapshot_part_file *parts, size_t count,
                                             size_t *stat_count)
{
    struct snapshot_pack_stat *stats = NULL, *last = NULL;
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t number = snapshot_packs_number(parts[i].name);
        if (last == NULL || last->number != number)
            last = stat_of(stats, n, number);
        if (last == NULL) {
            void *grown = realloc(stats, (n + 1) * sizeof *stats);
            if (grown == NULL)
                break; /* counted less: reclaimed later */
            stats = grown;
            const struct snapshot_pack_stat *old = stat_of(packs->stats, packs->stat_count, number);
            last = &stats[n++];
            *last = (struct snapshot_pack_stat){.number = number};
            last->size = old != NULL ? old->size : file_size(packs, number);
        }
        last->live += parts[i].length;
    }
    *stat_count = n;
    return stats;
}

void snapshot_packs_set_chunks(struct snapshot_packs *packs,
                               const struct snapshot_part_file *chunks, size_t count)
{
    packs->chunks = chunks;
    packs->chunk_count = chunks != NULL ? count : 0; /* unknown: none counted live */
}

/* The stats of the packs the parts and the published chunks are in. */
static struct snapshot_pack_stat *count_live_all(const struct snapshot_packs *packs,
                                                 const struct snapshot_part_file *parts,
                                                 size_t count, size_t *stat_count)
{
    size_t n = 0, m = 0;
    struct snapshot_pack_stat *stats = count_live(packs, parts, count, &n);
    struct snapshot_pack_stat *more = count_live(packs, packs->chunks, packs->chunk_count, &m);
    for (size_t i = 0; i < m; i++) {
        struct snapshot_pack_stat *st = stat_of(stats, n, more[i].number);
        if (st != NULL) {
            st->live += more[i].live;
            continue;
        }
        void *grown = realloc(stats, (n + 1) * sizeof *stats);
        if (grown == NULL)
            break; /* counted less: reclaimed later */
        stats = grown;
        stats[n++] = more[i];
    }
    free(more);
    *stat_count = n;
    return stats;
}

/* A sealed pack less than half live, the least live first; 0 none. */
static uint32_t choose_victim(const struct snapshot_packs *packs)
{
    const struct snapshot_pack_stat *best = NULL;
    for (size_t i = 0; i < packs->stat_count; i++) {
        const struct snapshot_pack_stat *st = &packs->stats[i];
        if ((packs->fd >= 0 && st->number == packs->open) || st->live * 2 >= st->size)
            continue;
        if (best == NULL || st->live < best->live)
            best = st;
    }
    return best != NULL ? best->number : 0;
}

/* After the stats were counted: seals a mostly dead open pack, picks the
 * pack to reclaim next. */
static void plan_reclaim(struct snapshot_packs *packs)
{
    if (packs->fd >= 0) {
        struct snapshot_pack_stat *open = stat_of(packs->stats, packs->stat_count, packs->open);
        uint64_t live = open != NULL ? open->live : 0;
        if (open != NULL)
            open->size = packs->end;
        char err[256];
        if (packs->end >= packs->capacity / 16 && live * 2 < packs->end &&
            seal(packs, err, sizeof err) != 0)
            log_warn("%s", err); /* it stays open */
    }
    if (packs->victim != 0 && stat_of(packs->stats, packs->stat_count, packs->victim) != NULL)
        return; /* still being reclaimed */
    packs->victim = choose_victim(packs);
    if (packs->victim != 0)
        log_info("snapshot pack %" PRIu32 " is less than half live: its parts move out",
                 packs->victim);
}

void snapshot_packs_published(struct snapshot_packs *packs, const struct snapshot_part_file *parts,
                              size_t count)
{
    packs->committed = packs->end;
    size_t n;
    struct snapshot_pack_stat *stats = count_live_all(packs, parts, count, &n);
    free(packs->stats);
    packs->stats = stats;
    packs->stat_count = n;
    plan_reclaim(packs);
}

/* The highest pack number among the directory's files. */
static uint32_t highest_on_disk(const struct snapshot_packs *packs)
{
    uint32_t highest = 0;
    DIR *dir = opendir(packs->dir);
    if (dir == NULL)
        return 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        uint32_t n = snapshot_packs_number(e->d_name);
        if (n > highest)
            highest = n;
    }
    closedir(dir);
    return highest;
}

/* Opens pack number again to append past named_end. */
static void reopen(struct snapshot_packs *packs, uint32_t number, uint64_t named_end, bool truncate)
{
    char name[SNAPSHOT_PART_NAME_MAX], path[sizeof packs->dir + SNAPSHOT_PART_NAME_MAX + 1];
    struct stat st;
    snapshot_packs_name(number, name);
    path_of(packs, name, path, sizeof path);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        log_warn("cannot append to snapshot pack %s again: %s", name, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    uint64_t end = align_up(named_end);
    if ((uint64_t)st.st_size > end && truncate) {
        if (ftruncate(fd, (off_t)end) == 0)
            log_info("snapshot pack %s: %" PRIu64 " bytes past its last named part cut off", name,
                     (uint64_t)st.st_size - end);
    } else if ((uint64_t)st.st_size > end) {
        end = align_up((uint64_t)st.st_size);
    }
    packs->fd = fd;
    packs->open = number;
    packs->end = packs->committed = end;
    packs->unsynced = false;
    snprintf(packs->open_name, sizeof packs->open_name, "%s", name);
}

void snapshot_packs_adopt(struct snapshot_packs *packs, const struct snapshot *index,
                          const struct snapshot_part_file *parts, size_t count, bool truncate)
{
    uint32_t last = 0;
    uint64_t named_end = 0;
    for (uint32_t i = 0; i < index->counts[SNAPSHOT_SEC_PARTS]; i++) {
        const struct snapshot_part *p = &index->parts[i];
        uint32_t n = snapshot_packs_number(snapshot_string(index, p->file));
        if (n > last)
            last = n, named_end = 0;
        if (n == last && p->offset + p->length > named_end)
            named_end = p->offset + p->length;
    }
    for (size_t i = 0; i < packs->chunk_count; i++) { /* a chunk is named like a part */
        const struct snapshot_part_file *c = &packs->chunks[i];
        uint32_t n = snapshot_packs_number(c->name);
        if (n > last)
            last = n, named_end = 0;
        if (n == last && c->offset + c->length > named_end)
            named_end = c->offset + c->length;
    }
    let_go(packs);
    uint32_t highest = highest_on_disk(packs);
    packs->next = (highest > last ? highest : last) + 1;
    size_t n;
    struct snapshot_pack_stat *stats = count_live_all(packs, parts, count, &n);
    free(packs->stats);
    packs->stats = stats;
    packs->stat_count = n;
    if (last != 0 && named_end < packs->capacity)
        reopen(packs, last, named_end, truncate);
    struct snapshot_pack_stat *open = stat_of(packs->stats, packs->stat_count, last);
    if (packs->fd >= 0 && open != NULL)
        open->size = packs->end;
    packs->victim = 0;
    plan_reclaim(packs);
}
