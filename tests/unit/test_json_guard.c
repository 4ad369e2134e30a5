/*
 * test_json_guard.c - what json-c leaves out: UTF-8, surrogates, NUL,
 * number ranges, the member bound, duplicate names; the UTF-8-safe cut;
 * and the request-head framing rules of intake.c.
 */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <json-c/json.h>
#include <string.h>
#include <sys/queue.h>

#include "http/intake.h"
#include "http/json_guard.h"
#include "suites.h"

static enum json_guard_verdict scan(const char *text, size_t max)
{
    size_t members;
    return json_guard_scan(text, strlen(text), max, &members);
}

START_TEST(accepts_ordinary_json)
{
    size_t members;
    const char *t = "{\"a\": \"h\\u00e9 \\ud83d\\ude00 caf\xc3\xa9\", \"b\": [1, -2, 3.5e10, "
                    "9223372036854775807, -9223372036854775808], \"c\": {\"d\": \"x:y\"}}";
    ck_assert_int_eq(json_guard_scan(t, strlen(t), 0, &members), JSON_GUARD_OK);
    ck_assert_uint_eq(members, 4); /* the ':' inside "x:y" is not a member */
    ck_assert_int_eq(scan("\"\\\\u0000\"", 0), JSON_GUARD_OK); /* an escaped backslash */
    ck_assert_int_eq(scan("1e-400", 0), JSON_GUARD_OK);        /* underflow is zero */
}
END_TEST

START_TEST(refuses_what_json_c_accepts)
{
    ck_assert_int_eq(scan("{\"a\": \"\xff\xfe\"}", 0), JSON_GUARD_BAD_UTF8);
    ck_assert_int_eq(scan("{\"a\": \"\xc0\xaf\"}", 0), JSON_GUARD_BAD_UTF8);     /* overlong */
    ck_assert_int_eq(scan("{\"a\": \"\xed\xa0\x80\"}", 0), JSON_GUARD_BAD_UTF8); /* surrogate */
    ck_assert_int_eq(scan("{\"a\": \"\xe2\x82\"}", 0), JSON_GUARD_BAD_UTF8);     /* cut short */
    ck_assert_int_eq(scan("{\"a\": \"\\ud800\"}", 0), JSON_GUARD_LONE_SURROGATE);
    ck_assert_int_eq(scan("{\"a\": \"\\udc00\\ud800\"}", 0), JSON_GUARD_LONE_SURROGATE);
    ck_assert_int_eq(scan("{\"a\": \"\\ud800\\u0041\"}", 0), JSON_GUARD_LONE_SURROGATE);
    ck_assert_int_eq(scan("{\"slug\\u0000x\": 1}", 0), JSON_GUARD_NUL);
    ck_assert_int_eq(scan("{\"a\": \"nul-demo\\u0000<script>\"}", 0), JSON_GUARD_NUL);
    size_t members;
    ck_assert_int_eq(json_guard_scan("{\"a\": \"x\0\"}", 10, 0, &members), JSON_GUARD_NUL_BYTE);
    ck_assert_int_eq(json_guard_scan("\0\1", 2, 0, &members), JSON_GUARD_NUL_BYTE);
    ck_assert(json_guard_not_json(JSON_GUARD_NUL_BYTE));
    ck_assert(json_guard_not_json(JSON_GUARD_BAD_UTF8));
    ck_assert(!json_guard_not_json(JSON_GUARD_NUL));
    ck_assert(!json_guard_not_json(JSON_GUARD_NUMBER_RANGE));
    ck_assert_int_eq(scan("123456789012345678901234567890", 0), JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(scan("[9223372036854775808]", 0), JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(scan("[-9223372036854775809]", 0), JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(scan("[1e400]", 0), JSON_GUARD_NUMBER_RANGE);
    /* found by the fuzz targets: NaN and Infinity, and overflows too long
     * for the strtod buffer */
    ck_assert_int_eq(scan("{\"a\": NaN}", 0), JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(scan("[nan]", 0), JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(scan("[-Infinity]", 0), JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(scan("[infinity]", 0), JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(
        scan("[5e3222222222222222222222222222222222222222222222222222222222222222222]", 0),
        JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(
        scan("[1000000000000000000000000000000000000000000000000000000000000000.0e300]", 0),
        JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(
        scan("[-0.0000000000000000000000000000000000000000000000000000000000001e370]", 0),
        JSON_GUARD_NUMBER_RANGE);
    ck_assert_int_eq(
        scan("[0.00000000000000000000000000000000000000000000000000000000000000001e300]", 0),
        JSON_GUARD_OK);
    ck_assert_int_eq(
        scan("[1.00000000000000000000000000000000000000000000000000000000000000001e-9999]", 0),
        JSON_GUARD_OK);
    ck_assert_int_eq(scan("[null, true, false]", 0), JSON_GUARD_OK);
    ck_assert_int_eq(scan("{\"a\":1,\"b\":2,\"c\":3}", 2), JSON_GUARD_TOO_MANY);
    ck_assert_int_eq(scan("{\"a\":1,\"b\":2}", 2), JSON_GUARD_OK);
}
END_TEST

START_TEST(duplicate_names_are_found)
{
    const char *texts[] = {"{\"a\": 1, \"a\": 2}", "{\"x\": {\"a\": {\"b\": 1}, \"a\": 2}}",
                           "[{\"k\": 1}, {\"k\": 2, \"k\": 3}]"};
    bool dup[] = {true, true, true};
    for (size_t i = 0; i < 3; i++) {
        size_t members;
        ck_assert_int_eq(json_guard_scan(texts[i], strlen(texts[i]), 0, &members), JSON_GUARD_OK);
        struct json_object *o = json_tokener_parse(texts[i]);
        ck_assert_ptr_nonnull(o);
        ck_assert_int_eq(json_guard_members_kept(o, members), !dup[i]);
        json_object_put(o);
    }
    const char *fine = "{\"a\": {\"a\": 1}, \"b\": [{\"a\": 2}]}";
    size_t members;
    json_guard_scan(fine, strlen(fine), 0, &members);
    struct json_object *o = json_tokener_parse(fine);
    ck_assert(json_guard_members_kept(o, members));
    json_object_put(o);
}
END_TEST

static enum json_guard_verdict scan_elements(const char *text, size_t max_elements)
{
    size_t members;
    return json_guard_scan_bounded(text, strlen(text), 0, max_elements, &members);
}

START_TEST(array_elements_are_bounded)
{
    ck_assert_int_eq(scan_elements("[1, 2, 3]", 3), JSON_GUARD_OK);
    ck_assert_int_eq(scan_elements("[1, 2, 3]", 2), JSON_GUARD_TOO_MANY_ELEMENTS);
    ck_assert_int_eq(scan_elements("[ ]", 1), JSON_GUARD_OK);
    ck_assert_int_eq(scan_elements("[[]]", 1), JSON_GUARD_OK);
    ck_assert_int_eq(scan_elements("[[], []]", 2), JSON_GUARD_OK);
    ck_assert_int_eq(scan_elements("[[], []]", 1), JSON_GUARD_TOO_MANY_ELEMENTS);
    /* commas of objects and inside strings are no elements */
    ck_assert_int_eq(scan_elements("{\"a\": 1, \"b\": 2, \"c\": \"[1,2,3]\"}", 1), JSON_GUARD_OK);
    ck_assert_int_eq(scan_elements("[{\"a\": 1, \"b\": 2}, \"x,y\"]", 2), JSON_GUARD_OK);
    ck_assert_int_eq(scan_elements("{\"a\": [\"x\", \"y\"], \"b\": [1]}", 3), JSON_GUARD_OK);
    ck_assert_int_eq(scan_elements("{\"a\": [\"x\", \"y\"], \"b\": [1]}", 2),
                     JSON_GUARD_TOO_MANY_ELEMENTS);
    ck_assert_int_eq(scan_elements("[1, 2, 3]", 0), JSON_GUARD_OK); /* 0: no bound */
    char deep[2 * 1000 + 1]; /* too deep is the parser's verdict, not too many */
    memset(deep, '[', 1000);
    memset(deep + 1000, ']', 1000);
    deep[2000] = '\0';
    ck_assert_int_eq(scan_elements(deep, 100), JSON_GUARD_OK);
    ck_assert_str_eq(json_guard_message(JSON_GUARD_TOO_MANY_ELEMENTS),
                     "the request body has too many array elements");
}
END_TEST

START_TEST(utf8_cut_keeps_characters_whole)
{
    ck_assert_uint_eq(json_guard_utf8_cut("abc", 120), 3);
    ck_assert_uint_eq(json_guard_utf8_cut("ab\xc3\xa9", 3), 2);
    ck_assert_uint_eq(json_guard_utf8_cut("ab\xc3\xa9", 4), 4);
    ck_assert_uint_eq(json_guard_utf8_cut("\xf0\x9f\x98\x80z", 3), 0);
    ck_assert(json_guard_utf8_valid("caf\xc3\xa9", 5));
    ck_assert(!json_guard_utf8_valid("\xff", 1));
}
END_TEST

static const char *framing(const char *const *pairs, int major, int minor, int *status)
{
    static struct evkeyvalq headers;
    static bool initialised;
    if (initialised)
        evhttp_clear_headers(&headers);
    TAILQ_INIT(&headers);
    initialised = true;
    for (size_t i = 0; pairs[i] != NULL; i += 2)
        evhttp_add_header(&headers, pairs[i], pairs[i + 1]);
    return intake_framing_check(&headers, major, minor, status);
}

START_TEST(framing_rules)
{
    int status = 0;
    const char *ok[] = {"Host", "x", "Content-Length", "5", NULL};
    ck_assert_ptr_null(framing(ok, 1, 1, &status));
    const char *same[] = {"Host", "x", "Content-Length", "5", "Content-Length", "5", NULL};
    ck_assert_ptr_null(framing(same, 1, 1, &status));
    const char *chunked[] = {"Host", "x", "Transfer-Encoding", "Chunked", NULL};
    ck_assert_ptr_null(framing(chunked, 1, 1, &status));
    const char *http10[] = {NULL};
    ck_assert_ptr_null(framing(http10, 1, 0, &status));

    const char *two_lengths[] = {"Host", "x", "Content-Length", "0", "Content-Length", "38", NULL};
    ck_assert_ptr_nonnull(framing(two_lengths, 1, 1, &status));
    ck_assert_int_eq(status, 400);
    const char *gzip[] = {"Host", "x", "Transfer-Encoding", "gzip", NULL};
    ck_assert_ptr_nonnull(framing(gzip, 1, 1, &status));
    const char *gzip_chunked[] = {"Host", "x", "Transfer-Encoding", "gzip, chunked", NULL};
    ck_assert_ptr_nonnull(framing(gzip_chunked, 1, 1, &status));
    const char *two_codings[] = {
        "Host", "x", "Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked", NULL};
    ck_assert_ptr_nonnull(framing(two_codings, 1, 1, &status));
    const char *both[] = {"Host", "x", "Transfer-Encoding", "chunked", "Content-Length", "3", NULL};
    ck_assert_ptr_nonnull(framing(both, 1, 1, &status));
    const char *no_host[] = {"Content-Length", "3", NULL};
    ck_assert_ptr_nonnull(framing(no_host, 1, 1, &status));
    const char *two_hosts[] = {"Host", "a", "Host", "b", NULL};
    ck_assert_ptr_nonnull(framing(two_hosts, 1, 0, &status));
    ck_assert_ptr_nonnull(framing(ok, 2, 0, &status));
    ck_assert_int_eq(status, 505);
    const char *none[] = {NULL};
    framing(none, 1, 1, &status); /* frees the last list */
}
END_TEST

Suite *suite_json_guard(void)
{
    Suite *s = suite_create("json_guard");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, accepts_ordinary_json);
    tcase_add_test(tc, refuses_what_json_c_accepts);
    tcase_add_test(tc, duplicate_names_are_found);
    tcase_add_test(tc, utf8_cut_keeps_characters_whole);
    tcase_add_test(tc, array_elements_are_bounded);
    tcase_add_test(tc, framing_rules);
    suite_add_tcase(s, tc);
    return s;
}
