/*
 * test_work_pool.c - the helper threads of base/work_pool.c: items run off
 * the loop's thread and come back on it, the loop keeps turning while an
 * item runs, the bound refuses at once, a done callback may submit again,
 * and freeing the pool joins its threads and cancels what is left.
 */
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "suites.h"
#include "base/work_pool.h"

struct job {
    struct work_item item; /* first */
    pthread_t ran_on;
    pthread_t done_on;
    int sleep_ms;
    atomic_bool ran;
    bool done;
    bool cancelled;
    int order;
    struct event_base *base;    /* exit the loop when this is the last one */
    struct work_pool *resubmit; /* done submits `again` here */
    struct job *again;
};

static int done_count;
static int expected_done;

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void run_job(struct work_item *item)
{
    struct job *j = (struct job *)item;
    j->ran_on = pthread_self();
    if (j->sleep_ms > 0)
        sleep_ms(j->sleep_ms);
    atomic_store(&j->ran, true);
}

static void finish_job(struct work_item *item, bool cancelled)
{
    struct job *j = (struct job *)item;
    ck_assert(!j->done); /* exactly once */
    j->done = true;
    j->cancelled = cancelled;
    j->done_on = pthread_self();
    j->order = ++done_count;
    if (j->resubmit != NULL)
        ck_assert_int_eq(work_pool_submit(j->resubmit, &j->again->item), 0);
    if (done_count == expected_done && j->base != NULL)
        event_base_loopexit(j->base, NULL);
}

static void init_job(struct job *j, struct event_base *base, int sleep)
{
    *j =
        (struct job){.item = {.run = run_job, .done = finish_job}, .base = base, .sleep_ms = sleep};
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    int *ticks = arg;
    (*ticks)++;
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopexit(arg, NULL);
}

/* Runs base until the expected jobs are done or 5 s passed. */
static void run_loop(struct event_base *base)
{
    struct timeval five = {5, 0};
    struct event *deadline = evtimer_new(base, on_deadline, base);
    evtimer_add(deadline, &five);
    event_base_dispatch(base);
    event_free(deadline);
}

START_TEST(items_run_off_the_loop_and_come_back_on_it)
{
    struct event_base *base = event_base_new();
    struct work_pool *pool = work_pool_new(base, 2, 8, 5);
    ck_assert_ptr_nonnull(pool);
    struct job jobs[4];
    done_count = 0;
    expected_done = 4;
    for (int i = 0; i < 4; i++) {
        init_job(&jobs[i], base, 0);
        ck_assert_int_eq(work_pool_submit(pool, &jobs[i].item), 0);
    }
    ck_assert_uint_eq(work_pool_pending(pool), 4);
    run_loop(base);
    ck_assert_int_eq(done_count, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert(jobs[i].done && !jobs[i].cancelled && atomic_load(&jobs[i].ran));
        ck_assert(!pthread_equal(jobs[i].ran_on, pthread_self()));
        ck_assert(pthread_equal(jobs[i].done_on, pthread_self()));
    }
    ck_assert_uint_eq(work_pool_pending(pool), 0);
    work_pool_free(pool);
    event_base_free(base);
}
END_TEST

START_TEST(the_loop_turns_while_an_item_runs)
{
    struct event_base *base = event_base_new();
    struct work_pool *pool = work_pool_new(base, 1, 4, 0);
    struct job slow;
    done_count = 0;
    expected_done = 1;
    init_job(&slow, base, 300);
    int ticks = 0;
    struct timeval every = {0, 10000};
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, &ticks);
    event_add(tick, &every);
    ck_assert_int_eq(work_pool_submit(pool, &slow.item), 0);
    run_loop(base);
    ck_assert(slow.done && !slow.cancelled);
    /* 300 ms of work, 10 ms ticks: a blocked loop would tick once; a busy
     * machine may delay some ticks, so ask for a third of them. */
    ck_assert_int_ge(ticks, 10);
    event_free(tick);
    work_pool_free(pool);
    event_base_free(base);
}
END_TEST

START_TEST(a_full_pool_refuses_at_once)
{
    struct event_base *base = event_base_new();
    struct work_pool *pool = work_pool_new(base, 1, 2, 0);
    struct job jobs[3];
    done_count = 0;
    expected_done = 2;
    for (int i = 0; i < 3; i++)
        init_job(&jobs[i], base, 50);
    ck_assert_int_eq(work_pool_submit(pool, &jobs[0].item), 0);
    ck_assert_int_eq(work_pool_submit(pool, &jobs[1].item), 0);
    ck_assert_int_eq(work_pool_submit(pool, &jobs[2].item), -1);
    run_loop(base);
    ck_assert_int_eq(done_count, 2);
    ck_assert(!jobs[2].done && !atomic_load(&jobs[2].ran));
    /* room again once they came back */
    expected_done = 3;
    ck_assert_int_eq(work_pool_submit(pool, &jobs[2].item), 0);
    run_loop(base);
    ck_assert(jobs[2].done && !jobs[2].cancelled);
    work_pool_free(pool);
    event_base_free(base);
}
END_TEST

START_TEST(a_done_callback_may_submit_again)
{
    struct event_base *base = event_base_new();
    struct work_pool *pool = work_pool_new(base, 1, 1, 0);
    struct job first, second;
    done_count = 0;
    expected_done = 2;
    init_job(&first, base, 0);
    init_job(&second, base, 0);
    first.resubmit = pool; /* the pool holds one: only room after first is done */
    first.again = &second;
    ck_assert_int_eq(work_pool_submit(pool, &first.item), 0);
    run_loop(base);
    ck_assert(first.done && second.done && !second.cancelled);
    ck_assert_int_eq(second.order, 2);
    work_pool_free(pool);
    event_base_free(base);
}
END_TEST

START_TEST(free_joins_and_cancels_what_is_left)
{
    struct event_base *base = event_base_new();
    struct work_pool *pool = work_pool_new(base, 1, 8, 0);
    struct job jobs[3];
    done_count = 0;
    expected_done = -1;
    for (int i = 0; i < 3; i++) {
        init_job(&jobs[i], NULL, 100);
        ck_assert_int_eq(work_pool_submit(pool, &jobs[i].item), 0);
    }
    sleep_ms(20); /* the first is running, the others wait */
    work_pool_free(pool);
    ck_assert_int_eq(done_count, 3);
    for (int i = 0; i < 3; i++)
        ck_assert(jobs[i].done && jobs[i].cancelled);
    ck_assert(atomic_load(&jobs[0].ran)); /* joined: it finished */
    ck_assert(!atomic_load(&jobs[2].ran));
    event_base_free(base);
}
END_TEST

Suite *suite_work_pool(void)
{
    Suite *s = suite_create("work_pool");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, items_run_off_the_loop_and_come_back_on_it);
    tcase_add_test(tc, the_loop_turns_while_an_item_runs);
    tcase_add_test(tc, a_full_pool_refuses_at_once);
    tcase_add_test(tc, a_done_callback_may_submit_again);
    tcase_add_test(tc, free_joins_and_cancels_what_is_left);
    suite_add_tcase(s, tc);
    return s;
}
