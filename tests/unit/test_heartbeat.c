/*
 * test_heartbeat.c - the workers' heartbeat table: beats, staleness against
 * the stall limit, the disabled check, out-of-range slots, the beat
 * interval bounds.
 */
#include <stdlib.h>

#include "eval/heartbeat.h"
#include "suites.h"

static struct heartbeat_table *new_table(void)
{
    void *area = malloc(heartbeat_area_size());
    ck_assert_ptr_nonnull(area);
    heartbeat_area_init(area);
    return area;
}

START_TEST(a_fresh_beat_is_not_stale)
{
    struct heartbeat_table *t = new_table();
    heartbeat_beat(t, 3, 10000);
    ck_assert_int_eq(heartbeat_last(t, 3), 10000);
    ck_assert(!heartbeat_stale(t, 3, 10000 + 500, 500));
    ck_assert(heartbeat_stale(t, 3, 10000 + 501, 500));
    heartbeat_beat(t, 3, 10400);
    ck_assert(!heartbeat_stale(t, 3, 10000 + 501, 500));
    ck_assert_int_eq(heartbeat_last(t, 4), 0);
    free(t);
}
END_TEST

START_TEST(zero_disables_the_check)
{
    struct heartbeat_table *t = new_table();
    heartbeat_beat(t, 0, 1);
    ck_assert(!heartbeat_stale(t, 0, 1000000, 0));
    ck_assert(heartbeat_stale(t, 0, 1000000, 1));
    free(t);
}
END_TEST

START_TEST(slots_out_of_range_are_ignored)
{
    struct heartbeat_table *t = new_table();
    heartbeat_beat(t, HEARTBEAT_SLOTS, 5);
    ck_assert_int_eq(heartbeat_last(t, HEARTBEAT_SLOTS), 0);
    ck_assert(!heartbeat_stale(t, HEARTBEAT_SLOTS, 1000000, 10));
    ck_assert(!heartbeat_stale(NULL, 0, 1000000, 10));
    heartbeat_beat(NULL, 0, 5);
    free(t);
}
END_TEST

START_TEST(interval_is_bounded)
{
    ck_assert_int_eq(heartbeat_interval_ms(0), 10);
    ck_assert_int_eq(heartbeat_interval_ms(20), 10);
    ck_assert_int_eq(heartbeat_interval_ms(500), 100);
    ck_assert_int_eq(heartbeat_interval_ms(5000), 250);
    ck_assert(heartbeat_now_ms() > 0);
}
END_TEST

Suite *suite_heartbeat(void)
{
    Suite *s = suite_create("heartbeat");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, a_fresh_beat_is_not_stale);
    tcase_add_test(tc, zero_disables_the_check);
    tcase_add_test(tc, slots_out_of_range_are_ignored);
    tcase_add_test(tc, interval_is_bounded);
    suite_add_tcase(s, tc);
    return s;
}
