/*
 * batch_read.c - one batch of a read's statements on a thread (see
 * batch_read.h).
 *
 * The thread sends the statements and a sync point in pipeline mode, takes
 * each statement's result whole (normal mode: the caller works on them
 * after the thread is done), then reads up to the sync point and leaves
 * pipeline mode, so the connection is as it found it, even after an error.
 */
#include "db/batch_read.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "db/dbsync.h"

/* Records the first failure: statement q, from res (NULL: the connection). */
static void fail_at(struct batch_read *r, size_t q, const PGresult *res)
{
    if (r->failed >= 0)
        return;
    struct dbsync_error error;
    dbsync_error_from_result(&error, res, r->conn);
    r->failed = (int)q;
    snprintf(r->message, sizeof r->message, "%s", error.message);
}

/* The result of statement q, whole, in r->results[q]; false on failure. */
static bool take_result(struct batch_read *r, size_t q)
{
    PGresult *res = PQgetResult(r->conn);
    if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
        fail_at(r, q, res);
        PQclear(res);
        return false;
    }
    PGresult *end = PQgetResult(r->conn); /* NULL: the end of this statement's results */
    if (end != NULL) {
        PQclear(end);
        PQclear(res);
        r->failed = (int)q;
        snprintf(r->message, sizeof r->message, "more results than one");
        return false;
    }
    r->results[q] = res;
    return true;
}

static void run(struct batch_read *r)
{
    const char *params[1] = {r->arg};
    size_t sent = 0;
    if (PQenterPipelineMode(r->conn) != 1) {
        fail_at(r, 0, NULL);
        return;
    }
    for (; sent < r->count; sent++)
        if (PQsendQueryParams(r->conn, r->sql[sent], 1, NULL, params, NULL, NULL, 0) != 1) {
            fail_at(r, sent, NULL);
            break;
        }
    if (PQpipelineSync(r->conn) != 1)
        fail_at(r, sent < r->count ? sent : 0, NULL);
    for (size_t q = 0; q < sent && r->failed < 0; q++)
        take_result(r, q);
    dbsync_finish_pipeline(r->conn);
}

static void *thread_main(void *arg)
{
    run(arg);
    return NULL;
}

void batch_read_start(struct batch_read *r)
{
    memset(r->results, 0, sizeof r->results);
    r->failed = -1;
    r->message[0] = '\0';
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits the mask */
    r->threaded = pthread_create(&r->thread, NULL, thread_main, r) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!r->threaded)
        run(r);
}

int batch_read_finish(struct batch_read *r)
{
    if (r->threaded)
        pthread_join(r->thread, NULL);
    r->threaded = false;
    return r->failed < 0 ? 0 : -1;
}

void batch_read_clear(struct batch_read *r)
{
    for (size_t q = 0; q < BATCH_READ_MAX; q++) {
        PQclear(r->results[q]);
        r->results[q] = NULL;
    }
}
