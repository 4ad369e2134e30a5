/*
 * test_json_quick.c - json_quick_parse builds exactly json-c's tree for
 * the plain subset (compared with json-c's own parse, member by member and
 * as serialized text) and declines everything outside it, valid or not.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "json_quick.h"
#include "suites.h"

static struct json_quick_keys keys;

/* Parses text both ways; the quick tree must equal json-c's, with names
 * copied by json-c (keys NULL) and with names kept in keys alike. */
static void assert_same_with(const char *text, struct json_quick_keys *names)
{
    struct json_object *quick = NULL;
    ck_assert_msg(json_quick_parse(text, strlen(text), names, &quick), "declined: %s", text);
    struct json_object *expected = json_tokener_parse(text);
    ck_assert_ptr_nonnull(expected);
    ck_assert_msg(json_object_equal(quick, expected), "differs: %s", text);
    const int flags = JSON_C_TO_STRING_PLAIN;
    ck_assert_str_eq(json_object_to_json_string_ext(quick, flags),
                     json_object_to_json_string_ext(expected, flags));
    json_object_put(quick);
    json_object_put(expected);
}

static void assert_same_as_json_c(const char *text)
{
    assert_same_with(text, NULL);
    assert_same_with(text, &keys);
}

static void assert_declined(const char *text, size_t len)
{
    struct json_object *quick = (struct json_object *)1;
    ck_assert_msg(!json_quick_parse(text, len, NULL, &quick), "accepted: %.*s", (int)len, text);
    ck_assert_ptr_null(quick);
}

#define DECLINED(text) assert_declined(text, strlen(text))

START_TEST(builds_what_json_c_builds)
{
    assert_same_as_json_c("{}");
    assert_same_as_json_c(" \t\r\n{ } \n");
    assert_same_as_json_c("{\"context\":{\"targetingKey\":\"user-4711\",\"country\":\"DE\","
                          "\"plan\":\"enterprise\",\"version\":\"2.4.1\","
                          "\"email\":\"jane@example.com\"}}");
    assert_same_as_json_c("{\"a\": 0, \"b\": -17, \"c\": 999999999999999999, "
                          "\"d\": -999999999999999999}");
    assert_same_as_json_c("{\"t\": true, \"f\": false, \"n\": null, \"e\": \"\"}");
    assert_same_as_json_c("{\"list\": [1, \"two\", [], {}, [true, null]], \"o\": {\"p\": {}}}");
    assert_same_as_json_c("{\"caf\xc3\xa9\": \"h\xc3\xa9\", \"x\": \"a/b:c,d}\"}");
    assert_same_as_json_c("{\"dup\": 1, \"dup\": 2}"); /* the last wins, as in json-c */
    struct json_object *obj;
    ck_assert(json_quick_parse("{\"n\": 42}", 9, NULL, &obj));
    ck_assert(json_object_is_type(json_object_object_get(obj, "n"), json_type_int));
    json_object_put(obj);
}
END_TEST

/* Names beyond the room of keys are copied by json-c: the tree is the
 * same, and freeing it frees only those (ASan checks). */
START_TEST(names_beyond_the_room_are_copied)
{
    char text[16384];
    size_t n = 0;
    n += (size_t)snprintf(text + n, sizeof text - n, "{");
    for (int i = 0; i < 400; i++) /* 400 names of 12 bytes: more than the room */
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\"attribute-%03d\": %d",
                              i > 0 ? "," : "", i, i);
    snprintf(text + n, sizeof text - n, "}");
    assert_same_with(text, &keys);
    ck_assert_uint_le(keys.used, sizeof keys.text);
    ck_assert_uint_gt(keys.used, sizeof keys.text - 16);
    struct json_object *obj;
    ck_assert(json_quick_parse(text, strlen(text), &keys, &obj));
    struct json_object *v;
    ck_assert(json_object_object_get_ex(obj, "attribute-000", &v)); /* in keys */
    ck_assert_int_eq(json_object_get_int(v), 0);
    ck_assert(json_object_object_get_ex(obj, "attribute-399", &v)); /* copied */
    ck_assert_int_eq(json_object_get_int(v), 399);
    json_object_put(obj);
}
END_TEST

/* {"NAME": X} alone: X is built as the whole parse builds it under the
 * member; every other shape is declined. */
static void assert_only_member(const char *text, const char *name)
{
    struct json_object *value = (struct json_object *)1;
    ck_assert_msg(json_quick_parse_only_member(text, strlen(text), name, &keys, &value),
                  "declined: %s", text);
    struct json_object *whole = json_tokener_parse(text), *expected = NULL;
    ck_assert(json_object_object_get_ex(whole, name, &expected));
    ck_assert_msg(json_object_equal(value, expected), "differs: %s", text);
    json_object_put(value);
    json_object_put(whole);
}

static void assert_not_only_member(const char *text)
{
    struct json_object *value = (struct json_object *)1;
    ck_assert_msg(!json_quick_parse_only_member(text, strlen(text), "context", &keys, &value),
                  "accepted: %s", text);
    ck_assert_ptr_null(value);
}

START_TEST(only_member_builds_the_member)
{
    assert_only_member("{\"context\":{\"targetingKey\":\"u-1\",\"plan\":\"pro\",\"n\":3}}",
                       "context");
    assert_only_member(" { \"context\" : { } } \n", "context");
    assert_only_member("{\"context\": [1, {\"a\": true}]}", "context");
    assert_only_member("{\"context\": \"text\"}", "context");
    struct json_object *value = (struct json_object *)1;
    ck_assert(json_quick_parse_only_member("{\"context\": null}", 17, "context", &keys, &value));
    ck_assert_ptr_null(value);
    assert_not_only_member("{}");
    assert_not_only_member("{\"contexts\": {}}");
    assert_not_only_member("{\"Context\": {}}");
    assert_not_only_member("{\"context\": {}, \"flags\": []}");
    assert_not_only_member("{\"flags\": [], \"context\": {}}");
    assert_not_only_member("{\"context\": {}, \"context\": {}}");
    assert_not_only_member("{\"context\": {}} x");
    assert_not_only_member("{\"context\": {\"a\": 1.5}}"); /* outside the subset */
    assert_not_only_member("{\"context\": {\"a\": \"\\n\"}}");
    assert_not_only_member("[{\"context\": {}}]");
    assert_not_only_member("{\"context\" {}}");
    assert_not_only_member("{\"context\": {}");
}
END_TEST

START_TEST(declines_the_rest)
{
    DECLINED("");
    DECLINED("   ");
    DECLINED("[]");           /* not an object */
    DECLINED("\"s\"");        /* not an object */
    DECLINED("{\"a\": 1.5}"); /* doubles: json-c's own rules */
    DECLINED("{\"a\": 1e3}");
    DECLINED("{\"a\": -0}");
    DECLINED("{\"a\": 01}");
    DECLINED("{\"a\": 1234567890123456789}"); /* 19 digits */
    /* 66 digits with leading zeros: declined before the value overflows */
    DECLINED("{\"t\": [000000000000000000000000000000000000000000002000000000000000000000]}");
    DECLINED("{\"a\": -}");
    DECLINED("{\"a\": \"x\\ny\"}"); /* escapes */
    DECLINED("{\"a\": \"x\ty\"}");  /* control characters */
    DECLINED("{\"a\": True}");      /* json-c's lenient literals */
    DECLINED("{\"a\": NaN}");
    DECLINED("{'a': 1}");
    DECLINED("{\"a\": 1,}"); /* trailing comma */
    DECLINED("{\"a\": [1,]}");
    DECLINED("{\"a\" 1}");
    DECLINED("{\"a\": 1} x"); /* trailing text */
    DECLINED("{\"a\": 1}{}");
    DECLINED("{\"a\": 1");
    DECLINED("{\"a\": \"unterminated}");
    DECLINED("{\"a\": truex}");
    DECLINED("{\"a\": 1 /* comment */}");
    DECLINED("{\"a\":\f1}"); /* form feed is not whitespace here */
    char key[80];
    memset(key, 'k', sizeof key);
    char text[128];
    snprintf(text, sizeof text, "{\"%.*s\": 1}", 70, key); /* a key too long for the stack */
    DECLINED(text);
    assert_declined("{\"a\": \"x\0y\"}", 12); /* NUL inside a string */
    assert_declined("{\"a\": 1}", 5);         /* cut short by len */
}
END_TEST

/* {"a": followed by containers - 1 nested arrays: containers deep in all. */
static void nested(char *out, int containers)
{
    size_t n = (size_t)sprintf(out, "{\"a\":");
    for (int i = 1; i < containers; i++)
        out[n++] = '[';
    for (int i = 1; i < containers; i++)
        out[n++] = ']';
    out[n++] = '}';
    out[n] = '\0';
}

START_TEST(bounds_the_depth)
{
    char text[2 * JSON_QUICK_MAX_DEPTH + 16];
    nested(text, JSON_QUICK_MAX_DEPTH);
    assert_same_as_json_c(text);
    nested(text, JSON_QUICK_MAX_DEPTH + 1);
    DECLINED(text);
}
END_TEST

Suite *suite_json_quick(void)
{
    Suite *s = suite_create("json_quick");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, builds_what_json_c_builds);
    tcase_add_test(tc, names_beyond_the_room_are_copied);
    tcase_add_test(tc, only_member_builds_the_member);
    tcase_add_test(tc, declines_the_rest);
    tcase_add_test(tc, bounds_the_depth);
    suite_add_tcase(s, tc);
    return s;
}
