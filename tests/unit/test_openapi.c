/*
 * test_openapi.c - Check suite for openapi.c: the document generated from a
 * small route table (version, paths, operations, parameters, security,
 * schemas, error responses per surface, unique operationIds) and the
 * refusal of a table with a broken schema text.
 */
#include <stdarg.h>
#include <string.h>

#include "http/openapi.h"
#include "suites.h"

static const char healthz_schema[] =
    "{\"type\":\"object\",\"properties\":{\"status\":{\"type\":\"string\"}}}";
static const char eval_request[] = "{\"type\":\"object\",\"properties\":{\"context\":{}}}";
static const char flag_patch[] = "{\"type\":\"object\"}";

static const struct route table[] = {
    {METHOD_GET,
     "/v1/healthz",
     NULL,
     "Health",
     ROUTE_AUTH_NONE,
     NULL,
     healthz_schema,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_HEAD,
     "/v1/healthz",
     NULL,
     "Health (head)",
     ROUTE_AUTH_NONE,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_GET,
     "/v1/orgs/{org}/flags/{key}",
     NULL,
     "Get a flag",
     ROUTE_AUTH_ACCESS_TOKEN,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_PATCH,
     "/v1/orgs/{org}/flags/{key}",
     NULL,
     "Update a flag",
     ROUTE_AUTH_ACCESS_TOKEN,
     flag_patch,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_POST,
     "/v1/orgs/{org}/flags",
     NULL,
     "Create a flag",
     ROUTE_AUTH_ACCESS_TOKEN,
     flag_patch,
     flag_patch,
     201,
     {0},
     NULL,
     NULL},
    {METHOD_POST,
     "/ofrep/v1/evaluate/flags/{key}",
     NULL,
     "Evaluate",
     ROUTE_AUTH_SDK_KEY,
     eval_request,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_OPTIONS,
     "/ofrep/v1/evaluate/flags/{key}",
     NULL,
     "Preflight",
     ROUTE_AUTH_NONE,
     NULL,
     NULL,
     204,
     {0},
     NULL,
     NULL},
    {METHOD_GET,
     "/me",
     NULL,
     "Who am I",
     ROUTE_AUTH_TOKEN_OR_COOKIE,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_GET, "/me", NULL, "Duplicate", ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
    {METHOD_DELETE, "/a-b", NULL, NULL, ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
    {METHOD_DELETE, "/a/b", NULL, NULL, ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
    {METHOD_DELETE, "/a.b", NULL, NULL, ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
    {METHOD_GET, "/", NULL, "Root", ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
};

#define TABLE_LEN (sizeof table / sizeof table[0])

static struct json_object *doc;

static void build(void)
{
    doc = openapi_document(table, TABLE_LEN, "1.2.3");
    ck_assert_ptr_nonnull(doc);
}

static void release(void)
{
    json_object_put(doc);
    doc = NULL;
}

/* Follows a NULL-terminated list of object keys from obj; NULL if absent. */
static struct json_object *at(struct json_object *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    for (const char *key = va_arg(ap, const char *); key != NULL && obj != NULL;
         key = va_arg(ap, const char *))
        if (!json_object_object_get_ex(obj, key, &obj))
            obj = NULL;
    va_end(ap);
    return obj;
}

static const char *text(struct json_object *obj)
{
    ck_assert_ptr_nonnull(obj);
    ck_assert(json_object_is_type(obj, json_type_string));
    return json_object_get_string(obj);
}

static const char *plain(struct json_object *obj)
{
    ck_assert_ptr_nonnull(obj);
    return json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
}

static struct json_object *operation(const char *pattern, const char *method)
{
    struct json_object *op = at(doc, "paths", pattern, method, NULL);
    ck_assert_msg(op != NULL, "no %s %s", method, pattern);
    return op;
}

START_TEST(header_fields)
{
    ck_assert_str_eq(text(at(doc, "openapi", NULL)), "3.1.0");
    ck_assert_str_eq(text(at(doc, "info", "title", NULL)), "Ensign API");
    ck_assert_str_eq(text(at(doc, "info", "version", NULL)), "1.2.3");
}
END_TEST

START_TEST(paths_and_methods)
{
    struct json_object *paths = at(doc, "paths", NULL);
    ck_assert_int_eq(json_object_object_length(paths), 9);
    ck_assert_int_eq(json_object_object_length(at(paths, "/v1/healthz", NULL)), 1);
    ck_assert_ptr_null(at(paths, "/v1/healthz", "head", NULL));
    ck_assert_int_eq(json_object_object_length(at(paths, "/v1/orgs/{org}/flags/{key}", NULL)), 2);
    operation("/v1/orgs/{org}/flags/{key}", "get");
    operation("/v1/orgs/{org}/flags/{key}", "patch");
    operation("/ofrep/v1/evaluate/flags/{key}", "post");
    operation("/ofrep/v1/evaluate/flags/{key}", "options");
    operation("/a-b", "delete");
}
END_TEST

START_TEST(summaries)
{
    ck_assert_str_eq(text(at(operation("/v1/healthz", "get"), "summary", NULL)), "Health");
    ck_assert_str_eq(text(at(operation("/v1/orgs/{org}/flags/{key}", "patch"), "summary", NULL)),
                     "Update a flag");
    /* The first of two routes with the same pattern and method wins. */
    ck_assert_str_eq(text(at(operation("/me", "get"), "summary", NULL)), "Who am I");
    ck_assert_ptr_null(at(operation("/a-b", "delete"), "summary", NULL));
}
END_TEST

START_TEST(path_parameters)
{
    struct json_object *params =
        at(operation("/v1/orgs/{org}/flags/{key}", "get"), "parameters", NULL);
    ck_assert_str_eq(plain(params), "[{\"name\":\"org\",\"in\":\"path\",\"required\":true,"
                                    "\"schema\":{\"type\":\"string\"}},"
                                    "{\"name\":\"key\",\"in\":\"path\",\"required\":true,"
                                    "\"schema\":{\"type\":\"string\"}}]");
    ck_assert_ptr_null(at(operation("/v1/healthz", "get"), "parameters", NULL));
}
END_TEST

START_TEST(security_by_auth)
{
    ck_assert_str_eq(plain(at(operation("/v1/healthz", "get"), "security", NULL)), "[]");
    ck_assert_str_eq(plain(at(operation("/v1/orgs/{org}/flags", "post"), "security", NULL)),
                     "[{\"accessToken\":[]}]");
    ck_assert_str_eq(plain(at(operation("/me", "get"), "security", NULL)),
                     "[{\"accessToken\":[]},{\"sessionCookie\":[]}]");
    ck_assert_str_eq(
        plain(at(operation("/ofrep/v1/evaluate/flags/{key}", "post"), "security", NULL)),
        "[{\"sdkKey\":[]},{\"apiKeyHeader\":[]}]");
}
END_TEST

START_TEST(security_schemes)
{
    struct json_object *schemes = at(doc, "components", "securitySchemes", NULL);
    ck_assert_int_eq(json_object_object_length(schemes), 4);
    ck_assert_str_eq(text(at(schemes, "accessToken", "type", NULL)), "http");
    ck_assert_str_eq(text(at(schemes, "accessToken", "scheme", NULL)), "bearer");
    ck_assert_str_eq(text(at(schemes, "sdkKey", "type", NULL)), "http");
    ck_assert_str_eq(text(at(schemes, "sdkKey", "scheme", NULL)), "bearer");
    ck_assert_str_eq(text(at(schemes, "apiKeyHeader", "type", NULL)), "apiKey");
    ck_assert_str_eq(text(at(schemes, "apiKeyHeader", "in", NULL)), "header");
    ck_assert_str_eq(text(at(schemes, "apiKeyHeader", "name", NULL)), "X-API-Key");
    ck_assert_str_eq(text(at(schemes, "sessionCookie", "type", NULL)), "apiKey");
    ck_assert_str_eq(text(at(schemes, "sessionCookie", "in", NULL)), "cookie");
    ck_assert_str_eq(text(at(schemes, "sessionCookie", "name", NULL)), "ensign_session");
}
END_TEST

START_TEST(request_bodies)
{
    struct json_object *op = operation("/ofrep/v1/evaluate/flags/{key}", "post");
    ck_assert_str_eq(plain(at(op, "requestBody", "content", "application/json", "schema", NULL)),
                     eval_request);
    ck_assert_ptr_null(at(operation("/v1/healthz", "get"), "requestBody", NULL));
}
END_TEST

START_TEST(success_responses)
{
    struct json_object *ok = at(operation("/v1/healthz", "get"), "responses", "200", NULL);
    ck_assert_str_eq(text(at(ok, "description", NULL)), "OK");
    ck_assert_str_eq(plain(at(ok, "content", "application/json", "schema", NULL)), healthz_schema);
    struct json_object *created =
        at(operation("/v1/orgs/{org}/flags", "post"), "responses", "201", NULL);
    ck_assert_str_eq(text(at(created, "description", NULL)), "Created");
    ck_assert_ptr_null(at(operation("/v1/orgs/{org}/flags", "post"), "responses", "200", NULL));
    struct json_object *none =
        at(operation("/ofrep/v1/evaluate/flags/{key}", "options"), "responses", "204", NULL);
    ck_assert_str_eq(text(at(none, "description", NULL)), "No Content");
    ck_assert_ptr_null(at(none, "content", NULL));
}
END_TEST

static const char *default_ref(const char *pattern, const char *method, const char *media)
{
    return text(at(operation(pattern, method), "responses", "default", "content", media, "schema",
                   "$ref", NULL));
}

START_TEST(error_responses_by_surface)
{
    ck_assert_str_eq(default_ref("/v1/healthz", "get", "application/json"),
                     "#/components/schemas/Error");
    ck_assert_str_eq(default_ref("/ofrep/v1/evaluate/flags/{key}", "post", "application/json"),
                     "#/components/schemas/EvaluationError");
    ck_assert_str_eq(default_ref("/me", "get", "application/problem+json"),
                     "#/components/schemas/Problem");
    ck_assert_ptr_null(
        at(operation("/me", "get"), "responses", "default", "content", "application/json", NULL));
}
END_TEST

START_TEST(error_schemas)
{
    struct json_object *schemas = at(doc, "components", "schemas", NULL);
    ck_assert_int_eq(json_object_object_length(schemas), 3);
    struct json_object *error = at(schemas, "Error", NULL);
    ck_assert_str_eq(plain(at(error, "required", NULL)), "[\"message\",\"status\"]");
    ck_assert_str_eq(plain(at(error, "additionalProperties", NULL)), "false");
    ck_assert_str_eq(text(at(error, "properties", "message", "type", NULL)), "string");
    ck_assert_str_eq(text(at(error, "properties", "status", "type", NULL)), "integer");
    ck_assert_str_eq(plain(at(error, "properties", "errors", "additionalProperties", NULL)),
                     "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}");
    ck_assert_int_eq(json_object_object_length(at(error, "properties", NULL)), 3);
    struct json_object *eval = at(schemas, "EvaluationError", NULL);
    ck_assert_str_eq(plain(at(eval, "required", NULL)),
                     "[\"errorCode\",\"errorDetails\",\"message\",\"status\"]");
    ck_assert_int_eq(json_object_object_length(at(eval, "properties", NULL)), 5);
    struct json_object *problem = at(schemas, "Problem", NULL);
    ck_assert_str_eq(plain(at(problem, "required", NULL)),
                     "[\"type\",\"title\",\"status\",\"detail\"]");
    ck_assert_int_eq(json_object_object_length(at(problem, "properties", NULL)), 6);
    ck_assert_str_eq(text(at(problem, "properties", "status", "format", NULL)), "int64");
}
END_TEST

static const char *operation_id(const char *pattern, const char *method)
{
    return text(at(operation(pattern, method), "operationId", NULL));
}

START_TEST(operation_ids_derived)
{
    ck_assert_str_eq(operation_id("/v1/healthz", "get"), "getV1Healthz");
    ck_assert_str_eq(operation_id("/v1/orgs/{org}/flags/{key}", "patch"), "patchV1OrgsOrgFlagsKey");
    ck_assert_str_eq(operation_id("/ofrep/v1/evaluate/flags/{key}", "options"),
                     "optionsOfrepV1EvaluateFlagsKey");
    ck_assert_str_eq(operation_id("/", "get"), "getRoot");
    ck_assert_str_eq(operation_id("/a-b", "delete"), "deleteAB");
    ck_assert_str_eq(operation_id("/a/b", "delete"), "deleteAB2");
    ck_assert_str_eq(operation_id("/a.b", "delete"), "deleteAB3");
}
END_TEST

START_TEST(operation_ids_unique)
{
    struct json_object *seen = json_object_new_object();
    int operations = 0;
    json_object_object_foreach(at(doc, "paths", NULL), pattern, item)
    {
        (void)pattern;
        json_object_object_foreach(item, method, op)
        {
            (void)method;
            const char *id = text(at(op, "operationId", NULL));
            ck_assert_msg(!json_object_object_get_ex(seen, id, NULL), "duplicate %s", id);
            json_object_object_add(seen, id, NULL);
            operations++;
        }
    }
    ck_assert_int_eq(operations, 11);
    json_object_put(seen);
}
END_TEST

START_TEST(broken_schema_gives_null)
{
    static const struct route bad_request[] = {
        {METHOD_GET, "/ok", NULL, "ok", ROUTE_AUTH_NONE, NULL, NULL, 0, {0}, NULL, NULL},
        {METHOD_POST, "/x", NULL, "x", ROUTE_AUTH_NONE, "{\"type\":", NULL, 0, {0}, NULL, NULL},
    };
    static const struct route bad_response[] = {
        {METHOD_POST, "/x", NULL, "x", ROUTE_AUTH_NONE, NULL, "[1]", 0, {0}, NULL, NULL},
    };
    static const struct route boolean_schema[] = {
        {METHOD_POST, "/x", NULL, "x", ROUTE_AUTH_NONE, "true", NULL, 0, {0}, NULL, NULL},
    };
    ck_assert_ptr_null(openapi_document(bad_request, 2, "1"));
    ck_assert_ptr_null(openapi_document(bad_response, 1, "1"));
    struct json_object *ok = openapi_document(boolean_schema, 1, "1");
    ck_assert_ptr_nonnull(ok);
    json_object_put(ok);
}
END_TEST

START_TEST(empty_table)
{
    struct json_object *empty = openapi_document(NULL, 0, "0.1.0");
    ck_assert_ptr_nonnull(empty);
    ck_assert_int_eq(json_object_object_length(at(empty, "paths", NULL)), 0);
    ck_assert_ptr_nonnull(at(empty, "components", "schemas", "Error", NULL));
    json_object_put(empty);
}
END_TEST

Suite *suite_openapi(void)
{
    Suite *s = suite_create("openapi");
    TCase *tc = tcase_create("document");
    tcase_add_checked_fixture(tc, build, release);
    tcase_add_test(tc, header_fields);
    tcase_add_test(tc, paths_and_methods);
    tcase_add_test(tc, summaries);
    tcase_add_test(tc, path_parameters);
    tcase_add_test(tc, security_by_auth);
    tcase_add_test(tc, security_schemes);
    tcase_add_test(tc, request_bodies);
    tcase_add_test(tc, success_responses);
    tcase_add_test(tc, error_responses_by_surface);
    tcase_add_test(tc, error_schemas);
    tcase_add_test(tc, operation_ids_derived);
    tcase_add_test(tc, operation_ids_unique);
    suite_add_tcase(s, tc);
    TCase *tc_edge = tcase_create("edges");
    tcase_add_test(tc_edge, broken_schema_gives_null);
    tcase_add_test(tc_edge, empty_table);
    suite_add_tcase(s, tc_edge);
    return s;
}
