/*
 * snapshot_write.c - the snapshot builder's file writer (see
 * snapshot_builder.h): the final ordering of flags, rules, time boundaries
 * and SDK keys, the file layout (header, 8-byte aligned sections,
 * checksum) and the atomic publication (a temporary file, fsync, rename,
 * and fsync of the directory for a whole snapshot), or the bare bytes at
 * an offset of a pack file (snapshot_packs.h makes those durable).
 *
 * Invariant: the file at the final path is either the old one or the
 * complete new one; on any failure the temporary file is removed and err
 * says why.
 */
#include "eval/snapshot_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "eval/snapshot.h"
#include "eval/snapshot_builder.h"

/* ------------------------------------------------------------------ */
/* Final ordering */

struct final_tables {
    struct vec flags; /* struct snapshot_flag */
    struct vec rules; /* struct snapshot_rule */
    struct vec times; /* int64_t */
};

static int compare_flags(const void *a, const void *b, void *arg)
{
    const struct snapshot_builder *builder = arg;
    const struct snapshot_flag *fa =
        &((const struct builder_flag *)vec_at(&builder->flags, *(const uint32_t *)a))->rec;
    const struct snapshot_flag *fb =
        &((const struct builder_flag *)vec_at(&builder->flags, *(const uint32_t *)b))->rec;
    if (fa->env != fb->env)
        return fa->env < fb->env ? -1 : 1;
    size_t n = fa->key.len < fb->key.len ? fa->key.len : fb->key.len;
    int c = memcmp(builder_string(builder, fa->key), builder_string(builder, fb->key), n);
    if (c != 0)
        return c;
    return fa->key.len == fb->key.len ? 0 : (fa->key.len < fb->key.len ? -1 : 1);
}

static bool emit_flag(const struct snapshot_builder *b, const struct builder_flag *flag,
                      struct final_tables *t)
{
    struct snapshot_flag rec = flag->rec;
    rec.rule_first = (uint32_t)t->rules.len;
    for (uint32_t r = flag->rule_head; r != SNAPSHOT_NONE;) {
        const struct builder_rule *rule = vec_at(&b->rules, r);
        if (!vec_append(&t->rules, &rule->rec, 1))
            return false;
        r = rule->next;
    }
    return vec_append(&t->flags, &rec, 1);
}

static bool order_flags(struct snapshot_builder *b, struct final_tables *t)
{
    size_t n = b->flags.len;
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (order == NULL || !vec_reserve(&t->flags, n) || !vec_reserve(&t->rules, b->rules.len)) {
        free(order);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    if (n > 1)
        qsort_r(order, n, sizeof *order, compare_flags, b);
    size_t k = 0;
    for (uint32_t e = 0; e < b->envs.len; e++) {
        struct snapshot_env *env = vec_at(&b->envs, e);
        env->flag_first = (uint32_t)t->flags.len;
        for (; k < n && ((struct builder_flag *)vec_at(&b->flags, order[k]))->rec.env == e; k++)
            emit_flag(b, vec_at(&b->flags, order[k]), t); /* room reserved above */
        env->flag_count = (uint32_t)t->flags.len - env->flag_first;
    }
    free(order);
    return true;
}

static int compare_env_times(const void *a, const void *b)
{
    const struct env_time *x = a, *y = b;
    if (x->env != y->env)
        return x->env < y->env ? -1 : 1;
    return x->t < y->t ? -1 : (x->t > y->t ? 1 : 0);
}

static bool order_times(struct snapshot_builder *b, struct final_tables *t)
{
    struct vec *pairs = &b->env_times;
    if (pairs->len > 1)
        qsort(pairs->data, pairs->len, pairs->size, compare_env_times);
    size_t k = 0;
    for (uint32_t e = 0; e < b->envs.len; e++) {
        struct snapshot_env *env = vec_at(&b->envs, e);
        env->time_first = (uint32_t)t->times.len;
        for (; k < pairs->len && ((struct env_time *)vec_at(pairs, k))->env == e; k++) {
            int64_t v = ((struct env_time *)vec_at(pairs, k))->t;
            size_t have = t->times.len - env->time_first;
            if (have > 0 && *(int64_t *)vec_at(&t->times, t->times.len - 1) == v)
                continue;
            if (!vec_append(&t->times, &v, 1))
                return false;
        }
        env->time_count = (uint32_t)t->times.len - env->time_first;
    }
    return true;
}

static int compare_sdk_keys(const void *a, const void *b)
{
    return memcmp(((const struct snapshot_sdk_key *)a)->digest,
                  ((const struct snapshot_sdk_key *)b)->digest, SNAPSHOT_DIGEST_LEN);
}

static void order_sdk_keys(struct snapshot_builder *b)
{
    struct vec *keys = &b->sdk_keys;
    if (keys->len > 1)
        qsort(keys->data, keys->len, keys->size, compare_sdk_keys);
    size_t out = 0;
    for (size_t i = 0; i < keys->len; i++) {
        if (out > 0 && compare_sdk_keys(vec_at(keys, out - 1), vec_at(keys, i)) == 0)
            continue;
        memmove(vec_at(keys, out++), vec_at(keys, i), keys->size);
    }
    keys->len = out;
}

/* ------------------------------------------------------------------ */
/* Layout and publication */

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* The file: a header, then each section padded to 8 bytes. */
struct file_plan {
    struct snapshot_header header;
    const struct vec *sections[SNAPSHOT_SEC_COUNT];
};

static const unsigned char zero_pad[8];

static size_t section_bytes(const struct vec *v)
{
    return v->len * v->size;
}

static void plan_file(struct snapshot_builder *b, const struct final_tables *t,
                      struct file_plan *plan)
{
    const struct vec *sections[SNAPSHOT_SEC_COUNT] = {
        [SNAPSHOT_SEC_STRINGS] = &b->strings,
        [SNAPSHOT_SEC_ENVS] = &b->envs,
        [SNAPSHOT_SEC_SDK_KEYS] = &b->sdk_keys,
        [SNAPSHOT_SEC_FLAGS] = &t->flags,
        [SNAPSHOT_SEC_VARIANTS] = &b->variants.recs,
        [SNAPSHOT_SEC_RULES] = &t->rules,
        [SNAPSHOT_SEC_SERVES] = &b->serves.recs,
        [SNAPSHOT_SEC_ITEMS] = &b->items.recs,
        [SNAPSHOT_SEC_CONDS] = &b->conds.recs,
        [SNAPSHOT_SEC_VALUES] = &b->values.recs,
        [SNAPSHOT_SEC_PATHS] = &b->paths.recs,
        [SNAPSHOT_SEC_SEGMENTS] = &b->segments,
        [SNAPSHOT_SEC_PATTERNS] = &b->patterns.recs,
        [SNAPSHOT_SEC_TIMES] = &t->times,
        [SNAPSHOT_SEC_PARTS] = &b->parts,
        [SNAPSHOT_SEC_CHUNKS] = &b->chunks,
    };
    struct snapshot_header *h = &plan->header;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, SNAPSHOT_MAGIC, SNAPSHOT_MAGIC_LEN);
    h->version = SNAPSHOT_FORMAT_VERSION;
    h->header_size = sizeof *h;
    h->generation = b->generation;
    size_t size = sizeof *h;
    struct snapshot_checksum_state sum;
    snapshot_checksum_init(&sum);
    for (int i = 0; i < SNAPSHOT_SEC_COUNT; i++) {
        plan->sections[i] = sections[i];
        h->sections[i].offset = size;
        h->sections[i].count = sections[i]->len;
        size_t bytes = section_bytes(sections[i]);
        snapshot_checksum_update(&sum, sections[i]->data, bytes);
        snapshot_checksum_update(&sum, zero_pad, align8(bytes) - bytes);
        size += align8(bytes);
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    h->built_at_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    h->total_size = size;
    h->checksum = snapshot_checksum_final(&sum);
}

static int fsync_directory_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* How much of a file's write is made durable. */
enum durability { SYNC_FILE_AND_DIR, SYNC_NONE };

/* Writes every byte of count pieces to fd, with as few writev calls as the
 * kernel allows (one for an index on a local file system). */
static int writev_all(int fd, const struct iovec *pieces, int count)
{
    struct iovec left[64];
    if (count > (int)(sizeof left / sizeof left[0]))
        return -1;
    memcpy(left, pieces, (size_t)count * sizeof *left);
    struct iovec *at = left;
    for (;;) {
        for (; count > 0 && at->iov_len == 0; at++)
            count--;
        if (count == 0)
            return 0;
        ssize_t n = writev(fd, at, count);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        for (; count > 0 && (size_t)n >= at->iov_len; at++, count--)
            n -= (ssize_t)at->iov_len;
        if (count > 0) { /* a partial write: the rest of this piece next */
            at->iov_base = (char *)at->iov_base + n;
            at->iov_len -= (size_t)n;
        }
    }
}

/* The bytes of plan as pieces (header, then each section and its
 * padding) into pieces (PLAN_PIECES); their count. */
#define PLAN_PIECES (1 + 2 * SNAPSHOT_SEC_COUNT)
static int plan_pieces(const struct file_plan *plan, struct iovec *pieces)
{
    int n = 0;
    pieces[n++] = (struct iovec){(void *)&plan->header, sizeof plan->header};
    for (int i = 0; i < SNAPSHOT_SEC_COUNT; i++) {
        size_t bytes = section_bytes(plan->sections[i]);
        pieces[n++] = (struct iovec){(void *)plan->sections[i]->data, bytes};
        pieces[n++] = (struct iovec){(void *)zero_pad, align8(bytes) - bytes};
    }
    return n;
}

/* Publishes pieces as path: written to path.tmp, synced as sync says,
 * renamed over path (the one way every snapshot file is put in place). */
static int publish_pieces(const char *path, const struct iovec *pieces, int count,
                          enum durability sync, char *err, size_t errlen)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "snapshot path too long");
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "open %s: %s", tmp, strerror(errno));
        return -1;
    }
    if (writev_all(fd, pieces, count) != 0 || (sync != SYNC_NONE && fsync(fd) != 0)) {
        snprintf(err, errlen, "write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (sync == SYNC_FILE_AND_DIR && fsync_directory_of(path) != 0) {
        snprintf(err, errlen, "fsync directory of %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int publish_file(const char *path, const struct file_plan *plan, enum durability sync,
                        char *err, size_t errlen)
{
    struct iovec pieces[PLAN_PIECES];
    return publish_pieces(path, pieces, plan_pieces(plan, pieces), sync, err, errlen);
}

/* Writes plan at offset of fd; *length the bytes written. */
static int write_plan_at(int fd, uint64_t offset, const struct file_plan *plan, uint64_t *length,
                         char *err, size_t errlen)
{
    struct iovec pieces[PLAN_PIECES];
    if (lseek(fd, (off_t)offset, SEEK_SET) < 0 ||
        writev_all(fd, pieces, plan_pieces(plan, pieces)) != 0) {
        snprintf(err, errlen, "write at %llu: %s", (unsigned long long)offset,
                 errno != 0 ? strerror(errno) : "short write");
        return -1;
    }
    *length = plan->header.total_size;
    return 0;
}

/* Orders b's tables and writes its file: at path_final (published as sync
 * says), or with fd >= 0 at offset of fd. */
static int write_file(struct snapshot_builder *b, const char *path_final, int fd, uint64_t offset,
                      uint64_t *length, enum durability sync, char *err, size_t errlen)
{
    struct final_tables t;
    vec_init(&t.flags, sizeof(struct snapshot_flag));
    vec_init(&t.rules, sizeof(struct snapshot_rule));
    vec_init(&t.times, sizeof(int64_t));
    int rc = -1;
    if (b->failed) {
        snprintf(err, errlen, "snapshot builder failed: %s", b->error);
    } else if (b->strings.len > UINT32_MAX) {
        snprintf(err, errlen, "string table exceeds 4 GiB");
    } else if (!order_flags(b, &t) || !order_times(b, &t) || !link_env_parts(b)) {
        snprintf(err, errlen, "out of memory");
    } else {
        struct file_plan plan;
        order_sdk_keys(b);
        plan_file(b, &t, &plan);
        errno = 0;
        rc = fd >= 0 ? write_plan_at(fd, offset, &plan, length, err, errlen)
                     : publish_file(path_final, &plan, sync, err, errlen);
    }
    vec_free(&t.flags);
    vec_free(&t.rules);
    vec_free(&t.times);
    return rc;
}

int snapshot_builder_write(struct snapshot_builder *b, const char *path_final, char *err,
                           size_t errlen)
{
    return write_file(b, path_final, -1, 0, NULL, SYNC_FILE_AND_DIR, err, errlen);
}

int snapshot_builder_write_unsynced(struct snapshot_builder *b, const char *path_final, char *err,
                                    size_t errlen)
{
    return write_file(b, path_final, -1, 0, NULL, SYNC_NONE, err, errlen);
}

int snapshot_builder_write_at(struct snapshot_builder *b, int fd, uint64_t offset, uint64_t *length,
                              char *err, size_t errlen)
{
    return write_file(b, NULL, fd, offset, length, SYNC_NONE, err, errlen);
}

int snapshot_write_pieces(const char *path_final, const struct iovec *pieces, int count, char *err,
                          size_t errlen)
{
    return publish_pieces(path_final, pieces, count, SYNC_FILE_AND_DIR, err, errlen);
}

int snapshot_write_pieces_unsynced(const char *path_final, const struct iovec *pieces, int count,
                                   char *err, size_t errlen)
{
    return publish_pieces(path_final, pieces, count, SYNC_NONE, err, errlen);
}
