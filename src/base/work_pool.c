/*
 * work_pool.c - slow work off an event loop (see work_pool.h).
 *
 * One mutex guards both lists: the queue (items waiting for a thread, FIFO)
 * and the finished list (items run, waiting for the loop, FIFO). A helper
 * thread takes the queue's head, runs it without the lock, appends it to
 * the finished list and adds 1 to the eventfd's counter. The loop's read
 * event reads (and so resets) the counter, takes the whole finished list
 * under the lock and runs the done callbacks without it, so a done
 * callback may submit again. The pending count (submitted, not yet done)
 * is what bounds the pool; submit and deliver both run on the loop's
 * thread, so it is exact there.
 */
#include "base/work_pool.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"

struct item_list {
    struct work_item *head, *tail;
};

struct work_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the queue got an item, or the pool is stopping */
    struct item_list queue, finished;
    bool stopping;
    int nice_increment;
    int efd;
    struct event *ready;
    _Atomic unsigned pending;
    unsigned max_items;
    unsigned nthreads;
    pthread_t *threads;
};

static void list_push(struct item_list *l, struct work_item *item)
{
    item->next = NULL;
    if (l->tail != NULL)
        l->tail->next = item;
    else
        l->head = item;
    l->tail = item;
}

static struct work_item *list_take_all(struct item_list *l)
{
    struct work_item *all = l->head;
    l->head = l->tail = NULL;
    return all;
}

static struct work_item *list_pop(struct item_list *l)
{
    struct work_item *item = l->head;
    if (item != NULL) {
        l->head = item->next;
        if (l->head == NULL)
            l->tail = NULL;
    }
    return item;
}

static void signal_loop(struct work_pool *pool)
{
    uint64_t one = 1;
    while (write(pool->efd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

static void *helper_main(void *arg)
{
    struct work_pool *pool = arg;
    if (pool->nice_increment != 0) /* per thread on Linux: only this one */
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), pool->nice_increment);
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stopping && pool->queue.head == NULL)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stopping)
            break;
        struct work_item *item = list_pop(&pool->queue);
        pthread_mutex_unlock(&pool->lock);
        item->run(item);
        pthread_mutex_lock(&pool->lock);
        list_push(&pool->finished, item);
        signal_loop(pool);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

/* Runs the done callbacks of items, cancelled or not. */
static void deliver(struct work_pool *pool, struct work_item *items, bool cancelled)
{
    while (items != NULL) {
        struct work_item *next = items->next;
        atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_relaxed);
        items->done(items, cancelled);
        items = next;
    }
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct work_pool *pool = arg;
    uint64_t count;
    ssize_t ignored = read(fd, &count, sizeof count); /* resets it; EAGAIN: nothing new */
    (void)ignored;
    pthread_mutex_lock(&pool->lock);
    struct work_item *items = list_take_all(&pool->finished);
    pthread_mutex_unlock(&pool->lock);
    deliver(pool, items, false);
}

/* Starts the threads with every signal blocked (they inherit the mask). */
static int start_threads(struct work_pool *pool, unsigned threads)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    for (; pool->nthreads < threads; pool->nthreads++) {
        if (pthread_create(&pool->threads[pool->nthreads], NULL, helper_main, pool) != 0) {
            rc = -1;
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

struct work_pool *work_pool_new(struct event_base *base, unsigned threads, unsigned max_items,
                                int nice_increment)
{
    if (threads == 0 || max_items == 0)
        return NULL;
    struct work_pool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return NULL;
    pool->efd = -1;
    pool->max_items = max_items;
    pool->nice_increment = nice_increment;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pool->threads = calloc(threads, sizeof *pool->threads);
    pool->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (pool->threads != NULL && pool->efd >= 0)
        pool->ready = event_new(base, pool->efd, EV_READ | EV_PERSIST, on_ready, pool);
    if (pool->ready == NULL || event_add(pool->ready, NULL) != 0 ||
        start_threads(pool, threads) != 0) {
        log_error("cannot start the helper threads of the work pool");
        work_pool_free(pool);
        return NULL;
    }
    return pool;
}

int work_pool_submit(struct work_pool *pool, struct work_item *item)
{
    if (pool == NULL ||
        atomic_load_explicit(&pool->pending, memory_order_relaxed) >= pool->max_items)
        return -1;
    pthread_mutex_lock(&pool->lock);
    bool stopping = pool->stopping;
    if (!stopping) {
        atomic_fetch_add_explicit(&pool->pending, 1, memory_order_relaxed);
        list_push(&pool->queue, item);
        pthread_cond_signal(&pool->wake);
    }
    pthread_mutex_unlock(&pool->lock);
    return stopping ? -1 : 0;
}

unsigned work_pool_pending(const struct work_pool *pool)
{
    return pool != NULL ? atomic_load_explicit(&pool->pending, memory_order_relaxed) : 0;
}

void work_pool_free(struct work_pool *pool)
{
    if (pool == NULL)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned i = 0; i < pool->nthreads; i++)
        pthread_join(pool->threads[i], NULL);
    /* No thread is left: the lists are ours. */
    deliver(pool, list_take_all(&pool->queue), true);
    deliver(pool, list_take_all(&pool->finished), true);
    if (pool->ready != NULL)
        event_free(pool->ready);
    if (pool->efd >= 0)
        close(pool->efd);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool->threads);
    free(pool);
}
