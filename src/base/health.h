/*
 * health.h - what /v1/healthz reports: the refresher's findings, kept in
 * the shared-memory header (shm.h) and judged by the worker.
 *
 * Owns struct health_state: one entry per check, each "failing since"
 * (CLOCK_MONOTONIC milliseconds, the same clock in every process of the
 * node; 0 while the check passes) and the reason, in words, of its latest
 * failure. The refresher is the only writer; workers only read (a
 * sequence counter lets a reader see a reason whole, never half of one and
 * half of the next). No database access is needed to read it.
 *
 * The checks, and when each makes healthz degraded:
 *  - snapshot_write: the refresher's last attempt to write the snapshot
 *    failed (at once: evaluations of changed flags fail meanwhile);
 *  - snapshot_stale: the database holds a generation the refresher has
 *    not published for longer than health_stale_limit_ms;
 *  - database: the refresher has not reached the database for longer
 *    than healthz_database_timeout_ms (0 turns this check off).
 * Every check clears itself when the refresher next succeeds.
 */
#ifndef ENSIGN_HEALTH_H
#define ENSIGN_HEALTH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEALTH_REASON_MAX 200 /* bytes of a reason, with its NUL */
#define HEALTH_STALE_MIN_MS 5000

enum health_check { HEALTH_SNAPSHOT_WRITE, HEALTH_SNAPSHOT_STALE, HEALTH_DATABASE, HEALTH_CHECKS };

struct health_entry {
    _Atomic int64_t since_ms;  /* first failure of the current run; 0: passing */
    _Atomic uint32_t sequence; /* odd while the writer changes reason */
    _Atomic char reason[HEALTH_REASON_MAX];
};

struct health_state {
    struct health_entry checks[HEALTH_CHECKS];
};

/* How long each kind of failure may last before healthz says degraded. */
struct health_limits {
    int64_t stale_ms;    /* health_stale_limit_ms(refresh_interval_ms) */
    int64_t database_ms; /* healthz_database_timeout_ms; 0: never */
};

/* A failing check as healthz reports it. */
struct health_failure {
    enum health_check check;
    int64_t for_ms; /* how long it has been failing */
    char reason[HEALTH_REASON_MAX];
};

void health_init(struct health_state *h);

/* CLOCK_MONOTONIC in milliseconds (never 0 on a running system). */
int64_t health_now_ms(void);

/* The check's name in healthz's body and in /metrics. */
const char *health_check_name(enum health_check c);

/* The writer: check c failed at now_ms because of reason (the first
 * failure of a run sets since; later ones only update the reason). */
void health_fail(struct health_state *h, enum health_check c, int64_t now_ms, const char *reason);

/* The writer: check c passed. */
void health_clear(struct health_state *h, enum health_check c);

/* true while check c has a failure recorded (however recent). */
bool health_failing(const struct health_state *h, enum health_check c);

/* The longest a newer generation may wait to be served: three refresh
 * intervals, at least HEALTH_STALE_MIN_MS. */
int64_t health_stale_limit_ms(int refresh_interval_ms);

/* The limits of a node with these two settings (ensign.conf). */
struct health_limits health_limits_of(int refresh_interval_ms, int database_timeout_ms);

/*
 * The checks that make the node degraded at now_ms under limits, in check
 * order, written to out (room for HEALTH_CHECKS); returns how many. h NULL
 * (no shared memory) is healthy.
 */
size_t health_judge(const struct health_state *h, const struct health_limits *limits,
                    int64_t now_ms, struct health_failure out[HEALTH_CHECKS]);

#endif
