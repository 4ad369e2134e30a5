/*
 * refresher.c - follows the configuration generation and keeps the
 * snapshot file current (see refresher.h).
 *
 * At start it publishes the generation of the snapshot file already on
 * disk (if it is valid), so workers evaluate from it even while the
 * database is down. Then, whenever it can reach the database: it reads the
 * generation (on every NOTIFY and at least every refresh_interval_ms), and
 * when that differs from what it last built (or it has built nothing yet:
 * the first build after start is unconditional), it reads the whole
 * configuration (snapshot_source.h), writes the file atomically
 * (snapshot_build.h: temp file, fsync, rename, fsync of the directory) and
 * only then publishes the new generation in shared memory. A failed build
 * leaves the old file and the old generation in place and is retried.
 */
#include "refresher.h"

#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

#include "bgloop.h"
#include "config.h"
#include "log.h"
#include "metrics.h"
#include "proctitle.h"
#include "served_snapshot.h"
#include "shm.h"
#include "snapshot.h"
#include "snapshot_build.h"
#include "snapshot_source.h"

struct refresher {
    const struct config *cfg;
    struct shm_region *shm;
    struct bgloop loop;
    char path[4096];
    bool built_once;
    uint64_t built; /* generation of the last file written */
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

/* Publishes the generation of a valid file already on disk. */
static void publish_file_on_disk(struct refresher *rf)
{
    struct snapshot s;
    char err[256];
    if (snapshot_open(rf->path, &s, err, sizeof err) != 0) {
        log_info("no usable snapshot on disk yet (%s)", err);
        return;
    }
    uint64_t generation = snapshot_generation(&s);
    snapshot_close(&s);
    struct stat st;
    publish(rf, generation, stat(rf->path, &st) == 0 ? unix_ms(&st.st_mtim) : 0);
    log_info("serving snapshot generation %" PRIu64 " from %s until the database answers",
             generation, rf->path);
}

/* Forgets the connection after a failure that broke it. */
static void check_connection(struct refresher *rf)
{
    if (rf->loop.conn != NULL && PQstatus(rf->loop.conn) != CONNECTION_OK)
        bgloop_disconnect(&rf->loop);
}

static long long elapsed_ms(long long since)
{
    return bgloop_now_ms() - since;
}

static void build(struct refresher *rf)
{
    char err[512];
    uint64_t generation;
    long long started = bgloop_now_ms();
    uint64_t started_us = monotonic_us();
    struct snapshot_builder *b = snapshot_source_read(rf->loop.conn, &generation, err, sizeof err);
    if (b == NULL) {
        log_warn("cannot read the configuration: %s", err);
        count_database_error(rf);
        check_connection(rf);
        return;
    }
    long long read_ms = elapsed_ms(started);
    size_t flags = snapshot_builder_flag_count(b);
    int rc = snapshot_builder_write(b, rf->path, err, sizeof err);
    snapshot_builder_free(b);
    if (rc != 0) {
        log_error("cannot write the snapshot: %s", err);
        return;
    }
    rf->built = generation;
    rf->built_once = true;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (rf->shm->metrics != NULL) {
        atomic_store_explicit(&rf->shm->metrics->snapshot_build_us, monotonic_us() - started_us,
                              memory_order_relaxed);
        metrics_add(&rf->shm->metrics->snapshot_builds, 1);
    }
    publish(rf, generation, unix_ms(&now));
    log_info("snapshot generation %" PRIu64 " published (%zu flag configurations; read in %lld ms,"
             " built and written in %lld ms)",
             generation, flags, read_ms, elapsed_ms(started) - read_ms);
}

static void refresh(struct refresher *rf)
{
    char err[512];
    uint64_t generation;
    if (snapshot_source_generation(rf->loop.conn, &generation, err, sizeof err) != 0) {
        log_warn("%s", err);
        count_database_error(rf);
        check_connection(rf);
        return;
    }
    if (!rf->built_once || generation != rf->built)
        build(rf);
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
    rf.loop = (struct bgloop){.conninfo = cfg->database, .listen_channel = REFRESHER_CHANNEL};
    if (shm->metrics != NULL)
        rf.loop.errors = &METRICS_BACKGROUND_BLOCK(shm->metrics)->database_errors;
    snprintf(rf.path, sizeof rf.path, "%s/%s", cfg->state_dir, SNAPSHOT_FILE_NAME);
    publish_file_on_disk(&rf);
    while (!bgloop_stopping()) {
        if (bgloop_ensure_connected(&rf.loop))
            refresh(&rf);
        int changes = bgloop_wait(&rf.loop, rf.loop.conn != NULL ? cfg->refresh_interval_ms : 100);
        if (changes > 0)
            log_debug("%d configuration change notifications", changes);
    }
    if (rf.loop.conn != NULL)
        PQfinish(rf.loop.conn);
    return EXIT_SUCCESS;
}
