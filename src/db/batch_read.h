/*
 * batch_read.h - one batch of a read's statements, sent in one libpq
 * pipeline and read whole, on a thread of its own: PostgreSQL computes and
 * libpq parses the next batch while the caller builds the current one.
 *
 * Owns the thread, the pipeline round (the statements, a sync point, their
 * results, pipeline mode left) and the results until the caller takes
 * them. The caller must not use the connection between batch_read_start
 * and batch_read_finish: the thread is its only user meanwhile (one
 * connection, so one transaction and one snapshot for every batch). The
 * thread runs libpq and malloc only (no logging, no signals: it starts
 * with every signal blocked). Called by snapshot_source.c (the first build
 * and other large reads, a batch of organizations at a time).
 */
#ifndef ENSIGN_BATCH_READ_H
#define ENSIGN_BATCH_READ_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <libpq-fe.h>

/* The most statements of one batch. */
#define BATCH_READ_MAX 8

struct batch_read {
    /* set by the caller before batch_read_start */
    PGconn *conn;
    const char *sql[BATCH_READ_MAX]; /* statements, each with $1 = arg */
    size_t count;
    const char *arg; /* kept alive by the caller until batch_read_finish */
    /* set by the read */
    PGresult *results[BATCH_READ_MAX]; /* one per statement, the caller's to clear */
    int failed;                        /* -1: none failed; else the statement that did */
    char message[512];                 /* why, when failed >= 0 */
    pthread_t thread;
    bool threaded; /* a thread runs it (else it ran in batch_read_start) */
};

/*
 * Starts reading r's statements on r->conn, on a thread; when no thread
 * can be started, reads them before returning. Either way the results are
 * known after batch_read_finish.
 */
void batch_read_start(struct batch_read *r);

/* Waits for the read started on r. 0, or -1 with r->failed and r->message
 * set (the results read so far are still r's to clear, as on success). */
int batch_read_finish(struct batch_read *r);

/* Clears the results r still holds. */
void batch_read_clear(struct batch_read *r);

#endif
