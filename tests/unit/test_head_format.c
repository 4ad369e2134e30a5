/*
 * test_head_format.c - the head lines written without printf
 * (src/http/head_format.c) give libevent's bytes and return values.
 *
 * Linking head_format.c into this runner (it references the line
 * writers) makes its evbuffer_add_printf and evutil_date_rfc1123 the
 * ones every caller here reaches; libevent's own are found with
 * dlsym(RTLD_NEXT) and compared.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <check.h>
#include <dlfcn.h>
#include <event2/buffer.h>
#include <event2/util.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "http/head_format.h"
#include "suites.h"

typedef int (*date_fn)(char *, size_t, const struct tm *);

/* evhttp's header line through ours (evbuffer_add_printf) and through
 * libevent's evbuffer_add_vprintf: the same bytes and return. */
__attribute__((format(printf, 2, 3))) static int their_printf(struct evbuffer *buf, const char *fmt,
                                                              ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = evbuffer_add_vprintf(buf, fmt, ap);
    va_end(ap);
    return n;
}

static void assert_header_same(const char *name, const char *value)
{
    struct evbuffer *ours = evbuffer_new(), *theirs = evbuffer_new();
    evbuffer_add(ours, "x", 1); /* not at the start of a buffer */
    evbuffer_add(theirs, "x", 1);
    int our_return = evbuffer_add_printf(ours, "%s: %s\r\n", name, value);
    int their_return = their_printf(theirs, "%s: %s\r\n", name, value);
    ck_assert_int_eq(our_return, their_return);
    size_t len = evbuffer_get_length(theirs);
    ck_assert_uint_eq(evbuffer_get_length(ours), len);
    ck_assert_mem_eq(evbuffer_pullup(ours, -1), evbuffer_pullup(theirs, -1), len);
    evbuffer_free(ours);
    evbuffer_free(theirs);
}

START_TEST(header_lines_as_printf_writes_them)
{
    char *long_value = malloc(20001);
    memset(long_value, 'v', 20000);
    long_value[20000] = '\0';
    assert_header_same("Content-Type", "application/json");
    assert_header_same("", "");
    assert_header_same("X", long_value);
    assert_header_same(long_value, "y");
    free(long_value);
}
END_TEST

static void assert_status_same(int major, int minor, int code, const char *reason)
{
    struct evbuffer *ours = evbuffer_new(), *theirs = evbuffer_new();
    int our_return = evbuffer_add_printf(ours, "HTTP/%d.%d %d %s\r\n", major, minor, code, reason);
    char expected[512];
    int their_return =
        snprintf(expected, sizeof expected, "HTTP/%d.%d %d %s\r\n", major, minor, code, reason);
    evbuffer_add(theirs, expected, (size_t)their_return);
    ck_assert_int_eq(our_return, their_return);
    ck_assert_uint_eq(evbuffer_get_length(ours), (size_t)their_return);
    ck_assert_mem_eq(evbuffer_pullup(ours, -1), expected, (size_t)their_return);
    ck_assert_int_eq(head_format_status_line(theirs, major, minor, code, reason), their_return);
    evbuffer_free(ours);
    evbuffer_free(theirs);
}

START_TEST(status_lines_as_printf_writes_them)
{
    assert_status_same(1, 1, 200, "OK");
    assert_status_same(1, 0, 304, "Not Modified");
    assert_status_same(1, 1, 429, "");
    assert_status_same(0, 9, 0, "Zero");
    assert_status_same(-1, 2147483647, -2147483647 - 1, "extremes");
    assert_status_same(10, 12, 599, "A Longer Reason Phrase Than Most");
}
END_TEST

START_TEST(other_formats_go_to_libevent)
{
    struct evbuffer *buf = evbuffer_new();
    ck_assert_int_eq(evbuffer_add_printf(buf, "%d-%s|%5.2f", 42, "x", 3.14159), 10);
    ck_assert_mem_eq(evbuffer_pullup(buf, -1), "42-x| 3.14", 10);
    evbuffer_drain(buf, evbuffer_get_length(buf));
    /* a NULL string is printf's business, as before */
    const char *volatile nothing = NULL; /* not a constant the compiler sees */
    char expected[64];
    int n = snprintf(expected, sizeof expected, "%s: %s\r\n", "Name", nothing);
    ck_assert_int_eq(evbuffer_add_printf(buf, "%s: %s\r\n", "Name", nothing), n);
    ck_assert_mem_eq(evbuffer_pullup(buf, -1), expected, (size_t)n);
    evbuffer_free(buf);
}
END_TEST

/* The attached block goes out in place of its header's line, once; the
 * other lines as they are. Headers are written as evhttp writes them. */
START_TEST(an_attached_block_stands_for_its_header_once)
{
    static const char block[] = "ETag: \"1\"\r\nVary: Accept-Encoding\r\n";
    struct evkeyvalq headers;
    headers.tqh_first = NULL; /* TAILQ_INIT, which libevent does not export */
    headers.tqh_last = &headers.tqh_first;
    evhttp_add_header(&headers, "Content-Type", "text/css");
    ck_assert_int_eq(head_format_attach_block(&headers, block, strlen(block)), 0);
    evhttp_add_header(&headers, "Date", "now");
    struct evbuffer *buf = evbuffer_new();
    for (int pass = 0; pass < 2; pass++)
        for (struct evkeyval *h = headers.tqh_first; h != NULL; h = h->next.tqe_next)
            evbuffer_add_printf(buf, "%s: %s\r\n", h->key, h->value);
    static const char want[] = "Content-Type: text/css\r\n"
                               "ETag: \"1\"\r\nVary: Accept-Encoding\r\n"
                               "Date: now\r\n"
                               "Content-Type: text/css\r\n" /* the second pass: consumed */
                               "Date: now\r\n";
    size_t len = evbuffer_get_length(buf);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert_mem_eq(evbuffer_pullup(buf, -1), want, len);
    evbuffer_free(buf);
    evhttp_clear_headers(&headers);
}
END_TEST

START_TEST(date_of_now_as_libevent_formats_it)
{
    date_fn libevent_date = (date_fn)dlsym(RTLD_NEXT, "evutil_date_rfc1123");
    ck_assert_ptr_nonnull(libevent_date);
    ck_assert(head_format_prepare());
    for (int attempt = 0; attempt < 3; attempt++) {
        time_t before = time(NULL);
        char ours[HEAD_FORMAT_DATE_MAX], again[HEAD_FORMAT_DATE_MAX], theirs[HEAD_FORMAT_DATE_MAX];
        int our_len = evutil_date_rfc1123(ours, sizeof ours, NULL);
        int again_len = evutil_date_rfc1123(again, sizeof again, NULL); /* from the cache */
        int their_len = libevent_date(theirs, sizeof theirs, NULL);
        if (time(NULL) != before)
            continue; /* the second turned between the calls */
        ck_assert_int_eq(our_len, their_len);
        ck_assert_str_eq(ours, theirs);
        ck_assert_int_eq(again_len, their_len);
        ck_assert_str_eq(again, theirs);
        /* cut short as snprintf cuts: the length it wanted, NUL at the end */
        char small[8];
        ck_assert_int_eq(evutil_date_rfc1123(small, sizeof small, NULL), their_len);
        ck_assert_uint_eq(strlen(small), sizeof small - 1);
        ck_assert_mem_eq(small, theirs, sizeof small - 1); /* "Wed, 25": the day's */
        return;
    }
    ck_abort_msg("the clock turned a second during each of three attempts");
}
END_TEST

START_TEST(date_of_a_given_time_is_libevent_s)
{
    date_fn libevent_date = (date_fn)dlsym(RTLD_NEXT, "evutil_date_rfc1123");
    time_t t = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
    struct tm tm;
    gmtime_r(&t, &tm);
    char ours[HEAD_FORMAT_DATE_MAX], theirs[HEAD_FORMAT_DATE_MAX];
    ck_assert_int_eq(evutil_date_rfc1123(ours, sizeof ours, &tm),
                     libevent_date(theirs, sizeof theirs, &tm));
    ck_assert_str_eq(ours, "Sun, 06 Nov 1994 08:49:37 GMT");
    ck_assert_str_eq(ours, theirs);
}
END_TEST

Suite *suite_head_format(void)
{
    Suite *s = suite_create("head_format");
    TCase *tc = tcase_create("head_format");
    tcase_add_test(tc, header_lines_as_printf_writes_them);
    tcase_add_test(tc, status_lines_as_printf_writes_them);
    tcase_add_test(tc, other_formats_go_to_libevent);
    tcase_add_test(tc, an_attached_block_stands_for_its_header_once);
    tcase_add_test(tc, date_of_now_as_libevent_formats_it);
    tcase_add_test(tc, date_of_a_given_time_is_libevent_s);
    suite_add_tcase(s, tc);
    return s;
}
