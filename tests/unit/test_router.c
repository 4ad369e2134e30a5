/*
 * test_router.c - Check suite for router.c: literal and parameter matches,
 * percent-decoding, slashes, 404, 405 with the allowed set, HEAD on GET
 * routes, parameter bounds and the Allow header text; the route index
 * answers as the table does.
 */
#include <stdio.h>
#include <string.h>

#include "http/router.h"
#include "suites.h"

static const struct route table[] = {
    {METHOD_GET, "/v1/healthz", NULL, "health", ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
    {METHOD_GET,
     "/v1/orgs/{org}/flags",
     NULL,
     "list",
     ROUTE_AUTH_ACCESS_TOKEN,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_POST,
     "/v1/orgs/{org}/flags",
     NULL,
     "create",
     ROUTE_AUTH_ACCESS_TOKEN,
     NULL,
     NULL,
     201,
     {0},
     NULL,
     NULL},
    {METHOD_GET,
     "/v1/orgs/{org}/flags/{key}",
     NULL,
     "get",
     ROUTE_AUTH_ACCESS_TOKEN,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_POST,
     "/ofrep/v1/evaluate/flags/{key}",
     NULL,
     "eval",
     ROUTE_AUTH_SDK_KEY,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_OPTIONS,
     "/ofrep/v1/evaluate/flags/{key}",
     NULL,
     "cors",
     ROUTE_AUTH_NONE,
     NULL,
     NULL,
     204,
     {0},
     NULL,
     NULL},
    {METHOD_DELETE, "/a/{x}", NULL, "delete a", ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
    {METHOD_PUT, "/a/b", NULL, "put a b", ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
    {METHOD_GET, "/", NULL, "root", ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
};

#define TABLE_LEN (sizeof table / sizeof table[0])

static struct route_match match;

static enum route_result route(unsigned method, const char *path)
{
    memset(&match, 0xa5, sizeof match);
    return router_match(table, TABLE_LEN, method, path, &match);
}

START_TEST(literal_match)
{
    ck_assert_int_eq(route(METHOD_GET, "/v1/healthz"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[0]);
    ck_assert_uint_eq(match.nparams, 0);
    ck_assert_int_eq(route(METHOD_GET, "/"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[8]);
}
END_TEST

START_TEST(literal_is_case_sensitive)
{
    ck_assert_int_eq(route(METHOD_GET, "/v1/Healthz"), ROUTE_NOT_FOUND);
    ck_assert_int_eq(route(METHOD_GET, "/V1/healthz"), ROUTE_NOT_FOUND);
    ck_assert_int_eq(route(METHOD_GET, "/v1/healthzz"), ROUTE_NOT_FOUND);
    ck_assert_int_eq(route(METHOD_GET, "/v1"), ROUTE_NOT_FOUND);
}
END_TEST

START_TEST(single_param)
{
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs/acme/flags"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[1]);
    ck_assert_uint_eq(match.nparams, 1);
    ck_assert_str_eq(route_param(&match, "org"), "acme");
    ck_assert_ptr_null(route_param(&match, "key"));
    ck_assert_ptr_null(route_param(&match, "or"));
}
END_TEST

START_TEST(multiple_params)
{
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs/acme/flags/new-checkout"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[3]);
    ck_assert_uint_eq(match.nparams, 2);
    ck_assert_str_eq(route_param(&match, "org"), "acme");
    ck_assert_str_eq(route_param(&match, "key"), "new-checkout");
    ck_assert_uint_eq(match.params[0].name_len, 3);
    ck_assert_int_eq(memcmp(match.params[0].name, "org", 3), 0);
}
END_TEST

START_TEST(param_percent_decoded)
{
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs/a%20b%2Fc%2f/flags/%41%zz%4"), ROUTE_FOUND);
    ck_assert_str_eq(route_param(&match, "org"), "a b/c/");
    ck_assert_str_eq(route_param(&match, "key"), "A%zz%4");
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs/%C3%A9t%C3%A9/flags"), ROUTE_FOUND);
    ck_assert_str_eq(route_param(&match, "org"), "\xc3\xa9t\xc3\xa9");
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs/+x+/flags"), ROUTE_FOUND);
    ck_assert_str_eq(route_param(&match, "org"), "+x+");
}
END_TEST

START_TEST(param_decoding_to_nul_does_not_match)
{
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs/a%00b/flags"), ROUTE_NOT_FOUND);
    ck_assert_ptr_null(match.route);
}
END_TEST

START_TEST(empty_param_does_not_match)
{
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs//flags"), ROUTE_NOT_FOUND);
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs/acme/flags/"), ROUTE_NOT_FOUND);
}
END_TEST

START_TEST(trailing_slash_is_not_ignored)
{
    ck_assert_int_eq(route(METHOD_GET, "/v1/healthz/"), ROUTE_NOT_FOUND);
    ck_assert_int_eq(route(METHOD_GET, "/v1/orgs/acme/flags/"), ROUTE_NOT_FOUND);
}
END_TEST

START_TEST(leading_slashes_count_as_one)
{
    ck_assert_int_eq(route(METHOD_GET, "//v1/healthz"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[0]);
    ck_assert_int_eq(route(METHOD_POST, "///ofrep/v1/evaluate/flags/x"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[4]);
    ck_assert_str_eq(route_param(&match, "key"), "x");
    ck_assert_int_eq(route(METHOD_GET, "//"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[8]);
    /* Only leading runs collapse. */
    ck_assert_int_eq(route(METHOD_GET, "/v1//healthz"), ROUTE_NOT_FOUND);
}
END_TEST

START_TEST(not_found)
{
    ck_assert_int_eq(route(METHOD_GET, "/nope"), ROUTE_NOT_FOUND);
    ck_assert_ptr_null(match.route);
    ck_assert_uint_eq(match.nparams, 0);
    ck_assert_uint_eq(match.allowed, 0);
    ck_assert_int_eq(route(METHOD_GET, ""), ROUTE_NOT_FOUND);
    ck_assert_int_eq(route(METHOD_GET, "v1/healthz"), ROUTE_NOT_FOUND);
    ck_assert_int_eq(router_match(table, TABLE_LEN, METHOD_GET, NULL, &match), ROUTE_NOT_FOUND);
    ck_assert_int_eq(router_match(table, 0, METHOD_GET, "/v1/healthz", &match), ROUTE_NOT_FOUND);
}
END_TEST

START_TEST(method_not_allowed_lists_path_methods)
{
    ck_assert_int_eq(route(METHOD_DELETE, "/v1/orgs/acme/flags"), ROUTE_METHOD_NOT_ALLOWED);
    ck_assert_ptr_null(match.route);
    ck_assert_uint_eq(match.nparams, 0);
    ck_assert_uint_eq(match.allowed, METHOD_GET | METHOD_HEAD | METHOD_POST);
    ck_assert_int_eq(route(METHOD_GET, "/ofrep/v1/evaluate/flags/k"), ROUTE_METHOD_NOT_ALLOWED);
    ck_assert_uint_eq(match.allowed, METHOD_POST | METHOD_OPTIONS);
}
END_TEST

START_TEST(allowed_is_union_over_patterns)
{
    /* "/a/b" matches both "/a/{x}" (DELETE) and "/a/b" (PUT). */
    ck_assert_int_eq(route(METHOD_GET, "/a/b"), ROUTE_METHOD_NOT_ALLOWED);
    ck_assert_uint_eq(match.allowed, METHOD_DELETE | METHOD_PUT);
    ck_assert_int_eq(route(METHOD_PUT, "/a/b"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[7]);
    ck_assert_int_eq(route(METHOD_DELETE, "/a/b"), ROUTE_FOUND);
    ck_assert_str_eq(route_param(&match, "x"), "b");
}
END_TEST

START_TEST(head_matches_get)
{
    ck_assert_int_eq(route(METHOD_HEAD, "/v1/healthz"), ROUTE_FOUND);
    ck_assert_ptr_eq(match.route, &table[0]);
    ck_assert_int_eq(route(METHOD_HEAD, "/v1/orgs/o/flags/k"), ROUTE_FOUND);
    ck_assert_str_eq(route_param(&match, "key"), "k");
    ck_assert_int_eq(route(METHOD_HEAD, "/ofrep/v1/evaluate/flags/k"), ROUTE_METHOD_NOT_ALLOWED);
}
END_TEST

START_TEST(other_method_never_matches)
{
    ck_assert_int_eq(route(METHOD_OTHER, "/v1/healthz"), ROUTE_METHOD_NOT_ALLOWED);
    ck_assert_uint_eq(match.allowed, METHOD_GET | METHOD_HEAD);
    ck_assert_int_eq(route(METHOD_OTHER, "/nope"), ROUTE_NOT_FOUND);
}
END_TEST

static void fill(char *out, size_t len, char c)
{
    memset(out, c, len);
    out[len] = '\0';
}

START_TEST(param_too_long_does_not_match)
{
    static char path[4 * ROUTE_PARAM_BYTES];
    static char value[2 * ROUTE_PARAM_BYTES];
    fill(value, ROUTE_PARAM_BYTES - 1, 'x');
    snprintf(path, sizeof path, "/v1/orgs/%s/flags", value);
    ck_assert_int_eq(route(METHOD_GET, path), ROUTE_FOUND);
    ck_assert_uint_eq(strlen(route_param(&match, "org")), ROUTE_PARAM_BYTES - 1);
    fill(value, ROUTE_PARAM_BYTES, 'x');
    snprintf(path, sizeof path, "/v1/orgs/%s/flags", value);
    ck_assert_int_eq(route(METHOD_GET, path), ROUTE_NOT_FOUND);
}
END_TEST

START_TEST(params_share_the_buffer)
{
    static char path[4 * ROUTE_PARAM_BYTES];
    static char org[ROUTE_PARAM_BYTES];
    /* org takes 1000 bytes with its NUL, leaving 24 for key and its NUL. */
    fill(org, 999, 'o');
    snprintf(path, sizeof path, "/v1/orgs/%s/flags/%s", org, "kkkkkkkkkkkkkkkkkkkkkkk");
    ck_assert_int_eq(route(METHOD_GET, path), ROUTE_FOUND);
    ck_assert_str_eq(route_param(&match, "key"), "kkkkkkkkkkkkkkkkkkkkkkk");
    snprintf(path, sizeof path, "/v1/orgs/%s/flags/%s", org, "kkkkkkkkkkkkkkkkkkkkkkkk");
    ck_assert_int_eq(route(METHOD_GET, path), ROUTE_NOT_FOUND);
    /* An encoded value counts by its decoded length. */
    snprintf(path, sizeof path, "/v1/orgs/%s/flags/%s", org,
             "%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B%6B");
    ck_assert_int_eq(route(METHOD_GET, path), ROUTE_FOUND);
    ck_assert_str_eq(route_param(&match, "key"), "kkkkkkkkkkkkkkkkkkkkkkk");
}
END_TEST

START_TEST(too_many_params_do_not_match)
{
    static const struct route many[] = {
        {METHOD_GET,
         "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}",
         NULL,
         NULL,
         ROUTE_AUTH_NONE,
         NULL,
         NULL,
         0,
         {0},
         NULL,
         NULL},
        {METHOD_GET,
         "/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}",
         NULL,
         NULL,
         ROUTE_AUTH_NONE,
         NULL,
         NULL,
         0,
         {0},
         NULL,
         NULL},
    };
    ck_assert_int_eq(router_match(many, 2, METHOD_GET, "/1/2/3/4/5/6/7/8/9", &match),
                     ROUTE_NOT_FOUND);
    ck_assert_int_eq(router_match(many, 2, METHOD_GET, "/1/2/3/4/5/6/7/8", &match), ROUTE_FOUND);
    ck_assert_uint_eq(match.nparams, ROUTE_MAX_PARAMS);
    ck_assert_str_eq(route_param(&match, "h"), "8");
}
END_TEST

START_TEST(allow_header_text)
{
    char out[128];
    router_allow_header(METHOD_OPTIONS | METHOD_POST, out, sizeof out);
    ck_assert_str_eq(out, "POST, OPTIONS");
    router_allow_header(0x7f, out, sizeof out);
    ck_assert_str_eq(out, "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS");
    router_allow_header(METHOD_DELETE | METHOD_HEAD | METHOD_GET, out, sizeof out);
    ck_assert_str_eq(out, "GET, HEAD, DELETE");
    router_allow_header(0, out, sizeof out);
    ck_assert_str_eq(out, "");
    router_allow_header(METHOD_OTHER | METHOD_PUT, out, sizeof out);
    ck_assert_str_eq(out, "PUT");
}
END_TEST

START_TEST(allow_header_truncates_at_a_name)
{
    char out[12];
    router_allow_header(METHOD_GET | METHOD_HEAD | METHOD_POST, out, sizeof out);
    ck_assert_str_eq(out, "GET, HEAD");
    router_allow_header(METHOD_GET, out, 3);
    ck_assert_str_eq(out, "");
    router_allow_header(METHOD_GET, out, 4);
    ck_assert_str_eq(out, "GET");
}
END_TEST

START_TEST(method_names)
{
    ck_assert_str_eq(router_method_name(METHOD_GET), "GET");
    ck_assert_str_eq(router_method_name(METHOD_PATCH), "PATCH");
    ck_assert_str_eq(router_method_name(METHOD_OPTIONS), "OPTIONS");
    ck_assert_str_eq(router_method_name(METHOD_OTHER), "OTHER");
    ck_assert_str_eq(router_method_name(METHOD_GET | METHOD_POST), "OTHER");
    ck_assert_str_eq(router_method_name(0), "OTHER");
}
END_TEST

#define ROW(m, pattern)                                                                            \
    {                                                                                              \
        m, pattern, NULL, pattern, ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL                 \
    }

/* Rows that begin with a parameter keep their place among the literal rows
 * of every first segment, and serve first segments no literal row has. */
START_TEST(route_index_keeps_table_order_with_parameter_rows)
{
    static const struct route mixed[] = {
        ROW(METHOD_GET, "/{any}/x"), ROW(METHOD_GET, "/a/x"),    ROW(METHOD_POST, "/a/{p}"),
        ROW(METHOD_PUT, "/{any}/y"), ROW(METHOD_GET, "/b"),      ROW(METHOD_GET, "/"),
        ROW(METHOD_GET, "relative"), ROW(METHOD_DELETE, "/a/x"),
    };
    size_t count = sizeof mixed / sizeof mixed[0];
    struct route_index *index = route_index_new(mixed, count);
    ck_assert_ptr_nonnull(index);
    static const char *const paths[] = {"/a/x",  "/a/y", "/c/x", "/c/y",     "/b", "/",
                                        "//a/x", "/a/z", "/b/x", "relative", "",   "/a"};
    static const unsigned methods[] = {METHOD_GET, METHOD_HEAD,   METHOD_POST,
                                       METHOD_PUT, METHOD_DELETE, METHOD_OTHER};
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++)
        for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
            struct route_match want, got;
            enum route_result w = router_match(mixed, count, methods[m], paths[k], &want);
            ck_assert_int_eq(route_index_match(index, methods[m], paths[k], &got), w);
            ck_assert_ptr_eq(got.route, want.route);
            ck_assert_uint_eq(got.allowed, want.allowed);
            ck_assert_uint_eq(got.nparams, want.nparams);
        }
    struct route_match m;
    ck_assert_int_eq(route_index_match(index, METHOD_GET, "/a/x", &m), ROUTE_FOUND);
    ck_assert_ptr_eq(m.route, &mixed[0]); /* the parameter row comes first in the table */
    ck_assert_int_eq(route_index_match(index, METHOD_DELETE, "/a/x", &m), ROUTE_FOUND);
    ck_assert_ptr_eq(m.route, &mixed[7]);
    route_index_free(index);
}
END_TEST

Suite *suite_router(void)
{
    Suite *s = suite_create("router");
    TCase *tc = tcase_create("match");
    tcase_add_test(tc, literal_match);
    tcase_add_test(tc, literal_is_case_sensitive);
    tcase_add_test(tc, single_param);
    tcase_add_test(tc, multiple_params);
    tcase_add_test(tc, param_percent_decoded);
    tcase_add_test(tc, param_decoding_to_nul_does_not_match);
    tcase_add_test(tc, empty_param_does_not_match);
    tcase_add_test(tc, trailing_slash_is_not_ignored);
    tcase_add_test(tc, leading_slashes_count_as_one);
    tcase_add_test(tc, not_found);
    tcase_add_test(tc, method_not_allowed_lists_path_methods);
    tcase_add_test(tc, allowed_is_union_over_patterns);
    tcase_add_test(tc, head_matches_get);
    tcase_add_test(tc, other_method_never_matches);
    tcase_add_test(tc, param_too_long_does_not_match);
    tcase_add_test(tc, params_share_the_buffer);
    tcase_add_test(tc, too_many_params_do_not_match);
    tcase_add_test(tc, route_index_keeps_table_order_with_parameter_rows);
    suite_add_tcase(s, tc);
    TCase *tc_text = tcase_create("text");
    tcase_add_test(tc_text, allow_header_text);
    tcase_add_test(tc_text, allow_header_truncates_at_a_name);
    tcase_add_test(tc_text, method_names);
    suite_add_tcase(s, tc_text);
    return s;
}
