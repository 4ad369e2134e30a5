/*
 * test_event_memory.c - libevent's small-block free lists
 * (src/http/event_memory.c): classes, reuse, growth, bounds.
 *
 * The functions are tested as functions: installing them into libevent
 * here would hand blocks that the runner's libevent already allocated to
 * event_memory_free. The daemon installs them, and every end-to-end test
 * runs through them (under AddressSanitizer, which event_memory.c tells
 * about idle blocks).
 */
#include <check.h>
#include <event2/http.h>
#include <stdint.h>
#include <string.h>

#include "http/event_memory.h"
#include "suites.h"

START_TEST(blocks_are_aligned_and_hold_what_was_asked)
{
    static const size_t sizes[] = {0,   1,    15,   16,   31,   32,   33,
                                   100, 1000, 1024, 1025, 4096, 8191, 8192};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *p = event_memory_malloc(sizes[i]);
        ck_assert_ptr_nonnull(p);
        ck_assert_uint_eq((uintptr_t)p % 16, 0);
        ck_assert_uint_ge(event_memory_capacity(p), sizes[i]);
        ck_assert_uint_le(event_memory_capacity(p), sizes[i] < 32 ? 32 : 2 * sizes[i]);
        memset(p, 0xab, sizes[i]);
        event_memory_free(p);
    }
}
END_TEST

START_TEST(a_freed_block_serves_the_next_of_its_class)
{
    char *a = event_memory_malloc(40);
    size_t idle = event_memory_idle(40);
    event_memory_free(a);
    ck_assert_uint_eq(event_memory_idle(40), idle + 1);
    char *b = event_memory_malloc(64); /* same class (33..64) */
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_eq(event_memory_idle(40), idle);
    char *c = event_memory_malloc(65); /* the next class: not a */
    ck_assert_ptr_ne(c, a);
    event_memory_free(b);
    event_memory_free(c);
    event_memory_free(NULL);
}
END_TEST

START_TEST(large_blocks_are_not_kept)
{
    char *big = event_memory_malloc(EVENT_MEMORY_LARGEST + 1);
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_eq(event_memory_capacity(big), EVENT_MEMORY_LARGEST + 1);
    memset(big, 1, EVENT_MEMORY_LARGEST + 1);
    event_memory_free(big);
    ck_assert_uint_eq(event_memory_idle(EVENT_MEMORY_LARGEST + 1), 0);
    ck_assert_ptr_null(event_memory_malloc(SIZE_MAX - 8)); /* no overflow into a small block */
}
END_TEST

START_TEST(idle_blocks_are_bounded_per_class)
{
    enum { SIZE = 4096, MANY = EVENT_MEMORY_MAX_IDLE_BYTES / SIZE + 10 };
    void *blocks[MANY];
    for (int i = 0; i < MANY; i++)
        blocks[i] = event_memory_malloc(SIZE);
    for (int i = 0; i < MANY; i++)
        event_memory_free(blocks[i]);
    ck_assert_uint_eq(event_memory_idle(SIZE), EVENT_MEMORY_MAX_IDLE_BYTES / SIZE);
}
END_TEST

START_TEST(realloc_keeps_the_bytes)
{
    char *p = event_memory_realloc(NULL, 10);
    ck_assert_ptr_nonnull(p);
    memcpy(p, "0123456789", 10);
    ck_assert_ptr_eq(event_memory_realloc(p, 32), p); /* fits its block */
    char *q = event_memory_realloc(p, 5000);
    ck_assert_ptr_nonnull(q);
    ck_assert_mem_eq(q, "0123456789", 10);
    memset(q + 10, 'x', 4990);
    char *r = event_memory_realloc(q, 20000); /* beyond the classes */
    ck_assert_ptr_nonnull(r);
    ck_assert_mem_eq(r, "0123456789", 10);
    ck_assert_int_eq(r[4999], 'x');
    ck_assert_ptr_null(event_memory_realloc(r, 0)); /* frees, as realloc does */
}
END_TEST

START_TEST(release_before_install_is_free)
{
    /* not installed in this runner: libevent's blocks come from malloc */
    char *encoded = evhttp_uriencode("a b&c", -1, 0);
    ck_assert_str_eq(encoded, "a%20b%26c");
    event_memory_release(encoded);
    event_memory_release(NULL);
}
END_TEST

Suite *suite_event_memory(void)
{
    Suite *s = suite_create("event_memory");
    TCase *tc = tcase_create("event_memory");
    tcase_add_test(tc, blocks_are_aligned_and_hold_what_was_asked);
    tcase_add_test(tc, a_freed_block_serves_the_next_of_its_class);
    tcase_add_test(tc, large_blocks_are_not_kept);
    tcase_add_test(tc, idle_blocks_are_bounded_per_class);
    tcase_add_test(tc, realloc_keeps_the_bytes);
    tcase_add_test(tc, release_before_install_is_free);
    suite_add_tcase(s, tc);
    return s;
}
