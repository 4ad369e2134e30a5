/*
 * claimloop.h - the loop of a process whose one job is work that must
 * happen once whatever the number of nodes: items claimed from PostgreSQL
 * rows (FOR UPDATE SKIP LOCKED) and finished in the claim's transaction.
 * Scheduled changes use it (scheduler.c); any later outbox (webhook
 * deliveries) plugs its own claim into the same loop.
 *
 * The loop: connect (bgloop.h: backoff, LISTEN on the job's channel),
 * claim and finish items one transaction at a time while some are due,
 * then sleep until the soonest item is due, a NOTIFY on the channel (a new
 * item), a stop signal, or poll_bound_ms (a notification lost while
 * disconnected, an item made due by the clock of another table), whichever
 * comes first. Never a busy poll: when items are due but held by another
 * node (SKIP LOCKED skipped them) or momentarily busy, it waits
 * CLAIMLOOP_RETRY_MS before trying again.
 */
#ifndef ENSIGN_CLAIMLOOP_H
#define ENSIGN_CLAIMLOOP_H

#include <libpq-fe.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CLAIMLOOP_RETRY_MS 20
#define CLAIMLOOP_BATCH 100 /* items in a row before the loop looks at signals and the socket */

enum claim_result {
    CLAIM_NONE, /* nothing claimable is due */
    CLAIM_DONE, /* one item finished (committed) */
    CLAIM_BUSY, /* an item is due but cannot be taken now: retry shortly */
    CLAIM_ERROR /* the database failed; nothing committed */
};

struct claim_job {
    const char *name;    /* for the log ("schedule") */
    const char *channel; /* LISTEN channel the item inserts NOTIFY (a constant) */
    int poll_bound_ms;   /* longest sleep */
    /* Claims and finishes one due item in one transaction. err (errlen
     * bytes) says why on CLAIM_ERROR. */
    enum claim_result (*claim_one)(PGconn *conn, void *arg, char *err, size_t errlen);
    /* Milliseconds until the soonest item is due (0: now), -1 none, -2 error. */
    long long (*next_due_ms)(PGconn *conn, void *arg);
    void *arg;
};

/*
 * Runs job on a connection to conninfo until a stop signal
 * (bgloop_install_signals first). Failed connections and queries are
 * counted in errors (may be NULL). Returns when stopping.
 */
void claimloop_run(const struct claim_job *job, const char *conninfo, _Atomic uint64_t *errors);

#endif
