/*
 * fuzz_mcp.c - libFuzzer target: the MCP endpoint's reading of a POST body
 * (src/mcp/): the body parsed as the endpoint parses it (http_json_parse:
 * the guard, json-c, the depth bound), read as a JSON-RPC message
 * (jsonrpc_read), and a tools/call turned into its REST request
 * (mcp_tool_request) against a table holding the tools' rows.
 *
 * What must hold: a message is classified with an id only of the kinds MCP
 * allows (string or integer) and a method only for requests and
 * notifications; an accepted tool call's path is percent-encoded (only
 * unreserved characters, '%', '/', and the query's '?', '=', '&'), reaches
 * the very row the tool names through the router, and has a body exactly
 * when the row takes one. Never a crash, leak or overflow.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "http/http.h"
#include "http/router.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp_tools.h"

static void nothing(struct http_request *r)
{
    (void)r;
}

#define ROW(method, pattern, request)                                                              \
    {                                                                                              \
        METHOD_##method, pattern, nothing, "", ROUTE_AUTH_TOKEN_OR_COOKIE, request, NULL, 200,     \
            {0}, NULL, NULL                                                                        \
    }
#define FLAG "/v1/orgs/{org}/flags/{key}"
#define BODY "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}"

static const struct route table[] = {
    ROW(POST, "/v1/orgs/{org}/flags", BODY),
    ROW(GET, "/v1/orgs/{org}/flags", NULL),
    ROW(GET, FLAG, NULL),
    ROW(PATCH, FLAG "/environments/{envKey}", BODY),
    ROW(POST, FLAG "/environments/{envKey}/rules", BODY),
    ROW(POST, FLAG "/archive", NULL),
    ROW(POST, FLAG "/restore", NULL),
    ROW(GET, FLAG "/usage", NULL),
    ROW(POST, FLAG "/revisions/{id}/restore", NULL),
    ROW(POST, FLAG "/schedules", BODY),
    ROW(POST, "/v1/orgs/{org}/segments", BODY),
    ROW(GET, "/v1/orgs/{org}/segments", NULL),
    ROW(GET, "/v1/orgs/{org}/environments", NULL),
    ROW(POST, "/v1/orgs/{org}/environments/{envKey}/evaluate", BODY),
};
#define TABLE_COUNT (sizeof table / sizeof table[0])

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_mcp: %s: %s\n", what, detail);
    abort();
}

static void check_call(const char *tool, const struct mcp_rest_call *call)
{
    size_t len = strlen(call->path), path_len = strcspn(call->path, "?");
    if (len == 0 || call->path[0] != '/' ||
        strspn(call->path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                           "-_~%/?=&.") != len)
        fail("a path with unencoded bytes", call->path);
    char path[MCP_PATH_MAX];
    snprintf(path, sizeof path, "%.*s", (int)path_len, call->path);
    struct route_match m;
    if (router_match(table, TABLE_COUNT, call->method, path, &m) != ROUTE_FOUND)
        fail("a path no row matches", call->path);
    if ((call->body != NULL) != (m.route->request_schema != NULL))
        fail("a body where the row takes none, or none where it takes one", tool);
    struct json_object *body = call->body ? json_tokener_parse(call->body) : NULL;
    if (call->body != NULL && body == NULL)
        fail("a body that is not JSON", call->body);
    json_object_put(body);
}

static void read_message(struct json_object *value)
{
    struct jsonrpc_message m;
    jsonrpc_read(value, &m);
    if (m.id != NULL && !json_object_is_type(m.id, json_type_string) &&
        !json_object_is_type(m.id, json_type_int))
        fail("an id of a kind MCP does not allow", json_object_to_json_string(m.id));
    if ((m.method != NULL) != (m.kind == JSONRPC_REQUEST || m.kind == JSONRPC_NOTIFICATION))
        fail("a method on the wrong kind of message", json_object_to_json_string(value));
    if (m.kind != JSONRPC_REQUEST || strcmp(m.method, "tools/call") != 0)
        return;
    struct json_object *name = NULL, *args = NULL;
    json_object_object_get_ex(m.params, "name", &name);
    json_object_object_get_ex(m.params, "arguments", &args);
    if (!json_object_is_type(name, json_type_string) ||
        (args != NULL && !json_object_is_type(args, json_type_object)))
        return;
    struct mcp_rest_call call;
    char why[256];
    if (mcp_tool_request(table, TABLE_COUNT, json_object_get_string(name), args, &call, why,
                         sizeof why) == 0)
        check_call(json_object_get_string(name), &call);
    free(call.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct json_object *value = NULL;
    enum json_guard_verdict verdict;
    if (http_json_parse(text, size, &value, &verdict) == HTTP_JSON_OK)
        read_message(value);
    json_object_put(value);
    free(text);
    return 0;
}
