/*
 * test_jsonschema.c - unit tests of the request-schema validator
 * (src/mgmt/jsonschema.c): each keyword at its boundary with validate.c's
 * message and field path, oneOf decided by the discriminating member,
 * nullable types, the depth bound, the subset check and the parse cache.
 *
 * Run by check_main.c through suite_jsonschema().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt/jsonschema.h"
#include "suites.h"

static struct validate v;
static struct json_object *schema, *body;

static void setup(void)
{
    validate_init(&v);
    schema = body = NULL;
}

static void teardown(void)
{
    validate_free(&v);
    json_object_put(schema);
    json_object_put(body);
}

/* Parses text allowing deeper nesting than json-c's default (the depth test). */
static struct json_object *parse_deep(const char *text)
{
    struct json_tokener *tok = json_tokener_new_ex(128);
    struct json_object *obj = json_tokener_parse_ex(tok, text, (int)strlen(text));
    json_tokener_free(tok);
    return obj;
}

/* Checks body_text against schema_text; true when valid. */
static bool check(const char *schema_text, const char *body_text)
{
    validate_free(&v);
    validate_init(&v);
    json_object_put(schema);
    json_object_put(body);
    schema = parse_deep(schema_text);
    body = parse_deep(body_text);
    ck_assert_msg(schema != NULL, "schema does not parse: %s", schema_text);
    return jsonschema_check(&v, schema, body);
}

/* The one message recorded at path. */
static void assert_message(const char *path, const char *message)
{
    struct json_object *list;
    ck_assert_msg(v.errors && json_object_object_get_ex(v.errors, path, &list),
                  "no error at %s: %s", path,
                  v.errors ? json_object_to_json_string(v.errors) : "none");
    ck_assert_int_eq(json_object_array_length(list), 1);
    ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(list, 0)), message);
}

#define OBJ(props) "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" props "}}"
#define KEY_SCHEMA                                                                                 \
    "{\"type\":\"string\",\"minLength\":1,\"maxLength\":63,\"pattern\":\"" VALIDATE_KEY_PATTERN    \
    "\"}"

START_TEST(required_and_unknown_members)
{
    const char *s = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"key\"],"
                    "\"properties\":{\"key\":" KEY_SCHEMA "}}";
    ck_assert(check(s, "{\"key\":\"ok\"}"));
    ck_assert(!check(s, "{\"other\":1}"));
    assert_message("key", "is required");
    assert_message("other", "unknown field");
    ck_assert_int_eq(json_object_object_length(v.errors), 2);
}
END_TEST

START_TEST(types_and_null)
{
    ck_assert(!check(OBJ("\"s\":{\"type\":\"string\"}"), "{\"s\":1}"));
    assert_message("s", "must be a string");
    ck_assert(!check(OBJ("\"s\":{\"type\":\"string\"}"), "{\"s\":null}"));
    assert_message("s", "must not be null");
    ck_assert(check(OBJ("\"s\":{\"type\":[\"string\",\"null\"]}"), "{\"s\":null}"));
    ck_assert(!check(OBJ("\"a\":{\"type\":\"array\"}"), "{\"a\":{}}"));
    assert_message("a", "must be an array");
    ck_assert(!check(OBJ("\"o\":{\"type\":\"object\"}"), "{\"o\":[]}"));
    assert_message("o", "must be an object");
    ck_assert(!check(OBJ("\"b\":{\"type\":\"boolean\"}"), "{\"b\":\"true\"}"));
    assert_message("b", "must be a boolean");
    ck_assert(!check(OBJ("\"v\":{\"type\":[\"string\",\"number\",\"boolean\"]}"), "{\"v\":[]}"));
    assert_message("v", "must be a string, number or boolean");
    ck_assert(!check(OBJ("\"v\":{\"not\":{\"type\":\"null\"}}"), "{\"v\":null}"));
    assert_message("v", "must not be null");
    ck_assert(check(OBJ("\"v\":{\"not\":{\"type\":\"null\"}}"), "{\"v\":[1]}"));
}
END_TEST

START_TEST(integers_and_bounds)
{
    const char *s = OBJ("\"w\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000000}");
    ck_assert(check(s, "{\"w\":1000000}"));
    ck_assert(check(s, "{\"w\":5.0}")); /* integral doubles count, as in validate.c */
    ck_assert(!check(s, "{\"w\":1000001}"));
    assert_message("w", "must be from 0 to 1000000");
    ck_assert(!check(s, "{\"w\":-1}"));
    assert_message("w", "must be from 0 to 1000000");
    ck_assert(!check(s, "{\"w\":0.5}"));
    assert_message("w", "must be an integer");
    ck_assert(!check(OBJ("\"d\":{\"type\":\"integer\",\"minimum\":0}"), "{\"d\":-3}"));
    assert_message("d", "must be at least 0");
}
END_TEST

START_TEST(strings_lengths_pattern_formats)
{
    const char *s = OBJ("\"n\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":3}");
    ck_assert(check(s, "{\"n\":\"\\u00e9\\u00e9\\u00e9\"}")); /* characters, not bytes */
    ck_assert(!check(s, "{\"n\":\"\"}"));
    assert_message("n", "must not be empty");
    ck_assert(!check(s, "{\"n\":\"abcd\"}"));
    assert_message("n", "must be at most 3 characters");
    ck_assert(!check(OBJ("\"n\":{\"type\":\"string\",\"minLength\":8}"), "{\"n\":\"short\"}"));
    assert_message("n", "must be at least 8 characters");
    ck_assert(!check(OBJ("\"k\":" KEY_SCHEMA), "{\"k\":\"Not-A-Key\"}"));
    assert_message("k", VALIDATE_KEY_MESSAGE);
    ck_assert(!check(OBJ("\"k\":" KEY_SCHEMA), "{\"k\":\"-x\"}"));
    const char *uuid = OBJ("\"u\":{\"type\":\"string\",\"format\":\"uuid\"}");
    ck_assert(check(uuid, "{\"u\":\"0b7f5a2e-6a56-4d5e-9d43-5f0f6c0a9a11\"}"));
    ck_assert(!check(uuid, "{\"u\":\"nope\"}"));
    assert_message("u", "must be a uuid");
    const char *at = OBJ("\"t\":{\"type\":\"string\",\"format\":\"date-time\"}");
    ck_assert(check(at, "{\"t\":\"2030-01-02T03:04:05Z\"}"));
    ck_assert(!check(at, "{\"t\":\"tomorrow\"}"));
    assert_message("t", "must be an ISO 8601 timestamp string");
    const char *email = OBJ("\"e\":{\"type\":\"string\",\"format\":\"email\"}");
    ck_assert(check(email, "{\"e\":\"a@example.com\"}"));
    ck_assert(!check(email, "{\"e\":\"a@b\"}"));
    assert_message("e", "must be an email address");
}
END_TEST

START_TEST(enums_short_and_long)
{
    ck_assert(!check(OBJ("\"r\":{\"enum\":[\"read\",\"write\"]}"), "{\"r\":\"admin\"}"));
    assert_message("r", "must be one of read, write");
    ck_assert(check(OBJ("\"r\":{\"type\":[\"string\",\"null\"],\"enum\":[\"read\",null]}"),
                    "{\"r\":null}"));
    /* the operator table's enum is long: the message names the value */
    ck_assert(
        !check(OBJ("\"operator\":{\"enum\":" COND_OPS_SCHEMA_ENUM "}"), "{\"operator\":\"like\"}"));
    assert_message("operator", "unknown operator like");
    ck_assert(check(OBJ("\"operator\":{\"enum\":" COND_OPS_SCHEMA_ENUM "}"),
                    "{\"operator\":\"not_exists\"}"));
}
END_TEST

START_TEST(arrays_items_and_paths)
{
    const char *s = OBJ("\"tags\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"type\":"
                        "\"string\",\"minLength\":1}}");
    ck_assert(!check(s, "{\"tags\":[\"a\",\"b\",\"c\"]}"));
    assert_message("tags", "must have at most 2 items");
    ck_assert(!check(s, "{\"tags\":[\"a\",\"\"]}"));
    assert_message("tags[1]", "must not be empty");
    ck_assert(!check(OBJ("\"l\":{\"type\":\"array\",\"minItems\":1}"), "{\"l\":[]}"));
    assert_message("l", "must have at least 1 item");
    const char *nested = OBJ("\"rules\":{\"type\":\"array\",\"items\":" OBJ(
        "\"serve\":{\"type\":\"object\",\"additionalProperties\":false,"
        "\"properties\":{\"variant\":{\"type\":\"string\"}}}") "}");
    ck_assert(!check(nested, "{\"rules\":[{},{\"serve\":{\"variant\":1,\"x\":2}}]}"));
    assert_message("rules[1].serve.variant", "must be a string");
    assert_message("rules[1].serve.x", "unknown field");
    const char *unique = OBJ("\"e\":{\"type\":\"array\",\"maxItems\":5,\"uniqueItems\":true}");
    ck_assert(check(unique, "{\"e\":[\"a\",\"b\",1,{\"x\":1}]}"));
    ck_assert(!check(unique, "{\"e\":[\"a\",\"b\",\"a\"]}"));
    assert_message("e[2]", "repeats item 0");
    ck_assert(!check(unique, "{\"e\":[{\"x\":[1,2]},{\"x\":[1,2]}]}"));
    assert_message("e[1]", "repeats item 0");
}
END_TEST

#define SERVE                                                                                      \
    "{\"oneOf\":[{\"type\":\"object\",\"required\":[\"variant\"],\"additionalProperties\":false,"  \
    "\"properties\":{\"variant\":{\"type\":\"string\",\"minLength\":1}}},"                         \
    "{\"type\":\"object\",\"required\":[\"rollout\"],\"additionalProperties\":false,"              \
    "\"properties\":{\"rollout\":{\"type\":\"array\",\"minItems\":1},"                             \
    "\"bucketBy\":{\"type\":\"string\"}}}]}"

START_TEST(one_of_by_discriminator)
{
    const char *s = OBJ("\"serve\":" SERVE);
    ck_assert(check(s, "{\"serve\":{\"variant\":\"on\"}}"));
    ck_assert(check(s, "{\"serve\":{\"rollout\":[1],\"bucketBy\":\"id\"}}"));
    ck_assert(!check(s, "{\"serve\":{}}"));
    assert_message("serve", "must have variant or rollout");
    ck_assert(!check(s, "{\"serve\":{\"variant\":\"on\",\"rollout\":[]}}"));
    assert_message("serve", "must have either variant or rollout, not both");
    ck_assert(!check(s, "{\"serve\":{\"variant\":\"on\",\"bucketBy\":\"id\"}}"));
    assert_message("serve.bucketBy", "unknown field");
    ck_assert(!check(s, "{\"serve\":\"on\"}"));
    assert_message("serve", "must be an object");
    /* an attribute condition without its attribute is still one */
    const char *cond = OBJ("\"c\":{\"oneOf\":[{\"type\":\"object\",\"required\":[\"attribute\","
                           "\"operator\"],\"properties\":{\"attribute\":{},\"operator\":{}}},"
                           "{\"type\":\"object\",\"required\":[\"segment\"],\"properties\":"
                           "{\"segment\":{}}}]}");
    ck_assert(!check(cond, "{\"c\":{\"operator\":\"exists\"}}"));
    assert_message("c.attribute", "is required");
    /* a branch chosen by the value's type reports inside it */
    const char *typed = OBJ("\"m\":{\"oneOf\":[{\"type\":\"array\",\"items\":{\"type\":"
                            "\"string\",\"maxLength\":2}},{\"type\":\"string\",\"maxLength\":2}]}");
    ck_assert(check(typed, "{\"m\":[\"ab\"]}"));
    ck_assert(!check(typed, "{\"m\":[\"abc\"]}"));
    assert_message("m[0]", "must be at most 2 characters");
    /* alternatives without a discriminator are tried one by one */
    const char *any = OBJ("\"x\":{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"number\"},"
                          "{\"type\":\"integer\"}]}");
    ck_assert(check(any, "{\"x\":\"s\"}"));
    ck_assert(!check(any, "{\"x\":3}")); /* a number and an integer: not exactly one */
    ck_assert(!check(any, "{\"x\":true}"));
    assert_message("x", "must match exactly one of the alternatives");
}
END_TEST

START_TEST(property_names_and_additional_schemas)
{
    const char *s = OBJ("\"scopes\":{\"type\":\"object\",\"additionalProperties\":{\"enum\":["
                        "\"read\",\"write\"]},\"propertyNames\":{\"enum\":[\"flags\",\"orgs\"]}}");
    ck_assert(check(s, "{\"scopes\":{\"flags\":\"read\"}}"));
    ck_assert(!check(s, "{\"scopes\":{\"flags\":\"all\",\"bogus\":\"read\"}}"));
    assert_message("scopes.flags", "must be one of read, write");
    assert_message("scopes.bogus", "unknown field");
}
END_TEST

START_TEST(depth_is_bounded)
{
    /* a schema of items nested deeper than the bound, and a body to match */
    char s[2048] = "", b[256] = "";
    for (int i = 0; i < JSONSCHEMA_DEPTH_MAX + 4; i++)
        strcat(s, "{\"type\":\"array\",\"items\":");
    strcat(s, "{}");
    for (int i = 0; i < JSONSCHEMA_DEPTH_MAX + 4; i++)
        strcat(s, "}");
    for (int i = 0; i < JSONSCHEMA_DEPTH_MAX + 4; i++)
        strcat(b, "[");
    for (int i = 0; i < JSONSCHEMA_DEPTH_MAX + 4; i++)
        strcat(b, "]");
    ck_assert(!check(s, b));
    const char *bad = NULL;
    ck_assert(!jsonschema_supported(schema, &bad));
}
END_TEST

START_TEST(the_subset_is_checked)
{
    const char *bad = NULL;
    check(OBJ("\"k\":" KEY_SCHEMA ",\"u\":{\"type\":\"string\",\"format\":\"uuid\"}"), "{}");
    ck_assert(jsonschema_supported(schema, &bad));
    ck_assert_ptr_null(bad);
    check(OBJ("\"k\":{\"type\":\"string\",\"pattern\":\"^a+$\"}"), "{}");
    ck_assert(!jsonschema_supported(schema, &bad));
    ck_assert_str_eq(bad, "pattern");
    check(OBJ("\"k\":{\"type\":\"string\",\"format\":\"uri\"}"), "{}");
    ck_assert(!jsonschema_supported(schema, &bad));
    ck_assert_str_eq(bad, "format");
    check(OBJ("\"k\":{\"const\":1}"), "{}");
    ck_assert(!jsonschema_supported(schema, &bad));
    ck_assert_str_eq(bad, "const");
    check(OBJ("\"k\":{\"type\":\"integer-ish\"}"), "{}");
    ck_assert(!jsonschema_supported(schema, &bad));
    /* uniqueItems compares pairs: only under a maxItems of at most 1000 */
    check(OBJ("\"k\":{\"type\":\"array\",\"uniqueItems\":true}"), "{}");
    ck_assert(!jsonschema_supported(schema, &bad));
    ck_assert_str_eq(bad, "uniqueItems");
    check(OBJ("\"k\":{\"type\":\"array\",\"maxItems\":1000,\"uniqueItems\":true}"), "{}");
    ck_assert(jsonschema_supported(schema, &bad));
}
END_TEST

START_TEST(parsed_once_per_text)
{
    static const char text[] = "{\"type\":\"object\"}";
    const struct json_object *first = jsonschema_parsed(text);
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_eq(jsonschema_parsed(text), first);
    static const char broken[] = "{\"type\":";
    ck_assert_ptr_null(jsonschema_parsed(broken));
}
END_TEST

Suite *suite_jsonschema(void)
{
    Suite *s = suite_create("jsonschema");
    TCase *tc = tcase_create("keywords");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, required_and_unknown_members);
    tcase_add_test(tc, types_and_null);
    tcase_add_test(tc, integers_and_bounds);
    tcase_add_test(tc, strings_lengths_pattern_formats);
    tcase_add_test(tc, enums_short_and_long);
    tcase_add_test(tc, arrays_items_and_paths);
    tcase_add_test(tc, one_of_by_discriminator);
    tcase_add_test(tc, property_names_and_additional_schemas);
    tcase_add_test(tc, depth_is_bounded);
    tcase_add_test(tc, the_subset_is_checked);
    tcase_add_test(tc, parsed_once_per_text);
    suite_add_tcase(s, tc);
    return s;
}
