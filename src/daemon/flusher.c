/*
 * flusher.c - moves usage counters to PostgreSQL (see flusher.h).
 *
 * Every usage_flush_interval_ms, and once more when it is told to stop
 * (the master stops it only after the last worker has exited), it drains
 * the usage table (usage_drain takes each count out atomically) and writes
 * everything in one additive upsert: the drained entries go as six
 * parallel arrays, unnested, summed per key (a race can leave a key in two
 * slots) and added to usage_counters. Entries of flags or environments
 * deleted since they were counted are left out (an index probe each, see
 * upsert_sql). When the write fails (database down) every drained entry
 * is put back into the table, so the next flush carries it: nothing is
 * lost unless the table overflows (then the drop is counted) or the
 * process dies.
 *
 * When the master dies without stopping it in order (SIGKILL: every child
 * gets SIGTERM at once from PR_SET_PDEATHSIG, and the workers hand in their
 * last batches while they drain), the final flush first waits for the
 * workers pipe to reach end-of-file: every worker has exited, so every
 * batch is in the table (flusher.h). The shared memory lives as long as
 * this process maps it.
 */
#include "daemon/flusher.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "daemon/bgloop.h"
#include "base/config.h"
#include "db/dbsync.h"
#include "base/log.h"
#include "http/metrics.h"
#include "daemon/proctitle.h"
#include "eval/shm.h"
#include "eval/unknown_flags.h"
#include "eval/usage.h"

/* The drained entries summed per key (a race can leave a key in two
 * slots) and taken in key order (the index probes below walk the primary
 * keys in order, and two nodes' flushes lock the counters they share in
 * the same order), each kept only when its flag and its environment are
 * still there: a primary-key probe each per counter, so the statement
 * touches the flags of its batch only. The LIMIT 1 keeps each probe a
 * subquery of its own (PostgreSQL does not pull it up into a join), so a
 * large batch is never hash-joined against every flag of the database. */
static const char upsert_sql[] =
    "INSERT INTO usage_counters (flag_id, environment_id, variant_key, hour, count, last_seen_at)"
    " SELECT u.flag_id, u.environment_id, u.variant_key, to_timestamp(u.hour * 3600), u.count,"
    " to_timestamp(u.seen)"
    " FROM (SELECT flag_id, environment_id, variant_key, hour, sum(count) AS count,"
    " max(seen) AS seen"
    " FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])"
    " AS b(flag_id, environment_id, variant_key, hour, count, seen)"
    " GROUP BY flag_id, environment_id, variant_key, hour"
    " ORDER BY flag_id, environment_id, variant_key, hour) u"
    " CROSS JOIN LATERAL (SELECT FROM flags f WHERE f.id = u.flag_id LIMIT 1) f"
    " CROSS JOIN LATERAL (SELECT FROM environments e WHERE e.id = u.environment_id LIMIT 1) e"
    " ON CONFLICT (flag_id, environment_id, variant_key, hour) DO UPDATE"
    " SET count = usage_counters.count + EXCLUDED.count,"
    " last_seen_at = greatest(usage_counters.last_seen_at, EXCLUDED.last_seen_at)";

/* The drained entries of one flush. */
struct batch {
    struct usage_entry *entries;
    size_t count, cap;
    size_t lost; /* entries that did not fit in memory (put back at once) */
    struct usage_table *table;
};

static void collect(const struct usage_entry *e, void *arg)
{
    struct batch *b = arg;
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        void *grown = realloc(b->entries, cap * sizeof *b->entries);
        if (grown == NULL) {
            usage_add_entry(b->table, e); /* keep it for the next flush */
            b->lost++;
            return;
        }
        b->entries = grown;
        b->cap = cap;
    }
    b->entries[b->count++] = *e;
}

/* A growable text for one array literal. */
struct array_text {
    char *data;
    size_t len, cap;
    bool failed;
};

static void array_add(struct array_text *a, const char *s, size_t n)
{
    if (a->failed)
        return;
    if (a->len + n + 1 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 1024;
        while (cap < a->len + n + 1)
            cap *= 2;
        char *grown = realloc(a->data, cap);
        if (grown == NULL) {
            a->failed = true;
            return;
        }
        a->data = grown;
        a->cap = cap;
    }
    memcpy(a->data + a->len, s, n);
    a->len += n;
    a->data[a->len] = '\0';
}

/* Adds one element (quoted for array literals: only [a-z0-9-] and digits
 * occur, but quote and escape anyway). */
static void array_element(struct array_text *a, const char *value, bool first)
{
    array_add(a, first ? "{\"" : ",\"", 2);
    for (const char *p = value; *p; p++) {
        if (*p == '"' || *p == '\\')
            array_add(a, "\\", 1);
        array_add(a, p, 1);
    }
    array_add(a, "\"", 1);
}

enum column { COL_FLAG, COL_ENV, COL_VARIANT, COL_HOUR, COL_COUNT, COL_SEEN, COL_COUNT_ALL };

static void add_entry_columns(struct array_text cols[COL_COUNT_ALL], const struct usage_entry *e,
                              bool first)
{
    char flag_id[37], env_id[37], number[24];
    usage_uuid_format(e->flag_id, flag_id);
    usage_uuid_format(e->environment_id, env_id);
    array_element(&cols[COL_FLAG], flag_id, first);
    array_element(&cols[COL_ENV], env_id, first);
    array_element(&cols[COL_VARIANT], e->variant, first);
    snprintf(number, sizeof number, "%" PRId64, e->hour);
    array_element(&cols[COL_HOUR], number, first);
    snprintf(number, sizeof number, "%" PRIu64, e->count);
    array_element(&cols[COL_COUNT], number, first);
    snprintf(number, sizeof number, "%" PRId64, e->last_seen);
    array_element(&cols[COL_SEEN], number, first);
}

/* The columns of the unknown flag keys' statement. */
enum unknown_column { UCOL_ENV, UCOL_KEY, UCOL_COUNT, UCOL_SEEN, UCOL_ALL };

/*
 * Closes the array literals of cols (n columns, one statement parameter
 * each), runs sql with them and frees them; 0, or -1 after a log line
 * naming what (the counts stay for the next flush).
 */
static int run_columns(PGconn *conn, const char *sql, struct array_text *cols, int n,
                       const char *what)
{
    const char *values[(int)COL_COUNT_ALL > (int)UCOL_ALL ? (int)COL_COUNT_ALL : (int)UCOL_ALL];
    bool failed = false;
    for (int c = 0; c < n; c++) {
        array_add(&cols[c], "}", 1);
        failed = failed || cols[c].failed;
        values[c] = cols[c].data;
    }
    int rc = -1;
    struct dbsync_error error;
    if (failed)
        log_error("%s: out of memory", what);
    else if ((rc = dbsync_command(conn, sql, n, values, &error)) != 0)
        log_warn("%s failed, keeping the counts for the next one: %s", what, error.message);
    for (int c = 0; c < n; c++)
        free(cols[c].data);
    return rc;
}

/* Writes the batch in one statement; 0 or -1. */
static int write_batch(PGconn *conn, const struct batch *b)
{
    struct array_text cols[COL_COUNT_ALL];
    memset(cols, 0, sizeof cols);
    for (size_t i = 0; i < b->count; i++)
        add_entry_columns(cols, &b->entries[i], i == 0);
    return run_columns(conn, upsert_sql, cols, COL_COUNT_ALL, "usage flush");
}

static void put_back(struct usage_table *table, const struct batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        usage_add_entry(table, &b->entries[i]);
}

static void flush(struct bgloop *loop, struct usage_table *table)
{
    struct batch b = {.table = table};
    usage_drain(table, (int64_t)time(NULL), collect, &b);
    if (b.count > 0) {
        bool connected = bgloop_ensure_connected(loop);
        bool written = connected && write_batch(loop->conn, &b) == 0;
        if (!written) {
            if (connected && loop->errors != NULL)
                atomic_fetch_add_explicit(loop->errors, 1, memory_order_relaxed);
            put_back(table, &b);
            if (loop->conn != NULL && PQstatus(loop->conn) != CONNECTION_OK)
                bgloop_disconnect(loop);
        } else {
            log_debug("usage flush: %zu counters written", b.count);
        }
    }
    free(b.entries);
}

/* ---- unknown flag keys ---- */

static const char unknown_sql[] = "SELECT ensign_unknown_flags_record($1::uuid[], $2::text[],"
                                  " $3::bigint[], $4::bigint[])";

struct unknown_batch {
    struct unknown_entry *entries;
    size_t count, cap;
    struct unknown_table *table;
};

static void collect_unknown(const struct unknown_entry *e, void *arg)
{
    struct unknown_batch *b = arg;
    if (b->count == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        void *grown = realloc(b->entries, cap * sizeof *b->entries);
        if (grown == NULL) {
            unknown_flags_add_entry(b->table, e); /* keep it for the next flush */
            return;
        }
        b->entries = grown;
        b->cap = cap;
    }
    b->entries[b->count++] = *e;
}

/* Writes the drained unknown keys in one statement; 0 or -1. */
static int write_unknown(PGconn *conn, const struct unknown_batch *b)
{
    struct array_text cols[UCOL_ALL];
    memset(cols, 0, sizeof cols);
    for (size_t i = 0; i < b->count; i++) {
        const struct unknown_entry *e = &b->entries[i];
        char env_id[37], number[24];
        usage_uuid_format(e->environment_id, env_id);
        array_element(&cols[UCOL_ENV], env_id, i == 0);
        array_element(&cols[UCOL_KEY], e->key, i == 0);
        snprintf(number, sizeof number, "%" PRIu64, e->count);
        array_element(&cols[UCOL_COUNT], number, i == 0);
        snprintf(number, sizeof number, "%" PRId64, e->last_seen);
        array_element(&cols[UCOL_SEEN], number, i == 0);
    }
    return run_columns(conn, unknown_sql, cols, UCOL_ALL, "unknown flag keys flush");
}

static void flush_unknown(struct bgloop *loop, struct unknown_table *table)
{
    if (table == NULL)
        return;
    struct unknown_batch b = {.table = table};
    unknown_flags_drain(table, (int64_t)time(NULL), collect_unknown, &b);
    if (b.count > 0) {
        bool connected = bgloop_ensure_connected(loop);
        if (!connected || write_unknown(loop->conn, &b) != 0) {
            if (connected && loop->errors != NULL)
                atomic_fetch_add_explicit(loop->errors, 1, memory_order_relaxed);
            for (size_t i = 0; i < b.count; i++)
                unknown_flags_add_entry(table, &b.entries[i]);
            if (loop->conn != NULL && PQstatus(loop->conn) != CONNECTION_OK)
                bgloop_disconnect(loop);
        }
    }
    free(b.entries);
}

static void report_unknown_drops(struct unknown_table *table, uint64_t *reported)
{
    uint64_t dropped = table != NULL ? unknown_flags_dropped(table) : 0;
    if (dropped == *reported)
        return;
    log_warn("unknown flag key table full: %" PRIu64
             " requests not counted so far (raise unknown_flag_slots)",
             dropped);
    *reported = dropped;
}

static void report_drops(struct usage_table *table, uint64_t *reported)
{
    uint64_t dropped = usage_dropped(table);
    if (dropped == *reported)
        return;
    log_warn("usage table full: %" PRIu64 " evaluations not counted so far (raise usage_slots)",
             dropped);
    *reported = dropped;
}

/* Waits (at most timeout_ms) until no worker holds the write end of the
 * workers pipe. Only when the master is gone: a living master stops the
 * flusher after the workers, and keeps the pipe open itself. */
static void wait_for_workers(int workers_fd, pid_t master, int timeout_ms)
{
    if (workers_fd < 0 || getppid() == master)
        return;
    log_info("the master is gone; waiting for the workers' last counts");
    long long deadline = bgloop_now_ms() + timeout_ms;
    for (;;) {
        long long left = deadline - bgloop_now_ms();
        if (left <= 0) {
            log_warn("workers still running after %d ms; flushing without their last counts",
                     timeout_ms);
            return;
        }
        struct pollfd p = {.fd = workers_fd, .events = POLLIN};
        int ready = poll(&p, 1, (int)left);
        if (ready < 0 && errno != EINTR)
            return;
        char byte;
        if (ready > 0 && read(workers_fd, &byte, 1) == 0)
            return; /* end of file: every worker has exited */
    }
}

int flusher_main(const struct config *cfg, struct shm_region *shm, int workers_fd, pid_t master)
{
    log_set_role("flusher");
    proctitle_set("ensignd: flusher");
    bgloop_install_signals();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != master) /* the master died before PR_SET_PDEATHSIG took */
        raise(SIGTERM);
    struct bgloop loop = {.conninfo = cfg->database, .listen_channel = NULL};
    if (shm->metrics != NULL)
        loop.errors = &METRICS_BACKGROUND_BLOCK(shm->metrics)->database_errors;
    long long next_flush = bgloop_now_ms() + cfg->usage_flush_interval_ms;
    uint64_t drops_reported = 0, unknown_drops_reported = 0;
    while (!bgloop_stopping()) {
        long long wait = next_flush - bgloop_now_ms();
        bgloop_wait(&loop, wait > 0 ? (int)wait : 0);
        if (bgloop_stopping() || bgloop_now_ms() < next_flush)
            continue;
        flush(&loop, shm->usage);
        flush_unknown(&loop, shm->unknown);
        report_drops(shm->usage, &drops_reported);
        report_unknown_drops(shm->unknown, &unknown_drops_reported);
        next_flush = bgloop_now_ms() + cfg->usage_flush_interval_ms;
    }
    wait_for_workers(workers_fd, master, cfg->shutdown_timeout_ms + 1000);
    loop.retry_at_ms = 0; /* the last flush tries to connect whatever the backoff */
    flush(&loop, shm->usage);
    flush_unknown(&loop, shm->unknown);
    if (loop.conn != NULL)
        PQfinish(loop.conn);
    return EXIT_SUCCESS;
}
