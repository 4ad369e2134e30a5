/*
 * work_pool.h - slow work off an event loop: a few helper threads, a
 * bounded queue, and results handed back to the loop.
 *
 * Owns the threads, the queue and the hand-back. A caller embeds a struct
 * work_item in its job, sets run (called on a helper thread: it may touch
 * only the job itself, never the event base, an http_request or anything
 * else of the loop) and done (called on the loop's thread, from the event
 * base, once per submitted item), and submits it. The hand-back is an
 * eventfd watched by the event base: a helper thread writes to it, the
 * loop reads it and runs the done callbacks, so libevent (not thread-safe
 * without evthread) is only ever touched by the loop's thread.
 *
 * Invariants: at most max_items items are submitted and not yet done
 * (queued, running or finished but not yet handed back); work_pool_submit
 * refuses more, so a burst is refused at once rather than queued without
 * bound. Helper threads run at a lower scheduling priority (nice) than the
 * loop, and block every signal (signals stay the loop's). work_pool_free
 * joins every thread (a running item finishes first) and then calls done
 * with cancelled = true for every item not yet handed back, on the
 * caller's thread, before it returns.
 *
 * Used by the worker (daemon/worker.c makes one pool per worker) for
 * scrypt (db/password_pool.c). Pure C11 threads-and-libevent: no database.
 */
#ifndef ENSIGN_WORK_POOL_H
#define ENSIGN_WORK_POOL_H

#include <stdbool.h>

struct event_base;
struct work_pool;

struct work_item {
    void (*run)(struct work_item *item);                  /* helper thread */
    void (*done)(struct work_item *item, bool cancelled); /* loop thread */
    struct work_item *next;                               /* the pool's */
};

/*
 * A pool of threads helper threads (1 or more) delivering to base, with
 * room for max_items items, whose threads run at nice_increment above the
 * process's priority (0: the same). NULL on failure (nothing left behind).
 */
struct work_pool *work_pool_new(struct event_base *base, unsigned threads, unsigned max_items,
                                int nice_increment);

/* Queues item. 0, or -1 when the pool is full or stopping (done never runs). */
int work_pool_submit(struct work_pool *pool, struct work_item *item);

/* Items submitted and not yet done. */
unsigned work_pool_pending(const struct work_pool *pool);

/* Stops and joins the threads, cancels what is left (see above), frees. NULL is fine. */
void work_pool_free(struct work_pool *pool);

#endif
