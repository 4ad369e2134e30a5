/*
 * test_validate.c - unit tests of the field rules (src/mgmt/validate.c): every
 * rule at its boundary, condition and serve shapes with their error paths,
 * references through struct validate_refs, and the pure checks (UTF-8
 * length, key pattern, uuid, semver, timestamps, key derivation).
 *
 * Run by check_main.c through suite_validate().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/isotime.h"
#include "eval/semver.h"
#include "suites.h"
#include "mgmt/validate.h"

/* ---- helpers ---- */

static struct validate v;
static struct json_object *doc;

static void setup(void)
{
    validate_init(&v);
    doc = NULL;
}

static void teardown(void)
{
    validate_free(&v);
    json_object_put(doc);
}

static struct json_object *parse(const char *text)
{
    json_object_put(doc);
    doc = json_tokener_parse(text);
    ck_assert_msg(doc != NULL, "test JSON does not parse: %s", text);
    return doc;
}

/* True when an error was recorded at path. */
static bool has_error(const char *path)
{
    return v.errors && json_object_object_get_ex(v.errors, path, NULL);
}

static void assert_only_error(const char *path)
{
    ck_assert_msg(has_error(path), "no error at %s: %s", path,
                  v.errors ? json_object_to_json_string(v.errors) : "none");
    ck_assert_int_eq(json_object_object_length(v.errors), 1);
}

static void assert_clean(void)
{
    ck_assert_msg(validate_ok(&v), "unexpected errors: %s",
                  v.errors ? json_object_to_json_string(v.errors) : "");
}

/* A string of n copies of c as a JSON object {"s": "..."}; n <= 4000. */
static struct json_object *repeated(const char *unit, size_t n)
{
    size_t unit_len = strlen(unit);
    char *text = malloc(n * unit_len + 16);
    strcpy(text, "{\"s\":\"");
    char *p = text + strlen(text);
    for (size_t i = 0; i < n; i++, p += unit_len)
        memcpy(p, unit, unit_len);
    strcpy(p, "\"}");
    struct json_object *obj = parse(text);
    free(text);
    return obj;
}

/* prefix, n comma-separated copies of item, suffix; caller frees. */
static char *list_text(const char *prefix, const char *item, int n, const char *suffix)
{
    char *text = malloc(strlen(prefix) + (size_t)n * (strlen(item) + 1) + strlen(suffix) + 1);
    strcpy(text, prefix);
    for (int i = 0; i < n; i++) {
        if (i)
            strcat(text, ",");
        strcat(text, item);
    }
    strcat(text, suffix);
    return text;
}

/* Reference callbacks: segment "beta" exists; entity "user" declares
 * "plan"; variants "on", "off", "red" exist. */
static bool fake_segment(void *arg, const char *key)
{
    (void)arg;
    return strcmp(key, "beta") == 0;
}

static enum validate_attr_ref fake_attribute(void *arg, const char *entity, const char *attr)
{
    (void)arg;
    if (strcmp(entity, "user") != 0)
        return VALIDATE_ATTR_NOT_ENTITY;
    return strcmp(attr, "plan") == 0 ? VALIDATE_ATTR_DECLARED : VALIDATE_ATTR_UNDECLARED;
}

static bool fake_variant(void *arg, const char *key)
{
    (void)arg;
    return strcmp(key, "on") == 0 || strcmp(key, "off") == 0 || strcmp(key, "red") == 0;
}

static const struct validate_refs refs = {NULL, fake_segment, fake_attribute, fake_variant};

static void check_conditions(const char *json, bool allow_segments)
{
    validate_conditions(&v, parse(json), "conditions", allow_segments, &refs, NULL);
}

static void check_serve(const char *json)
{
    validate_serve(&v, parse(json), "serve", VALIDATE_REQUIRED, &refs, NULL);
}

/* ---- pure checks ---- */

START_TEST(utf8_length_counts_characters)
{
    ck_assert_int_eq(validate_utf8_length("abc", 3), 3);
    ck_assert_int_eq(validate_utf8_length("\xc3\xa9t\xc3\xa9", 5), 3);
    ck_assert_int_eq(validate_utf8_length("\xf0\x9f\x98\x80", 4), 1);
    ck_assert_int_eq(validate_utf8_length("\xc3", 1), -1);
    ck_assert_int_eq(validate_utf8_length("\xc0\x80", 2), -1);         /* overlong */
    ck_assert_int_eq(validate_utf8_length("\xed\xa0\x80", 3), -1);     /* surrogate */
    ck_assert_int_eq(validate_utf8_length("\xf4\x90\x80\x80", 4), -1); /* > U+10FFFF */
}
END_TEST

START_TEST(key_pattern)
{
    char key[80];
    memset(key, 'a', 63);
    key[63] = '\0';
    ck_assert(validate_key_ok(key));
    key[63] = 'a';
    key[64] = '\0';
    ck_assert(!validate_key_ok(key));
    ck_assert(validate_key_ok("a"));
    ck_assert(validate_key_ok("new-checkout-2"));
    ck_assert(!validate_key_ok(""));
    ck_assert(!validate_key_ok("-a"));
    ck_assert(!validate_key_ok("a-"));
    ck_assert(!validate_key_ok("A"));
    ck_assert(!validate_key_ok("a_b"));
    ck_assert(!validate_key_ok("a.b"));
}
END_TEST

START_TEST(uuid_shape)
{
    ck_assert(validate_uuid_ok("123e4567-e89b-12d3-a456-426614174000"));
    ck_assert(validate_uuid_ok("123E4567-E89B-12D3-A456-426614174000"));
    ck_assert(!validate_uuid_ok("123e4567e89b12d3a456426614174000"));
    ck_assert(!validate_uuid_ok("123e4567-e89b-12d3-a456-42661417400g"));
    ck_assert(!validate_uuid_ok(""));
}
END_TEST

START_TEST(semver_forms)
{
    const char *good[] = {"1.2.3",
                          "v1.2.3",
                          "1",
                          "1.2",
                          "0.0.0",
                          "1.2.3-alpha.1",
                          "1.2.3+build.5",
                          "1.2.3-rc.1+sha.abc",
                          "10.20.30"};
    const char *bad[] = {
        "", "v", "1.", "1.2.3.4", "1.2.3-", "1.2.3+", "a.b.c", "1.2.3-al..pha", " 1.2.3"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        ck_assert_msg(validate_semver_ok(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(!validate_semver_ok(bad[i]), "%s", bad[i]);
}
END_TEST

/* A semver_eq condition with one value (JSON string text, escapes allowed). */
static bool semver_condition_ok(const char *value_json)
{
    char json[256];
    snprintf(json, sizeof json,
             "{\"conditions\": [{\"attribute\": \"v\", \"operator\": \"semver_eq\", "
             "\"values\": [%s]}]}",
             value_json);
    check_conditions(json, false);
    return validate_ok(&v);
}

/* The inputs where validate.c's own semver parser and src/eval/semver.c
 * used to disagree: the validator now accepts exactly what compiles. */
START_TEST(semver_agrees_with_compiler)
{
    const char *now_good[] = {"01.2.3", "1.02.3", "1.2.3-01", "V1.2.3", "v01"};
    for (size_t i = 0; i < sizeof now_good / sizeof *now_good; i++) {
        struct semver parsed;
        ck_assert(semver_parse(now_good[i], strlen(now_good[i]), &parsed));
        ck_assert_msg(validate_semver_ok(now_good[i]), "%s", now_good[i]);
    }
    /* Past UINT64_MAX: used to pass here and compile to a broken rule. */
    ck_assert(validate_semver_ok("18446744073709551615.0.0"));
    ck_assert(!validate_semver_ok("18446744073709551616.0.0"));
    ck_assert(!validate_semver_ok("1.99999999999999999999.0"));
    ck_assert(semver_condition_ok("\"V1.02.3-01\""));
    validate_free(&v);
    validate_init(&v);
    ck_assert(!semver_condition_ok("\"18446744073709551616.0.0\""));
    ck_assert(has_error("conditions[0].values[0]"));
    validate_free(&v);
    validate_init(&v);
    /* A NUL inside the JSON string: the compiler reads the whole string. */
    ck_assert(!semver_condition_ok("\"1.2.3\\u0000x\""));
    ck_assert(has_error("conditions[0].values[0]"));
}
END_TEST

START_TEST(timestamps)
{
    int64_t ms;
    ck_assert(validate_timestamp_parse("1970-01-01T00:00:00Z", &ms));
    ck_assert_int_eq(ms, 0);
    ck_assert(validate_timestamp_parse("2024-02-29T12:30:00.250+02:00", &ms));
    ck_assert_int_eq(ms, 1709202600250LL);
    ck_assert(validate_timestamp_parse("2024-02-29", &ms));
    ck_assert_int_eq(ms, 1709164800000LL);
    ck_assert(validate_timestamp_parse("2024-01-01T10:00-0130", &ms));
    ck_assert(!validate_timestamp_parse("2023-02-29T00:00:00Z", NULL));
    ck_assert(!validate_timestamp_parse("2024-13-01", NULL));
    ck_assert(!validate_timestamp_parse("2024-01-01T24:00:00Z", NULL));
    ck_assert(!validate_timestamp_parse("2024-01-01T10:00:00Q", NULL));
    ck_assert(!validate_timestamp_parse("1700000000", NULL));
    ck_assert(!validate_timestamp_parse("", NULL));
}
END_TEST

/* A before condition with one value (JSON text). */
static bool time_condition_ok(const char *value_json)
{
    char json[256];
    snprintf(json, sizeof json,
             "{\"conditions\": [{\"attribute\": \"t\", \"operator\": \"before\", "
             "\"values\": [%s]}]}",
             value_json);
    check_conditions(json, false);
    return validate_ok(&v);
}

/* The inputs where validate.c's own ISO 8601 parser and src/eval/isotime.c
 * used to disagree. */
START_TEST(timestamps_agree_with_compiler)
{
    int64_t ms, us;
    /* +HH offsets: refused here before, compiled by the snapshot writer. */
    ck_assert(isotime_parse("2024-06-01T14:00:00+02", 22, &us));
    ck_assert(validate_timestamp_parse("2024-06-01T14:00:00+02", &ms));
    ck_assert_int_eq(ms, 1717243200000LL);
    ck_assert(validate_timestamp_parse("2024-06-01T14:00-02", &ms));
    ck_assert_int_eq(ms, 1717257600000LL);
    /* Before the epoch, milliseconds round toward the past as before. */
    ck_assert(validate_timestamp_parse("1969-12-31T23:59:59.9995Z", &ms));
    ck_assert_int_eq(ms, -1);
    ck_assert(validate_timestamp_parse("2024-06-01T12:00:00.1239Z", &ms));
    ck_assert_int_eq(ms, 1717243200123LL);
    ck_assert(time_condition_ok("\"2024-06-01T14:00:00+02\""));
    validate_free(&v);
    validate_init(&v);
    /* A NUL inside the JSON string: the compiler reads the whole string. */
    ck_assert(!time_condition_ok("\"2024-06-01\\u0000T\""));
    ck_assert(has_error("conditions[0].values[0]"));
}
END_TEST

START_TEST(slugify_derives_keys)
{
    char out[VALIDATE_KEY_MAX + 1];
    validate_slugify("Big Red Button!", out);
    ck_assert_str_eq(out, "big-red-button");
    validate_slugify("--A__b--", out);
    ck_assert_str_eq(out, "a-b");
    validate_slugify("\xc3\xa9t\xc3\xa9", out);
    ck_assert_str_eq(out, "t");
    validate_slugify("!!!", out);
    ck_assert_str_eq(out, "");
    char long_text[200];
    memset(long_text, 'x', 62);
    strcpy(long_text + 62, " yyyy");
    validate_slugify(long_text, out);
    ck_assert_uint_eq(strlen(out), 62); /* cut at 63 would end in "-": dropped */
    ck_assert(validate_key_ok(out));
}
END_TEST

/* ---- field helpers ---- */

START_TEST(string_bounds_count_characters)
{
    const char *s;
    ck_assert_int_eq(validate_string(&v, repeated("a", 200), "s", 1, 200, 0, &s), VALIDATE_SET);
    ck_assert_int_eq(validate_string(&v, repeated("\xc3\xa9", 200), "s", 1, 200, 0, &s),
                     VALIDATE_SET);
    assert_clean();
    ck_assert_int_eq(validate_string(&v, repeated("a", 201), "s", 1, 200, 0, &s), VALIDATE_INVALID);
    assert_only_error("s");
}
END_TEST

START_TEST(string_presence_and_null)
{
    struct json_object *obj = parse("{\"n\": null, \"i\": 5}");
    ck_assert_int_eq(validate_string(&v, obj, "missing", 1, 5, 0, NULL), VALIDATE_ABSENT);
    ck_assert_int_eq(validate_string(&v, obj, "n", 1, 5, VALIDATE_NULLABLE, NULL), VALIDATE_NULL);
    assert_clean();
    ck_assert_int_eq(validate_string(&v, obj, "missing", 1, 5, VALIDATE_REQUIRED, NULL),
                     VALIDATE_INVALID);
    ck_assert_int_eq(validate_string(&v, obj, "n", 1, 5, 0, NULL), VALIDATE_INVALID);
    ck_assert_int_eq(validate_string(&v, obj, "i", 1, 5, 0, NULL), VALIDATE_INVALID);
    ck_assert(has_error("missing") && has_error("n") && has_error("i"));
}
END_TEST

START_TEST(empty_string_is_below_minimum)
{
    ck_assert_int_eq(validate_string(&v, parse("{\"s\": \"\"}"), "s", 1, 5, 0, NULL),
                     VALIDATE_INVALID);
    assert_only_error("s");
}
END_TEST

START_TEST(key_field)
{
    const char *s;
    ck_assert_int_eq(validate_key(&v, repeated("a", 63), "s", VALIDATE_REQUIRED, &s), VALIDATE_SET);
    assert_clean();
    ck_assert_int_eq(validate_key(&v, repeated("a", 64), "s", VALIDATE_REQUIRED, &s),
                     VALIDATE_INVALID);
    assert_only_error("s");
    validate_free(&v);
    ck_assert_int_eq(validate_key(&v, parse("{\"s\": \"Bad Key\"}"), "s", 0, &s), VALIDATE_INVALID);
    assert_only_error("s");
}
END_TEST

START_TEST(integer_bounds)
{
    int64_t n;
    struct json_object *obj =
        parse("{\"max\": 9007199254740991, \"over\": 9007199254740992, \"neg\": -1,"
              " \"frac\": 1.5, \"whole\": 2.0, \"str\": \"1\"}");
    ck_assert_int_eq(validate_int(&v, obj, "max", 0, VALIDATE_PRIORITY_MAX, 0, &n), VALIDATE_SET);
    ck_assert_int_eq(n, VALIDATE_PRIORITY_MAX);
    ck_assert_int_eq(validate_int(&v, obj, "whole", 0, 10, 0, &n), VALIDATE_SET);
    ck_assert_int_eq(n, 2);
    assert_clean();
    validate_int(&v, obj, "over", 0, VALIDATE_PRIORITY_MAX, 0, &n);
    validate_int(&v, obj, "neg", 0, VALIDATE_PRIORITY_MAX, 0, &n);
    validate_int(&v, obj, "frac", 0, 10, 0, &n);
    validate_int(&v, obj, "str", 0, 10, 0, &n);
    ck_assert(has_error("over") && has_error("neg") && has_error("frac") && has_error("str"));
}
END_TEST

START_TEST(bool_and_uuid_fields)
{
    struct json_object *obj =
        parse("{\"b\": true, \"nb\": 1, \"u\": \"123e4567-e89b-12d3-a456-426614174000\","
              " \"bad\": \"x\", \"nu\": null}");
    bool b = false;
    ck_assert_int_eq(validate_bool(&v, obj, "b", 0, &b), VALIDATE_SET);
    ck_assert(b);
    ck_assert_int_eq(validate_uuid(&v, obj, "u", 0, NULL), VALIDATE_SET);
    ck_assert_int_eq(validate_uuid(&v, obj, "nu", VALIDATE_NULLABLE, NULL), VALIDATE_NULL);
    assert_clean();
    validate_bool(&v, obj, "nb", 0, &b);
    validate_uuid(&v, obj, "bad", 0, NULL);
    ck_assert(has_error("nb") && has_error("bad"));
}
END_TEST

START_TEST(tags_bounds)
{
    char *text = list_text("{\"tags\": [", "\"t\"", 51, "]}");
    ck_assert_int_eq(validate_string_array(&v, parse(text), "tags", 50, 1, 50, 0, NULL),
                     VALIDATE_INVALID);
    assert_only_error("tags");
    free(text);
    validate_free(&v);
    text = list_text("{\"tags\": [", "\"t\"", 50, "]}");
    ck_assert_int_eq(validate_string_array(&v, parse(text), "tags", 50, 1, 50, 0, NULL),
                     VALIDATE_SET);
    assert_clean();
    free(text);
    validate_string_array(&v, parse("{\"tags\": [\"ok\", \"\", 3]}"), "tags", 50, 1, 50, 0, NULL);
    ck_assert(has_error("tags[1]") && has_error("tags[2]") && !has_error("tags[0]"));
}
END_TEST

START_TEST(tag_length_boundary)
{
    struct json_object *obj =
        parse("{\"tags\": [\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "\", \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}");
    validate_string_array(&v, obj, "tags", 50, 1, 50, 0, NULL);
    assert_only_error("tags[1]");
}
END_TEST

START_TEST(unknown_fields_are_named)
{
    static const char *const allowed[] = {"name", "tags", NULL};
    ck_assert(
        !validate_only_fields(&v, parse("{\"name\": 1, \"color\": 2, \"size\": 3}"), allowed));
    ck_assert(has_error("color") && has_error("size") && !has_error("name"));
}
END_TEST

START_TEST(nested_paths)
{
    size_t a = validate_push_field(&v, "rules");
    size_t b = validate_push_index(&v, 3);
    size_t c = validate_push_field(&v, "conditions");
    validate_push_index(&v, 0);
    validate_error(&v, "operator", "bad");
    validate_pop(&v, c);
    validate_error(&v, NULL, "here");
    validate_pop(&v, b);
    validate_pop(&v, a);
    validate_error(&v, NULL, "root");
    ck_assert(has_error("rules[3].conditions[0].operator"));
    ck_assert(has_error("rules[3]"));
    ck_assert(has_error("body"));
    struct json_object *errors = validate_take_errors(&v);
    ck_assert(validate_ok(&v));
    json_object_put(errors);
}
END_TEST

/* ---- conditions ---- */

START_TEST(valid_conditions_pass)
{
    check_conditions("{\"conditions\": ["
                     "{\"attribute\": \"country\", \"operator\": \"in\", \"values\": [\"NL\", 1, "
                     "true]},"
                     "{\"attribute\": \"email\", \"operator\": \"ends_with\", \"values\": "
                     "[\"@x.com\"], \"caseInsensitive\": true, \"negate\": false},"
                     "{\"attribute\": \"age\", \"operator\": \"gte\", \"values\": [18.5]},"
                     "{\"attribute\": \"version\", \"operator\": \"semver_gt\", \"values\": "
                     "[\"v1.2\"]},"
                     "{\"attribute\": \"$currentTime\", \"operator\": \"after\", \"values\": "
                     "[\"2024-01-01T00:00:00Z\"]},"
                     "{\"attribute\": \"name\", \"operator\": \"matches\", \"values\": "
                     "[\"^a.*z$\"]},"
                     "{\"attribute\": \"user.plan\", \"operator\": \"exists\"},"
                     "{\"attribute\": \"org.tier\", \"operator\": \"eq\", \"values\": [\"x\"]},"
                     "{\"segment\": \"beta\", \"negate\": true}]}",
                     true);
    assert_clean();
}
END_TEST

START_TEST(condition_count_boundary)
{
    const char *item = "{\"attribute\":\"a\",\"operator\":\"exists\"}";
    char *text = list_text("{\"conditions\": [", item, 51, "]}");
    check_conditions(text, true);
    assert_only_error("conditions");
    free(text);
    validate_free(&v);
    text = list_text("{\"conditions\": [", item, 50, "]}");
    check_conditions(text, true);
    assert_clean();
    free(text);
}
END_TEST

START_TEST(unknown_operator)
{
    check_conditions("{\"conditions\": [{\"attribute\": \"a\", \"operator\": \"like\", "
                     "\"values\": [\"x\"]}]}",
                     true);
    assert_only_error("conditions[0].operator");
}
END_TEST

START_TEST(missing_attribute_and_operator)
{
    check_conditions("{\"conditions\": [{\"values\": [\"x\"]}]}", true);
    ck_assert(has_error("conditions[0].attribute"));
    ck_assert(has_error("conditions[0].operator"));
}
END_TEST

START_TEST(both_attribute_and_segment)
{
    check_conditions("{\"conditions\": [{\"attribute\": \"a\", \"segment\": \"beta\", "
                     "\"operator\": \"exists\"}]}",
                     true);
    assert_only_error("conditions[0]");
}
END_TEST

START_TEST(unknown_condition_field)
{
    check_conditions("{\"conditions\": [{\"attribute\": \"a\", \"operator\": \"exists\", "
                     "\"weight\": 1}]}",
                     true);
    assert_only_error("conditions[0].weight");
}
END_TEST

START_TEST(values_count_boundary)
{
    const char *prefix = "{\"conditions\": [{\"attribute\": \"a\", \"operator\": \"in\", "
                         "\"values\": [";
    char *text = list_text(prefix, "\"v\"", 101, "]}]}");
    check_conditions(text, true);
    assert_only_error("conditions[0].values");
    free(text);
    validate_free(&v);
    text = list_text(prefix, "\"v\"", 100, "]}]}");
    check_conditions(text, true);
    assert_clean();
    free(text);
}
END_TEST

START_TEST(values_required_and_not_empty)
{
    check_conditions("{\"conditions\": [{\"attribute\": \"a\", \"operator\": \"in\"},"
                     "{\"attribute\": \"a\", \"operator\": \"in\", \"values\": []},"
                     "{\"attribute\": \"a\", \"operator\": \"in\", \"values\": \"x\"}]}",
                     true);
    ck_assert(has_error("conditions[0].values"));
    ck_assert(has_error("conditions[1].values"));
    ck_assert(has_error("conditions[2].values"));
}
END_TEST

START_TEST(single_value_operators_take_one)
{
    const char *ops[] = {"eq",  "neq",       "gt",         "gte",    "lt",
                         "lte", "semver_eq", "semver_lte", "before", "after"};
    const char *two[] = {"[\"a\",\"b\"]",
                         "[\"a\",\"b\"]",
                         "[1,2]",
                         "[1,2]",
                         "[1,2]",
                         "[1,2]",
                         "[\"1.0.0\",\"2.0.0\"]",
                         "[\"1.0.0\",\"2.0.0\"]",
                         "[\"2024-01-01\",\"2024-01-02\"]",
                         "[\"2024-01-01\",\"2024-01-02\"]"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"conditions\": [{\"attribute\": \"a\", \"operator\": \"%s\", \"values\": "
                 "%s}]}",
                 ops[i], two[i]);
        validate_free(&v);
        check_conditions(text, true);
        ck_assert_msg(has_error("conditions[0].values"), "%s takes one value", ops[i]);
    }
}
END_TEST

START_TEST(exists_takes_no_values)
{
    check_conditions("{\"conditions\": [{\"attribute\": \"a\", \"operator\": \"exists\", "
                     "\"values\": [\"x\"]},"
                     "{\"attribute\": \"a\", \"operator\": \"not_exists\", \"values\": []}]}",
                     true);
    ck_assert(has_error("conditions[0].values"));
    ck_assert(has_error("conditions[1].values"));
}
END_TEST

START_TEST(value_types_per_operator)
{
    check_conditions(
        "{\"conditions\": ["
        "{\"attribute\": \"a\", \"operator\": \"contains\", \"values\": [\"x\", 1]},"
        "{\"attribute\": \"a\", \"operator\": \"gt\", \"values\": [\"5\"]},"
        "{\"attribute\": \"a\", \"operator\": \"semver_gt\", \"values\": [\"1.x\"]},"
        "{\"attribute\": \"a\", \"operator\": \"before\", \"values\": [1700000000]},"
        "{\"attribute\": \"a\", \"operator\": \"eq\", \"values\": [null]},"
        "{\"attribute\": \"a\", \"operator\": \"in\", \"values\": [{\"x\": 1}]},"
        "{\"attribute\": \"a\", \"operator\": \"matches\", \"values\": [\"(unclosed\"]}]}",
        true);
    ck_assert(!has_error("conditions[0].values[0]"));
    ck_assert(has_error("conditions[0].values[1]"));
    ck_assert(has_error("conditions[1].values[0]"));
    ck_assert(has_error("conditions[2].values[0]"));
    ck_assert(has_error("conditions[3].values[0]"));
    ck_assert(has_error("conditions[4].values[0]"));
    ck_assert(has_error("conditions[5].values[0]"));
    ck_assert(has_error("conditions[6].values[0]"));
}
END_TEST

START_TEST(negate_and_case_insensitive_are_booleans)
{
    check_conditions("{\"conditions\": [{\"attribute\": \"a\", \"operator\": \"exists\", "
                     "\"negate\": \"yes\", \"caseInsensitive\": 1}]}",
                     true);
    ck_assert(has_error("conditions[0].negate"));
    ck_assert(has_error("conditions[0].caseInsensitive"));
}
END_TEST

START_TEST(segment_references)
{
    check_conditions("{\"conditions\": [{\"segment\": \"beta\"}, {\"segment\": \"gamma\"},"
                     " {\"segment\": \"Bad\"}, {\"segment\": \"beta\", \"operator\": \"eq\"}]}",
                     true);
    ck_assert(!has_error("conditions[0].segment"));
    ck_assert(has_error("conditions[1].segment"));
    ck_assert(has_error("conditions[2].segment"));
    ck_assert(has_error("conditions[3].operator"));
}
END_TEST

START_TEST(segments_cannot_reference_segments)
{
    check_conditions("{\"conditions\": [{\"segment\": \"beta\"}]}", false);
    assert_only_error("conditions[0].segment");
}
END_TEST

START_TEST(entity_attributes_must_be_declared)
{
    check_conditions("{\"conditions\": [{\"attribute\": \"user.plan\", \"operator\": "
                     "\"exists\"}, {\"attribute\": \"user.color\", \"operator\": \"exists\"}]}",
                     true);
    assert_only_error("conditions[1].attribute");
}
END_TEST

START_TEST(attribute_length_boundary)
{
    char text[1024];
    char attr[202];
    memset(attr, 'a', 201);
    attr[201] = '\0';
    snprintf(text, sizeof text,
             "{\"conditions\": [{\"attribute\": \"%s\", \"operator\": \"exists\"},"
             " {\"attribute\": \"%.200s\", \"operator\": \"exists\"},"
             " {\"attribute\": \"\", \"operator\": \"exists\"}]}",
             attr, attr);
    check_conditions(text, true);
    ck_assert(has_error("conditions[0].attribute"));
    ck_assert(!has_error("conditions[1].attribute"));
    ck_assert(has_error("conditions[2].attribute"));
}
END_TEST

START_TEST(condition_not_an_object)
{
    check_conditions("{\"conditions\": [\"country = NL\"]}", true);
    assert_only_error("conditions[0]");
}
END_TEST

/* ---- serve objects ---- */

START_TEST(serve_single_variant)
{
    check_serve("{\"serve\": {\"variant\": \"on\"}}");
    assert_clean();
    check_serve("{\"serve\": {\"variant\": \"blue\"}}");
    assert_only_error("serve.variant");
}
END_TEST

START_TEST(serve_exactly_one_form)
{
    check_serve("{\"serve\": {\"variant\": \"on\", \"rollout\": [{\"variant\": \"on\", "
                "\"weight\": 1}]}}");
    assert_only_error("serve");
    validate_free(&v);
    check_serve("{\"serve\": {}}");
    assert_only_error("serve");
    validate_free(&v);
    check_serve("{\"serve\": \"on\"}");
    assert_only_error("serve");
    validate_free(&v);
    check_serve("{}");
    assert_only_error("serve");
    validate_free(&v);
    check_serve("{\"serve\": {\"variant\": \"on\", \"bucketBy\": \"x\"}}");
    assert_only_error("serve.bucketBy");
}
END_TEST

START_TEST(serve_rollout)
{
    check_serve("{\"serve\": {\"rollout\": [{\"variant\": \"on\", \"weight\": 1000000},"
                " {\"variant\": \"off\", \"weight\": 0}], \"bucketBy\": \"user.id\"}}");
    assert_clean();
    check_serve("{\"serve\": {\"rollout\": [{\"variant\": \"on\", \"weight\": 1000001},"
                " {\"variant\": \"nope\", \"weight\": -1}, {\"variant\": \"off\", \"weight\": "
                "1.5}, {\"variant\": \"off\"}, {\"weight\": 1, \"extra\": 2}]}}");
    ck_assert(has_error("serve.rollout[0].weight"));
    ck_assert(has_error("serve.rollout[1].variant"));
    ck_assert(has_error("serve.rollout[1].weight"));
    ck_assert(has_error("serve.rollout[2].weight"));
    ck_assert(has_error("serve.rollout[3].weight"));
    ck_assert(has_error("serve.rollout[4].variant"));
    ck_assert(has_error("serve.rollout[4].extra"));
}
END_TEST

START_TEST(rollout_weights_not_all_zero)
{
    check_serve("{\"serve\": {\"rollout\": [{\"variant\": \"on\", \"weight\": 0},"
                " {\"variant\": \"off\", \"weight\": 0}]}}");
    assert_only_error("serve.rollout");
}
END_TEST

START_TEST(rollout_item_count_boundary)
{
    const char *item = "{\"variant\":\"on\",\"weight\":1}";
    char *text = list_text("{\"serve\": {\"rollout\": [", item, 65, "]}}");
    check_serve(text);
    assert_only_error("serve.rollout");
    free(text);
    validate_free(&v);
    text = list_text("{\"serve\": {\"rollout\": [", item, 64, "]}}");
    check_serve(text);
    assert_clean();
    free(text);
    check_serve("{\"serve\": {\"rollout\": []}}");
    assert_only_error("serve.rollout");
}
END_TEST

START_TEST(bucket_by_boundary)
{
    char text[1024];
    char attr[202];
    memset(attr, 'b', 201);
    attr[201] = '\0';
    snprintf(text, sizeof text,
             "{\"serve\": {\"rollout\": [{\"variant\": \"on\", \"weight\": 1}], \"bucketBy\": "
             "\"%.200s\"}}",
             attr);
    check_serve(text);
    assert_clean();
    snprintf(text, sizeof text,
             "{\"serve\": {\"rollout\": [{\"variant\": \"on\", \"weight\": 1}], \"bucketBy\": "
             "\"%s\"}}",
             attr);
    check_serve(text);
    assert_only_error("serve.bucketBy");
}
END_TEST

/* ---- variant values ---- */

START_TEST(variant_values_match_type)
{
    struct json_object *obj =
        parse("{\"b\": true, \"s\": \"x\", \"n\": 1.5, \"o\": {}, \"a\": [], \"z\": null}");
    struct json_object *b, *s, *n, *o, *a;
    json_object_object_get_ex(obj, "b", &b);
    json_object_object_get_ex(obj, "s", &s);
    json_object_object_get_ex(obj, "n", &n);
    json_object_object_get_ex(obj, "o", &o);
    json_object_object_get_ex(obj, "a", &a);
    ck_assert(validate_variant_value(&v, "value", b, FLAG_TYPE_BOOLEAN));
    ck_assert(validate_variant_value(&v, "value", s, FLAG_TYPE_STRING));
    ck_assert(validate_variant_value(&v, "value", n, FLAG_TYPE_NUMBER));
    ck_assert(validate_variant_value(&v, "value", o, FLAG_TYPE_JSON));
    ck_assert(validate_variant_value(&v, "value", a, FLAG_TYPE_JSON));
    assert_clean();
    ck_assert(!validate_variant_value(&v, "value", s, FLAG_TYPE_NUMBER));
    ck_assert(!validate_variant_value(&v, "value", NULL, FLAG_TYPE_JSON));
    ck_assert(!validate_variant_value(&v, "value", s, FLAG_TYPE_JSON));
    ck_assert(!validate_variant_value(&v, "value", n, FLAG_TYPE_STRING));
    assert_only_error("value");
}
END_TEST

START_TEST(canonical_forms)
{
    struct json_object *obj =
        parse("{\"serve\": {\"rollout\": [{\"variant\": \"on\", \"weight\": 2.0},"
              " {\"variant\": \"off\", \"weight\": 1e2}], \"bucketBy\": \"id\"},"
              " \"single\": {\"variant\": \"on\"}, \"n\": 3.0, \"f\": 2.5, \"s\": \"x\"}");
    struct json_object *serve, *single, *n, *f, *str;
    json_object_object_get_ex(obj, "serve", &serve);
    json_object_object_get_ex(obj, "single", &single);
    json_object_object_get_ex(obj, "n", &n);
    json_object_object_get_ex(obj, "f", &f);
    json_object_object_get_ex(obj, "s", &str);
    struct json_object *c = validate_serve_canonical(serve);
    ck_assert_str_eq(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN),
                     "{\"rollout\":[{\"variant\":\"on\",\"weight\":2},"
                     "{\"variant\":\"off\",\"weight\":100}],\"bucketBy\":\"id\"}");
    json_object_put(c);
    c = validate_serve_canonical(single);
    ck_assert_str_eq(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN),
                     "{\"variant\":\"on\"}");
    json_object_put(c);
    c = validate_number_canonical(n);
    ck_assert_str_eq(json_object_to_json_string(c), "3");
    json_object_put(c);
    c = validate_number_canonical(f);
    ck_assert_str_eq(json_object_to_json_string(c), "2.5");
    json_object_put(c);
    c = validate_number_canonical(str);
    ck_assert_ptr_eq(c, str);
    json_object_put(c);
}
END_TEST

START_TEST(names_round_trip)
{
    ck_assert_int_eq(validate_flag_type_from_name("json"), FLAG_TYPE_JSON);
    ck_assert_int_eq(validate_flag_type_from_name("object"), -1);
}
END_TEST

/* The one operator table (src/eval/cond_ops.h): names round-trip, the
 * schema enum lists them in snapshot order, negative operators negate a
 * positive one that negates nothing. */
START_TEST(operator_table)
{
    struct json_object *names = json_tokener_parse(COND_OPS_SCHEMA_ENUM);
    ck_assert_ptr_nonnull(names);
    ck_assert_uint_eq(json_object_array_length(names), SNAPSHOT_OP_COUNT);
    int negatives = 0;
    for (int op = 0; op < SNAPSHOT_OP_COUNT; op++) {
        const char *name = cond_op_name((enum snapshot_op)op);
        ck_assert_int_eq(cond_op_from_name(name), op);
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(names, op)), name);
        enum snapshot_op twin = cond_ops[op].positive;
        ck_assert_int_eq(cond_ops[twin].positive, twin);
        if ((int)twin != op) {
            negatives++;
            ck_assert_int_eq(cond_ops[twin].kind, cond_ops[op].kind);
            ck_assert_int_eq(cond_ops[twin].single_value, cond_ops[op].single_value);
        }
    }
    json_object_put(names);
    ck_assert_int_eq(negatives, 4);
    ck_assert_int_eq(cond_ops[SNAPSHOT_OP_NOT_CONTAINS].positive, SNAPSHOT_OP_CONTAINS);
    ck_assert_int_eq(cond_op_from_name("like"), SNAPSHOT_OP_COUNT);
    ck_assert_int_eq(cond_op_from_name(NULL), SNAPSHOT_OP_COUNT);
    ck_assert_str_eq(cond_op_name(SNAPSHOT_OP_COUNT), "?");
    ck_assert(cond_op_reads_instants(SNAPSHOT_OP_BEFORE));
    ck_assert(cond_op_reads_instants(SNAPSHOT_OP_NOT_EXISTS));
    ck_assert(!cond_op_reads_instants(SNAPSHOT_OP_EQ));
}
END_TEST

START_TEST(email_syntax)
{
    const char *good[] = {"a@b.co", "Jane.Doe+tag@Example.COM", "x_y-z@sub.domain-1.example",
                          "o'neil@example.ie"};
    const char *bad[] = {"",          "plain",          "@example.com", "a@",           "a@b",
                         "a@-b.com",  "a@b-.com",       "a b@c.com",    "a@b..com",     "a@@b.com",
                         "a@b.com\n", "\xc3\xa9@b.com", "a@b_c.com",    "a;DROP@b.com'"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ck_assert_msg(validate_email_ok(good[i], strlen(good[i])), "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!validate_email_ok(bad[i], strlen(bad[i])), "%s", bad[i]);
    char local[72];
    memset(local, 'a', 65);
    memcpy(local + 65, "@b.co", 6);
    ck_assert(!validate_email_ok(local, strlen(local))); /* local part over 64 */
    ck_assert(validate_email_ok(local + 1, strlen(local + 1)));
}
END_TEST

Suite *suite_validate(void)
{
    Suite *s = suite_create("validate");
    TCase *pure = tcase_create("pure");
    tcase_add_test(pure, utf8_length_counts_characters);
    tcase_add_test(pure, key_pattern);
    tcase_add_test(pure, uuid_shape);
    tcase_add_test(pure, semver_forms);
    tcase_add_test(pure, timestamps);
    tcase_add_test(pure, slugify_derives_keys);
    tcase_add_test(pure, names_round_trip);
    tcase_add_test(pure, operator_table);
    suite_add_tcase(s, pure);

    TCase *fields = tcase_create("fields");
    tcase_add_checked_fixture(fields, setup, teardown);
    tcase_add_test(fields, string_bounds_count_characters);
    tcase_add_test(fields, string_presence_and_null);
    tcase_add_test(fields, empty_string_is_below_minimum);
    tcase_add_test(fields, key_field);
    tcase_add_test(fields, integer_bounds);
    tcase_add_test(fields, bool_and_uuid_fields);
    tcase_add_test(fields, tags_bounds);
    tcase_add_test(fields, tag_length_boundary);
    tcase_add_test(fields, unknown_fields_are_named);
    tcase_add_test(fields, nested_paths);
    tcase_add_test(fields, variant_values_match_type);
    tcase_add_test(fields, canonical_forms);
    suite_add_tcase(s, fields);

    TCase *conds = tcase_create("conditions");
    tcase_add_checked_fixture(conds, setup, teardown);
    tcase_add_test(conds, valid_conditions_pass);
    tcase_add_test(conds, semver_agrees_with_compiler);
    tcase_add_test(conds, timestamps_agree_with_compiler);
    tcase_add_test(conds, condition_count_boundary);
    tcase_add_test(conds, unknown_operator);
    tcase_add_test(conds, missing_attribute_and_operator);
    tcase_add_test(conds, both_attribute_and_segment);
    tcase_add_test(conds, unknown_condition_field);
    tcase_add_test(conds, values_count_boundary);
    tcase_add_test(conds, values_required_and_not_empty);
    tcase_add_test(conds, single_value_operators_take_one);
    tcase_add_test(conds, exists_takes_no_values);
    tcase_add_test(conds, value_types_per_operator);
    tcase_add_test(conds, negate_and_case_insensitive_are_booleans);
    tcase_add_test(conds, segment_references);
    tcase_add_test(conds, segments_cannot_reference_segments);
    tcase_add_test(conds, entity_attributes_must_be_declared);
    tcase_add_test(conds, attribute_length_boundary);
    tcase_add_test(conds, condition_not_an_object);
    suite_add_tcase(s, conds);

    TCase *serve = tcase_create("serve");
    tcase_add_checked_fixture(serve, setup, teardown);
    tcase_add_test(serve, serve_single_variant);
    tcase_add_test(serve, serve_exactly_one_form);
    tcase_add_test(serve, serve_rollout);
    tcase_add_test(serve, rollout_weights_not_all_zero);
    tcase_add_test(serve, rollout_item_count_boundary);
    tcase_add_test(serve, bucket_by_boundary);
    tcase_add_test(serve, email_syntax);
    suite_add_tcase(s, serve);
    return s;
}
