/*
 * password_pool.h - scrypt off the worker's event loop (an event loop never
 * waits on slow work): password checks and new hashes run on the
 * worker's helper threads (base/work_pool.h) and their outcome comes back
 * to the loop.
 *
 * A worker makes its pool with password_pool_new() at start and frees it
 * (work_pool_free) before its HTTP server at exit; the session routes
 * (accounts/sessions.c, accounts/password_change.c) submit through it.
 * The pool holds PASSWORD_POOL_MAX checks at most (queued or running);
 * beyond that a submit fails at once and the route answers 503 with
 * Retry-After (PASSWORD_POOL_RETRY_S) instead of queueing without bound.
 */
#ifndef ENSIGN_PASSWORD_POOL_H
#define ENSIGN_PASSWORD_POOL_H

struct event_base;
struct work_pool;

#define PASSWORD_POOL_THREADS 2 /* per worker: two logins at once, a core's worth */
#define PASSWORD_POOL_MAX 32    /* per worker: about a second of scrypt for two threads */
#define PASSWORD_POOL_NICE 10   /* below the loop: evaluations first when the CPU is short */
#define PASSWORD_POOL_RETRY_S 1 /* Retry-After of the 503 when the pool is full */

enum password_outcome {
    PASSWORD_MATCH,    /* verify: the password matches */
    PASSWORD_MISMATCH, /* verify: it does not (or the hash is malformed) */
    PASSWORD_HASHED,   /* hash: hash holds the new MCF hash */
    PASSWORD_FAILED,   /* hash: libscrypt failed */
    PASSWORD_CANCELLED /* the worker is stopping: the job never ran or its result is dropped */
};

/* Runs on the loop's thread once per accepted job. hash is the new hash
 * for PASSWORD_HASHED (valid during the call), else NULL. */
typedef void (*password_cb)(enum password_outcome outcome, const char *hash, void *arg);

/* The worker's pool on base, or NULL (logged). */
struct work_pool *password_pool_new(struct event_base *base);

/*
 * Queues a check of password against stored_hash (both copied; the copy
 * of the password is wiped when done). 0, or -1 when the pool is full,
 * stopping or out of memory: cb then never runs.
 */
int password_pool_verify(struct work_pool *pool, const char *stored_hash, const char *password,
                         password_cb cb, void *arg);

/* Queues a new hash of password (copied, wiped). 0 or -1 as above. */
int password_pool_hash(struct work_pool *pool, const char *password, password_cb cb, void *arg);

#endif
