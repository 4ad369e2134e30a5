/*
 * test_eval.c - the evaluator (src/eval/eval.c) end to end through the snapshot
 * writer and reader: data-driven cases from tests/unit/eval_cases/ (*.json),
 * the rollout test vectors of doc/choices.md "Environment configuration and
 * evaluation" (flagd's fractional vectors among them), the context
 * checks (INVALID_CONTEXT), the bulk ETag, and the coercion helpers.
 *
 * A case file is one JSON object (built by eval_spec.c):
 *   {"entities":  [{"key", "attributes": [{"key", "dataType"}]}],
 *    "segments":  [{"key", "conditions": [...]}],
 *    "flags":     [{"key", "type"?, "enabled"?, "variants"?: [{"key", "value"}],
 *                   "offVariantKey"?, "defaultServe"?, "rules"?: [{"id"?,
 *                   "conditions", "serve"}],
 *                   "conditions"?: [...]}],
 *    "cases":     [{"flag", "context"?, "now"?, "match"? | "variant"?,
 *                   "reason"?, "value"?, "ruleId"?, "error"?}]}
 * Shorthands: a flag without "type" is boolean with variants on/off, off
 * variant "off", default serve "off", enabled; "conditions" adds one rule
 * "r1" serving "on". A case's "match": true expects on/TARGETING_MATCH,
 * false expects off/DEFAULT. "now" defaults to 2024-06-01T12:00:00Z.
 * Files are found under $top_srcdir (exported by the test harness).
 */
#include <dirent.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/eval.h"
#include "eval_spec.h"
#include "eval/isotime.h"
#include "http/json_flat.h"
#include "eval/murmur3.h"
#include "eval/snapshot.h"
#include "suites.h"

#define DEFAULT_NOW "2024-06-01T12:00:00Z"

/* Builds spec (eval_spec.h) into a temporary file and opens it into *out;
 * every row must go in. */
static void open_spec(json_object *spec, uint64_t generation, struct snapshot *out)
{
    char path[] = "/tmp/ensign-eval-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char err[256];
    int refused = eval_spec_write(spec, generation, path, err, sizeof err);
    ck_assert_msg(refused == 0, "%d rows refused (%s)", refused, refused < 0 ? err : "");
    ck_assert_msg(snapshot_open(path, out, err, sizeof err) == 0, "%s", err);
    unlink(path);
}

static int64_t parse_now(const char *text)
{
    int64_t us;
    ck_assert_msg(isotime_parse(text, strlen(text), &us), "bad now %s", text);
    return us;
}

/* ---- running cases ---- */

struct case_run {
    const char *file;
    size_t index;
    struct eval_result result;
};

static void expect_text(const struct case_run *run, const char *what, const char *expected,
                        const char *actual)
{
    ck_assert_msg(actual != NULL && strcmp(expected, actual) == 0,
                  "%s case %zu: %s is %s, expected %s", run->file, run->index, what,
                  actual ? actual : "(none)", expected);
}

static void check_match_shorthand(const struct case_run *run, json_object *match)
{
    bool want = json_object_get_boolean(match);
    ck_assert_msg(run->result.status == EVAL_OK, "%s case %zu: error %s (%s)", run->file,
                  run->index, eval_error_code(run->result.status), run->result.error_detail);
    expect_text(run, "variant", want ? "on" : "off", run->result.variant_key);
    expect_text(run, "reason", want ? "TARGETING_MATCH" : "DEFAULT",
                eval_reason_name(run->result.reason));
}

static void check_expectations(const struct case_run *run, json_object *c)
{
    const struct eval_result *r = &run->result;
    if (eval_spec_member(c, "match") != NULL)
        check_match_shorthand(run, eval_spec_member(c, "match"));
    if (eval_spec_member(c, "error") != NULL) {
        expect_text(run, "error", eval_spec_string(c, "error", ""), eval_error_code(r->status));
        return;
    }
    ck_assert_msg(r->status == EVAL_OK, "%s case %zu: error %s (%s)", run->file, run->index,
                  eval_error_code(r->status), r->error_detail);
    if (eval_spec_member(c, "variant") != NULL)
        expect_text(run, "variant", eval_spec_string(c, "variant", ""), r->variant_key);
    if (eval_spec_member(c, "reason") != NULL)
        expect_text(run, "reason", eval_spec_string(c, "reason", ""), eval_reason_name(r->reason));
    if (eval_spec_member(c, "value") != NULL)
        expect_text(run, "value", eval_spec_text(eval_spec_member(c, "value")), r->value_json);
    if (eval_spec_member(c, "ruleId") != NULL)
        expect_text(run, "ruleId", eval_spec_string(c, "ruleId", ""), r->rule_id);
}

/* The evaluator reads contexts as flat JSON: a json-c value (NULL is
 * null) converted into one of two reused docs, valid until that doc's
 * next conversion (json_flat_doc_free at the end of the suite is not
 * needed: the process ends). */
static struct json_flat_doc flat_docs[2];

static const struct json_flat *flat(int doc, json_object *value)
{
    const struct json_flat *root = json_flat_from_json(&flat_docs[doc], value);
    ck_assert_ptr_nonnull(root);
    return root;
}

static void run_case(const struct snapshot *s, struct eval_scratch *scratch, struct case_run *run,
                     json_object *c)
{
    const struct snapshot_env *env = snapshot_env_by_key(s, EVAL_SPEC_ORG_ID, "production");
    const char *key = eval_spec_string(c, "flag", "");
    const struct snapshot_flag *flag = snapshot_flag_by_key(s, env, key, strlen(key));
    ck_assert_msg(flag != NULL, "%s case %zu: no flag %s", run->file, run->index, key);
    struct eval_context ctx;
    const char *detail;
    enum eval_context_status st =
        eval_context_init(&ctx, flat(0, eval_spec_member(c, "context")),
                          parse_now(eval_spec_string(c, "now", DEFAULT_NOW)), &detail);
    ck_assert_msg(st == EVAL_CONTEXT_OK, "%s case %zu: %s", run->file, run->index, detail);
    eval_flag(s, flag, &ctx, scratch, &run->result);
    check_expectations(run, c);
    /* Again on the same context after every flag of the environment has
     * been evaluated with it: the attribute memo they fill (eval.h) must
     * not change the answer. */
    size_t count;
    const struct snapshot_flag *flags = snapshot_env_flags(s, env, &count);
    struct eval_result other;
    for (size_t i = 0; i < count; i++)
        eval_flag(s, &flags[i], &ctx, scratch, &other);
    ck_assert_uint_le(ctx.memo.count, 8);
    eval_flag(s, flag, &ctx, scratch, &run->result);
    check_expectations(run, c);
}

static size_t run_case_file(const char *path, const char *name)
{
    json_object *spec = json_object_from_file(path);
    ck_assert_msg(spec != NULL, "%s: not JSON", path);
    struct snapshot s;
    open_spec(spec, 1, &s);
    struct eval_scratch *scratch = eval_scratch_new();
    ck_assert_ptr_nonnull(scratch);
    json_object *cases = eval_spec_member(spec, "cases");
    size_t n = eval_spec_length(cases);
    for (size_t i = 0; i < n; i++) {
        struct case_run run = {.file = name, .index = i};
        run_case(&s, scratch, &run, json_object_array_get_idx(cases, i));
    }
    eval_scratch_free(scratch);
    snapshot_close(&s);
    json_object_put(spec);
    return n;
}

static bool is_case_file(const char *name)
{
    size_t len = strlen(name);
    return len > 5 && strcmp(name + len - 5, ".json") == 0;
}

START_TEST(data_driven_cases)
{
    const char *top = getenv("top_srcdir");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/tests/unit/eval_cases", top && *top ? top : ".");
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    size_t files = 0, cases = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!is_case_file(e->d_name))
            continue;
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        cases += run_case_file(path, e->d_name);
        files++;
    }
    closedir(d);
    ck_assert_uint_ge(files, 5);
    ck_assert_uint_ge(cases, 100);
}
END_TEST

/* ---- helpers for the C-level tests ---- */

static json_object *spec_from_text(const char *text)
{
    json_object *spec = json_tokener_parse(text);
    ck_assert_ptr_nonnull(spec);
    return spec;
}

static const char *variant_for(const struct snapshot *s, struct eval_scratch *scratch,
                               const char *flag_key, const char *context_json)
{
    const struct snapshot_env *env = snapshot_env_by_key(s, EVAL_SPEC_ORG_ID, "production");
    const struct snapshot_flag *flag = snapshot_flag_by_key(s, env, flag_key, strlen(flag_key));
    ck_assert_ptr_nonnull(flag);
    json_object *context = json_tokener_parse(context_json);
    struct eval_context ctx;
    const char *detail;
    ck_assert_int_eq(eval_context_init(&ctx, flat(0, context), parse_now(DEFAULT_NOW), &detail),
                     EVAL_CONTEXT_OK);
    struct eval_result r;
    eval_flag(s, flag, &ctx, scratch, &r);
    json_object_put(context);
    ck_assert_int_eq(r.status, EVAL_OK);
    return r.variant_key;
}

/* ---- rollout vectors (doc/choices.md "Environment configuration and evaluation") ---- */

static const char four_colours_spec[] =
    "{\"flags\": ["
    " {\"key\": \"%s\", \"type\": \"string\", \"variants\": ["
    "   {\"key\": \"red\", \"value\": \"#f00\"}, {\"key\": \"blue\", \"value\": \"#00f\"},"
    "   {\"key\": \"green\", \"value\": \"#0f0\"}, {\"key\": \"yellow\", \"value\": \"#ff0\"}],"
    "  \"defaultServe\": {\"rollout\": [{\"variant\": \"red\", \"weight\": 25},"
    "   {\"variant\": \"blue\", \"weight\": 25}, {\"variant\": \"green\", \"weight\": 25},"
    "   {\"variant\": \"yellow\", \"weight\": 25}]}}]}";

static void check_colours(const char *flag_key, const char *const expected[4])
{
    static const char *const people[4] = {"rachel@faas.com", "monica@faas.com", "joey@faas.com",
                                          "ross@faas.com"};
    char text[sizeof four_colours_spec + 64];
    snprintf(text, sizeof text, four_colours_spec, flag_key);
    json_object *spec = spec_from_text(text);
    struct snapshot s;
    open_spec(spec, 1, &s);
    struct eval_scratch *scratch = eval_scratch_new();
    for (int i = 0; i < 4; i++) {
        char context[128];
        snprintf(context, sizeof context, "{\"targetingKey\": \"%s\"}", people[i]);
        ck_assert_str_eq(variant_for(&s, scratch, flag_key, context), expected[i]);
    }
    eval_scratch_free(scratch);
    snapshot_close(&s);
    json_object_put(spec);
}

START_TEST(flagd_header_color_vectors)
{
    static const char *const expected[4] = {"blue", "yellow", "red", "blue"};
    check_colours("headerColor", expected);
}
END_TEST

START_TEST(flagd_header_color_dashed_vectors)
{
    static const char *const expected[4] = {"blue", "yellow", "red", "yellow"};
    check_colours("header-color", expected);
}
END_TEST

START_TEST(rollout_x_vectors)
{
    json_object *spec = spec_from_text(
        "{\"flags\": [{\"key\": \"rollout-x\", \"type\": \"boolean\", \"variants\": ["
        " {\"key\": \"on\", \"value\": true}, {\"key\": \"off\", \"value\": false}],"
        " \"defaultServe\": {\"rollout\": [{\"variant\": \"on\", \"weight\": 500000},"
        "  {\"variant\": \"off\", \"weight\": 500000}]}}]}");
    struct snapshot s;
    open_spec(spec, 1, &s);
    struct eval_scratch *scratch = eval_scratch_new();
    ck_assert_str_eq(variant_for(&s, scratch, "rollout-x", "{\"targetingKey\":\"user-1\"}"), "off");
    ck_assert_str_eq(variant_for(&s, scratch, "rollout-x", "{\"targetingKey\":\"user-2\"}"), "on");
    ck_assert_str_eq(variant_for(&s, scratch, "rollout-x", "{\"targetingKey\":\"user-3\"}"), "on");
    ck_assert_str_eq(variant_for(&s, scratch, "rollout-x", "{\"targetingKey\":\"user-4\"}"), "on");
    eval_scratch_free(scratch);
    snapshot_close(&s);
    json_object_put(spec);
}
END_TEST

/* Weight-0 items are never chosen, whatever the key. */
START_TEST(rollout_zero_weight_never_chosen)
{
    json_object *spec = spec_from_text(
        "{\"flags\": [{\"key\": \"z\", \"type\": \"string\", \"variants\": ["
        " {\"key\": \"a\", \"value\": \"A\"}, {\"key\": \"b\", \"value\": \"B\"},"
        " {\"key\": \"c\", \"value\": \"C\"}],"
        " \"defaultServe\": {\"rollout\": [{\"variant\": \"a\", \"weight\": 0},"
        "  {\"variant\": \"b\", \"weight\": 1}, {\"variant\": \"c\", \"weight\": 0}]}}]}");
    struct snapshot s;
    open_spec(spec, 1, &s);
    struct eval_scratch *scratch = eval_scratch_new();
    for (int i = 0; i < 500; i++) {
        char context[64];
        snprintf(context, sizeof context, "{\"targetingKey\": \"user-%d\"}", i);
        ck_assert_str_eq(variant_for(&s, scratch, "z", context), "b");
    }
    eval_scratch_free(scratch);
    snapshot_close(&s);
    json_object_put(spec);
}
END_TEST

/* The split follows the weights: 1:3 over 4000 keys lands near 1000. */
START_TEST(rollout_distribution_follows_weights)
{
    json_object *spec =
        spec_from_text("{\"flags\": [{\"key\": \"d\", \"type\": \"string\", \"variants\": ["
                       " {\"key\": \"a\", \"value\": \"A\"}, {\"key\": \"b\", \"value\": \"B\"}],"
                       " \"defaultServe\": {\"rollout\": [{\"variant\": \"a\", \"weight\": 1},"
                       "  {\"variant\": \"b\", \"weight\": 3}]}}]}");
    struct snapshot s;
    open_spec(spec, 1, &s);
    struct eval_scratch *scratch = eval_scratch_new();
    int a = 0;
    for (int i = 0; i < 4000; i++) {
        char context[64];
        snprintf(context, sizeof context, "{\"targetingKey\": \"k%d\"}", i);
        a += strcmp(variant_for(&s, scratch, "d", context), "a") == 0;
    }
    ck_assert_int_gt(a, 880);
    ck_assert_int_lt(a, 1120);
    eval_scratch_free(scratch);
    snapshot_close(&s);
    json_object_put(spec);
}
END_TEST

/* p = (h * total) >> 32 and the first item whose running sum exceeds p,
 * recomputed here for many keys, p landing on every cumulative sum
 * (3, 3 and 8) included. */
START_TEST(rollout_boundaries_follow_formula)
{
    static const uint32_t weights[4] = {3, 0, 5, 2};
    static const char *const names[4] = {"a", "b", "c", "d"};
    json_object *spec =
        spec_from_text("{\"flags\": [{\"key\": \"w\", \"type\": \"string\", \"variants\": ["
                       " {\"key\": \"a\", \"value\": \"A\"}, {\"key\": \"b\", \"value\": \"B\"},"
                       " {\"key\": \"c\", \"value\": \"C\"}, {\"key\": \"d\", \"value\": \"D\"}],"
                       " \"defaultServe\": {\"rollout\": [{\"variant\": \"a\", \"weight\": 3},"
                       "  {\"variant\": \"b\", \"weight\": 0}, {\"variant\": \"c\", \"weight\": 5},"
                       "  {\"variant\": \"d\", \"weight\": 2}]}}]}");
    struct snapshot s;
    open_spec(spec, 1, &s);
    struct eval_scratch *scratch = eval_scratch_new();
    bool seen_p[10] = {false};
    for (int i = 0; i < 2000; i++) {
        char key[32], input[40], context[64];
        snprintf(key, sizeof key, "u%d", i);
        snprintf(input, sizeof input, "w%s", key);
        uint64_t p = ((uint64_t)murmur3_x86_32(input, strlen(input), 0) * 10) >> 32;
        seen_p[p] = true;
        uint64_t sum = 0;
        int pick = 0;
        for (; pick < 4; pick++)
            if ((sum += weights[pick]) > p)
                break;
        snprintf(context, sizeof context, "{\"targetingKey\": \"%s\"}", key);
        ck_assert_str_eq(variant_for(&s, scratch, "w", context), names[pick]);
    }
    for (int p = 0; p < 10; p++)
        ck_assert(seen_p[p]);
    eval_scratch_free(scratch);
    snapshot_close(&s);
    json_object_put(spec);
}
END_TEST

/* ---- context checks ---- */

START_TEST(context_validation)
{
    struct eval_context ctx;
    const char *detail;
    ck_assert_int_eq(eval_context_init(&ctx, NULL, 0, &detail), EVAL_CONTEXT_OK);
    ck_assert_ptr_null(ctx.targeting_key);
    const char *bad[] = {"[1]", "\"x\"", "{\"targetingKey\": null}", "{\"targetingKey\": 5}",
                         "{\"targetingKey\": {}}"};
    enum eval_context_status want[] = {
        EVAL_CONTEXT_NOT_OBJECT, EVAL_CONTEXT_NOT_OBJECT, EVAL_CONTEXT_TARGETING_KEY_INVALID,
        EVAL_CONTEXT_TARGETING_KEY_INVALID, EVAL_CONTEXT_TARGETING_KEY_INVALID};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_object *c = json_tokener_parse(bad[i]);
        ck_assert_int_eq(eval_context_init(&ctx, flat(0, c), 0, &detail), want[i]);
        ck_assert_ptr_nonnull(detail);
        json_object_put(c);
    }
    json_object *empty = json_tokener_parse("{\"targetingKey\": \"\"}");
    ck_assert_int_eq(eval_context_init(&ctx, flat(0, empty), 0, &detail), EVAL_CONTEXT_OK);
    ck_assert_ptr_null(ctx.targeting_key);
    json_object_put(empty);
    json_object *ok = json_tokener_parse("{\"targetingKey\": \"u1\"}");
    ck_assert_int_eq(eval_context_init(&ctx, flat(0, ok), 1717243200000000, &detail),
                     EVAL_CONTEXT_OK);
    ck_assert_str_eq(ctx.targeting_key, "u1");
    ck_assert_uint_eq(ctx.now_iso_len, 0); /* formatted by the first condition that reads it
                                            * (eval_cases/time.json: now-starts) */
    json_object_put(ok);
}
END_TEST

/* ---- ETag fast form ---- */

static const char etag_spec[] = "{\"flags\": [{\"key\": \"t\", \"conditions\": ["
                                " {\"attribute\": \"$currentTime\", \"operator\": \"after\","
                                "  \"values\": [\"2024-06-01T12:00:00Z\"]},"
                                " {\"attribute\": \"$currentTime\", \"operator\": \"before\","
                                "  \"values\": [\"2024-07-01T00:00:00Z\"]}]}]}";

static void etag_of(const struct snapshot *s, const char *context_json, const char *now,
                    char out[EVAL_ETAG_SIZE])
{
    const struct snapshot_env *env = snapshot_env_by_key(s, EVAL_SPEC_ORG_ID, "production");
    json_object *context = context_json ? json_tokener_parse(context_json) : NULL;
    eval_bulk_etag(s, env, context ? flat(0, context) : NULL, parse_now(now), out);
    json_object_put(context);
}

START_TEST(etag_fast_form)
{
    json_object *spec = spec_from_text(etag_spec);
    struct snapshot s1, s2;
    open_spec(spec, 7, &s1);
    open_spec(spec, 8, &s2);
    char a[EVAL_ETAG_SIZE], b[EVAL_ETAG_SIZE];
    etag_of(&s1, "{\"targetingKey\":\"u\",\"x\":{\"b\":1,\"a\":[1,2]}}", "2024-06-10T00:00:00Z", a);
    ck_assert_int_eq(a[0], '"');
    ck_assert_int_eq(a[strlen(a) - 1], '"');
    etag_of(&s1, "{\"x\":{\"a\":[1,2],\"b\":1},\"targetingKey\":\"u\"}", "2024-06-20T00:00:00Z", b);
    ck_assert_str_eq(a, b); /* key order and time inside one interval do not matter */
    etag_of(&s1, "{\"x\":{\"a\":[2,1],\"b\":1},\"targetingKey\":\"u\"}", "2024-06-20T00:00:00Z", b);
    ck_assert_str_ne(a, b); /* array order does */
    etag_of(&s1, "{\"x\":{\"a\":[1,2],\"b\":1.0},\"targetingKey\":\"u\"}", "2024-06-20T00:00:00Z",
            b);
    ck_assert_str_ne(a, b); /* 1 and 1.0 are different contexts */
    etag_of(&s1, "{\"x\":{\"a\":[1,2],\"b\":1},\"targetingKey\":\"v\"}", "2024-06-20T00:00:00Z", b);
    ck_assert_str_ne(a, b);
    etag_of(&s2, "{\"targetingKey\":\"u\",\"x\":{\"b\":1,\"a\":[1,2]}}", "2024-06-10T00:00:00Z", b);
    ck_assert_str_ne(a, b); /* generation */
    etag_of(&s1, "{\"targetingKey\":\"u\",\"x\":{\"b\":1,\"a\":[1,2]}}", "2024-05-10T00:00:00Z", b);
    ck_assert_str_ne(a, b); /* before the first boundary */
    etag_of(&s1, "{\"targetingKey\":\"u\",\"x\":{\"b\":1,\"a\":[1,2]}}", "2024-06-01T12:00:00Z", b);
    ck_assert_str_ne(a, b); /* exactly on a boundary */
    etag_of(&s1, "{\"targetingKey\":\"u\",\"x\":{\"b\":1,\"a\":[1,2]}}", "2024-07-02T00:00:00Z", b);
    ck_assert_str_ne(a, b); /* after the last */
    etag_of(&s1, NULL, "2024-06-10T00:00:00Z", a);
    etag_of(&s1, "{}", "2024-06-10T00:00:00Z", b);
    ck_assert_str_ne(a, b);
    snapshot_close(&s1);
    snapshot_close(&s2);
    json_object_put(spec);
}
END_TEST

/* A context object with more keys than a small object (JSON_FLAT_LINEAR_MAX):
 * its members come in the order json_flat keeps for it. */
START_TEST(etag_many_keys_sorted)
{
    json_object *spec = spec_from_text(etag_spec);
    struct snapshot s;
    open_spec(spec, 1, &s);
    json_object *forward = json_object_new_object(), *backward = json_object_new_object();
    for (int i = 0; i < 200; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%03d", i);
        json_object_object_add(forward, key, json_object_new_int(i));
        snprintf(key, sizeof key, "k%03d", 199 - i);
        json_object_object_add(backward, key, json_object_new_int(199 - i));
    }
    const struct snapshot_env *env = snapshot_env_by_key(&s, EVAL_SPEC_ORG_ID, "production");
    char a[EVAL_ETAG_SIZE], b[EVAL_ETAG_SIZE];
    eval_bulk_etag(&s, env, flat(0, forward), 0, a);
    eval_bulk_etag(&s, env, flat(1, backward), 0, b);
    ck_assert_str_eq(a, b);
    json_object_put(forward);
    json_object_put(backward);
    snapshot_close(&s);
    json_object_put(spec);
}
END_TEST

/* A string operator on $currentTime makes the tag follow the clock's second. */
START_TEST(etag_clock_opaque_environment)
{
    json_object *spec = spec_from_text(
        "{\"flags\": [{\"key\": \"o\", \"conditions\": [{\"attribute\": \"$currentTime\","
        " \"operator\": \"starts_with\", \"values\": [\"2024-06\"]}]}],"
        " \"cases\": []}");
    struct snapshot s;
    open_spec(spec, 1, &s);
    char a[EVAL_ETAG_SIZE], b[EVAL_ETAG_SIZE];
    etag_of(&s, "{}", "2024-06-10T00:00:00Z", a);
    etag_of(&s, "{}", "2024-06-10T00:00:01Z", b);
    ck_assert_str_ne(a, b);
    snapshot_close(&s);
    json_object_put(spec);
}
END_TEST

/* Time boundaries named inside a segment count for the environments whose
 * flags use the segment. */
START_TEST(etag_segment_boundaries)
{
    json_object *spec = spec_from_text(
        "{\"segments\": [{\"key\": \"launch\", \"conditions\": [{\"attribute\": \"$currentTime\","
        " \"operator\": \"after\", \"values\": [\"2024-06-15T00:00:00Z\"]}]}],"
        " \"flags\": [{\"key\": \"s\", \"conditions\": [{\"segment\": \"launch\"}]}]}");
    struct snapshot s;
    open_spec(spec, 1, &s);
    char a[EVAL_ETAG_SIZE], b[EVAL_ETAG_SIZE];
    etag_of(&s, "{}", "2024-06-10T00:00:00Z", a);
    etag_of(&s, "{}", "2024-06-14T00:00:00Z", b);
    ck_assert_str_eq(a, b);
    etag_of(&s, "{}", "2024-06-16T00:00:00Z", b);
    ck_assert_str_ne(a, b);
    struct eval_scratch *scratch = eval_scratch_new();
    ck_assert_str_eq(variant_for(&s, scratch, "s", "{}"), "off");
    eval_scratch_free(scratch);
    snapshot_close(&s);
    json_object_put(spec);
}
END_TEST

/* ---- coercion helpers ---- */

START_TEST(number_text_and_back)
{
    char buf[EVAL_NUMBER_TEXT_SIZE];
    ck_assert_uint_eq(eval_number_text(0, true, 42, buf), 2);
    ck_assert_str_eq(buf, "42");
    eval_number_text(5.0, false, 0, buf);
    ck_assert_str_eq(buf, "5");
    eval_number_text(0.1, false, 0, buf);
    ck_assert_str_eq(buf, "0.1");
    eval_number_text(-2.5e-7, false, 0, buf);
    ck_assert_str_eq(buf, "-2.5e-07");
    double d;
    bool is_int;
    int64_t i;
    ck_assert(eval_text_to_number("12", 2, &d, &is_int, &i) && is_int && i == 12);
    ck_assert(eval_text_to_number("-1.5e3", 6, &d, &is_int, &i) && !is_int && d == -1500);
    const char *bad[] = {"", "-", "1.", ".5", "0x10", " 1", "1 ", "inf", "nan", "1e", "abc"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        ck_assert_msg(!eval_text_to_number(bad[k], strlen(bad[k]), &d, &is_int, &i), "%s", bad[k]);
    bool b;
    ck_assert(eval_text_to_boolean("true", 4, &b) && b);
    ck_assert(eval_text_to_boolean("false", 5, &b) && !b);
    ck_assert(!eval_text_to_boolean("True", 4, &b));
}
END_TEST

Suite *suite_eval(void)
{
    Suite *s = suite_create("eval");
    TCase *tc = tcase_create("eval");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, data_driven_cases);
    tcase_add_test(tc, flagd_header_color_vectors);
    tcase_add_test(tc, flagd_header_color_dashed_vectors);
    tcase_add_test(tc, rollout_x_vectors);
    tcase_add_test(tc, rollout_zero_weight_never_chosen);
    tcase_add_test(tc, rollout_distribution_follows_weights);
    tcase_add_test(tc, rollout_boundaries_follow_formula);
    tcase_add_test(tc, context_validation);
    tcase_add_test(tc, etag_fast_form);
    tcase_add_test(tc, etag_many_keys_sorted);
    tcase_add_test(tc, etag_clock_opaque_environment);
    tcase_add_test(tc, etag_segment_boundaries);
    tcase_add_test(tc, number_text_and_back);
    suite_add_tcase(s, tc);
    return s;
}
