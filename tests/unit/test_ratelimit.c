/*
 * test_ratelimit.c - token buckets: the limit, refill over time, the
 * headers' numbers, separate keys and classes, a full table failing open,
 * and idle buckets taken over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/ratelimit.h"
#include "suites.h"

#define S UINT64_C(1000000000)
#define T0 (1000 * S)

static struct ratelimit_table *new_table(size_t slots)
{
    void *area = malloc(ratelimit_area_size(slots));
    ck_assert_ptr_nonnull(area);
    return ratelimit_area_init(area, slots);
}

static bool take(struct ratelimit_table *t, const char *key, uint32_t limit, uint64_t now,
                 struct ratelimit_result *out)
{
    return ratelimit_take(t, RATELIMIT_EVALUATION, key, strlen(key), limit, now, out);
}

START_TEST(limit_zero_always_allows)
{
    struct ratelimit_table *t = new_table(1024);
    struct ratelimit_result r;
    for (int i = 0; i < 1000; i++)
        ck_assert(take(t, "k", 0, T0, &r));
    ck_assert_uint_eq(r.limit, 0);
    free(t);
}
END_TEST

START_TEST(a_burst_of_limit_then_refused)
{
    struct ratelimit_table *t = new_table(1024);
    struct ratelimit_result r;
    for (uint32_t i = 0; i < 10; i++) {
        ck_assert(take(t, "svc_sdk_a", 10, T0, &r));
        ck_assert_uint_eq(r.limit, 10);
        ck_assert_uint_eq(r.remaining, 9 - i);
        ck_assert_uint_eq(r.reset_s, 6 * (i + 1)); /* one request refills in 6 s */
    }
    ck_assert(!take(t, "svc_sdk_a", 10, T0, &r));
    ck_assert_uint_eq(r.remaining, 0);
    ck_assert_uint_eq(r.retry_after_s, 6);
    ck_assert_uint_eq(r.reset_s, 60);
    ck_assert(!take(t, "svc_sdk_a", 10, T0 + 5 * S, &r));
    ck_assert_uint_eq(r.retry_after_s, 1);
    free(t);
}
END_TEST

START_TEST(buckets_refill_with_time)
{
    struct ratelimit_table *t = new_table(1024);
    struct ratelimit_result r;
    for (int i = 0; i < 10; i++)
        take(t, "k", 10, T0, &r);
    ck_assert(!take(t, "k", 10, T0 + 5 * S, &r));
    ck_assert(take(t, "k", 10, T0 + 6 * S, &r));
    ck_assert_uint_eq(r.remaining, 0);
    ck_assert(!take(t, "k", 10, T0 + 6 * S, &r));
    ck_assert(take(t, "k", 10, T0 + 120 * S, &r)); /* long idle: full again */
    ck_assert_uint_eq(r.remaining, 9);
    free(t);
}
END_TEST

START_TEST(steady_rate_at_the_limit_is_allowed)
{
    struct ratelimit_table *t = new_table(1024);
    struct ratelimit_result r;
    /* 6000 per minute = one per 10 ms: a request every 10 ms never runs out. */
    for (uint64_t i = 0; i < 20000; i++)
        ck_assert(take(t, "k", 6000, T0 + i * (S / 100), &r));
    ck_assert_uint_ge(r.remaining, 5998);
    free(t);
}
END_TEST

START_TEST(keys_and_classes_are_separate)
{
    struct ratelimit_table *t = new_table(1024);
    struct ratelimit_result r;
    ck_assert(take(t, "a", 1, T0, &r));
    ck_assert(!take(t, "a", 1, T0, &r));
    ck_assert(take(t, "b", 1, T0, &r));
    ck_assert(ratelimit_take(t, RATELIMIT_MANAGEMENT, "a", 1, 1, T0, &r));
    ck_assert(ratelimit_take(t, RATELIMIT_WAITLIST, "a", 1, 1, T0, &r));
    ck_assert(!ratelimit_take(t, RATELIMIT_WAITLIST, "a", 1, 1, T0, &r));
    free(t);
}
END_TEST

START_TEST(full_table_reuses_the_stalest_and_idle_buckets)
{
    struct ratelimit_table *t = new_table(1024);
    struct ratelimit_result r;
    char key[32];
    for (int i = 0; i < 4000; i++) { /* more distinct clients than slots */
        snprintf(key, sizeof key, "key-%d", i);
        ck_assert(take(t, key, 5, T0 + (uint64_t)i, &r)); /* each key's first request */
        ck_assert_uint_eq(r.remaining, 4);
    }
    ck_assert_uint_gt(ratelimit_overflows(t), 0);
    /* The most recent client was not forgotten: its limit still holds. */
    for (int i = 0; i < 4; i++)
        ck_assert(take(t, "key-3999", 5, T0 + 4000, &r));
    ck_assert(!take(t, "key-3999", 5, T0 + 4000, &r));
    uint64_t overflows = ratelimit_overflows(t);
    /* A minute later every bucket is full again: new keys take them over. */
    for (int i = 0; i < 256; i++) {
        snprintf(key, sizeof key, "later-%d", i);
        ck_assert(take(t, key, 5, T0 + 61 * S, &r));
        ck_assert_uint_eq(r.remaining, 4);
    }
    ck_assert_uint_eq(ratelimit_overflows(t), overflows);
    free(t);
}
END_TEST

START_TEST(huge_limits_work)
{
    struct ratelimit_table *t = new_table(1024);
    struct ratelimit_result r;
    ck_assert(take(t, "k", 100000000, T0, &r));
    ck_assert_uint_eq(r.remaining, 99999999);
    ck_assert_uint_eq(r.reset_s, 1);
    free(t);
}
END_TEST

Suite *suite_ratelimit(void)
{
    Suite *s = suite_create("ratelimit");
    TCase *tc = tcase_create("buckets");
    tcase_add_test(tc, limit_zero_always_allows);
    tcase_add_test(tc, a_burst_of_limit_then_refused);
    tcase_add_test(tc, buckets_refill_with_time);
    tcase_add_test(tc, steady_rate_at_the_limit_is_allowed);
    tcase_add_test(tc, keys_and_classes_are_separate);
    tcase_add_test(tc, full_table_reuses_the_stalest_and_idle_buckets);
    tcase_add_test(tc, huge_limits_work);
    suite_add_tcase(s, tc);
    return s;
}
