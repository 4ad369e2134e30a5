/*
 * test_envelope.c - Check suite for envelope.c: the exact key set and
 * values of each error body, their serialized form, the surface of a path
 * and the reason phrases.
 */
#include <stdarg.h>
#include <string.h>

#include "http/envelope.h"
#include "suites.h"

/* Asserts that obj has exactly the NULL-terminated list of keys. */
static void assert_keys(struct json_object *obj, ...)
{
    va_list ap;
    int expected = 0;
    ck_assert(json_object_is_type(obj, json_type_object));
    va_start(ap, obj);
    for (const char *key = va_arg(ap, const char *); key != NULL; key = va_arg(ap, const char *)) {
        ck_assert_msg(json_object_object_get_ex(obj, key, NULL), "missing key %s", key);
        expected++;
    }
    va_end(ap);
    ck_assert_int_eq(json_object_object_length(obj), expected);
}

static const char *string_field(struct json_object *obj, const char *key)
{
    struct json_object *value;
    ck_assert(json_object_object_get_ex(obj, key, &value));
    ck_assert(json_object_is_type(value, json_type_string));
    return json_object_get_string(value);
}

static int int_field(struct json_object *obj, const char *key)
{
    struct json_object *value;
    ck_assert(json_object_object_get_ex(obj, key, &value));
    ck_assert(json_object_is_type(value, json_type_int));
    return json_object_get_int(value);
}

static const char *plain(struct json_object *obj)
{
    return json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
}

static struct json_object *sample_errors(void)
{
    struct json_object *errors = json_object_new_object();
    struct json_object *messages = json_object_new_array();
    json_object_array_add(messages, json_object_new_string("is required"));
    json_object_object_add(errors, "name", messages);
    return errors;
}

START_TEST(v1_without_errors)
{
    struct json_object *body = envelope_v1(404, "flag not found", NULL);
    assert_keys(body, "message", "status", NULL);
    ck_assert_str_eq(string_field(body, "message"), "flag not found");
    ck_assert_int_eq(int_field(body, "status"), 404);
    ck_assert_str_eq(plain(body), "{\"message\":\"flag not found\",\"status\":404}");
    json_object_put(body);
}
END_TEST

START_TEST(v1_with_errors)
{
    struct json_object *body = envelope_v1(422, "validation failed", sample_errors());
    assert_keys(body, "message", "status", "errors", NULL);
    ck_assert_int_eq(int_field(body, "status"), 422);
    ck_assert_str_eq(plain(body), "{\"message\":\"validation failed\",\"status\":422,"
                                  "\"errors\":{\"name\":[\"is required\"]}}");
    json_object_put(body);
}
END_TEST

START_TEST(v1_null_message_uses_reason_phrase)
{
    struct json_object *body = envelope_v1(500, NULL, NULL);
    assert_keys(body, "message", "status", NULL);
    ck_assert_str_eq(string_field(body, "message"), "Internal Server Error");
    json_object_put(body);
}
END_TEST

START_TEST(ofrep_with_key)
{
    struct json_object *body = envelope_ofrep(404, "my-flag", "FLAG_NOT_FOUND", "no such flag");
    assert_keys(body, "key", "errorCode", "errorDetails", "message", "status", NULL);
    ck_assert_str_eq(string_field(body, "key"), "my-flag");
    ck_assert_str_eq(string_field(body, "errorCode"), "FLAG_NOT_FOUND");
    ck_assert_str_eq(string_field(body, "errorDetails"), "no such flag");
    ck_assert_str_eq(string_field(body, "message"), "no such flag");
    ck_assert_int_eq(int_field(body, "status"), 404);
    ck_assert_str_eq(plain(body), "{\"key\":\"my-flag\",\"errorCode\":\"FLAG_NOT_FOUND\","
                                  "\"errorDetails\":\"no such flag\","
                                  "\"message\":\"no such flag\",\"status\":404}");
    json_object_put(body);
}
END_TEST

START_TEST(ofrep_without_key)
{
    struct json_object *body = envelope_ofrep(401, NULL, "AUTHENTICATION_ERROR", "bad key");
    assert_keys(body, "errorCode", "errorDetails", "message", "status", NULL);
    ck_assert_str_eq(string_field(body, "errorCode"), "AUTHENTICATION_ERROR");
    ck_assert_str_eq(string_field(body, "message"), string_field(body, "errorDetails"));
    ck_assert_int_eq(int_field(body, "status"), 401);
    json_object_put(body);
}
END_TEST

START_TEST(ofrep_defaults)
{
    struct json_object *body = envelope_ofrep(503, NULL, NULL, NULL);
    assert_keys(body, "errorCode", "errorDetails", "message", "status", NULL);
    ck_assert_str_eq(string_field(body, "errorCode"), "GENERAL");
    ck_assert_str_eq(string_field(body, "errorDetails"), "Service Unavailable");
    ck_assert_str_eq(string_field(body, "message"), "Service Unavailable");
    json_object_put(body);
}
END_TEST

START_TEST(problem_minimal)
{
    struct json_object *body = envelope_problem(409, "slug taken", NULL, NULL);
    assert_keys(body, "type", "title", "status", "detail", NULL);
    ck_assert_str_eq(string_field(body, "type"), "about:blank");
    ck_assert_str_eq(string_field(body, "title"), "Conflict");
    ck_assert_int_eq(int_field(body, "status"), 409);
    ck_assert_str_eq(string_field(body, "detail"), "slug taken");
    ck_assert_str_eq(plain(body), "{\"type\":\"about:blank\",\"title\":\"Conflict\","
                                  "\"status\":409,\"detail\":\"slug taken\"}");
    json_object_put(body);
}
END_TEST

START_TEST(problem_full)
{
    struct json_object *body =
        envelope_problem(422, "validation failed", "/orgs/acme/projects", sample_errors());
    assert_keys(body, "type", "title", "status", "detail", "instance", "errors", NULL);
    ck_assert_str_eq(string_field(body, "title"), "Unprocessable Content");
    ck_assert_str_eq(string_field(body, "instance"), "/orgs/acme/projects");
    struct json_object *errors;
    ck_assert(json_object_object_get_ex(body, "errors", &errors));
    assert_keys(errors, "name", NULL);
    json_object_put(body);
}
END_TEST

START_TEST(problem_null_detail_uses_title)
{
    struct json_object *body = envelope_problem(429, NULL, NULL, NULL);
    ck_assert_str_eq(string_field(body, "title"), "Too Many Requests");
    ck_assert_str_eq(string_field(body, "detail"), "Too Many Requests");
    json_object_put(body);
}
END_TEST

START_TEST(surfaces)
{
    ck_assert_int_eq(envelope_surface_for_path("/v1"), SURFACE_V1);
    ck_assert_int_eq(envelope_surface_for_path("/v1/"), SURFACE_V1);
    ck_assert_int_eq(envelope_surface_for_path("/v1/orgs/acme/flags"), SURFACE_V1);
    ck_assert_int_eq(envelope_surface_for_path("//v1/healthz"), SURFACE_V1);
    ck_assert_int_eq(envelope_surface_for_path("/ofrep"), SURFACE_OFREP);
    ck_assert_int_eq(envelope_surface_for_path("/ofrep/v1/evaluate/flags"), SURFACE_OFREP);
    ck_assert_int_eq(envelope_surface_for_path("///ofrep/x"), SURFACE_OFREP);
    ck_assert_int_eq(envelope_surface_for_path("/v10"), SURFACE_ROOT);
    ck_assert_int_eq(envelope_surface_for_path("/v"), SURFACE_ROOT);
    ck_assert_int_eq(envelope_surface_for_path("/ofrepx/v1"), SURFACE_ROOT);
    ck_assert_int_eq(envelope_surface_for_path("/V1"), SURFACE_ROOT);
    ck_assert_int_eq(envelope_surface_for_path("/orgs/acme"), SURFACE_ROOT);
    ck_assert_int_eq(envelope_surface_for_path("/"), SURFACE_ROOT);
    ck_assert_int_eq(envelope_surface_for_path(""), SURFACE_ROOT);
    ck_assert_int_eq(envelope_surface_for_path("v1/x"), SURFACE_ROOT);
    ck_assert_int_eq(envelope_surface_for_path(NULL), SURFACE_ROOT);
}
END_TEST

START_TEST(reason_phrases)
{
    static const struct {
        int status;
        const char *phrase;
    } cases[] = {
        {200, "OK"},
        {201, "Created"},
        {204, "No Content"},
        {304, "Not Modified"},
        {400, "Bad Request"},
        {401, "Unauthorized"},
        {403, "Forbidden"},
        {404, "Not Found"},
        {405, "Method Not Allowed"},
        {409, "Conflict"},
        {412, "Precondition Failed"},
        {413, "Content Too Large"},
        {414, "URI Too Long"},
        {415, "Unsupported Media Type"},
        {422, "Unprocessable Content"},
        {429, "Too Many Requests"},
        {431, "Request Header Fields Too Large"},
        {500, "Internal Server Error"},
        {501, "Not Implemented"},
        {503, "Service Unavailable"},
        {504, "Gateway Timeout"},
        {511, "Network Authentication Required"},
        {299, "Error"},
        {0, "Error"},
        {-1, "Error"},
        {999, "Error"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_str_eq(envelope_reason_phrase(cases[i].status), cases[i].phrase);
}
END_TEST

Suite *suite_envelope(void)
{
    Suite *s = suite_create("envelope");
    TCase *tc = tcase_create("bodies");
    tcase_add_test(tc, v1_without_errors);
    tcase_add_test(tc, v1_with_errors);
    tcase_add_test(tc, v1_null_message_uses_reason_phrase);
    tcase_add_test(tc, ofrep_with_key);
    tcase_add_test(tc, ofrep_without_key);
    tcase_add_test(tc, ofrep_defaults);
    tcase_add_test(tc, problem_minimal);
    tcase_add_test(tc, problem_full);
    tcase_add_test(tc, problem_null_detail_uses_title);
    suite_add_tcase(s, tc);
    TCase *tc_text = tcase_create("text");
    tcase_add_test(tc_text, surfaces);
    tcase_add_test(tc_text, reason_phrases);
    suite_add_tcase(s, tc_text);
    return s;
}
