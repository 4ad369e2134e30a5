/*
 * test_stream_slots.c - the per-key stream counts of shared memory: the cap
 * across owners, release, keys apart, a full table refusing, the entries
 * of a dead process reaped, and the table size from the configuration.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/config.h"
#include "eval/stream_slots.h"
#include "suites.h"

#define SLOTS 1024

static struct stream_slots *new_table(void)
{
    void *area = malloc(stream_slots_area_size(SLOTS));
    ck_assert_ptr_nonnull(area);
    stream_slots_area_init(area, SLOTS);
    return area;
}

static void digest_of(unsigned n, uint8_t out[STREAM_SLOTS_DIGEST_LEN])
{
    memset(out, 0xa5, STREAM_SLOTS_DIGEST_LEN);
    memcpy(out, &n, sizeof n);
    out[STREAM_SLOTS_DIGEST_LEN - 1] = (uint8_t)n;
}

START_TEST(cap_counts_every_owner)
{
    struct stream_slots *t = new_table();
    uint8_t key[STREAM_SLOTS_DIGEST_LEN];
    digest_of(1, key);
    ck_assert(stream_slots_acquire(t, key, 100, 3));
    ck_assert(stream_slots_acquire(t, key, 200, 3));
    ck_assert(stream_slots_acquire(t, key, 100, 3));
    ck_assert(!stream_slots_acquire(t, key, 300, 3));
    ck_assert(!stream_slots_acquire(t, key, 100, 3));
    ck_assert_uint_eq(stream_slots_total(t, key), 3);
    stream_slots_release(t, key, 200);
    ck_assert_uint_eq(stream_slots_total(t, key), 2);
    ck_assert(stream_slots_acquire(t, key, 300, 3));
    ck_assert(!stream_slots_acquire(t, key, 300, 0));
    ck_assert(!stream_slots_acquire(t, key, 0, 10)); /* not an owner */
    free(t);
}
END_TEST

START_TEST(keys_are_apart_and_entries_are_reused)
{
    struct stream_slots *t = new_table();
    uint8_t a[STREAM_SLOTS_DIGEST_LEN], b[STREAM_SLOTS_DIGEST_LEN];
    digest_of(1, a);
    digest_of(2, b);
    memcpy(b, a, 8); /* same home entry: b probes past a */
    ck_assert(stream_slots_acquire(t, a, 7, 1));
    ck_assert(stream_slots_acquire(t, b, 7, 1));
    ck_assert(!stream_slots_acquire(t, a, 7, 1));
    stream_slots_release(t, a, 7);
    ck_assert_uint_eq(stream_slots_total(t, a), 0);
    ck_assert_uint_eq(stream_slots_total(t, b), 1); /* found past a's freed entry */
    ck_assert(stream_slots_acquire(t, a, 8, 1));
    stream_slots_release(t, a, 9); /* not its entry: nothing happens */
    ck_assert_uint_eq(stream_slots_total(t, a), 1);
    free(t);
}
END_TEST

START_TEST(full_table_refuses)
{
    struct stream_slots *t = new_table();
    uint8_t key[STREAM_SLOTS_DIGEST_LEN];
    for (unsigned i = 0; i < SLOTS; i++) {
        digest_of(i, key);
        ck_assert(stream_slots_acquire(t, key, 5, 10));
    }
    digest_of(SLOTS, key);
    ck_assert(!stream_slots_acquire(t, key, 5, 10));
    digest_of(3, key);
    ck_assert(stream_slots_acquire(t, key, 5, 10)); /* an existing entry still counts */
    stream_slots_release(t, key, 5);
    stream_slots_release(t, key, 5);
    digest_of(SLOTS, key);
    ck_assert(stream_slots_acquire(t, key, 5, 10)); /* takes the freed entry */
    free(t);
}
END_TEST

START_TEST(dead_owners_are_reaped)
{
    struct stream_slots *t = new_table();
    uint8_t key[STREAM_SLOTS_DIGEST_LEN];
    digest_of(9, key);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    ck_assert(stream_slots_acquire(t, key, (int32_t)child, 2));
    ck_assert(stream_slots_acquire(t, key, (int32_t)getpid(), 2));
    ck_assert(!stream_slots_acquire(t, key, (int32_t)getpid(), 2));
    ck_assert_uint_eq(stream_slots_reap(t), 1);
    ck_assert_uint_eq(stream_slots_total(t, key), 1);
    ck_assert(stream_slots_acquire(t, key, (int32_t)getpid(), 2));
    ck_assert_uint_eq(stream_slots_reap(t), 0);
    free(t);
}
END_TEST

START_TEST(size_follows_the_configuration)
{
    struct config cfg = {0};
    cfg.workers = 2;
    cfg.stream_max_per_worker = 10000;
    ck_assert_uint_eq(stream_slots_count_for(&cfg), 131072);
    cfg.stream_max_per_worker = 0;
    ck_assert_uint_eq(stream_slots_count_for(&cfg), 1024);
    cfg.workers = 64;
    cfg.stream_max_per_worker = 1000000;
    ck_assert_uint_eq(stream_slots_count_for(&cfg), 1u << 20);
}
END_TEST

Suite *suite_stream_slots(void)
{
    Suite *s = suite_create("stream_slots");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cap_counts_every_owner);
    tcase_add_test(tc, keys_are_apart_and_entries_are_reused);
    tcase_add_test(tc, full_table_refuses);
    tcase_add_test(tc, dead_owners_are_reaped);
    tcase_add_test(tc, size_follows_the_configuration);
    suite_add_tcase(s, tc);
    return s;
}
