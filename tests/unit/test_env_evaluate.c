/*
 * test_env_evaluate.c - Check suite for src/eval/env_evaluate.c, the
 * dashboard's evaluation of an environment: a snapshot written in a
 * temporary directory, served by a worker's view, answered through the
 * internal dispatch (http_internal_request) as a route handler answers.
 * Covered: every flag in key order with the OFREP item form plus ruleId
 * (a rule's id, null otherwise, also on an error item), flags limiting the
 * answer (key order, each once, unknown keys as FLAG_NOT_FOUND after, in
 * the order asked), the invalid context 422 and the parse 400 of the /v1
 * envelope, the unknown environment 404 and the 503 without a snapshot.
 */
#include <event2/event.h>
#include <event2/http.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/env_evaluate.h"
#include "eval/eval.h"
#include "eval/served_snapshot.h"
#include "eval/shm.h"
#include "eval/snapshot_build.h"
#include "http/answer.h"
#include "http/http.h"
#include "http/server.h"
#include "scratch_dir.h"
#include "snapshot_fixture.h"
#include "suites.h"

#define ORG "10000000-0000-0000-0000-000000000001"
#define ENV "e1000000-0000-0000-0000-000000000001"
#define RULE "c1000000-0000-0000-0000-000000000001"
#define KEY "aa00000000000000000000000000000000000000000000000000000000000001"

static char dir[64];

/* The organization's part (flags z-rule, a-static, m-off, s-split) and
 * the index naming it, at generation 3. */
static void write_snapshot(void)
{
    scratch_dir_make(dir, sizeof dir, "enveval");
    struct snapshot_builder *b = snapshot_fixture_builder(3, ORG, ENV);
    snapshot_fixture_add_flag(b, ENV, "a-static", true, "{\"variant\": \"a\"}");
    snapshot_fixture_add_flag(b, ENV, "m-off", false, "{\"variant\": \"a\"}");
    snapshot_fixture_add_flag(b, ENV, "s-split", true,
                              "{\"rollout\": [{\"variant\": \"a\", \"weight\": 1}, "
                              "{\"variant\": \"b\", \"weight\": 1}]}");
    snapshot_fixture_add_flag(b, ENV, "z-rule", true, "{\"variant\": \"a\"}");
    ck_assert_int_eq(
        snapshot_builder_add_rule(
            b, ENV, "z-rule", RULE,
            "[{\"attribute\": \"country\", \"operator\": \"in\", \"values\": [\"NL\"]}]",
            "{\"variant\": \"b\"}"),
        0);
    snapshot_fixture_write(b, dir, "org-1-3.bin");
    b = snapshot_fixture_builder(3, ORG, ENV);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, KEY, ENV), 0);
    snapshot_fixture_add_file_part(b, dir, ORG, "org-1-3.bin", 3);
    snapshot_fixture_write(b, dir, SNAPSHOT_FILE_NAME);
}

static void remove_snapshot(void)
{
    scratch_dir_remove(dir);
}

/* ---- the routes: every flag, or the asked ones ---- */

static void all_handler(struct http_request *r)
{
    env_evaluate_answer(r, ORG, http_param(r, "env"), NULL, 0);
}

static void some_handler(struct http_request *r)
{
    static const char *const keys[] = {"z-rule", "nope", "a-static", "z-rule", "nope", "zz"};
    env_evaluate_answer(r, ORG, http_param(r, "env"), keys, sizeof keys / sizeof keys[0]);
}

#define ROW(path, handler)                                                                         \
    {                                                                                              \
        METHOD_POST, path, handler, "test", ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL        \
    }
static const struct route table[] = {ROW("/v1/all/{env}", all_handler),
                                     ROW("/v1/some/{env}", some_handler)};

struct fixture {
    struct event_base *base;
    struct http_server server;
    struct http_request origin;
    struct evhttp_request *origin_req;
    struct shm_header header;
    struct shm_region shm;
};

struct captured {
    int status;
    char body[2048];
};

static void on_answer(void *arg, int status, const char *body, const struct evkeyvalq *headers)
{
    (void)headers;
    struct captured *c = arg;
    c->status = status;
    snprintf(c->body, sizeof c->body, "%s", body ? body : "");
}

static void fixture_init(struct fixture *f, bool with_snapshot)
{
    memset(f, 0, sizeof *f);
    f->base = event_base_new();
    f->server.base = f->base;
    f->server.routes = table;
    f->server.route_count = sizeof table / sizeof table[0];
    f->server.eval_scratch = eval_scratch_new();
    f->shm.header = &f->header;
    write_snapshot();
    if (with_snapshot)
        atomic_store(&f->header.snapshot_generation, 3);
    f->server.snapshot = served_snapshot_new(dir, &f->shm, NULL);
    ck_assert_ptr_nonnull(f->server.snapshot);
    f->origin_req = evhttp_request_new(NULL, NULL);
    f->origin.req = f->origin_req;
    f->origin.server = &f->server;
    f->origin.path = "/v1/test";
    f->origin.surface = SURFACE_V1;
}

static void fixture_free(struct fixture *f)
{
    evhttp_request_free(f->origin_req);
    served_snapshot_free(f->server.snapshot);
    eval_scratch_free(f->server.eval_scratch);
    http_answer_pool_free(f->server.answers);
    event_base_free(f->base);
    remove_snapshot();
}

static void run(struct fixture *f, const char *path, const char *body, struct captured *c)
{
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(http_internal_request(&f->origin, METHOD_POST, path, body, on_answer, c), 0);
    event_base_dispatch(f->base);
}

#define STATIC_ITEM                                                                                \
    "{\"key\":\"a-static\",\"value\":\"A\",\"reason\":\"STATIC\",\"variant\":\"a\","               \
    "\"metadata\":{\"environment\":\"production\"},\"ruleId\":null}"
#define RULE_ITEM                                                                                  \
    "{\"key\":\"z-rule\",\"value\":\"B\",\"reason\":\"TARGETING_MATCH\",\"variant\":\"b\","        \
    "\"metadata\":{\"environment\":\"production\",\"ruleId\":\"" RULE "\"},\"ruleId\":\"" RULE     \
    "\"}"
#define NOT_FOUND_ITEM(key)                                                                        \
    "{\"key\":\"" key "\",\"errorCode\":\"FLAG_NOT_FOUND\","                                       \
    "\"errorDetails\":\"no flag with this key in the environment\",\"ruleId\":null}"

START_TEST(every_flag_in_key_order_with_rule_ids)
{
    struct fixture f;
    struct captured c;
    fixture_init(&f, true);
    run(&f, "/v1/all/production", "{\"context\": {\"targetingKey\": \"k\", \"country\": \"NL\"}}",
        &c);
    ck_assert_int_eq(c.status, 200);
    ck_assert_ptr_nonnull(strstr(c.body, "{\"flags\":[" STATIC_ITEM ",{\"key\":\"m-off\","));
    ck_assert_ptr_nonnull(strstr(c.body, "\"reason\":\"DISABLED\",\"variant\":\"b\","));
    ck_assert_ptr_nonnull(strstr(c.body, "{\"key\":\"s-split\","));
    ck_assert_ptr_nonnull(strstr(c.body, "\"reason\":\"SPLIT\""));
    ck_assert_ptr_nonnull(strstr(c.body, "," RULE_ITEM "],\"metadata\":{\"environment\":"
                                         "\"production\"}}"));
    /* no match: the rule's flag serves its default (DEFAULT), ruleId null */
    run(&f, "/v1/all/production", "{\"context\": {\"targetingKey\": \"k\"}}", &c);
    ck_assert_int_eq(c.status, 200);
    ck_assert_ptr_nonnull(strstr(c.body, "{\"key\":\"z-rule\",\"value\":\"A\",\"reason\":"
                                         "\"DEFAULT\",\"variant\":\"a\",\"metadata\":"
                                         "{\"environment\":\"production\"},\"ruleId\":null}"));
    /* a split without a targeting key is an error item, with ruleId null */
    run(&f, "/v1/all/production", "{}", &c);
    ck_assert_int_eq(c.status, 200);
    ck_assert_ptr_nonnull(
        strstr(c.body, "{\"key\":\"s-split\",\"errorCode\":\"TARGETING_KEY_MISSING\","));
    ck_assert_ptr_nonnull(strstr(c.body, "\"ruleId\":null},{\"key\":\"z-rule\""));
    fixture_free(&f);
}
END_TEST

START_TEST(flags_limits_the_answer)
{
    struct fixture f;
    struct captured c;
    fixture_init(&f, true);
    run(&f, "/v1/some/production", "{\"context\": {\"country\": \"NL\"}}", &c);
    ck_assert_int_eq(c.status, 200);
    ck_assert_str_eq(c.body,
                     "{\"flags\":[" STATIC_ITEM "," RULE_ITEM
                     "," NOT_FOUND_ITEM("nope") "," NOT_FOUND_ITEM("zz") "],\"metadata\":"
                                                                         "{\"environment\":"
                                                                         "\"production\"}}");
    fixture_free(&f);
}
END_TEST

START_TEST(errors_use_the_v1_envelope)
{
    struct fixture f;
    struct captured c;
    fixture_init(&f, true);
    run(&f, "/v1/all/production", "{\"context\": {\"targetingKey\": 5}}", &c);
    ck_assert_int_eq(c.status, 422);
    ck_assert_ptr_nonnull(strstr(c.body, "\"errors\":{\"context\":["));
    run(&f, "/v1/all/production", "{\"context\": [1]}", &c);
    ck_assert_int_eq(c.status, 422);
    run(&f, "/v1/all/production", "[1]", &c);
    ck_assert_int_eq(c.status, 400);
    run(&f, "/v1/all/staging", "{}", &c);
    ck_assert_int_eq(c.status, 404);
    ck_assert_ptr_nonnull(strstr(c.body, "environment not found"));
    fixture_free(&f);
}
END_TEST

START_TEST(no_snapshot_is_503)
{
    struct fixture f;
    struct captured c;
    fixture_init(&f, false); /* nothing published yet */
    run(&f, "/v1/all/production", "{}", &c);
    ck_assert_int_eq(c.status, 503);
    fixture_free(&f);
}
END_TEST

Suite *suite_env_evaluate(void)
{
    Suite *s = suite_create("env_evaluate");
    TCase *tc = tcase_create("answers");
    tcase_add_test(tc, every_flag_in_key_order_with_rule_ids);
    tcase_add_test(tc, flags_limits_the_answer);
    tcase_add_test(tc, errors_use_the_v1_envelope);
    tcase_add_test(tc, no_snapshot_is_503);
    suite_add_tcase(s, tc);
    return s;
}
