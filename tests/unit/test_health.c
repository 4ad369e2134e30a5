/*
 * test_health.c - the healthz checks (health.h): a failure's start is kept
 * across repeated failures and cleared by a success, each check's grace
 * (none for a failed write, the stale limit, the database timeout and its
 * 0 that turns it off), reasons cut to fit, the stale limit's floor.
 */
#include <string.h>

#include "base/health.h"
#include "suites.h"

static const struct health_limits limits = {.stale_ms = 5000, .database_ms = 60000};

START_TEST(a_healthy_state_has_no_failures)
{
    struct health_state h;
    health_init(&h);
    struct health_failure out[HEALTH_CHECKS];
    ck_assert_uint_eq(health_judge(&h, &limits, 1000000, out), 0);
    ck_assert_uint_eq(health_judge(NULL, &limits, 1000000, out), 0);
    ck_assert(!health_failing(&h, HEALTH_DATABASE));
}
END_TEST

START_TEST(a_failed_write_counts_at_once_and_clears)
{
    struct health_state h;
    health_init(&h);
    struct health_failure out[HEALTH_CHECKS];
    health_fail(&h, HEALTH_SNAPSHOT_WRITE, 1000, "cannot write the snapshot: ENOENT");
    ck_assert(health_failing(&h, HEALTH_SNAPSHOT_WRITE));
    ck_assert_uint_eq(health_judge(&h, &limits, 1000, out), 1);
    ck_assert_int_eq(out[0].check, HEALTH_SNAPSHOT_WRITE);
    ck_assert_int_eq(out[0].for_ms, 0);
    ck_assert_str_eq(out[0].reason, "cannot write the snapshot: ENOENT");
    ck_assert_str_eq(health_check_name(out[0].check), "snapshot_write");
    health_fail(&h, HEALTH_SNAPSHOT_WRITE, 3000, "still failing");
    ck_assert_uint_eq(health_judge(&h, &limits, 4000, out), 1);
    ck_assert_int_eq(out[0].for_ms, 3000); /* from the first failure, not the latest */
    ck_assert_str_eq(out[0].reason, "still failing");
    health_clear(&h, HEALTH_SNAPSHOT_WRITE);
    ck_assert_uint_eq(health_judge(&h, &limits, 5000, out), 0);
    health_fail(&h, HEALTH_SNAPSHOT_WRITE, 9000, "again");
    ck_assert_uint_eq(health_judge(&h, &limits, 9500, out), 1);
    ck_assert_int_eq(out[0].for_ms, 500);
}
END_TEST

START_TEST(stale_and_database_wait_for_their_limits)
{
    struct health_state h;
    health_init(&h);
    struct health_failure out[HEALTH_CHECKS];
    health_fail(&h, HEALTH_SNAPSHOT_STALE, 1000, "generation 7 in the database, 6 served");
    health_fail(&h, HEALTH_DATABASE, 1000, "connection refused");
    ck_assert_uint_eq(health_judge(&h, &limits, 5999, out), 0);
    ck_assert_uint_eq(health_judge(&h, &limits, 6000, out), 1);
    ck_assert_int_eq(out[0].check, HEALTH_SNAPSHOT_STALE);
    ck_assert_uint_eq(health_judge(&h, &limits, 61000, out), 2);
    ck_assert_int_eq(out[1].check, HEALTH_DATABASE);
    ck_assert_str_eq(out[1].reason, "connection refused");
    ck_assert_str_eq(health_check_name(out[1].check), "database");
    struct health_limits off = {.stale_ms = 5000, .database_ms = 0};
    ck_assert_uint_eq(health_judge(&h, &off, 10000000, out), 1); /* 0 turns the check off */
    health_clear(&h, HEALTH_DATABASE);
    health_clear(&h, HEALTH_SNAPSHOT_STALE);
    ck_assert_uint_eq(health_judge(&h, &limits, 10000000, out), 0);
}
END_TEST

START_TEST(long_reasons_are_cut)
{
    struct health_state h;
    health_init(&h);
    char reason[HEALTH_REASON_MAX * 2];
    memset(reason, 'x', sizeof reason - 1);
    reason[sizeof reason - 1] = '\0';
    health_fail(&h, HEALTH_SNAPSHOT_WRITE, 1, reason);
    struct health_failure out[HEALTH_CHECKS];
    ck_assert_uint_eq(health_judge(&h, &limits, 1, out), 1);
    ck_assert_uint_eq(strlen(out[0].reason), HEALTH_REASON_MAX - 1);
    health_fail(&h, HEALTH_SNAPSHOT_WRITE, 2, "short");
    health_judge(&h, &limits, 2, out);
    ck_assert_str_eq(out[0].reason, "short"); /* no tail of the longer one */
}
END_TEST

START_TEST(stale_limit_has_a_floor)
{
    ck_assert_int_eq(health_stale_limit_ms(1000), 5000);
    ck_assert_int_eq(health_stale_limit_ms(50), 5000);
    ck_assert_int_eq(health_stale_limit_ms(2000), 6000);
    ck_assert_int_eq(health_stale_limit_ms(600000), 1800000);
}
END_TEST

Suite *suite_health(void)
{
    Suite *s = suite_create("health");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, a_healthy_state_has_no_failures);
    tcase_add_test(tc, a_failed_write_counts_at_once_and_clears);
    tcase_add_test(tc, stale_and_database_wait_for_their_limits);
    tcase_add_test(tc, long_reasons_are_cut);
    tcase_add_test(tc, stale_limit_has_a_floor);
    suite_add_tcase(s, tc);
    return s;
}
