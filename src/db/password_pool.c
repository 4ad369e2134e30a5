/*
 * password_pool.c - scrypt jobs for the worker's helper threads (see
 * password_pool.h).
 *
 * A job owns copies of its inputs (the stored hash, the password) and its
 * output (the new hash), so the helper thread touches nothing but the job:
 * no http_request, no event base. The job is allocated here, handed to the
 * work pool, and freed (its password wiped) after its callback ran on the
 * loop.
 */
#include "db/password_pool.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/password.h"
#include "base/work_pool.h"

struct password_job {
    struct work_item item; /* first: the work pool hands back this pointer */
    bool hash;             /* make a hash (else verify) */
    enum password_outcome outcome;
    password_cb cb;
    void *arg;
    char stored[PASSWORD_HASH_MAX];
    char out[PASSWORD_HASH_MAX];
    char password[PASSWORD_MAX_BYTES + 1];
};

struct work_pool *password_pool_new(struct event_base *base)
{
    return work_pool_new(base, PASSWORD_POOL_THREADS, PASSWORD_POOL_MAX, PASSWORD_POOL_NICE);
}

/* Helper thread. */
static void run_job(struct work_item *item)
{
    struct password_job *job = (struct password_job *)item;
    if (job->hash)
        job->outcome =
            password_hash(job->password, job->out) == 0 ? PASSWORD_HASHED : PASSWORD_FAILED;
    else
        job->outcome =
            password_verify(job->stored, job->password) ? PASSWORD_MATCH : PASSWORD_MISMATCH;
}

/* Loop thread. */
static void finish_job(struct work_item *item, bool cancelled)
{
    struct password_job *job = (struct password_job *)item;
    enum password_outcome outcome = cancelled ? PASSWORD_CANCELLED : job->outcome;
    job->cb(outcome, outcome == PASSWORD_HASHED ? job->out : NULL, job->arg);
    explicit_bzero(job, sizeof *job);
    free(job);
}

static int submit(struct work_pool *pool, bool hash, const char *stored_hash, const char *password,
                  password_cb cb, void *arg)
{
    if (pool == NULL || strlen(password) > PASSWORD_MAX_BYTES ||
        strlen(stored_hash) >= PASSWORD_HASH_MAX)
        return -1;
    struct password_job *job = calloc(1, sizeof *job);
    if (job == NULL)
        return -1;
    job->item.run = run_job;
    job->item.done = finish_job;
    job->hash = hash;
    job->cb = cb;
    job->arg = arg;
    memcpy(job->stored, stored_hash, strlen(stored_hash) + 1);
    memcpy(job->password, password, strlen(password) + 1);
    if (work_pool_submit(pool, &job->item) != 0) {
        explicit_bzero(job, sizeof *job);
        free(job);
        return -1;
    }
    return 0;
}

int password_pool_verify(struct work_pool *pool, const char *stored_hash, const char *password,
                         password_cb cb, void *arg)
{
    return submit(pool, false, stored_hash, password, cb, arg);
}

int password_pool_hash(struct work_pool *pool, const char *password, password_cb cb, void *arg)
{
    return submit(pool, true, "", password, cb, arg);
}
