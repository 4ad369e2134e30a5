/*
 * claimloop.c - claim, finish, sleep until the next is due (see claimloop.h).
 * Blocking libpq, as in every background process: no request waits on it.
 */
#include "daemon/claimloop.h"

#include <stdbool.h>

#include "base/log.h"
#include "daemon/bgloop.h"

/* Claims while items are due (at most a batch); returns the last result. */
static enum claim_result claim_due(const struct claim_job *job, struct bgloop *loop)
{
    char err[512];
    enum claim_result result = CLAIM_NONE;
    for (int done = 0; done < CLAIMLOOP_BATCH && !bgloop_stopping(); done++) {
        result = job->claim_one(loop->conn, job->arg, err, sizeof err);
        if (result == CLAIM_ERROR) {
            log_warn("%s: %s", job->name, err);
            if (loop->errors != NULL)
                atomic_fetch_add_explicit(loop->errors, 1, memory_order_relaxed);
            if (PQstatus(loop->conn) != CONNECTION_OK)
                bgloop_disconnect(loop);
        }
        if (result != CLAIM_DONE)
            break;
    }
    return result;
}

/* How long to sleep after claiming ended with result. */
static int sleep_ms(const struct claim_job *job, struct bgloop *loop, enum claim_result result)
{
    if (loop->conn == NULL || result == CLAIM_ERROR)
        return 1000 < job->poll_bound_ms ? 1000 : job->poll_bound_ms;
    if (result == CLAIM_DONE) /* a full batch: look at signals, then go on */
        return 0;
    if (result == CLAIM_BUSY)
        return CLAIMLOOP_RETRY_MS;
    long long due = job->next_due_ms(loop->conn, job->arg);
    if (due == -2 && PQstatus(loop->conn) != CONNECTION_OK)
        bgloop_disconnect(loop);
    if (due < 0)
        return job->poll_bound_ms;
    if (due == 0) /* due, yet nothing claimable: another node holds it */
        return CLAIMLOOP_RETRY_MS;
    return due < job->poll_bound_ms ? (int)due : job->poll_bound_ms;
}

void claimloop_run(const struct claim_job *job, const char *conninfo, _Atomic uint64_t *errors)
{
    struct bgloop loop = {.conninfo = conninfo, .listen_channel = job->channel, .errors = errors};
    while (!bgloop_stopping()) {
        int wait = 100;
        if (bgloop_ensure_connected(&loop)) {
            enum claim_result result = claim_due(job, &loop);
            wait = sleep_ms(job, &loop, result);
        }
        int notes = bgloop_wait(&loop, wait);
        if (notes > 0)
            log_debug("%s: %d notifications", job->name, notes);
    }
    if (loop.conn != NULL)
        PQfinish(loop.conn);
}
