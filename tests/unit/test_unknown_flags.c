/*
 * test_unknown_flags.c - the shared-memory table of unknown flag keys
 * (src/eval/unknown_flags.c): counting per environment and key, draining
 * once, putting back, the key check that keeps hostile keys (too long, NUL,
 * bytes outside the key pattern, not UTF-8) out, a full table that drops
 * and counts its drops without touching the usage table, and old hours
 * reclaimed so the table does not stay full.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/unknown_flags.h"
#include "eval/usage.h"
#include "suites.h"

#define HOUR 3600
#define NOW (INT64_C(1700000000))

struct collected {
    struct unknown_entry e[2048];
    size_t n;
    uint64_t total;
};

static void collect(const struct unknown_entry *e, void *arg)
{
    struct collected *c = arg;
    if (c->n < sizeof c->e / sizeof c->e[0])
        c->e[c->n++] = *e;
    c->total += e->count;
}

static struct unknown_table *new_table(size_t slots)
{
    void *area = malloc(unknown_flags_area_size(slots));
    ck_assert_ptr_nonnull(area);
    return unknown_flags_area_init(area, slots);
}

static void env_of(unsigned n, uint8_t out[USAGE_ID_BYTES])
{
    memset(out, 0, USAGE_ID_BYTES);
    memcpy(out, &n, sizeof n);
    out[15] = 0xe1;
}

static bool add(struct unknown_table *t, const uint8_t env[16], const char *key, int64_t now)
{
    return unknown_flags_add(t, env, key, strlen(key), now, 1);
}

static const struct unknown_entry *find(const struct collected *c, const uint8_t env[16],
                                        const char *key)
{
    for (size_t i = 0; i < c->n; i++)
        if (memcmp(c->e[i].environment_id, env, 16) == 0 && strcmp(c->e[i].key, key) == 0)
            return &c->e[i];
    return NULL;
}

START_TEST(counts_per_environment_and_key_and_drains_once)
{
    struct unknown_table *t = new_table(1024);
    uint8_t prod[16], dev[16];
    env_of(1, prod);
    env_of(2, dev);
    for (int i = 0; i < 3; i++)
        ck_assert(add(t, prod, "new-checkout", NOW + i));
    ck_assert(add(t, dev, "new-checkout", NOW));
    ck_assert(add(t, prod, "old-banner", NOW));
    struct collected c = {.n = 0};
    ck_assert_uint_eq(unknown_flags_drain(t, NOW, collect, &c), 3);
    ck_assert_uint_eq(c.total, 5);
    const struct unknown_entry *e = find(&c, prod, "new-checkout");
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->count, 3);
    ck_assert_int_eq(e->last_seen, NOW + 2);
    ck_assert_int_eq(e->hour, NOW / HOUR);
    ck_assert_ptr_nonnull(find(&c, dev, "new-checkout"));
    ck_assert_uint_eq(find(&c, prod, "old-banner")->count, 1);
    struct collected again = {.n = 0};
    ck_assert_uint_eq(unknown_flags_drain(t, NOW, collect, &again), 0);
    ck_assert_uint_eq(unknown_flags_dropped(t), 0);
    free(t);
}
END_TEST

START_TEST(key_check_follows_the_flag_key_pattern)
{
    char longest[64], too_long[65];
    memset(longest, 'a', 63);
    longest[63] = '\0';
    memset(too_long, 'a', 64);
    too_long[64] = '\0';
    ck_assert(unknown_flags_key_ok("a", 1));
    ck_assert(unknown_flags_key_ok("new-checkout-2", 14));
    ck_assert(unknown_flags_key_ok(longest, 63));
    ck_assert(!unknown_flags_key_ok(too_long, 64));
    ck_assert(!unknown_flags_key_ok("", 0));
    ck_assert(!unknown_flags_key_ok(NULL, 0));
    ck_assert(!unknown_flags_key_ok("-a", 2));
    ck_assert(!unknown_flags_key_ok("a-", 2));
    ck_assert(!unknown_flags_key_ok("NewCheckout", 11));
    ck_assert(!unknown_flags_key_ok("a b", 3));
    ck_assert(!unknown_flags_key_ok("a\0b", 3));        /* a NUL inside */
    ck_assert(!unknown_flags_key_ok("caf\xc3\xa9", 5)); /* UTF-8, not the pattern */
    ck_assert(!unknown_flags_key_ok("a\xff", 2));       /* not UTF-8 */
    ck_assert(!unknown_flags_key_ok("a\"b", 3));
    ck_assert(!unknown_flags_key_ok("a\\b", 3));
}
END_TEST

START_TEST(hostile_keys_are_never_stored)
{
    struct unknown_table *t = new_table(1024);
    uint8_t env[16];
    env_of(1, env);
    char huge[4096];
    memset(huge, 'a', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    ck_assert(!add(t, env, huge, NOW));
    ck_assert(!unknown_flags_add(t, env, "ab\0cd", 5, NOW, 1));
    ck_assert(!unknown_flags_add(t, env, "a\xff\xfe", 3, NOW, 1));
    ck_assert(!add(t, env, "DROP TABLE flags;", NOW));
    ck_assert(!add(t, env, "", NOW));
    struct unknown_entry bad = {.hour = NOW / HOUR, .count = 7, .last_seen = NOW};
    memcpy(bad.environment_id, env, 16);
    memcpy(bad.key, "Bad Key", 8);
    ck_assert(!unknown_flags_add_entry(t, &bad));
    struct collected c = {.n = 0};
    ck_assert_uint_eq(unknown_flags_drain(t, NOW, collect, &c), 0);
    ck_assert_uint_eq(unknown_flags_dropped(t), 0); /* refused, not a full table */
    free(t);
}
END_TEST

START_TEST(longest_key_comes_out_whole)
{
    struct unknown_table *t = new_table(1024);
    uint8_t env[16];
    env_of(3, env);
    char longest[64];
    memset(longest, 'z', 63);
    longest[0] = '0';
    longest[63] = '\0';
    ck_assert(add(t, env, longest, NOW));
    struct collected c = {.n = 0};
    ck_assert_uint_eq(unknown_flags_drain(t, NOW, collect, &c), 1);
    ck_assert_str_eq(c.e[0].key, longest);
    ck_assert_uint_eq(strlen(c.e[0].key), 63);
    free(t);
}
END_TEST

START_TEST(put_back_entries_come_out_again)
{
    struct unknown_table *t = new_table(1024);
    uint8_t env[16];
    env_of(4, env);
    ck_assert(add(t, env, "later", NOW));
    ck_assert(add(t, env, "later", NOW + 5));
    struct collected c = {.n = 0};
    ck_assert_uint_eq(unknown_flags_drain(t, NOW, collect, &c), 1);
    ck_assert(unknown_flags_add_entry(t, &c.e[0])); /* the write failed: keep it */
    ck_assert(add(t, env, "later", NOW + 9));
    struct collected again = {.n = 0};
    ck_assert_uint_eq(unknown_flags_drain(t, NOW + 9, collect, &again), 1);
    ck_assert_uint_eq(again.e[0].count, 3);
    ck_assert_int_eq(again.e[0].last_seen, NOW + 9);
    free(t);
}
END_TEST

/* A flood of made-up keys fills this table and counts its drops; the
 * usage table of the flags that exist is another area and keeps counting. */
START_TEST(full_table_drops_without_touching_usage)
{
    struct unknown_table *t = new_table(1024);
    void *usage_area = malloc(usage_area_size(1024));
    ck_assert_ptr_nonnull(usage_area);
    struct usage_table *usage = usage_area_init(usage_area, 1024);
    uint8_t env[16], flag[16];
    env_of(5, env);
    env_of(6, flag);
    size_t counted = 0;
    for (unsigned i = 0; i < 3000; i++) {
        char key[32];
        snprintf(key, sizeof key, "made-up-%u", i);
        counted += add(t, env, key, NOW);
    }
    ck_assert_uint_lt(counted, 3000);
    ck_assert_uint_eq(unknown_flags_dropped(t), 3000 - counted);
    ck_assert(usage_add(usage, flag, env, "on", 2, NOW, 1));
    ck_assert_uint_eq(usage_dropped(usage), 0);
    struct collected *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    unknown_flags_drain(t, NOW, collect, c);
    ck_assert_uint_eq(c->total, counted);
    free(c);
    free(usage_area);
    free(t);
}
END_TEST

/* Drained slots of hours two or more behind are reclaimed: a table filled
 * an hour ago takes new keys again. */
START_TEST(old_hours_are_reclaimed)
{
    struct unknown_table *t = new_table(1024);
    uint8_t env[16];
    env_of(7, env);
    struct collected *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    size_t first = 0;
    for (unsigned i = 0; i < 1024; i++) {
        char key[32];
        snprintf(key, sizeof key, "old-%u", i);
        first += add(t, env, key, NOW);
    }
    unknown_flags_drain(t, NOW, collect, c);
    ck_assert_uint_eq(c->total, first);
    c->n = 0;
    ck_assert_uint_eq(unknown_flags_drain(t, NOW + 2 * HOUR, collect, c), 0); /* reclaims */
    size_t later = 0;
    for (unsigned i = 0; i < 512; i++) {
        char key[32];
        snprintf(key, sizeof key, "new-%u", i);
        later += add(t, env, key, NOW + 2 * HOUR);
    }
    ck_assert_uint_eq(later, 512);
    free(c);
    free(t);
}
END_TEST

Suite *suite_unknown_flags(void)
{
    Suite *s = suite_create("unknown_flags");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, counts_per_environment_and_key_and_drains_once);
    tcase_add_test(tc, key_check_follows_the_flag_key_pattern);
    tcase_add_test(tc, hostile_keys_are_never_stored);
    tcase_add_test(tc, longest_key_comes_out_whole);
    tcase_add_test(tc, put_back_entries_come_out_again);
    tcase_add_test(tc, full_table_drops_without_touching_usage);
    tcase_add_test(tc, old_hours_are_reclaimed);
    suite_add_tcase(s, tc);
    return s;
}
