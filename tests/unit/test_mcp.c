/*
 * test_mcp.c - Check suite for the MCP endpoint's pure parts: the body
 * parse (http_json_parse), JSON-RPC messages (jsonrpc.c) and the tools (mcp_tools.c): which tools a
 * route table offers, their input schemas built from the rows' request schemas, and the REST
 * request of a call (path, percent-encoding, query, body) with the arguments that are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp_tools.h"
#include "suites.h"

/* ---- JSON-RPC ---- */

static enum jsonrpc_kind kind_of(const char *text, struct jsonrpc_message *m,
                                 struct json_object **keep)
{
    *keep = json_tokener_parse(text);
    jsonrpc_read(*keep, m);
    return m->kind;
}

START_TEST(jsonrpc_kinds)
{
    struct jsonrpc_message m;
    struct json_object *v;
    ck_assert_int_eq(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &m, &v),
                     JSONRPC_REQUEST);
    ck_assert_str_eq(m.method, "ping");
    ck_assert_int_eq(json_object_get_int(m.id), 1);
    ck_assert_ptr_null(m.params);
    json_object_put(v);
    ck_assert_int_eq(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\","
                             "\"params\":{\"name\":\"x\"}}",
                             &m, &v),
                     JSONRPC_REQUEST);
    ck_assert_str_eq(json_object_get_string(m.id), "a");
    ck_assert_ptr_nonnull(m.params);
    json_object_put(v);
    ck_assert_int_eq(
        kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &m, &v),
        JSONRPC_NOTIFICATION);
    ck_assert_ptr_null(m.id);
    json_object_put(v);
    ck_assert_int_eq(kind_of("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &m, &v),
                     JSONRPC_RESPONSE);
    json_object_put(v);
}
END_TEST

START_TEST(jsonrpc_invalid)
{
    static const char *const bad[] = {
        "[]",
        "{\"id\":1,\"method\":\"ping\"}",                                 /* no jsonrpc */
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",             /* wrong version */
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",          /* null id (MCP) */
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",           /* fractional id */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",                    /* method not a string */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",                 /* empty method */
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":[1]}", /* array params */
        "{\"jsonrpc\":\"2.0\",\"id\":1}",                                 /* neither */
        "{\"jsonrpc\":\"2.0\",\"result\":{}}",                            /* response without id */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct jsonrpc_message m;
        struct json_object *v;
        ck_assert_msg(kind_of(bad[i], &m, &v) == JSONRPC_INVALID, "accepted %s", bad[i]);
        ck_assert_ptr_nonnull(m.problem);
        json_object_put(v);
    }
    /* The id of an invalid message is kept when it is usable. */
    struct jsonrpc_message m;
    struct json_object *v;
    kind_of("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"a\",\"params\":1}", &m, &v);
    ck_assert_int_eq(json_object_get_int(m.id), 9);
    json_object_put(v);
}
END_TEST

START_TEST(jsonrpc_answers)
{
    struct json_object *id = json_object_new_string("r1");
    struct json_object *ok = jsonrpc_result(id, json_object_new_object());
    ck_assert_str_eq(json_object_to_json_string_ext(ok, JSON_C_TO_STRING_PLAIN),
                     "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"result\":{}}");
    struct json_object *err = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR, "bad");
    ck_assert_str_eq(json_object_to_json_string_ext(err, JSON_C_TO_STRING_PLAIN),
                     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                     "\"message\":\"bad\"}}");
    json_object_put(ok);
    json_object_put(err);
    json_object_put(id);
}
END_TEST

/* The body parse the endpoint shares with every management body. */
START_TEST(body_parse)
{
    struct json_object *v;
    enum json_guard_verdict verdict;
    ck_assert_int_eq(http_json_parse("{\"a\":1} ", 8, &v, &verdict), HTTP_JSON_OK);
    ck_assert_ptr_nonnull(v);
    json_object_put(v);
    ck_assert_int_eq(http_json_parse("{\"a\":", 5, &v, &verdict), HTTP_JSON_SYNTAX);
    ck_assert_int_eq(verdict, JSON_GUARD_OK);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(http_json_parse("{} x", 4, &v, &verdict), HTTP_JSON_SYNTAX);
    ck_assert_int_eq(http_json_parse("\"\xff\"", 3, &v, &verdict), HTTP_JSON_SYNTAX);
    ck_assert_int_eq(verdict, JSON_GUARD_BAD_UTF8);
    ck_assert_int_eq(http_json_parse("{\"a\":1,\"a\":2}", 13, &v, &verdict), HTTP_JSON_CONTENT);
    ck_assert_int_eq(verdict, JSON_GUARD_DUPLICATE_KEY);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(http_json_parse("\"\\u0000\"", 8, &v, &verdict), HTTP_JSON_CONTENT);
    char deep[2 * (HTTP_JSON_MAX_DEPTH + 1) + 1];
    memset(deep, '[', HTTP_JSON_MAX_DEPTH + 1);
    memset(deep + HTTP_JSON_MAX_DEPTH + 1, ']', HTTP_JSON_MAX_DEPTH + 1);
    deep[sizeof deep - 1] = '\0';
    ck_assert_int_eq(http_json_parse(deep, strlen(deep), &v, &verdict), HTTP_JSON_SYNTAX);
    ck_assert_int_eq(http_json_parse(deep + 1, strlen(deep) - 2, &v, &verdict), HTTP_JSON_OK);
    json_object_put(v);
}
END_TEST

/* ---- tools ---- */

static void nothing(struct http_request *r)
{
    (void)r;
}

#define ROW(method, pattern, request)                                                              \
    {                                                                                              \
        METHOD_##method, pattern, nothing, "", ROUTE_AUTH_TOKEN_OR_COOKIE, request, NULL, 200,     \
            {0}, NULL, NULL                                                                        \
    }

static const char create_schema[] =
    "{\"type\":\"object\",\"required\":[\"slug\"],\"additionalProperties\":false,"
    "\"properties\":{\"slug\":{\"type\":\"string\"},\"tags\":{\"type\":\"array\"}}}";
static const char patch_schema[] =
    "{\"type\":\"object\",\"properties\":{\"enabled\":{\"type\":\"boolean\"}}}";

/* A table with some of the tools' rows: the others are not offered. */
static const struct route table[] = {
    ROW(POST, "/v1/orgs/{org}/flags", create_schema),
    ROW(GET, "/v1/orgs/{org}/flags", NULL),
    ROW(PATCH, "/v1/orgs/{org}/flags/{key}/environments/{envKey}", patch_schema),
    ROW(POST, "/v1/orgs/{org}/flags/{key}/archive", NULL),
    ROW(POST, "/v1/orgs/{org}/flags/{key}/revisions/{id}/restore", NULL),
};
#define TABLE_COUNT (sizeof table / sizeof table[0])

static struct json_object *tool_in(struct json_object *list, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        struct json_object *tool = json_object_array_get_idx(list, i);
        if (strcmp(json_object_get_string(json_object_object_get(tool, "name")), name) == 0)
            return tool;
    }
    return NULL;
}

static const char *schema_text(struct json_object *tool)
{
    return json_object_to_json_string_ext(json_object_object_get(tool, "inputSchema"),
                                          JSON_C_TO_STRING_PLAIN);
}

START_TEST(tools_offered_from_rows)
{
    struct json_object *list = mcp_tools_list(table, TABLE_COUNT);
    /* create_flag, update_flag_environment, archive_flag, restore_revision,
     * list_flags and list_stale_flags have rows; the others do not. */
    ck_assert_int_eq(json_object_array_length(list), 6);
    ck_assert_ptr_null(tool_in(list, "get_flag"));
    ck_assert_ptr_null(tool_in(list, "evaluate_flag"));
    ck_assert_ptr_nonnull(tool_in(list, "list_stale_flags"));
    /* The body's members are the tool's arguments beside org, with the
     * row's required and additionalProperties. */
    ck_assert_str_eq(schema_text(tool_in(list, "create_flag")),
                     "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
                     "\"org\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200,"
                     "\"description\":\"the organization's slug\"},"
                     "\"slug\":{\"type\":\"string\"},\"tags\":{\"type\":\"array\"}},"
                     "\"required\":[\"org\",\"slug\"]}");
    /* A body member holds the row's whole schema. */
    const char *patch = schema_text(tool_in(list, "update_flag_environment"));
    ck_assert_ptr_nonnull(strstr(patch, "\"changes\":{\"type\":\"object\",\"properties\":{"
                                        "\"enabled\":{\"type\":\"boolean\"}}}"));
    ck_assert_ptr_nonnull(
        strstr(patch, "\"required\":[\"org\",\"flag\",\"environment\",\"changes\"]"));
    /* Query arguments are optional; a read tool says so. */
    struct json_object *lf = tool_in(list, "list_flags");
    ck_assert_ptr_nonnull(strstr(schema_text(lf), "\"stale\":{\"type\":\"boolean\""));
    ck_assert_ptr_nonnull(strstr(schema_text(lf), "\"required\":[\"org\"]"));
    ck_assert(json_object_get_boolean(
        json_object_object_get(json_object_object_get(lf, "annotations"), "readOnlyHint")));
    ck_assert_ptr_nonnull(strstr(json_object_get_string(json_object_object_get(lf, "description")),
                                 "GET /v1/orgs/{org}"));
    json_object_put(list);
}
END_TEST

/* Calls name with the JSON text args; returns the rc, out filled. */
static int call(const char *name, const char *args, struct mcp_rest_call *out, char *why)
{
    struct json_object *a = args ? json_tokener_parse(args) : NULL;
    int rc = mcp_tool_request(table, TABLE_COUNT, name, a, out, why, 256);
    json_object_put(a);
    return rc;
}

START_TEST(tool_requests)
{
    struct mcp_rest_call out;
    char why[256];
    ck_assert_int_eq(
        call("create_flag", "{\"org\":\"acme\",\"slug\":\"x\",\"tags\":[\"a\"]}", &out, why), 0);
    ck_assert_int_eq(out.method, METHOD_POST);
    ck_assert_str_eq(out.path, "/v1/orgs/acme/flags");
    ck_assert_str_eq(out.body, "{\"slug\":\"x\",\"tags\":[\"a\"]}");
    free(out.body);
    /* Path arguments are percent-encoded: no way to another path. */
    ck_assert_int_eq(call("update_flag_environment",
                          "{\"org\":\"a/b\",\"flag\":\"../x?y\",\"environment\":\"pr od\","
                          "\"changes\":{\"enabled\":true}}",
                          &out, why),
                     0);
    ck_assert_int_eq(out.method, METHOD_PATCH);
    ck_assert_str_eq(out.path, "/v1/orgs/a%2Fb/flags/%2E%2E%2Fx%3Fy/environments/pr%20od");
    ck_assert_str_eq(out.body, "{\"enabled\":true}");
    free(out.body);
    ck_assert_int_eq(
        call("list_flags", "{\"org\":\"acme\",\"stale\":true,\"q\":\"new check\"}", &out, why), 0);
    ck_assert_int_eq(out.method, METHOD_GET);
    ck_assert_ptr_nonnull(strstr(out.path, "/v1/orgs/acme/flags?"));
    ck_assert_ptr_nonnull(strstr(out.path, "stale=true"));
    ck_assert_ptr_nonnull(strstr(out.path, "q=new%20check"));
    ck_assert_ptr_null(out.body);
    ck_assert_int_eq(call("list_stale_flags", "{\"org\":\"acme\"}", &out, why), 0);
    ck_assert_str_eq(out.path, "/v1/orgs/acme/flags?stale=true");
    ck_assert_int_eq(call("restore_revision",
                          "{\"org\":\"acme\",\"flag\":\"f\",\"revision\":\"0b8e-1\"}", &out, why),
                     0);
    ck_assert_str_eq(out.path, "/v1/orgs/acme/flags/f/revisions/0b8e-1/restore");
    ck_assert_ptr_null(out.body);
    ck_assert_int_eq(call("archive_flag", "{\"org\":\"acme\",\"flag\":\"f\"}", &out, why), 0);
    ck_assert_str_eq(out.path, "/v1/orgs/acme/flags/f/archive");
    ck_assert_ptr_null(out.body);
}
END_TEST

START_TEST(tool_requests_refused)
{
    struct mcp_rest_call out;
    char why[256];
    ck_assert_int_eq(call("no_such_tool", "{}", &out, why), -1);
    ck_assert_ptr_nonnull(strstr(why, "unknown tool"));
    ck_assert_int_eq(call("get_flag", "{\"org\":\"a\",\"flag\":\"f\"}", &out, why), -1);
    ck_assert_ptr_nonnull(strstr(why, "unknown tool")); /* no row: not offered */
    ck_assert_int_eq(call("create_flag", NULL, &out, why), -1);
    ck_assert_ptr_nonnull(strstr(why, "org is required"));
    ck_assert_int_eq(call("create_flag", "{\"org\":7}", &out, why), -1);
    ck_assert_int_eq(call("create_flag", "{\"org\":\"\"}", &out, why), -1);
    char long_org[300];
    memset(long_org, 'a', sizeof long_org);
    long_org[sizeof long_org - 1] = '\0';
    char args[400];
    snprintf(args, sizeof args, "{\"org\":\"%s\"}", long_org);
    ck_assert_int_eq(call("create_flag", args, &out, why), -1);
    ck_assert_int_eq(call("archive_flag", "{\"org\":\"a\",\"flag\":\"f\",\"extra\":1}", &out, why),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "takes no argument extra"));
    ck_assert_int_eq(call("list_flags", "{\"org\":\"a\",\"stale\":\"yes\"}", &out, why), -1);
    ck_assert_ptr_nonnull(strstr(why, "stale must be a boolean"));
    ck_assert_int_eq(call("update_flag_environment",
                          "{\"org\":\"a\",\"flag\":\"f\",\"environment\":\"e\"}", &out, why),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "changes is required"));
    ck_assert_int_eq(call("update_flag_environment",
                          "{\"org\":\"a\",\"flag\":\"f\",\"environment\":\"e\",\"changes\":[]}",
                          &out, why),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "changes must be an object"));
}
END_TEST

Suite *suite_mcp(void)
{
    Suite *s = suite_create("mcp");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, jsonrpc_kinds);
    tcase_add_test(tc, jsonrpc_invalid);
    tcase_add_test(tc, jsonrpc_answers);
    tcase_add_test(tc, body_parse);
    tcase_add_test(tc, tools_offered_from_rows);
    tcase_add_test(tc, tool_requests);
    tcase_add_test(tc, tool_requests_refused);
    suite_add_tcase(s, tc);
    return s;
}
