/*
 * test_query_method.c - the rewrite of a QUERY request line into POST with
 * X-HTTP-Method-Override (src/http/query_method.c) on an input buffer, and
 * the override header check. The worker's use of it on real connections is
 * tested end to end (tests/e2e/test_accounts_pagination.py).
 */
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "http/query_method.h"
#include "suites.h"

/* The input buffer's text after adding each of chunks in turn. */
static char *after_adding(const char *const *chunks, size_t n)
{
    struct evbuffer *in = evbuffer_new();
    ck_assert_int_eq(query_method_watch(in), 0);
    for (size_t i = 0; i < n; i++)
        evbuffer_add(in, chunks[i], strlen(chunks[i]));
    size_t len = evbuffer_get_length(in);
    char *text = calloc(1, len + 1);
    evbuffer_copyout(in, text, len);
    evbuffer_free(in);
    return text;
}

static void assert_after(const char *chunk, const char *expected)
{
    const char *chunks[] = {chunk};
    char *text = after_adding(chunks, 1);
    ck_assert_str_eq(text, expected);
    free(text);
}

START_TEST(query_becomes_post_with_override)
{
    assert_after("QUERY /orgs/a/members HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
                 "POST /orgs/a/members HTTP/1.1\r\nX-HTTP-Method-Override: QUERY\r\n"
                 "Host: x\r\nContent-Length: 2\r\n\r\n{}");
    assert_after("QUERY /x HTTP/1.1\n\n", "POST /x HTTP/1.1\nX-HTTP-Method-Override: QUERY\r\n\n");
}
END_TEST

START_TEST(other_requests_are_untouched)
{
    assert_after("GET /orgs HTTP/1.1\r\n\r\n", "GET /orgs HTTP/1.1\r\n\r\n");
    assert_after("POST /orgs HTTP/1.1\r\n\r\nQUERY ", "POST /orgs HTTP/1.1\r\n\r\nQUERY ");
    assert_after("QUERYX /x HTTP/1.1\r\n\r\n", "QUERYX /x HTTP/1.1\r\n\r\n");
    /* An incomplete request line is left to evhttp. */
    assert_after("QUERY /orgs", "QUERY /orgs");
}
END_TEST

START_TEST(only_the_start_of_a_request_is_rewritten)
{
    /* A read that lands behind earlier bytes (a body, a pipelined request)
     * is never taken for a request line. */
    const char *chunks[] = {"PATCH /p HTTP/1.1\r\nContent-Length: 20\r\n\r\n",
                            "QUERY /x HTTP/1.1\r\n\r\n"};
    char *text = after_adding(chunks, 2);
    ck_assert_str_eq(text, "PATCH /p HTTP/1.1\r\nContent-Length: 20\r\n\r\n"
                           "QUERY /x HTTP/1.1\r\n\r\n");
    free(text);
}
END_TEST

START_TEST(override_header_names_query_only)
{
    ck_assert(query_method_override("QUERY"));
    ck_assert(query_method_override("query"));
    ck_assert(!query_method_override("DELETE"));
    ck_assert(!query_method_override(""));
    ck_assert(!query_method_override(NULL));
}
END_TEST

Suite *suite_query_method(void)
{
    Suite *s = suite_create("query_method");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, query_becomes_post_with_override);
    tcase_add_test(tc, other_requests_are_untouched);
    tcase_add_test(tc, only_the_start_of_a_request_is_rewritten);
    tcase_add_test(tc, override_header_names_query_only);
    suite_add_tcase(s, tc);
    return s;
}
