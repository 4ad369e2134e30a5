/*
 * test_intake.c - the strict framing checks of intake.c (RFC 9110 tokens,
 * Content-Length digits, Host values, RFC 9112 chunk-size lines) and the
 * start-up proof of libevent_replacements.c, which this test binary passes
 * too: it defines the replacements as ensignd does (it links the same
 * library) and libevent is the system's shared object.
 */
#include <check.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <string.h>
#include <sys/queue.h>

#include "http/intake.h"
#include "http/libevent_replacements.h"
#include "suites.h"

START_TEST(field_names_are_tokens)
{
    const char *good[] = {"Host", "Content-Length", "X-API-Key", "a", "!#$%&'*+-.^_`|~09Az"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(intake_token_ok(good[i]), "%s", good[i]);
    const char *bad[] = {"",
                         "Content-Length ",
                         "Content-Length\t",
                         "X Forwarded",
                         "X(a)",
                         "a/b",
                         "a@b",
                         "a\"b",
                         "a\x7f",
                         "a\x01",
                         "\xc3\xa9",
                         "a:b",
                         "[a]",
                         "a,b",
                         "a;b",
                         "a=b",
                         "{x}",
                         "a?b",
                         "a\\b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!intake_token_ok(bad[i]), "%s", bad[i]);
}
END_TEST

START_TEST(content_length_is_digits)
{
    ck_assert(intake_digits_ok("0"));
    ck_assert(intake_digits_ok("38"));
    ck_assert(intake_digits_ok("00012"));
    const char *bad[] = {"", "+5", "-5", " 5", "5 ", "0x2", "5,5", "5 5", "1e3", "\t5", "five"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!intake_digits_ok(bad[i]), "%s", bad[i]);
}
END_TEST

START_TEST(host_values)
{
    const char *good[] = {"",          "example.com",           "example.com:8080", "[::1]:80",
                          "127.0.0.1", "xn--bcher-kva.example", "a_b~c%20"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(intake_host_ok(good[i]), "%s", good[i]);
    const char *bad[] = {"a b", "a\tb", "a/b", "a@b", "a\rb", "a?b", "a#b", "a\"b", "\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!intake_host_ok(bad[i]), "%s", bad[i]);
}
END_TEST

/* line given with its length (may hold a NUL) */
#define LINE_OK(text) intake_chunk_size_line_ok((text), sizeof(text) - 1)

START_TEST(chunk_size_lines)
{
    ck_assert(LINE_OK("0"));
    ck_assert(LINE_OK("2"));
    ck_assert(LINE_OK("7fFF"));
    ck_assert(LINE_OK("20;ext=1"));
    ck_assert(LINE_OK("20 ; a=\"b c\""));
    ck_assert(LINE_OK("20\t;a"));
    ck_assert(LINE_OK("5 "));
    ck_assert(!LINE_OK(""));
    ck_assert(!LINE_OK("0x2"));
    ck_assert(!LINE_OK("+2"));
    ck_assert(!LINE_OK("-2"));
    ck_assert(!LINE_OK(" 2"));
    ck_assert(!LINE_OK("\t2"));
    ck_assert(!LINE_OK("2\0"));
    ck_assert(!LINE_OK("2\0;a=b"));
    ck_assert(!LINE_OK("zz"));
    ck_assert(!LINE_OK("5 junk"));
    ck_assert(!LINE_OK("5;\x01"));
    ck_assert(!LINE_OK("5;a\x7f"));
}
END_TEST

static const char *framing(const char *const *pairs, int *status)
{
    static struct evkeyvalq headers;
    static bool initialised;
    if (initialised)
        evhttp_clear_headers(&headers);
    TAILQ_INIT(&headers);
    initialised = true;
    for (size_t i = 0; pairs[i] != NULL; i += 2)
        evhttp_add_header(&headers, pairs[i], pairs[i + 1]);
    return intake_framing_check(&headers, 1, 1, status);
}

START_TEST(framing_refuses_what_smuggles)
{
    int status = 0;
    const char *ok[] = {"Host", "a:80", "Content-Length", "12", "X-A", "v\tw", NULL};
    ck_assert_ptr_null(framing(ok, &status));
    const char *spaced_name[] = {"Host", "a", "Content-Length ", "5", NULL};
    ck_assert_ptr_nonnull(framing(spaced_name, &status));
    ck_assert_int_eq(status, 400);
    const char *te_spaced[] = {"Host", "a", "Transfer-Encoding ", "chunked", "Content-Length",
                               "5",    NULL};
    ck_assert_ptr_nonnull(framing(te_spaced, &status));
    const char *plus[] = {"Host", "a", "Content-Length", "+5", NULL};
    ck_assert_ptr_nonnull(framing(plus, &status));
    const char *hex[] = {"Host", "a", "Content-Length", "0x2", NULL};
    ck_assert_ptr_nonnull(framing(hex, &status));
    const char *spaced_host[] = {"Host", "a b", NULL};
    ck_assert_ptr_nonnull(framing(spaced_host, &status));
    const char *none[] = {NULL};
    framing(none, &status); /* frees the last list */
}
END_TEST

START_TEST(the_replacements_are_proven_in_effect)
{
    char err[512] = "";
    ck_assert_msg(libevent_replacements_prove(err, sizeof err) == 0, "%s", err);
    for (int r = 0; r < REPLACEMENTS; r++)
        ck_assert_msg(libevent_replacement_seen[r], "%s", libevent_replacement_name(r));
    ck_assert_str_eq(libevent_replacement_name(REPLACEMENT_EVHTTP_PARSE_HEADERS),
                     "evhttp_parse_headers_");
}
END_TEST

Suite *suite_intake(void)
{
    Suite *s = suite_create("intake");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, field_names_are_tokens);
    tcase_add_test(tc, content_length_is_digits);
    tcase_add_test(tc, host_values);
    tcase_add_test(tc, chunk_size_lines);
    tcase_add_test(tc, framing_refuses_what_smuggles);
    tcase_add_test(tc, the_replacements_are_proven_in_effect);
    suite_add_tcase(s, tc);
    return s;
}
