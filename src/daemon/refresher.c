/*
 * refresher.c - follows the configuration generation and keeps the
 * snapshot files current (see refresher.h).
 *
 * At start it publishes the generation of the snapshot index already on
 * disk (if it is valid), so workers evaluate from it even while the
 * database is down, and takes that index's valid part files as published,
 * with its catalog of them (snapshot_catalog.h): a restart rebuilds only
 * organizations whose generation moved while it was down. Then, whenever
 * it can reach the database: it reads the generation (on every NOTIFY and
 * at least every refresh_interval_ms), and when that differs from what it
 * last built (or it has built nothing yet), it reads (snapshot_source.h)
 * the organizations whose generation moved since the catalog's (every
 * organization when there is no index on disk and after a failed write),
 * writes each of their parts as the read builds it (a batch at a time when
 * there are many), then the index (made from the new catalog, or, when the
 * organizations that moved kept their environments and SDK keys, the copy
 * of the last index patched with their new parts: snapshot_kept_index.h),
 * atomically (snapshot_build.h: temp file, fsync, rename; past
 * PARTS_SYNCED_EACH parts no fsync each but one syncfs before the index;
 * one fsync of the directory after the index's rename makes all the
 * renames durable), and
 * only then publishes the new generation in shared memory.
 * A failed build leaves the old files and the old generation in place and
 * is retried. Superseded part files are deleted one publication later
 * (snapshot_parts.h).
 *
 * A chunked organization (doc/choices.md "Chunks of a large organization")
 * is written as the chunk files read again (chunk-<org>-<generation>-<n>.bin)
 * and its part, a header naming all its chunks; the chunks its previous
 * header named and the new one does not are deleted one publication
 * later, like superseded parts. At start a header counts as valid only
 * with all its chunks.
 *
 * It also keeps the healthz checks in shared memory (health.h), the only
 * writer of them: snapshot_write fails with each failed write of the files
 * and clears with the next publication; snapshot_stale is set from the
 * first time it reads a generation it has not published until it publishes
 * one; database fails from the first failed connection or generation read
 * and clears with the next generation read.
 *
 * With database_replica set it reads everything (the generation, the
 * organization generations and the rows) from that streaming replica
 * instead, which LISTEN does not reach: it polls the generation every
 * REPLICA_POLL_MS. A replica may have replayed less than the node serves
 * (replay paused or lagging, files on disk from a newer generation at
 * start, a reload from the primary to the replica), so there the node
 * never goes back: a generation older than the one served in shared memory
 * is not built, nor is a part replaced by an older generation's; the
 * refresher waits, says why under snapshot_stale, and logs the start and
 * the end of each wait once. A failed build is tried again after
 * refresh_interval_ms, not at the next poll. An unreachable replica is
 * retried like the database, without falling back to the primary
 * (doc/choices.md "Read replicas").
 */
#include "daemon/refresher.h"

#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

#include "daemon/bgloop.h"
#include "base/config.h"
#include "base/health.h"
#include "base/log.h"
#include "http/metrics.h"
#include "daemon/proctitle.h"
#include "eval/served_snapshot.h"
#include "eval/shm.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_catalog.h"
#include "eval/snapshot_kept_index.h"
#include "eval/snapshot_parts.h"
#include "db/snapshot_source.h"

/* Parts of one build written with an fsync each; later ones are made
 * durable together by one syncfs of the state directory's file system. */
#define PARTS_SYNCED_EACH 16

/* How often the generation of a replica is read (doc/choices.md "Read
 * replicas": a single-row SELECT, cheap on the replica). */
#define REPLICA_POLL_MS 20

struct refresher {
    const struct config *cfg;
    bool replica;                /* reading database_replica: polled, never back in time */
    bool waiting;                /* the replica is behind what the node serves */
    unsigned long prepared_on;   /* loop.connections when the generation query was prepared */
    long long retry_build_at_ms; /* with a replica: a failed build is tried again from then */
    struct shm_region *shm;
    struct bgloop loop;
    char path[4096 + 32]; /* the index */
    bool built_once;
    uint64_t built;                  /* generation of the last index written */
    uint64_t pending;                /* generation last read from the database */
    struct snapshot_parts parts;     /* what that index names */
    struct snapshot_catalog catalog; /* what that index holds, per organization */
    bool have_catalog;               /* false: the next build reads everything */
    struct snapshot_kept_index kept; /* that index's bytes, to patch (loaded or not) */
    bool swept;                      /* leftovers of an earlier run doomed */
    bool part_write_failed;          /* in the read under way */
    bool read_older;                 /* it met a part older than published (replica) */
    char older_org[SNAPSHOT_PART_ORG_MAX];
    uint64_t older_generation;
    size_t parts_synced;   /* parts written with their fsync in it */
    size_t parts_unsynced; /* parts written without (syncfs later) */
    struct snapshot_source_chunking chunking;
    char (*chunks_superseded)[SNAPSHOT_PART_NAME_MAX]; /* chunk files the build replaced */
    size_t superseded_count;
};

static uint64_t monotonic_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

static uint64_t unix_ms(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000u + (uint64_t)t->tv_nsec / 1000000u;
}

static long long elapsed_ms(long long since)
{
    return bgloop_now_ms() - since;
}

/* Publishes generation, with when its file was written for /metrics. */
static void publish(struct refresher *rf, uint64_t generation, uint64_t written_unix_ms)
{
    if (rf->shm->metrics != NULL)
        atomic_store_explicit(&rf->shm->metrics->snapshot_built_unix_ms, written_unix_ms,
                              memory_order_relaxed);
    atomic_store_explicit(&rf->shm->header->snapshot_generation, generation, memory_order_release);
}

/* A failed read of the database, for ensign_database_errors_total. */
static void count_database_error(struct refresher *rf)
{
    if (rf->shm->metrics != NULL)
        metrics_add(&METRICS_BACKGROUND_BLOCK(rf->shm->metrics)->database_errors, 1);
}

static struct health_state *health_of(struct refresher *rf)
{
    return rf->shm->header != NULL ? &rf->shm->header->health : NULL;
}

/* Records check c failing for reason (one line: line breaks become spaces). */
static void health_failed(struct refresher *rf, enum health_check c, const char *reason)
{
    char line[HEALTH_REASON_MAX];
    snprintf(line, sizeof line, "%s", reason);
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    for (size_t n = strlen(line); n > 0 && line[n - 1] == ' '; n--)
        line[n - 1] = '\0';
    health_fail(health_of(rf), c, health_now_ms(), line);
}

/* The database holds generation, not yet served: snapshot_stale runs from now
 * (or from when it first did), with why it is not served yet. */
static void health_pending(struct refresher *rf, uint64_t generation, const char *why)
{
    char reason[HEALTH_REASON_MAX];
    uint64_t served =
        atomic_load_explicit(&rf->shm->header->snapshot_generation, memory_order_relaxed);
    snprintf(reason, sizeof reason,
             "generation %" PRIu64 " in the database, %" PRIu64 " served: %.150s", generation,
             served, why);
    health_failed(rf, HEALTH_SNAPSHOT_STALE, reason);
}

static uint64_t served_generation(const struct refresher *rf)
{
    return atomic_load_explicit(&rf->shm->header->snapshot_generation, memory_order_acquire);
}

/* Enters (logged once, snapshot_stale says why) or stays in the wait for a
 * replica that has replayed only generation, older than what is served. */
static void wait_for_replica(struct refresher *rf, uint64_t generation, const char *what)
{
    uint64_t served = served_generation(rf);
    char reason[HEALTH_REASON_MAX + 128]; /* health_failed cuts it to its size */
    snprintf(reason, sizeof reason,
             "the replica has %.100s generation %" PRIu64 ", %" PRIu64
             " served: waiting for the replica to replay it",
             what, generation, served);
    if (!rf->waiting)
        log_warn("%s (an older configuration is never served)", reason);
    rf->waiting = true;
    health_failed(rf, HEALTH_SNAPSHOT_STALE, reason);
}

/* With a replica: true (and waiting) when generation, read from it, is
 * older than the generation served. */
static bool replica_behind(struct refresher *rf, uint64_t generation)
{
    if (!rf->replica)
        return false;
    if (generation < served_generation(rf)) {
        wait_for_replica(rf, generation, "replayed only");
        return true;
    }
    if (rf->waiting) {
        log_info("the replica has replayed generation %" PRIu64 ": following it again", generation);
        rf->waiting = false;
        health_clear(health_of(rf), HEALTH_SNAPSHOT_STALE);
    }
    return false;
}

/* With a replica: an organization of res whose published part has a newer
 * generation than res holds for it, or NULL. */
static const struct snapshot_source_org *older_part(const struct refresher *rf,
                                                    const struct snapshot_source_result *res)
{
    for (size_t i = 0; rf->replica && i < res->org_count; i++)
        if (snapshot_parts_newer(&rf->parts, res->orgs[i].id, res->orgs[i].generation))
            return &res->orgs[i];
    return NULL;
}

/* With a replica: true (and waiting) when res, read from it, is older than
 * what is served, as a whole or for one organization. */
static bool read_is_older(struct refresher *rf, const struct snapshot_source_result *res)
{
    if (replica_behind(rf, res->generation))
        return true;
    const struct snapshot_source_org *org = older_part(rf, res);
    if (org == NULL)
        return false;
    char what[SNAPSHOT_PART_ORG_MAX + 64];
    snprintf(what, sizeof what, "for organization %s only", org->id);
    wait_for_replica(rf, org->generation, what);
    return true;
}

/* Whether the part file of org is there, valid and of that generation (the
 * shape of snapshot_catalog_part_ok_fn; ctx is the refresher). */
static bool part_on_disk(void *ctx, const char *org, const char *file, uint64_t generation)
{
    struct refresher *rf = ctx;
    struct snapshot_part_file named = {.generation = generation};
    snprintf(named.org, sizeof named.org, "%s", org);
    if (!snapshot_parts_name(&named) || strcmp(named.name, file) != 0)
        return false; /* not a name this refresher writes */
    char path[sizeof rf->parts.dir + SNAPSHOT_PART_NAME_MAX + 1], err[256];
    snprintf(path, sizeof path, "%s/%s", rf->parts.dir, file);
    struct snapshot part;
    if (snapshot_open(path, &part, err, sizeof err) != 0) {
        log_warn("snapshot part %s on disk is not usable, it is built again: %s", file, err);
        return false;
    }
    bool same = snapshot_generation(&part) == generation;
    for (uint32_t i = 0; same && i < part.counts[SNAPSHOT_SEC_CHUNKS]; i++) {
        const struct snapshot_chunk *c = &part.chunks[i];
        struct snapshot chunk;
        snprintf(path, sizeof path, "%s/%s", rf->parts.dir, snapshot_string(&part, c->file));
        if (snapshot_open(path, &chunk, err, sizeof err) != 0) {
            log_warn("snapshot chunk %s on disk is not usable, its organization is built again:"
                     " %s",
                     snapshot_string(&part, c->file), err);
            same = false;
            break;
        }
        same = snapshot_generation(&chunk) == c->generation;
        snapshot_close(&chunk);
    }
    snapshot_close(&part);
    return same;
}

/*
 * Takes the parts of the index on disk whose files are valid as published,
 * with the catalog of their organizations, so the first build reads and
 * writes only organizations whose generation moved since (or whose file is
 * bad). When every part is usable, the index counts as built: a database
 * still at its generation is not read again.
 */
static void adopt_index(struct refresher *rf, const struct snapshot *index)
{
    long long started = bgloop_now_ms();
    struct snapshot_part_file *parts;
    size_t count, named = index->counts[SNAPSHOT_SEC_PARTS];
    if (snapshot_catalog_load(&rf->catalog, index, part_on_disk, rf, &parts, &count) != 0) {
        log_warn("cannot hold the snapshot index in memory: it is built again whole");
        return;
    }
    snapshot_parts_published(&rf->parts, parts, count, true);
    rf->swept = true;
    rf->have_catalog = true;
    if (count == named) {
        rf->built = snapshot_generation(index);
        rf->built_once = true;
        snapshot_kept_index_load(&rf->kept, index); /* else the next index is made whole */
    }
    log_info("%zu of %zu snapshot parts on disk are kept (checked in %lld ms)", count, named,
             elapsed_ms(started));
}

/* Publishes the generation of a valid file already on disk, and adopts its
 * parts. */
static void publish_file_on_disk(struct refresher *rf)
{
    struct snapshot s;
    char err[256];
    if (snapshot_open(rf->path, &s, err, sizeof err) != 0) {
        log_info("no usable snapshot on disk yet (%s)", err);
        return;
    }
    uint64_t generation = snapshot_generation(&s);
    struct stat st;
    publish(rf, generation, stat(rf->path, &st) == 0 ? unix_ms(&st.st_mtim) : 0);
    log_info("serving snapshot generation %" PRIu64 " from %s until the database answers",
             generation, rf->path);
    adopt_index(rf, &s);
    snapshot_close(&s);
}

/* Forgets the connection after a failure that broke it. */
static void check_connection(struct refresher *rf)
{
    if (rf->loop.conn != NULL && PQstatus(rf->loop.conn) != CONNECTION_OK)
        bgloop_disconnect(&rf->loop);
}

/* Names the part file of org in *f; false (err set) when its id is not a
 * plain name. */
static bool name_part(const struct snapshot_source_org *org, struct snapshot_part_file *f,
                      char *err, size_t errlen)
{
    snprintf(f->org, sizeof f->org, "%s", org->id);
    f->generation = org->generation;
    if (!snapshot_parts_name(f)) {
        snprintf(err, errlen, "organization id %s is not a file name", org->id);
        return false;
    }
    return true;
}

/* Opens the published header of org into *header; false when org has no
 * published part or it cannot be opened. */
static bool open_published(struct refresher *rf, const char *org, struct snapshot *header)
{
    const struct snapshot_part_file *f = snapshot_parts_find(&rf->parts, org);
    char path[sizeof rf->parts.dir + SNAPSHOT_PART_NAME_MAX + 1], err[256];
    if (f == NULL)
        return false;
    snprintf(path, sizeof path, "%s/%s", rf->parts.dir, f->name);
    return snapshot_open(path, header, err, sizeof err) == 0;
}

/* The chunks the published header of org names (snapshot_source_held_chunks_fn). */
static int held_chunks(void *ctx, const char *org, struct snapshot_source_chunks *out)
{
    struct refresher *rf = ctx;
    struct snapshot header;
    memset(out, 0, sizeof *out);
    if (!open_published(rf, org, &header))
        return 0; /* nothing held: read whole */
    uint32_t n = header.counts[SNAPSHOT_SEC_CHUNKS];
    int rc = 0;
    out->items = n > 0 ? calloc(n, sizeof *out->items) : NULL;
    for (uint32_t i = 0; i < n && (rc = out->items != NULL ? 0 : -1) == 0; i++) {
        const struct snapshot_chunk *c = &header.chunks[i];
        struct snapshot_source_chunk *item = &out->items[out->count];
        if (c->file.len >= sizeof item->file ||
            (item->first_key = strdup(snapshot_string(&header, c->first_key))) == NULL) {
            rc = c->file.len >= sizeof item->file ? 0 : -1;
            snapshot_source_chunks_free(out); /* an odd name: read whole */
            break;
        }
        snprintf(item->file, sizeof item->file, "%s", snapshot_string(&header, c->file));
        item->generation = c->generation;
        out->count++;
    }
    snapshot_close(&header);
    return rc;
}

/* Records file as superseded (deleted after the publication but one). */
static void supersede_chunk(struct refresher *rf, const char *file)
{
    void *grown =
        realloc(rf->chunks_superseded, (rf->superseded_count + 1) * sizeof *rf->chunks_superseded);
    if (grown == NULL)
        return; /* the file stays behind */
    rf->chunks_superseded = grown;
    snprintf(rf->chunks_superseded[rf->superseded_count++], SNAPSHOT_PART_NAME_MAX, "%s", file);
}

/* The file name of chunk c of org: kept, its file; read again,
 * chunk-<org>-<generation>-<c>.bin. */
static void chunk_name(const struct snapshot_source_org *org, size_t c, char *name, size_t len)
{
    const struct snapshot_source_chunk *chunk = &org->chunks.items[c];
    if (chunk->builder == NULL)
        snprintf(name, len, "%s", chunk->file);
    else
        snprintf(name, len, "chunk-%s-%" PRIu64 "-%zu.bin", org->id, org->generation, c);
}

/* The chunk files of the published header of org that org's new chunks
 * do not name are superseded (a chunk read again at the generation it was
 * written at, after a failed write, keeps its name and is not). */
static void supersede_chunks(struct refresher *rf, const struct snapshot_source_org *org)
{
    struct snapshot header;
    if (!open_published(rf, org->id, &header))
        return;
    for (uint32_t i = 0; i < header.counts[SNAPSHOT_SEC_CHUNKS]; i++) {
        const char *file = snapshot_string(&header, header.chunks[i].file);
        bool named = false;
        for (size_t c = 0; !named && c < org->chunks.count; c++) {
            char name[SNAPSHOT_PART_NAME_MAX];
            chunk_name(org, c, name, sizeof name);
            named = strcmp(name, file) == 0;
        }
        if (!named)
            supersede_chunk(rf, file);
    }
    snapshot_close(&header);
}

/* Writes a part or chunk builder to path: with an fsync for the first few
 * of a build, without for the rest (one syncfs before the index). */
static int write_builder(struct refresher *rf, struct snapshot_builder *b, const char *path,
                         char *err, size_t errlen)
{
    if (rf->parts_synced < PARTS_SYNCED_EACH) { /* a change: a part or a few */
        rf->parts_synced++;
        return snapshot_builder_write_part(b, path, err, errlen);
    }
    rf->parts_unsynced++; /* many (a first build): one syncfs before the index */
    return snapshot_builder_write_part_unsynced(b, path, err, errlen);
}

/* Writes the chunks of org read again, as chunk-<org>-<generation>-<n>.bin,
 * and names every chunk in its header (org->builder). */
static int write_chunks(struct refresher *rf, const struct snapshot_source_org *org, char *err,
                        size_t errlen)
{
    char path[sizeof rf->parts.dir + SNAPSHOT_PART_NAME_MAX + 1];
    supersede_chunks(rf, org);
    for (size_t c = 0; c < org->chunks.count; c++) {
        const struct snapshot_source_chunk *chunk = &org->chunks.items[c];
        char name[SNAPSHOT_PART_NAME_MAX];
        uint64_t generation = chunk->builder != NULL ? org->generation : chunk->generation;
        chunk_name(org, c, name, sizeof name);
        if (chunk->builder != NULL) {
            snprintf(path, sizeof path, "%s/%s", rf->parts.dir, name);
            if (write_builder(rf, chunk->builder, path, err, errlen) != 0)
                return -1;
        }
        if (snapshot_builder_add_chunk(org->builder, chunk->first_key, name, generation) != 0) {
            snprintf(err, errlen, "%s", snapshot_builder_error(org->builder));
            return -1;
        }
    }
    return 0;
}

/* Writes the part of org as the read builds it (snapshot_source_part_fn). */
static int part_built(void *ctx, const struct snapshot_source_org *org, char *err, size_t errlen)
{
    struct refresher *rf = ctx;
    struct snapshot_part_file f;
    char path[sizeof rf->parts.dir + SNAPSHOT_PART_NAME_MAX + 1];
    int rc = -1;
    if (rf->replica && snapshot_parts_newer(&rf->parts, org->id, org->generation)) {
        rf->read_older = true; /* never written: the read stops, the refresher waits */
        snprintf(rf->older_org, sizeof rf->older_org, "%s", org->id);
        rf->older_generation = org->generation;
        snprintf(err, errlen, "the replica is older for organization %s", org->id);
        return -1;
    }
    if (name_part(org, &f, err, errlen) &&
        (org->chunks.count == 0 || write_chunks(rf, org, err, errlen) == 0)) {
        snprintf(path, sizeof path, "%s/%s", rf->parts.dir, f.name);
        rc = write_builder(rf, org->builder, path, err, errlen);
    }
    if (rc != 0)
        rf->part_write_failed = true;
    return rc;
}

/* Names the part of org in the index: written during the read, else held. */
static int write_part(struct refresher *rf, struct snapshot_source_result *res, size_t i,
                      struct snapshot_part_file *f, char *err, size_t errlen)
{
    const struct snapshot_source_org *org = &res->orgs[i];
    char path[sizeof rf->parts.dir + SNAPSHOT_PART_NAME_MAX + 1];
    snprintf(f->org, sizeof f->org, "%s", org->id);
    f->generation = org->generation;
    if (org->written) {
        if (!name_part(org, f, err, errlen))
            return -1;
    } else if (org->builder == NULL) { /* unchanged: the published file stands */
        const struct snapshot_part_file *held = snapshot_parts_find(&rf->parts, org->id);
        if (held == NULL) {
            snprintf(err, errlen, "no part of organization %s", org->id);
            return -1;
        }
        *f = *held;
    } else {
        if (!snapshot_parts_name(f)) {
            snprintf(err, errlen, "organization id %s is not a file name", org->id);
            return -1;
        }
        snprintf(path, sizeof path, "%s/%s", rf->parts.dir, f->name);
        if (snapshot_builder_write_part(org->builder, path, err, errlen) != 0)
            return -1;
    }
    if (snapshot_builder_add_part(res->index, f->org, f->name, f->generation) != 0) {
        snprintf(err, errlen, "%s", snapshot_builder_error(res->index));
        return -1;
    }
    return 0;
}

/* Writes the changed parts, then the index; the parts it names in *fresh. */
static int write_files(struct refresher *rf, struct snapshot_source_result *res,
                       struct snapshot_part_file **fresh, char *err, size_t errlen)
{
    *fresh = calloc(res->org_count ? res->org_count : 1, sizeof **fresh);
    if (*fresh == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < res->org_count; i++)
        if (write_part(rf, res, i, &(*fresh)[i], err, errlen) != 0)
            return -1;
    /* The parts written during the read are durable before the index
     * names them: one fsync for a part or two, one syncfs for many. */
    if (rf->parts_unsynced > 0 && snapshot_sync_filesystem(rf->parts.dir, err, errlen) != 0)
        return -1;
    return snapshot_builder_write(res->index, rf->path, err, errlen);
}

/* Keeps a copy of the index just written, to patch at the next change
 * (snapshot_kept_index.h); without one the next index is made whole. */
static void keep_index(struct refresher *rf)
{
    struct snapshot index;
    char err[256];
    snapshot_kept_index_free(&rf->kept);
    if (snapshot_open(rf->path, &index, err, sizeof err) != 0) {
        log_warn("cannot keep the snapshot index just written: %s", err);
        return;
    }
    if (snapshot_kept_index_load(&rf->kept, &index) != 0)
        log_warn("cannot keep the snapshot index in memory: the next one is made whole");
    snapshot_close(&index);
}

/*
 * Writes a patch (snapshot_source.h): the parts of the organizations read
 * again were written during the read; their new files and generations,
 * and the generation of every organization that moved, go into the kept
 * index and the catalog, and the kept index is written. The new files of
 * the parts in *changed (*count).
 */
static int write_patch(struct refresher *rf, struct snapshot_source_result *res,
                       struct snapshot_part_file **changed, size_t *count, char *err, size_t errlen)
{
    *count = 0;
    *changed = calloc(res->org_count ? res->org_count : 1, sizeof **changed);
    if (*changed == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < res->org_count; i++) {
        struct snapshot_source_org *org = &res->orgs[i];
        struct snapshot_part_file *f = &(*changed)[*count];
        if (org->read && !org->written) {
            snprintf(err, errlen, "the part of organization %s was not written", org->id);
            return -1;
        }
        if (org->written && !name_part(org, f, err, errlen))
            return -1;
        if (org->written &&
            snapshot_kept_index_set_part(&rf->kept, f->org, f->name, f->generation) != 0) {
            snprintf(err, errlen, "the kept index has no part of organization %s", org->id);
            return -1;
        }
        if (snapshot_catalog_set_generation(&rf->catalog, org->id, org->generation) != 0) {
            snprintf(err, errlen, "the catalog has no organization %s", org->id);
            return -1;
        }
        *count += org->written;
    }
    rf->catalog.generation = res->generation;
    snapshot_kept_index_set_generation(&rf->kept, res->generation);
    if (rf->parts_unsynced > 0 && snapshot_sync_filesystem(rf->parts.dir, err, errlen) != 0)
        return -1;
    return snapshot_kept_index_write(&rf->kept, rf->path, err, errlen);
}

/* A build failed. Polling a replica would try again every REPLICA_POLL_MS:
 * it waits refresh_interval_ms, as the timer does on the primary. */
static void build_failed(struct refresher *rf)
{
    if (rf->replica)
        rf->retry_build_at_ms = bgloop_now_ms() + rf->cfg->refresh_interval_ms;
}

/* A snapshot file could not be written: snapshot_write fails, and the
 * next build writes everything again. */
static void write_failed(struct refresher *rf, const char *err)
{
    log_error("cannot write the snapshot: %s", err);
    char why[512 + 32];
    snprintf(why, sizeof why, "cannot write the snapshot: %s", err);
    health_failed(rf, HEALTH_SNAPSHOT_WRITE, why);
    health_pending(rf, rf->pending, why);
    rf->superseded_count = 0; /* those files stay named by what is published */
    rf->built_once = false;   /* the files may be gone (state_dir removed): write all again */
    rf->have_catalog = false;
    rf->swept = false;
    snapshot_catalog_free(&rf->catalog);
    snapshot_kept_index_free(&rf->kept);
    build_failed(rf);
}

static void build(struct refresher *rf)
{
    char err[512];
    struct snapshot_source_result res;
    long long started = bgloop_now_ms();
    uint64_t started_us = monotonic_us();
    rf->part_write_failed = rf->read_older = false;
    rf->parts_synced = rf->parts_unsynced = 0;
    bool patch = rf->have_catalog && rf->kept.loaded && !snapshot_kept_index_worn(&rf->kept);
    rf->superseded_count = 0;
    rf->chunking = (struct snapshot_source_chunking){
        .size = (size_t)rf->cfg->snapshot_chunk_flags, .held = held_chunks, .ctx = rf};
    if (snapshot_source_read(rf->loop.conn, rf->have_catalog ? &rf->catalog : NULL, patch,
                             part_built, rf, &rf->chunking, &res, err, sizeof err) != 0) {
        if (rf->part_write_failed) {
            write_failed(rf, err);
            return;
        }
        if (rf->read_older) {
            char what[SNAPSHOT_PART_ORG_MAX + 64];
            snprintf(what, sizeof what, "for organization %s only", rf->older_org);
            wait_for_replica(rf, rf->older_generation, what);
            return;
        }
        log_warn("cannot read the configuration: %s", err);
        char why[sizeof err + 32];
        snprintf(why, sizeof why, "cannot read the configuration: %s", err);
        health_pending(rf, rf->pending, why);
        count_database_error(rf);
        check_connection(rf);
        build_failed(rf);
        return;
    }
    if (read_is_older(rf, &res)) {
        snapshot_source_result_free(&res);
        return;
    }
    long long read_ms = elapsed_ms(started);
    size_t flags = 0, rebuilt = 0;
    for (size_t i = 0; i < res.org_count; i++)
        if (res.orgs[i].builder != NULL || res.orgs[i].written) {
            flags += res.orgs[i].flag_count;
            rebuilt++;
        }
    struct snapshot_part_file *fresh = NULL;
    size_t orgs = res.org_count, generation_rows = res.generation_rows;
    bool patched = res.patch;
    if ((patched ? write_patch(rf, &res, &fresh, &orgs, err, sizeof err)
                 : write_files(rf, &res, &fresh, err, sizeof err)) != 0) {
        write_failed(rf, err);
        free(fresh);
        snapshot_source_result_free(&res);
        return;
    }
    uint64_t generation = res.generation;
    if (!patched) {
        snapshot_catalog_free(&rf->catalog);
        rf->catalog = res.catalog; /* taken over */
        snapshot_catalog_init(&res.catalog);
        keep_index(rf);
    }
    rf->have_catalog = true;
    snapshot_source_result_free(&res);
    rf->built = generation;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (rf->shm->metrics != NULL) {
        atomic_store_explicit(&rf->shm->metrics->snapshot_build_us, monotonic_us() - started_us,
                              memory_order_relaxed);
        metrics_add(&rf->shm->metrics->snapshot_builds, 1);
    }
    publish(rf, generation, unix_ms(&now));
    health_clear(health_of(rf), HEALTH_SNAPSHOT_WRITE);
    health_clear(health_of(rf), HEALTH_SNAPSHOT_STALE);
    if (!patched) {
        snapshot_parts_published(&rf->parts, fresh, orgs, !rf->swept);
    } else {
        if (snapshot_parts_replaced(&rf->parts, fresh, orgs) != 0) { /* never: one publication */
            log_error("snapshot parts out of step with the index: the next index is made whole");
            rf->have_catalog = false;
            snapshot_kept_index_free(&rf->kept);
        }
        free(fresh);
        orgs = rf->parts.count;
    }
    for (size_t i = 0; i < rf->superseded_count; i++)
        snapshot_parts_doom(&rf->parts, rf->chunks_superseded[i]);
    rf->superseded_count = 0;
    rf->swept = true;
    rf->built_once = true;
    log_info("snapshot generation %" PRIu64 " published (%zu flag configurations in %zu of %zu"
             " organizations, %zu organization generations read; read in %lld ms, built and"
             " written in %lld ms%s)",
             generation, flags, rebuilt, orgs, generation_rows, read_ms,
             elapsed_ms(started) - read_ms, patched ? ", the index patched" : "");
}

static void refresh(struct refresher *rf)
{
    char err[512];
    uint64_t generation;
    bool prepare = rf->prepared_on != rf->loop.connections;
    if (snapshot_source_generation(rf->loop.conn, prepare, &generation, err, sizeof err) != 0) {
        char reason[HEALTH_REASON_MAX];
        snprintf(reason, sizeof reason, "%s%.180s", rf->replica ? "the replica: " : "", err);
        log_warn("%s%s", rf->replica ? "the replica: " : "", err);
        health_failed(rf, HEALTH_DATABASE, reason);
        count_database_error(rf);
        check_connection(rf);
        return;
    }
    rf->prepared_on = rf->loop.connections;
    health_clear(health_of(rf), HEALTH_DATABASE);
    if (replica_behind(rf, generation))
        return;
    if (rf->built_once && generation == rf->built)
        return;
    if (rf->replica && bgloop_now_ms() < rf->retry_build_at_ms)
        return;
    rf->pending = generation;
    if (!health_failing(health_of(rf), HEALTH_SNAPSHOT_STALE))
        health_pending(rf, generation, "being built");
    build(rf);
}

/* The database could not be reached: the database check runs. */
static void database_unreachable(struct refresher *rf)
{
    char reason[HEALTH_REASON_MAX];
    snprintf(reason, sizeof reason, "%s%.180s", rf->replica ? "the replica: " : "",
             rf->loop.last_error[0] != '\0' ? rf->loop.last_error : "not connected");
    health_failed(rf, HEALTH_DATABASE, reason);
}

int refresher_main(const struct config *cfg, struct shm_region *shm)
{
    log_set_role("refresher");
    proctitle_set("ensignd: refresher");
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    bgloop_install_signals();
    static struct refresher rf; /* large path buffer; one per process */
    rf.cfg = cfg;
    rf.shm = shm;
    rf.replica = cfg->database_replica != NULL && cfg->database_replica[0] != '\0';
    /* LISTEN does not reach a standby: the replica is polled instead. */
    rf.loop = rf.replica
                  ? (struct bgloop){.conninfo = cfg->database_replica}
                  : (struct bgloop){.conninfo = cfg->database, .listen_channel = REFRESHER_CHANNEL};
    int interval_ms = rf.replica ? REPLICA_POLL_MS : cfg->refresh_interval_ms;
    if (shm->metrics != NULL)
        rf.loop.errors = &METRICS_BACKGROUND_BLOCK(shm->metrics)->database_errors;
    snprintf(rf.path, sizeof rf.path, "%s/%s", cfg->state_dir, SNAPSHOT_FILE_NAME);
    snapshot_parts_init(&rf.parts, cfg->state_dir);
    snapshot_catalog_init(&rf.catalog);
    snapshot_kept_index_init(&rf.kept);
    publish_file_on_disk(&rf);
    if (rf.replica)
        log_info("reading the configuration from the replica (database_replica), its generation"
                 " every %d ms",
                 REPLICA_POLL_MS);
    while (!bgloop_stopping()) {
        if (bgloop_ensure_connected(&rf.loop))
            refresh(&rf);
        else
            database_unreachable(&rf);
        int changes = bgloop_wait(&rf.loop, rf.loop.conn != NULL ? interval_ms : 100);
        if (changes > 0)
            log_debug("%d configuration change notifications", changes);
    }
    if (rf.loop.conn != NULL)
        PQfinish(rf.loop.conn);
    snapshot_parts_free(&rf.parts);
    snapshot_catalog_free(&rf.catalog);
    free(rf.chunks_superseded);
    snapshot_kept_index_free(&rf.kept);
    return EXIT_SUCCESS;
}
