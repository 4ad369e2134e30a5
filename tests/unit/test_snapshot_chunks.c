/*
 * test_snapshot_chunks.c - chunk boundaries of a large organization
 * (src/eval/snapshot_chunks.c): planning by key, the chunk covering a key
 * (inserts between and below boundaries included), the chunks a set of
 * changed keys touches, a chunk grown past twice the size split, an
 * emptied chunk dropped into its neighbour, untouched boundaries kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/snapshot_chunks.h"
#include "suites.h"

/* "k0000" .. keys in byte order, count of them, from a static arena. */
static const char *const *make_keys(size_t from, size_t count)
{
    static char text[4096][8];
    static const char *keys[4096];
    ck_assert_uint_le(count, 4096);
    for (size_t i = 0; i < count; i++) {
        snprintf(text[i], sizeof text[i], "k%04zu", from + i);
        keys[i] = text[i];
    }
    return keys;
}

static size_t find(const struct snapshot_chunk_bounds *b, const char *key)
{
    return snapshot_chunks_find(b, key, strlen(key));
}

START_TEST(small_organization_is_one_chunk)
{
    struct snapshot_chunk_bounds b;
    snapshot_chunk_bounds_init(&b);
    ck_assert(!snapshot_chunks_wanted(20, 10));
    ck_assert(snapshot_chunks_wanted(21, 10));
    ck_assert(!snapshot_chunks_wanted(1000, 0)); /* no size: never chunked */
    ck_assert_int_eq(snapshot_chunks_plan(&b, make_keys(0, 20), 20, 10), 0);
    ck_assert_uint_eq(b.count, 1);
    ck_assert_str_eq(b.first[0], "");
    ck_assert_uint_eq(find(&b, "anything"), 0);
    snapshot_chunk_bounds_free(&b);
}
END_TEST

START_TEST(plan_cuts_every_size_keys_and_keeps_a_remainder_in_the_last)
{
    struct snapshot_chunk_bounds b;
    snapshot_chunk_bounds_init(&b);
    ck_assert_int_eq(snapshot_chunks_plan(&b, make_keys(0, 35), 35, 10), 0);
    ck_assert_uint_eq(b.count, 3); /* 10, 10, 15: no chunk of 5 */
    ck_assert_str_eq(b.first[0], "");
    ck_assert_str_eq(b.first[1], "k0010");
    ck_assert_str_eq(b.first[2], "k0020");
    /* planning again replaces what was there */
    ck_assert_int_eq(snapshot_chunks_plan(&b, make_keys(0, 40), 40, 10), 0);
    ck_assert_uint_eq(b.count, 4);
    ck_assert_str_eq(b.first[3], "k0030");
    snapshot_chunk_bounds_free(&b);
}
END_TEST

START_TEST(find_gives_the_last_boundary_at_or_below_the_key)
{
    struct snapshot_chunk_bounds b;
    snapshot_chunk_bounds_init(&b);
    ck_assert_int_eq(snapshot_chunks_plan(&b, make_keys(0, 40), 40, 10), 0);
    ck_assert_uint_eq(find(&b, "k0000"), 0);
    ck_assert_uint_eq(find(&b, "k0009"), 0);
    ck_assert_uint_eq(find(&b, "k0010"), 1);  /* a boundary is its own chunk's */
    ck_assert_uint_eq(find(&b, "k0010a"), 1); /* inserted between boundaries */
    ck_assert_uint_eq(find(&b, "a"), 0);      /* below every flag: the first */
    ck_assert_uint_eq(find(&b, "k0039"), 3);
    ck_assert_uint_eq(find(&b, "zzz"), 3); /* above every flag: the last */
    ck_assert_uint_eq(find(&b, ""), 0);
    /* byte order, length second: "k001" < "k0010" */
    ck_assert_uint_eq(find(&b, "k001"), 0);
    /* the key need not be NUL-terminated */
    ck_assert_uint_eq(snapshot_chunks_find(&b, "k0020xyz", 5), 2);
    snapshot_chunk_bounds_free(&b);
}
END_TEST

START_TEST(touch_marks_the_chunks_of_changed_keys)
{
    struct snapshot_chunk_bounds b;
    snapshot_chunk_bounds_init(&b);
    ck_assert_int_eq(snapshot_chunks_plan(&b, make_keys(0, 40), 40, 10), 0);
    bool touched[4] = {false};
    const char *changed[] = {"k0015", "k0011", "deleted-long-ago", "k0035x"};
    snapshot_chunks_touch(&b, changed, 4, touched);
    ck_assert(touched[0] && touched[1] && !touched[2] && touched[3]);
    snapshot_chunk_bounds_free(&b);
}
END_TEST

START_TEST(replan_keeps_a_chunk_within_twice_the_size)
{
    struct snapshot_chunk_bounds b;
    snapshot_chunk_bounds_init(&b);
    ck_assert_int_eq(snapshot_chunks_plan(&b, make_keys(0, 40), 40, 10), 0);
    size_t pieces;
    /* chunk 1 grew to 20 (inserts): still one chunk, same first key */
    ck_assert_int_eq(snapshot_chunks_replan(&b, 1, make_keys(10, 20), 20, 10, &pieces), 0);
    ck_assert_uint_eq(pieces, 1);
    ck_assert_uint_eq(b.count, 4);
    ck_assert_str_eq(b.first[1], "k0010");
    /* shrunk to 1 (deletes): still one chunk */
    ck_assert_int_eq(snapshot_chunks_replan(&b, 1, make_keys(12, 1), 1, 10, &pieces), 0);
    ck_assert_uint_eq(pieces, 1);
    ck_assert_str_eq(b.first[1], "k0010");
    snapshot_chunk_bounds_free(&b);
}
END_TEST

START_TEST(replan_splits_a_chunk_grown_past_twice_the_size)
{
    struct snapshot_chunk_bounds b;
    snapshot_chunk_bounds_init(&b);
    ck_assert_int_eq(snapshot_chunks_plan(&b, make_keys(0, 40), 40, 10), 0);
    size_t pieces;
    /* chunk 1 ([k0010, k0020)) now holds 25 flags k0015-000 .. k0015-024 */
    static char text[25][16];
    const char *grown[25];
    for (size_t i = 0; i < 25; i++) {
        snprintf(text[i], sizeof text[i], "k0015-%03zu", i);
        grown[i] = text[i];
    }
    ck_assert_int_eq(snapshot_chunks_replan(&b, 1, grown, 25, 10, &pieces), 0);
    ck_assert_uint_eq(pieces, 2); /* 10 and 15 */
    ck_assert_uint_eq(b.count, 5);
    const char *want[] = {"", "k0010", "k0015-010", "k0020", "k0030"};
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(b.first[i], want[i]);
    /* the last chunk grown to 41: four pieces, the chunks before untouched */
    ck_assert_int_eq(snapshot_chunks_replan(&b, 4, make_keys(30, 41), 41, 10, &pieces), 0);
    ck_assert_uint_eq(pieces, 4);
    ck_assert_uint_eq(b.count, 8);
    const char *then[] = {"", "k0010", "k0015-010", "k0020", "k0030", "k0040", "k0050", "k0060"};
    for (size_t i = 0; i < 8; i++)
        ck_assert_str_eq(b.first[i], then[i]);
    ck_assert_uint_eq(find(&b, "k0070"), 7);
    snapshot_chunk_bounds_free(&b);
}
END_TEST

START_TEST(replan_drops_an_emptied_chunk_into_its_neighbour)
{
    struct snapshot_chunk_bounds b;
    snapshot_chunk_bounds_init(&b);
    ck_assert_int_eq(snapshot_chunks_plan(&b, make_keys(0, 40), 40, 10), 0);
    size_t pieces;
    ck_assert_int_eq(snapshot_chunks_replan(&b, 2, NULL, 0, 10, &pieces), 0);
    ck_assert_uint_eq(pieces, 0);
    ck_assert_uint_eq(b.count, 3);
    ck_assert_str_eq(b.first[1], "k0010");
    ck_assert_str_eq(b.first[2], "k0030");
    ck_assert_uint_eq(find(&b, "k0025"), 1); /* the range joined the chunk before */
    /* the first chunk emptied: the next one starts at "" */
    ck_assert_int_eq(snapshot_chunks_replan(&b, 0, NULL, 0, 10, &pieces), 0);
    ck_assert_uint_eq(b.count, 2);
    ck_assert_str_eq(b.first[0], "");
    ck_assert_str_eq(b.first[1], "k0030");
    ck_assert_uint_eq(find(&b, "a"), 0);
    /* the last chunk standing stays, empty */
    ck_assert_int_eq(snapshot_chunks_replan(&b, 1, NULL, 0, 10, &pieces), 0);
    ck_assert_int_eq(snapshot_chunks_replan(&b, 0, NULL, 0, 10, &pieces), 0);
    ck_assert_uint_eq(pieces, 1);
    ck_assert_uint_eq(b.count, 1);
    ck_assert_str_eq(b.first[0], "");
    snapshot_chunk_bounds_free(&b);
}
END_TEST

Suite *suite_snapshot_chunks(void)
{
    Suite *s = suite_create("snapshot_chunks");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, small_organization_is_one_chunk);
    tcase_add_test(tc, plan_cuts_every_size_keys_and_keeps_a_remainder_in_the_last);
    tcase_add_test(tc, find_gives_the_last_boundary_at_or_below_the_key);
    tcase_add_test(tc, touch_marks_the_chunks_of_changed_keys);
    tcase_add_test(tc, replan_keeps_a_chunk_within_twice_the_size);
    tcase_add_test(tc, replan_splits_a_chunk_grown_past_twice_the_size);
    tcase_add_test(tc, replan_drops_an_emptied_chunk_into_its_neighbour);
    suite_add_tcase(s, tc);
    return s;
}
