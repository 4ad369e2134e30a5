/*
 * test_accept_balance.c - the accept balance: the decision (may a worker
 * accept, given its siblings' counts), absent siblings, publishing and
 * reading through the shared table, out-of-range slots.
 */
#include <stdlib.h>

#include "http/accept_balance.h"
#include "suites.h"

#define ABSENT ACCEPT_BALANCE_ABSENT

static struct accept_balance *new_table(void)
{
    void *area = aligned_alloc(64, accept_balance_area_size());
    ck_assert_ptr_nonnull(area);
    accept_balance_area_init(area);
    return area;
}

START_TEST(equal_counts_may_accept)
{
    int32_t siblings[] = {3, 3};
    ck_assert(accept_balance_decide(3, siblings, 2));
    ck_assert(accept_balance_decide(0, (int32_t[]){0}, 1));
}
END_TEST

START_TEST(ahead_of_the_least_loaded_may_not)
{
    ck_assert(!accept_balance_decide(4, (int32_t[]){3}, 1));
    ck_assert(!accept_balance_decide(9, (int32_t[]){12, 8, 15}, 3));
    ck_assert(accept_balance_decide(8, (int32_t[]){12, 8, 15}, 3));
    ck_assert(accept_balance_decide(2, (int32_t[]){12, 8, 15}, 3));
}
END_TEST

START_TEST(absent_siblings_do_not_count)
{
    ck_assert(accept_balance_decide(50, (int32_t[]){ABSENT, ABSENT}, 2));
    ck_assert(accept_balance_decide(5, (int32_t[]){ABSENT, 5}, 2));
    ck_assert(!accept_balance_decide(6, (int32_t[]){ABSENT, 5}, 2));
    ck_assert(accept_balance_decide(7, NULL, 0));
}
END_TEST

START_TEST(the_table_starts_absent)
{
    struct accept_balance *t = new_table();
    ck_assert(accept_balance_may_accept(t, 0, 100));
    ck_assert(accept_balance_may_accept(t, ACCEPT_BALANCE_SLOTS - 1, 100));
    free(t);
}
END_TEST

START_TEST(published_counts_hold_siblings_back)
{
    struct accept_balance *t = new_table();
    accept_balance_publish(t, 0, 4);
    accept_balance_publish(t, 7, 6);
    ck_assert(accept_balance_may_accept(t, 0, 4)); /* its own entry is not a sibling */
    ck_assert(!accept_balance_may_accept(t, 7, 6));
    ck_assert(accept_balance_may_accept(t, 7, 4));
    accept_balance_publish(t, 0, ABSENT); /* drained, exited or reaped */
    ck_assert(accept_balance_may_accept(t, 7, 6));
    accept_balance_publish(t, 3, 2); /* below the highest slot seen */
    ck_assert(!accept_balance_may_accept(t, 7, 6));
    ck_assert(accept_balance_may_accept(t, 3, 2));
    free(t);
}
END_TEST

START_TEST(slots_out_of_range_are_ignored)
{
    struct accept_balance *t = new_table();
    accept_balance_publish(t, ACCEPT_BALANCE_SLOTS, 0);
    ck_assert(accept_balance_may_accept(t, 0, 100));
    ck_assert(accept_balance_may_accept(t, ACCEPT_BALANCE_SLOTS, 100));
    ck_assert(accept_balance_may_accept(NULL, 0, 100));
    accept_balance_publish(NULL, 0, 1);
    free(t);
}
END_TEST

Suite *suite_accept_balance(void)
{
    Suite *s = suite_create("accept_balance");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, equal_counts_may_accept);
    tcase_add_test(tc, ahead_of_the_least_loaded_may_not);
    tcase_add_test(tc, absent_siblings_do_not_count);
    tcase_add_test(tc, the_table_starts_absent);
    tcase_add_test(tc, published_counts_hold_siblings_back);
    tcase_add_test(tc, slots_out_of_range_are_ignored);
    suite_add_tcase(s, tc);
    return s;
}
