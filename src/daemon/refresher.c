/*
 * refresher.c - follows the configuration generation and keeps the
 * snapshot files current (see refresher.h).
 *
 * At start it publishes the generation of the snapshot index already on
 * disk (if it is valid), so workers evaluate from it even while the
 * database is down, and takes that index's valid parts as published,
 * with its catalog of them (snapshot_catalog.h): a restart rebuilds only
 * organizations whose generation moved while it was down. Then, whenever
 * it can reach the database: it reads the generation (on every NOTIFY and
 * at least every refresh_interval_ms), and when that differs from what it
 * last built (or it has built nothing yet), it reads (snapshot_source.h)
 * the organizations whose generation moved since the catalog's (every
 * organization when there is no index on disk and after a failed write),
 * appends each of their parts to the open pack file as the read builds it
 * (a batch at a time when there are many; snapshot_packs.h), then writes
 * the index (made from the new catalog, or, when the organizations that
 * moved kept their environments and SDK keys, the copy of the last index
 * patched with their new parts: snapshot_kept_index.h) whole as the
 * visible index of its generation (snapshot_index_files.h: temp file,
 * rename, no sync), and publishes the new generation in shared memory at
 * once: workers serve it while its bytes are in the page cache. The
 * durable step follows, off that path: one fdatasync of the open pack
 * (parts and chunks alike), then the visible index
 * fsynced and linked and renamed to snapshot.bin, the restart index, with
 * the fsync of the directory (which also makes a new pack's name durable).
 * A change that arrives before it is made visible first; the durable step
 * then covers both (doc/choices.md "Visible before durable"). It runs
 * before exit on SIGTERM. A failed durable step leaves snapshot.bin as it
 * was, fails snapshot_write and rebuilds everything (a failed fsync may
 * have dropped the dirty pages: retrying it would prove nothing). A file a
 * publication stops naming is deleted only once the durable index does not
 * name it either; visible indexes older than the one published before the
 * current one are removed at each publication, and every index-* file but
 * the served one at start. ENSIGN_TEST_DURABLE_DELAY_MS (tests only,
 * ensignd(8)) delays the durable step.
 * Parts of unchanged organizations still in a pack being reclaimed are
 * copied to the open pack on the way, a budget per build.
 * A failed build leaves the old index and the old generation in place (the
 * next parts go over what it appended) and is retried. A pack no longer
 * named is deleted one publication later (snapshot_parts.h).
 *
 * A chunked organization (doc/choices.md "Chunks of a large organization",
 * "Chunks stored in packs") is written as the chunks read again, appended
 * to the open pack like parts, then its part, a header naming every chunk
 * by extent, after them; all made durable by the same fdatasync. The
 * chunks every published header names are kept in memory (the chunk
 * table: a change learns the boundaries of its organization's chunks
 * there, without reading the header) and count as live bytes of their
 * packs; a superseded chunk is dead bytes like a superseded part. Reclaim
 * moves a chunked organization's chunks with a rewritten header
 * (snapshot_chunk_move.h). At start a header counts as valid only with all
 * its chunks, and the table is made from the headers checked.
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
#include "eval/pack_maps.h"
#include "eval/served_snapshot.h"
#include "eval/shm.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_catalog.h"
#include "eval/snapshot_index_files.h"
#include "eval/snapshot_chunk_move.h"
#include "eval/snapshot_chunk_table.h"
#include "eval/snapshot_kept_index.h"
#include "eval/snapshot_packs.h"
#include "eval/snapshot_parts.h"
#include "db/snapshot_source.h"

/* How often the generation of a replica is read (doc/choices.md "Read
 * replicas": a single-row SELECT, cheap on the replica). */
#define REPLICA_POLL_MS 20

/* The longest delay ENSIGN_TEST_DURABLE_DELAY_MS may ask for. */
#define DURABLE_DELAY_MAX_MS 600000

struct refresher {
    const struct config *cfg;
    bool replica;                /* reading database_replica: polled, never back in time */
    bool waiting;                /* the replica is behind what the node serves */
    unsigned long prepared_on;   /* loop.connections when the generation query was prepared */
    long long retry_build_at_ms; /* with a replica: a failed build is tried again from then */
    struct shm_region *shm;
    struct bgloop loop;
    char path[4096 + 32];      /* the restart index, snapshot.bin */
    char index[4096 + 64];     /* the visible index of the build under way */
    uint64_t visible;          /* the generation published last (0 none) */
    uint64_t visible_before;   /* the one published before it, if other (0 none) */
    bool durable_pending;      /* the last publication is not durable yet */
    long long durable_due_ms;  /* when its durable step may run */
    int durable_delay_ms;      /* ENSIGN_TEST_DURABLE_DELAY_MS */
    long long published_at_ms; /* when the last publication was made */
    bool built_once;
    uint64_t built;                  /* generation of the last index written */
    uint64_t pending;                /* generation last read from the database */
    struct snapshot_parts parts;     /* what that index names */
    struct snapshot_packs packs;     /* the pack files the parts are appended to */
    struct pack_maps *check;         /* at start: the packs on disk, mapped to check */
    struct snapshot_catalog catalog; /* what that index holds, per organization */
    bool have_catalog;               /* false: the next build reads everything */
    struct snapshot_kept_index kept; /* that index's bytes, to patch (loaded or not) */
    bool swept;                      /* leftovers of an earlier run doomed */
    bool part_write_failed;          /* in the read under way */
    bool read_older;                 /* it met a part older than published (replica) */
    char older_org[SNAPSHOT_PART_ORG_MAX];
    uint64_t older_generation;
    struct snapshot_part_file *appended; /* parts written during the read under way */
    size_t appended_count, appended_room, appended_cursor;
    bool reread;  /* an extent could not be moved: the next build reads everything */
    size_t moved; /* parts moved out of a pack being reclaimed, this build */
    uint64_t moved_bytes;
    uint32_t moved_from;
    struct snapshot_source_chunking chunking;
    struct snapshot_chunk_table chunk_table; /* the chunks that index's headers name */
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

/* Whether every chunk header (of org) names is there in its pack, valid
 * and of the generation it names. */
static bool chunks_on_disk(struct refresher *rf, const char *org, const struct snapshot *header)
{
    for (uint32_t i = 0; i < header->counts[SNAPSHOT_SEC_CHUNKS]; i++) {
        const struct snapshot_chunk *c = &header->chunks[i];
        struct snapshot chunk;
        char pack[SNAPSHOT_PART_NAME_MAX], err[256];
        int slot;
        snapshot_packs_name(c->pack, pack);
        if (pack_maps_open(rf->check, pack, c->offset, c->length, &chunk, &slot, err, sizeof err) !=
            PACK_EXTENT_OK) {
            log_warn("snapshot chunk %" PRIu32 " of organization %s on disk is not usable, its"
                     " organization is built again: %s",
                     i, org, err);
            return false;
        }
        bool same = snapshot_generation(&chunk) == c->generation;
        snapshot_close(&chunk);
        pack_maps_release(rf->check, slot);
        if (!same)
            return false;
    }
    return true;
}

/* Whether the part of org, an extent of a pack file, is there, valid and
 * of that generation (the shape of snapshot_catalog_part_ok_fn; ctx is the
 * refresher). */
static bool part_on_disk(void *ctx, const char *org, const char *file, uint64_t offset,
                         uint64_t length, uint64_t generation)
{
    struct refresher *rf = ctx;
    struct snapshot part;
    char err[256];
    int slot;
    if (rf->check == NULL || snapshot_packs_number(file) == 0)
        return false; /* not a name this refresher writes */
    if (pack_maps_open(rf->check, file, offset, length, &part, &slot, err, sizeof err) !=
        PACK_EXTENT_OK) {
        log_warn("snapshot part of organization %s on disk is not usable, it is built again: %s",
                 org, err);
        return false;
    }
    bool same = snapshot_generation(&part) == generation && chunks_on_disk(rf, org, &part);
    if (same && snapshot_chunk_table_stage_header(&rf->chunk_table, org, &part) != 0)
        same = false; /* out of memory: built again */
    snapshot_close(&part);
    pack_maps_release(rf->check, slot);
    return same;
}

/* The pack bookkeeping learns the chunks the chunk table names (counted
 * live, never deleted). */
static void chunks_to_packs(struct refresher *rf)
{
    snapshot_packs_set_chunks(&rf->packs, rf->chunk_table.extents, rf->chunk_table.extent_count);
    snapshot_parts_set_chunks(&rf->parts, rf->chunk_table.extents, rf->chunk_table.extent_count);
}

/*
 * Takes the parts of the index on disk whose files are valid as published,
 * with the catalog of their organizations, so the first build reads and
 * writes only organizations whose generation moved since (or whose file is
 * bad). When every part is usable, the index counts as built: a database
 * still at its generation is not read again.
 */
static void adopt_index(struct refresher *rf, const struct snapshot *index, bool first_start)
{
    long long started = bgloop_now_ms();
    struct snapshot_part_file *parts;
    size_t count, named = index->counts[SNAPSHOT_SEC_PARTS];
    rf->check = pack_maps_new(rf->parts.dir, true);
    int rc = snapshot_catalog_load(&rf->catalog, index, part_on_disk, rf, &parts, &count);
    pack_maps_free(rf->check);
    rf->check = NULL;
    if (rc != 0) {
        snapshot_chunk_table_discard(&rf->chunk_table);
        log_warn("cannot hold the snapshot index in memory: it is built again whole");
        return;
    }
    snapshot_chunk_table_commit(&rf->chunk_table); /* the headers checked */
    snapshot_chunk_table_prune(&rf->chunk_table, parts, count);
    chunks_to_packs(rf);
    /* Bytes past the last named extent are a build that crashed before its
     * index: cut off, unless workers of a running node may map them. */
    snapshot_packs_adopt(&rf->packs, index, parts, count, first_start);
    snapshot_parts_keep(&rf->parts, snapshot_packs_open_name(&rf->packs));
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
    uint64_t served = served_generation(rf);
    bool first_start = served == 0; /* no worker maps anything yet */
    struct stat st;
    if (served > generation) { /* a refresher restarted before its durable step */
        rf->visible = served;
        log_info("workers serve generation %" PRIu64 ", newer than %s (%" PRIu64 "): kept", served,
                 rf->path, generation);
    } else {
        publish(rf, generation, stat(rf->path, &st) == 0 ? unix_ms(&st.st_mtim) : 0);
        rf->visible = generation;
        log_info("serving snapshot generation %" PRIu64 " from %s until the database answers",
                 generation, rf->path);
    }
    adopt_index(rf, &s, first_start);
    snapshot_close(&s);
}

/* Forgets the connection after a failure that broke it. */
static void check_connection(struct refresher *rf)
{
    if (rf->loop.conn != NULL && PQstatus(rf->loop.conn) != CONNECTION_OK)
        bgloop_disconnect(&rf->loop);
}

/* Remembers f, written during the read, until write_part names it. */
static int remember_appended(struct refresher *rf, const struct snapshot_part_file *f, char *err,
                             size_t errlen)
{
    if (rf->appended_count == rf->appended_room) {
        size_t room = rf->appended_room ? 2 * rf->appended_room : 64;
        void *grown = realloc(rf->appended, room * sizeof *rf->appended);
        if (grown == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        rf->appended = grown;
        rf->appended_room = room;
    }
    rf->appended[rf->appended_count++] = *f;
    return 0;
}

/* The part of org written during the read. The read hands them over in
 * organization order, as write_part asks for them: the cursor finds each
 * at once. */
static const struct snapshot_part_file *appended_part(struct refresher *rf, const char *org)
{
    for (size_t tried = 0; tried < rf->appended_count; tried++) {
        size_t i = (rf->appended_cursor + tried) % rf->appended_count;
        if (strcmp(rf->appended[i].org, org) == 0) {
            rf->appended_cursor = i + 1;
            return &rf->appended[i];
        }
    }
    return NULL;
}

/* Appends the part of org (its builder) to the open pack; f names it. */
static int append_part(struct refresher *rf, const struct snapshot_source_org *org,
                       struct snapshot_part_file *f, char *err, size_t errlen)
{
    snprintf(f->org, sizeof f->org, "%s", org->id);
    f->generation = org->generation;
    return snapshot_packs_append(&rf->packs, org->builder, f, err, errlen);
}

/* The published chunks of org (its entry in the chunk table, when that
 * is of the generation published), or NULL. */
static const struct snapshot_chunked_org *published_chunks(const struct refresher *rf,
                                                           const char *org)
{
    const struct snapshot_chunked_org *e = snapshot_chunk_table_find(&rf->chunk_table, org);
    const struct snapshot_part_file *f = e != NULL ? snapshot_parts_find(&rf->parts, org) : NULL;
    return f != NULL && f->generation == e->generation ? e : NULL;
}

/* The chunks the published header of org names, from the chunk table: no
 * read of the header (snapshot_source_held_chunks_fn). */
static int held_chunks(void *ctx, const char *org, struct snapshot_source_chunks *out)
{
    const struct snapshot_chunked_org *e = published_chunks(ctx, org);
    memset(out, 0, sizeof *out);
    if (e == NULL)
        return 0; /* not chunked */
    if ((out->items = calloc(e->count, sizeof *out->items)) == NULL)
        return -1;
    for (size_t i = 0; i < e->count; i++) {
        struct snapshot_source_chunk *item = &out->items[i];
        if ((item->first_key = strdup(e->first_keys[i])) == NULL) {
            snapshot_source_chunks_free(out);
            return -1;
        }
        out->count++;
        item->kept = true;
        item->pack = e->chunks[i].pack;
        item->offset = e->chunks[i].offset;
        item->length = e->chunks[i].length;
        item->generation = e->chunks[i].generation;
    }
    return 0;
}

/* The extent of chunk c of org in the pack: appended now when it was read
 * again; kept, its published one (copied to the open pack when it is in
 * the pack being reclaimed and the budget allows: the header is written
 * anyway). */
static int chunk_extent(struct refresher *rf, const struct snapshot_source_org *org, size_t c,
                        struct snapshot_chunk *extent, char *err, size_t errlen)
{
    const struct snapshot_source_chunk *chunk = &org->chunks.items[c];
    struct snapshot_part_file f = {0};
    memset(extent, 0, sizeof *extent);
    if (chunk->builder != NULL) {
        if (snapshot_packs_append(&rf->packs, chunk->builder, &f, err, errlen) != 0)
            return -1;
        extent->generation = org->generation;
    } else {
        snprintf(f.org, sizeof f.org, "%s", org->id);
        snapshot_packs_name(chunk->pack, f.name);
        f.offset = chunk->offset;
        f.length = chunk->length;
        f.generation = extent->generation = chunk->generation;
        struct snapshot_part_file moved;
        char why[512];
        if (snapshot_packs_should_move(&rf->packs, &f)) {
            if (snapshot_packs_copy(&rf->packs, &f, &moved, why, sizeof why) == 0) {
                rf->moved++;
                rf->moved_bytes += f.length;
                rf->moved_from = snapshot_packs_number(f.name);
                f = moved;
            } else {
                log_warn("snapshot chunk kept where it is: %s", why);
            }
        }
    }
    extent->pack = snapshot_packs_number(f.name);
    extent->offset = f.offset;
    extent->length = f.length;
    return 0;
}

/* Appends the chunks of org read again to the open pack, names every
 * chunk by extent in its header (org->builder), and stages them in the
 * chunk table. */
static int write_chunks(struct refresher *rf, const struct snapshot_source_org *org, char *err,
                        size_t errlen)
{
    size_t n = org->chunks.count;
    struct snapshot_chunk *extents = calloc(n, sizeof *extents);
    const char **keys = calloc(n, sizeof *keys);
    int rc = extents != NULL && keys != NULL ? 0 : -1;
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    for (size_t c = 0; rc == 0 && c < n; c++) {
        keys[c] = org->chunks.items[c].first_key;
        rc = chunk_extent(rf, org, c, &extents[c], err, errlen);
        if (rc == 0 && snapshot_builder_add_chunk(org->builder, keys[c], &extents[c]) != 0) {
            snprintf(err, errlen, "%s", snapshot_builder_error(org->builder));
            rc = -1;
        }
    }
    if (rc == 0 && snapshot_chunk_table_stage(&rf->chunk_table, org->id, org->generation, keys,
                                              extents, n) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    free(extents);
    free(keys);
    return rc;
}

/* Writes the part of org as the read builds it (snapshot_source_part_fn). */
static int part_built(void *ctx, const struct snapshot_source_org *org, char *err, size_t errlen)
{
    struct refresher *rf = ctx;
    struct snapshot_part_file f;
    if (rf->replica && snapshot_parts_newer(&rf->parts, org->id, org->generation)) {
        rf->read_older = true; /* never written: the read stops, the refresher waits */
        snprintf(rf->older_org, sizeof rf->older_org, "%s", org->id);
        rf->older_generation = org->generation;
        snprintf(err, errlen, "the replica is older for organization %s", org->id);
        return -1;
    }
    int rc = 0;
    if (org->chunks.count > 0) {
        rc = write_chunks(rf, org, err, errlen);
    } else if (published_chunks(rf, org->id) != NULL && /* no longer chunked */
               snapshot_chunk_table_stage(&rf->chunk_table, org->id, org->generation, NULL, NULL,
                                          0) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    if (rc == 0)
        rc = append_part(rf, org, &f, err, errlen);
    if (rc == 0)
        rc = remember_appended(rf, &f, err, errlen);
    if (rc != 0)
        rf->part_write_failed = true;
    return rc;
}

/* A chunked organization no build rewrote (its published header held,
 * its chunks chunked), moved out of the pack being reclaimed when its turn
 * came: its chunks there and a rewritten header (snapshot_chunk_move.h),
 * *f naming the header. False when not moved (*f untouched); one that
 * cannot be moved stays, and the next build reads everything. */
static bool move_chunked(struct refresher *rf, const struct snapshot_part_file *held,
                         const struct snapshot_chunked_org *chunked, struct snapshot_part_file *f)
{
    char why[512];
    uint64_t budget = rf->packs.budget;
    uint32_t victim = rf->packs.victim;
    if (!snapshot_chunk_move_wanted(&rf->packs, held, chunked))
        return false;
    if (snapshot_chunk_move(&rf->packs, &rf->chunk_table, held, chunked, f, why, sizeof why) != 0) {
        log_warn("snapshot chunks kept where they are, everything is read again next: %s", why);
        rf->reread = true;
        return false;
    }
    rf->moved++;
    rf->moved_bytes += budget > rf->packs.budget ? budget - rf->packs.budget : f->length;
    rf->moved_from = victim;
    return true;
}

/* The published part of an organization no build rewrote, moved out of a
 * pack being reclaimed when its turn came (snapshot_packs.h). A part that
 * cannot be moved (its extent went bad on disk) stays where it is and the
 * next build reads everything, which writes it again. */
static int held_part(struct refresher *rf, const struct snapshot_source_org *org,
                     struct snapshot_part_file *f, char *err, size_t errlen)
{
    const struct snapshot_part_file *held = snapshot_parts_find(&rf->parts, org->id);
    char why[512];
    if (held == NULL) {
        snprintf(err, errlen, "no part of organization %s", org->id);
        return -1;
    }
    *f = *held;
    const struct snapshot_chunked_org *chunked = published_chunks(rf, org->id);
    if (chunked != NULL) {
        move_chunked(rf, held, chunked, f);
        return 0;
    }
    if (!snapshot_packs_should_move(&rf->packs, held))
        return 0;
    if (snapshot_packs_copy(&rf->packs, held, f, why, sizeof why) == 0) {
        rf->moved++;
        rf->moved_bytes += f->length;
        rf->moved_from = snapshot_packs_number(held->name);
        return 0;
    }
    log_warn("snapshot part kept where it is, everything is read again next: %s", why);
    *f = *held;
    rf->reread = true;
    return 0;
}

/* Names the part of org in the index: written during the read, else held. */
static int write_part(struct refresher *rf, struct snapshot_source_result *res, size_t i,
                      struct snapshot_part_file *f, char *err, size_t errlen)
{
    const struct snapshot_source_org *org = &res->orgs[i];
    int rc;
    if (org->written) {
        const struct snapshot_part_file *done = appended_part(rf, org->id);
        if (done == NULL) {
            snprintf(err, errlen, "the part of organization %s was not written", org->id);
            return -1;
        }
        *f = *done;
        rc = 0;
    } else if (org->builder == NULL) { /* unchanged: the published part stands */
        rc = held_part(rf, org, f, err, errlen);
    } else {
        rc = append_part(rf, org, f, err, errlen);
    }
    if (rc != 0)
        return -1;
    if (snapshot_builder_add_part(res->index, f->org, f->name, f->offset, f->length,
                                  f->generation) != 0) {
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
    /* Visible at once; the parts appended are made durable before the
     * restart index names them (make_durable). */
    return snapshot_builder_write_unsynced(res->index, rf->index, err, errlen);
}

/* Keeps a copy of the index just written, to patch at the next change
 * (snapshot_kept_index.h); without one the next index is made whole. */
static void keep_index(struct refresher *rf)
{
    struct snapshot index;
    char err[256];
    snapshot_kept_index_free(&rf->kept);
    if (snapshot_open(rf->index, &index, err, sizeof err) != 0) {
        log_warn("cannot keep the snapshot index just written: %s", err);
        return;
    }
    if (snapshot_kept_index_load(&rf->kept, &index) != 0)
        log_warn("cannot keep the snapshot index in memory: the next one is made whole");
    snapshot_close(&index);
}

/* Adds f to the parts a patch changed (*count of *room in *changed). */
static int add_changed(struct snapshot_part_file **changed, size_t *count, size_t *room,
                       const struct snapshot_part_file *f, char *err, size_t errlen)
{
    if (*count == *room) {
        size_t more = 2 * *room;
        void *grown = realloc(*changed, more * sizeof **changed);
        if (grown == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        *changed = grown;
        *room = more;
    }
    (*changed)[(*count)++] = *f;
    return 0;
}

/* Whether org's part is among the first count of changed. */
static bool among(const struct snapshot_part_file *changed, size_t count, const char *org)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(changed[i].org, org) == 0)
            return true;
    return false;
}

/* A patch moves, as a whole build does (held_part), published parts of
 * organizations it did not rewrite out of the pack being reclaimed, a
 * budget per build; each moved part is named in the kept index and added
 * to *changed. */
static int move_held_parts(struct refresher *rf, struct snapshot_part_file **changed, size_t *count,
                           size_t *room, char *err, size_t errlen)
{
    size_t written = *count;
    for (size_t i = 0; rf->packs.victim != 0 && i < rf->parts.count; i++) {
        const struct snapshot_part_file *held = &rf->parts.published[i];
        const struct snapshot_chunked_org *chunked = published_chunks(rf, held->org);
        bool wanted = chunked != NULL ? snapshot_chunk_move_wanted(&rf->packs, held, chunked)
                                      : snapshot_packs_should_move(&rf->packs, held);
        if (!wanted || among(*changed, written, held->org))
            continue;
        struct snapshot_part_file f;
        char why[512];
        if (chunked != NULL) {
            if (!move_chunked(rf, held, chunked, &f))
                continue;
        } else if (snapshot_packs_copy(&rf->packs, held, &f, why, sizeof why) != 0) {
            log_warn("snapshot part kept where it is, everything is read again next: %s", why);
            rf->reread = true;
            continue;
        } else {
            rf->moved++;
            rf->moved_bytes += f.length;
            rf->moved_from = snapshot_packs_number(held->name);
        }
        if (snapshot_kept_index_set_part(&rf->kept, f.org, f.name, f.offset, f.length,
                                         f.generation) != 0) {
            snprintf(err, errlen, "the kept index has no part of organization %s", f.org);
            return -1;
        }
        if (add_changed(changed, count, room, &f, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/*
 * Writes a patch (snapshot_source.h): the parts of the organizations read
 * again were appended during the read; their extents and generations, and
 * the generation of every organization that moved, go into the kept index
 * and the catalog, parts moved out of a pack being reclaimed too, and the
 * kept index is written once the packs are synced. The parts it names anew
 * in *changed (*count).
 */
static int write_patch(struct refresher *rf, struct snapshot_source_result *res,
                       struct snapshot_part_file **changed, size_t *count, char *err, size_t errlen)
{
    size_t room = res->org_count + 1;
    *count = 0;
    *changed = calloc(room, sizeof **changed);
    if (*changed == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < res->org_count; i++) {
        struct snapshot_source_org *org = &res->orgs[i];
        const struct snapshot_part_file *f = org->written ? appended_part(rf, org->id) : NULL;
        if (org->read && f == NULL) {
            snprintf(err, errlen, "the part of organization %s was not written", org->id);
            return -1;
        }
        if (f != NULL && (snapshot_kept_index_set_part(&rf->kept, f->org, f->name, f->offset,
                                                       f->length, f->generation) != 0 ||
                          add_changed(changed, count, &room, f, err, errlen) != 0)) {
            snprintf(err, errlen, "the kept index has no part of organization %s", org->id);
            return -1;
        }
        if (snapshot_catalog_set_generation(&rf->catalog, org->id, org->generation) != 0) {
            snprintf(err, errlen, "the catalog has no organization %s", org->id);
            return -1;
        }
    }
    if (move_held_parts(rf, changed, count, &room, err, errlen) != 0)
        return -1;
    rf->catalog.generation = res->generation;
    snapshot_kept_index_set_generation(&rf->kept, res->generation);
    return snapshot_kept_index_write_unsynced(&rf->kept, rf->index, err, errlen);
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
    snapshot_packs_rollback(&rf->packs);
    snapshot_chunk_table_discard(&rf->chunk_table); /* the published chunks stay */
    rf->built_once = false; /* the files may be gone (state_dir removed): write all again */
    rf->have_catalog = false;
    rf->swept = false;
    snapshot_catalog_free(&rf->catalog);
    snapshot_kept_index_free(&rf->kept);
    build_failed(rf);
}

/* generation was just published from rf->index: its durable step is
 * due (after the test delay), and visible indexes older than the one
 * published before it are removed. */
static void visible_now(struct refresher *rf, uint64_t generation)
{
    if (rf->visible != generation) {
        rf->visible_before = rf->visible;
        rf->visible = generation;
    }
    rf->durable_pending = true;
    rf->published_at_ms = bgloop_now_ms();
    rf->durable_due_ms = rf->published_at_ms + rf->durable_delay_ms;
    snapshot_index_remove(rf->parts.dir, rf->visible, rf->visible_before);
}

/* The durable step failed: snapshot.bin stays the last durable index, and
 * everything is written again (a failed fsync may have dropped the dirty
 * pages; a second one would not say they reached the disk). */
static void durable_failed(struct refresher *rf, const char *err)
{
    log_error("cannot make the snapshot durable: %s", err);
    char why[512 + 48];
    snprintf(why, sizeof why, "cannot make the snapshot durable: %s", err);
    health_failed(rf, HEALTH_SNAPSHOT_WRITE, why);
    rf->durable_pending = false; /* until the next publication */
    rf->built_once = false;
    rf->have_catalog = false;
    rf->swept = false;
    snapshot_catalog_free(&rf->catalog);
    snapshot_kept_index_free(&rf->kept);
}

/* Makes the last publication durable: the open pack's bytes (parts and
 * chunks), then its visible index as snapshot.bin (snapshot_index_files.h);
 * files no index names any more are deleted. */
static void make_durable(struct refresher *rf)
{
    char err[512];
    long long started = bgloop_now_ms();
    if (snapshot_packs_sync(&rf->packs, err, sizeof err) != 0 ||
        snapshot_index_make_durable(rf->parts.dir, rf->visible, err, sizeof err) != 0) {
        durable_failed(rf, err);
        return;
    }
    rf->durable_pending = false;
    snapshot_parts_durable(&rf->parts);
    log_info("snapshot generation %" PRIu64 " durable (synced in %lld ms, %lld ms after it was"
             " published)",
             rf->visible, elapsed_ms(started), elapsed_ms(rf->published_at_ms));
}

/* Whether the durable step is due now. */
static bool durable_due(const struct refresher *rf)
{
    return rf->durable_pending && bgloop_now_ms() >= rf->durable_due_ms;
}

/* How long the loop may wait: interval_ms, or less until a durable step
 * is due. */
static int wait_ms(const struct refresher *rf, int interval_ms)
{
    if (!rf->durable_pending)
        return interval_ms;
    long long left = rf->durable_due_ms - bgloop_now_ms();
    return left < interval_ms ? (int)(left > 0 ? left : 0) : interval_ms;
}

/* ENSIGN_TEST_DURABLE_DELAY_MS: for tests only, the durable step waits
 * that long after a publication (ensignd(8)). */
static int durable_delay(void)
{
    const char *env = getenv("ENSIGN_TEST_DURABLE_DELAY_MS");
    if (env == NULL || *env == '\0')
        return 0;
    char *end;
    long v = strtol(env, &end, 10);
    if (*end != '\0' || v < 0 || v > DURABLE_DELAY_MAX_MS)
        return 0;
    log_warn("the durable step of each publication waits %ld ms (ENSIGN_TEST_DURABLE_DELAY_MS,"
             " for tests only)",
             v);
    return (int)v;
}

static void build(struct refresher *rf)
{
    char err[512];
    struct snapshot_source_result res;
    long long started = bgloop_now_ms();
    uint64_t started_us = monotonic_us();
    rf->part_write_failed = rf->read_older = rf->reread = false;
    rf->appended_count = rf->appended_cursor = rf->moved = 0;
    rf->moved_bytes = 0;
    snapshot_packs_begin(&rf->packs);
    snapshot_chunk_table_discard(&rf->chunk_table);
    bool patch = rf->have_catalog && rf->kept.loaded && !snapshot_kept_index_worn(&rf->kept);
    rf->chunking = (struct snapshot_source_chunking){
        .size = (size_t)rf->cfg->snapshot_chunk_flags, .held = held_chunks, .ctx = rf};
    if (snapshot_source_read(rf->loop.conn, rf->have_catalog ? &rf->catalog : NULL, patch,
                             part_built, rf, &rf->chunking, &res, err, sizeof err) != 0) {
        if (rf->part_write_failed) {
            write_failed(rf, err);
            return;
        }
        snapshot_packs_rollback(&rf->packs); /* parts appended for nothing */
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
        snapshot_packs_rollback(&rf->packs);
        snapshot_source_result_free(&res);
        return;
    }
    long long read_ms = elapsed_ms(started);
    size_t flags = 0, rebuilt = 0;
    if (!snapshot_index_path(rf->parts.dir, res.generation, rf->index, sizeof rf->index)) {
        write_failed(rf, "snapshot path too long");
        snapshot_source_result_free(&res);
        return;
    }
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
    long long visible_ms = elapsed_ms(started);
    visible_now(rf, generation);
    health_clear(health_of(rf), HEALTH_SNAPSHOT_WRITE);
    health_clear(health_of(rf), HEALTH_SNAPSHOT_STALE);
    snapshot_chunk_table_commit(&rf->chunk_table);
    if (!patched) {
        snapshot_chunk_table_prune(&rf->chunk_table, fresh, orgs);
        chunks_to_packs(rf);
        snapshot_packs_published(&rf->packs, fresh, orgs);
        snapshot_parts_keep(&rf->parts, snapshot_packs_open_name(&rf->packs));
        snapshot_parts_published(&rf->parts, fresh, orgs, !rf->swept);
    } else {
        chunks_to_packs(rf); /* before the parts retire packs: nothing named is doomed */
        if (snapshot_parts_replaced(&rf->parts, fresh, orgs) != 0) { /* never: one publication */
            log_error("snapshot parts out of step with the index: the next index is made whole");
            rf->have_catalog = false;
            snapshot_kept_index_free(&rf->kept);
        }
        free(fresh);
        orgs = rf->parts.count;
        snapshot_chunk_table_prune(&rf->chunk_table, rf->parts.published, orgs);
        chunks_to_packs(rf);
        snapshot_packs_published(&rf->packs, rf->parts.published, orgs);
        snapshot_parts_keep(&rf->parts, snapshot_packs_open_name(&rf->packs));
    }
    rf->swept = true;
    rf->built_once = true;
    if (rf->moved > 0)
        log_info("snapshot pack %" PRIu32 " being reclaimed: %zu parts (%" PRIu64
                 " bytes) moved to the open pack",
                 rf->moved_from, rf->moved, rf->moved_bytes);
    if (rf->reread) { /* a part could not be moved: everything is read again */
        rf->have_catalog = false;
        snapshot_catalog_free(&rf->catalog);
        rf->built_once = false;
    }
    log_info("snapshot generation %" PRIu64 " published (%zu flag configurations in %zu of %zu"
             " organizations, %zu organization generations read; read in %lld ms, built and"
             " written in %lld ms, visible in %lld ms%s)",
             generation, flags, rebuilt, orgs, generation_rows, read_ms, visible_ms - read_ms,
             visible_ms, patched ? ", the index patched" : "");
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
    snapshot_packs_init(&rf.packs, cfg->state_dir, (uint64_t)cfg->snapshot_pack_mb << 20);
    snapshot_catalog_init(&rf.catalog);
    snapshot_kept_index_init(&rf.kept);
    rf.durable_delay_ms = durable_delay();
    snapshot_parts_lag_durability(&rf.parts);
    /* Visible indexes of an earlier run are leftovers, but the one workers
     * of a running node serve (a restarted refresher). */
    snapshot_index_remove(cfg->state_dir, served_generation(&rf), 0);
    snapshot_chunk_table_init(&rf.chunk_table);
    publish_file_on_disk(&rf);
    snapshot_parts_durable(&rf.parts); /* what it adopted is snapshot.bin */
    if (rf.replica)
        log_info("reading the configuration from the replica (database_replica), its generation"
                 " every %d ms",
                 REPLICA_POLL_MS);
    bool check = true;
    while (!bgloop_stopping()) {
        if (check && bgloop_ensure_connected(&rf.loop))
            refresh(&rf);
        else if (check)
            database_unreachable(&rf);
        check = true;
        if (durable_due(&rf)) {
            if (bgloop_wait(&rf.loop, 0) > 0)
                continue; /* a change first: the durable step covers it too */
            make_durable(&rf);
            check = false; /* nothing new to read: straight to the wait */
            continue;
        }
        int changes = bgloop_wait(&rf.loop, wait_ms(&rf, rf.loop.conn != NULL ? interval_ms : 100));
        if (changes > 0)
            log_debug("%d configuration change notifications", changes);
    }
    if (rf.durable_pending) /* stopping: the last publication is made durable first */
        make_durable(&rf);
    if (rf.loop.conn != NULL)
        PQfinish(rf.loop.conn);
    snapshot_parts_free(&rf.parts);
    snapshot_packs_free(&rf.packs);
    free(rf.appended);
    snapshot_catalog_free(&rf.catalog);
    snapshot_chunk_table_free(&rf.chunk_table);
    snapshot_kept_index_free(&rf.kept);
    return EXIT_SUCCESS;
}
