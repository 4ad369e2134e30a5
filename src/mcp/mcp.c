/*
 * mcp.c - POST /mcp (see mcp.h).
 *
 * A tools/call keeps one malloc'd struct (the request and the JSON-RPC
 * id) from the internal request to its answer, freed on the one path that
 * answers. Everything else answers before returning.
 */
#include "mcp/mcp.h"

#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "build_config.h"
#include "base/log.h"
#include "http/envelope.h"
#include "http/http.h"
#include "http/server.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp_tools.h"
#include "mgmt/request_auth.h"

const char mcp_request_schema[] =
    "{\"type\":\"object\",\"description\":\"one JSON-RPC 2.0 message (MCP): a request, a "
    "notification or a response\",\"required\":[\"jsonrpc\"],\"properties\":{"
    "\"jsonrpc\":{\"const\":\"2.0\"},\"id\":{\"type\":[\"string\",\"integer\"]},"
    "\"method\":{\"type\":\"string\"},\"params\":{\"type\":\"object\"}}}";

const char mcp_response_schema[] =
    "{\"type\":\"object\",\"description\":\"the JSON-RPC 2.0 response (202 and no body for a "
    "notification)\",\"required\":[\"jsonrpc\",\"id\"],\"properties\":{"
    "\"jsonrpc\":{\"const\":\"2.0\"},\"id\":{\"type\":[\"string\",\"integer\",\"null\"]},"
    "\"result\":{\"type\":\"object\"},\"error\":{\"type\":\"object\",\"required\":[\"code\","
    "\"message\"],\"properties\":{\"code\":{\"type\":\"integer\"},\"message\":{\"type\":"
    "\"string\"}}}}}";

static const char *const versions[] = MCP_VERSIONS;
#define VERSION_COUNT (sizeof versions / sizeof versions[0])

static bool version_supported(const char *v)
{
    for (size_t i = 0; v != NULL && i < VERSION_COUNT; i++) {
        if (strcmp(versions[i], v) == 0)
            return true;
    }
    return false;
}

/* ---- the transport's headers ---- */

/* Whether a media-range list (Accept) names type, its type's family with a
 * star subtype, or the star range; a missing Accept allows everything. */
static bool accepts(const char *accept, const char *type)
{
    if (accept == NULL)
        return true;
    size_t family = strcspn(type, "/") + 1;
    for (const char *p = accept; *p != '\0';) {
        p += strspn(p, " \t,");
        size_t len = strcspn(p, ";,");
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if ((len == strlen(type) && strncasecmp(p, type, len) == 0) ||
            (len == family + 1 && strncasecmp(p, type, family) == 0 && p[family] == '*') ||
            (len == 3 && strncmp(p, "*/*", 3) == 0))
            return true;
        p += strcspn(p, ",");
    }
    return false;
}

/* A client that accepts an event stream and not JSON gets its response as
 * one event of a text/event-stream (the transport's other answer). */
static bool wants_event_stream(const struct http_request *r)
{
    const char *accept = http_header(r, "Accept");
    return accept != NULL && !accepts(accept, "application/json") &&
           accepts(accept, "text/event-stream");
}

/* Answers 200 with the JSON-RPC response msg (taken): a JSON body, or one
 * message event for a client that reads only event streams. */
static void send_response(struct http_request *r, struct json_object *msg)
{
    if (!wants_event_stream(r)) {
        http_send_json(r, 200, msg);
        return;
    }
    char *text = NULL;
    int len = asprintf(&text, "event: message\ndata: %s\n\n",
                       json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN |
                                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(msg);
    if (len < 0) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    http_add_header(r, "Cache-Control", "no-store");
    http_send_text(r, 200, "text/event-stream", text, (size_t)len);
    free(text);
}

static bool is_json_type(const char *type)
{
    static const char json[] = "application/json";
    return type != NULL && strncasecmp(type, json, sizeof json - 1) == 0 &&
           strchr("; \t", type[sizeof json - 1]) != NULL;
}

static void send_error(struct http_request *r, int status, struct json_object *id, int code,
                       const char *message)
{
    struct json_object *msg = jsonrpc_error(id, code, message);
    if (status == 200)
        send_response(r, msg);
    else
        http_send_json(r, status, msg);
}

/* False after answering 415 or 406. */
static bool headers_acceptable(struct http_request *r)
{
    if (!is_json_type(http_header(r, "Content-Type"))) {
        send_error(r, 415, NULL, JSONRPC_INVALID_REQUEST,
                   "Content-Type must be application/json: one JSON-RPC message");
        return false;
    }
    const char *accept = http_header(r, "Accept");
    if (!accepts(accept, "application/json") && !accepts(accept, "text/event-stream")) {
        send_error(r, 406, NULL, JSONRPC_INVALID_REQUEST,
                   "Accept must allow application/json or text/event-stream");
        return false;
    }
    return true;
}

/* False after answering 400: an MCP-Protocol-Version this server does not speak. */
static bool protocol_header_ok(struct http_request *r, struct json_object *id)
{
    const char *v = http_header(r, "MCP-Protocol-Version");
    if (v == NULL || version_supported(v))
        return true;
    char message[160];
    snprintf(message, sizeof message, "unsupported MCP-Protocol-Version %.32s (supported: %s, %s)",
             v, versions[0], versions[1]);
    send_error(r, 400, id, JSONRPC_INVALID_REQUEST, message);
    return false;
}

/* ---- methods ---- */

static void answer_initialize(struct http_request *r, const struct jsonrpc_message *m)
{
    struct json_object *asked = NULL;
    if (!json_object_object_get_ex(m->params, "protocolVersion", &asked) ||
        !json_object_is_type(asked, json_type_string)) {
        send_error(r, 200, m->id, JSONRPC_INVALID_PARAMS,
                   "params.protocolVersion is required (a string)");
        return;
    }
    const char *v = json_object_get_string(asked);
    struct json_object *result = json_object_new_object(), *caps = json_object_new_object();
    struct json_object *tools = json_object_new_object(), *info = json_object_new_object();
    json_object_object_add(result, "protocolVersion",
                           json_object_new_string(version_supported(v) ? v : versions[0]));
    json_object_object_add(tools, "listChanged", json_object_new_boolean(false));
    json_object_object_add(caps, "tools", tools);
    json_object_object_add(result, "capabilities", caps);
    json_object_object_add(info, "name", json_object_new_string("ensign"));
    json_object_object_add(info, "title", json_object_new_string("Ensign feature flags"));
    json_object_object_add(info, "version", json_object_new_string(PACKAGE_VERSION));
    json_object_object_add(result, "serverInfo", info);
    json_object_object_add(
        result, "instructions",
        json_object_new_string("Feature flags of Ensign. Every tool takes org, an organization's "
                               "slug; each runs one REST operation as the token's user, with "
                               "that user's role and the token's scopes, and is audited."));
    send_response(r, jsonrpc_result(m->id, result));
}

static void answer_tools_list(struct http_request *r, const struct jsonrpc_message *m)
{
    struct json_object *result = json_object_new_object();
    json_object_object_add(result, "tools",
                           mcp_tools_list(r->server->routes, r->server->route_count));
    send_response(r, jsonrpc_result(m->id, result));
}

struct tool_call {
    struct http_request *r;
    struct json_object *id; /* owned reference */
};

/* Text of a failed REST answer: its message, and its field errors when any. */
static char *failure_text(int status, struct json_object *answer)
{
    struct json_object *message = NULL, *errors = NULL;
    json_object_object_get_ex(answer, "message", &message);
    json_object_object_get_ex(answer, "errors", &errors);
    const char *text = json_object_is_type(message, json_type_string)
                           ? json_object_get_string(message)
                           : envelope_reason_phrase(status);
    char *out = NULL;
    if (asprintf(&out, "%s%s%s", text, errors ? ": " : "",
                 errors ? json_object_to_json_string_ext(errors, JSON_C_TO_STRING_PLAIN) : "") < 0)
        return NULL;
    return out;
}

/* The cursor of a list answer's Link: <...&cursor=C>; rel="next" (a
 * cursor is base64url and '.', nothing to decode), or NULL; caller frees. */
static char *next_cursor(const char *link)
{
    const char *at = link ? strstr(link, "&cursor=") : NULL;
    if (at == NULL || strstr(link, "rel=\"next\"") == NULL)
        return NULL;
    at += strlen("&cursor=");
    size_t len = strcspn(at, ">&");
    return len > 0 ? strndup(at, len) : NULL;
}

/* A page of a list answer (an object) with the next page's cursor as
 * nextCursor, and the text of the content that says it too. */
static void add_next_cursor(struct json_object *answer, struct json_object *item, const char *link)
{
    char *cursor = next_cursor(link);
    if (cursor == NULL || !json_object_is_type(answer, json_type_object)) {
        free(cursor);
        return;
    }
    json_object_object_add(answer, "nextCursor", json_object_new_string(cursor));
    json_object_object_add(
        item, "text",
        json_object_new_string(json_object_to_json_string_ext(answer, JSON_C_TO_STRING_PLAIN)));
    free(cursor);
}

/* The tools/call result of a REST answer (status, body text or NULL, and
 * Retry-After and Link when it said them: a list's next page is its
 * nextCursor). */
static struct json_object *tool_result(int status, const char *body, const char *retry_after,
                                       const char *link)
{
    struct json_object *answer = body ? json_tokener_parse(body) : NULL;
    struct json_object *result = json_object_new_object(), *content = json_object_new_array();
    struct json_object *item = json_object_new_object(), *structured;
    bool ok = status >= 200 && status < 300;
    char *failure = ok ? NULL : failure_text(status, answer);
    json_object_object_add(item, "type", json_object_new_string("text"));
    if (ok) {
        json_object_object_add(item, "text", json_object_new_string(body ? body : "{}"));
        add_next_cursor(answer, item, link);
        if (json_object_is_type(answer, json_type_object)) {
            structured = answer;
        } else {
            structured = json_object_new_object();
            json_object_object_add(structured, "result", answer);
        }
    } else {
        json_object_object_add(item, "text",
                               json_object_new_string(failure ? failure : "out of memory"));
        struct json_object *error = json_object_new_object(), *errors = NULL;
        json_object_object_add(error, "status", json_object_new_int(status));
        json_object_object_add(error, "message",
                               json_object_new_string(failure ? failure : "out of memory"));
        if (json_object_object_get_ex(answer, "errors", &errors))
            json_object_object_add(error, "errors", json_object_get(errors));
        if (retry_after != NULL)
            json_object_object_add(error, "retryAfterSeconds",
                                   json_object_new_int(atoi(retry_after)));
        structured = json_object_new_object();
        json_object_object_add(structured, "error", error);
        json_object_put(answer);
    }
    free(failure);
    json_object_array_add(content, item);
    json_object_object_add(result, "content", content);
    json_object_object_add(result, "structuredContent", structured);
    json_object_object_add(result, "isError", json_object_new_boolean(!ok));
    return result;
}

static void on_tool_answer(void *arg, int status, const char *body, const struct evkeyvalq *headers)
{
    struct tool_call *call = arg;
    const char *retry_after = evhttp_find_header(headers, "Retry-After");
    const char *link = evhttp_find_header(headers, "Link");
    send_response(call->r, jsonrpc_result(call->id, tool_result(status, body, retry_after, link)));
    json_object_put(call->id);
    free(call);
}

static void answer_tools_call(struct http_request *r, const struct jsonrpc_message *m)
{
    struct json_object *name = NULL, *arguments = NULL;
    json_object_object_get_ex(m->params, "name", &name);
    json_object_object_get_ex(m->params, "arguments", &arguments);
    if (!json_object_is_type(name, json_type_string)) {
        send_error(r, 200, m->id, JSONRPC_INVALID_PARAMS, "params.name is required (a string)");
        return;
    }
    if (arguments != NULL && !json_object_is_type(arguments, json_type_object)) {
        send_error(r, 200, m->id, JSONRPC_INVALID_PARAMS, "params.arguments must be an object");
        return;
    }
    struct mcp_rest_call rest;
    char why[256];
    if (mcp_tool_request(r->server->routes, r->server->route_count, json_object_get_string(name),
                         arguments, &rest, why, sizeof why) != 0) {
        free(rest.body);
        send_error(r, 200, m->id, JSONRPC_INVALID_PARAMS, why);
        return;
    }
    struct tool_call *call = malloc(sizeof *call);
    if (call != NULL) {
        *call = (struct tool_call){r, json_object_get(m->id)};
        log_debug("mcp: %s as %s %s", json_object_get_string(name), router_method_name(rest.method),
                  rest.path);
    }
    int rc = call
                 ? http_internal_request(r, rest.method, rest.path, rest.body, on_tool_answer, call)
                 : -1;
    free(rest.body);
    if (rc != 0) {
        if (call != NULL)
            json_object_put(call->id);
        free(call);
        send_error(r, 500, m->id, JSONRPC_INTERNAL_ERROR, "out of memory");
    }
}

static void answer_request(struct http_request *r, const struct jsonrpc_message *m)
{
    bool initialize = strcmp(m->method, "initialize") == 0;
    if (!initialize && !protocol_header_ok(r, m->id))
        return;
    if (initialize)
        answer_initialize(r, m);
    else if (strcmp(m->method, "ping") == 0)
        send_response(r, jsonrpc_result(m->id, json_object_new_object()));
    else if (strcmp(m->method, "tools/list") == 0)
        answer_tools_list(r, m);
    else if (strcmp(m->method, "tools/call") == 0)
        answer_tools_call(r, m);
    else {
        char message[128];
        snprintf(message, sizeof message, "method not found: %.64s", m->method);
        send_error(r, 200, m->id, JSONRPC_METHOD_NOT_FOUND, message);
    }
}

/* ---- the body ---- */

/* The parsed body, or NULL after answering 400 (or 500). */
static struct json_object *read_body(struct http_request *r)
{
    size_t len;
    const char *text = http_body(r, &len);
    if (text == NULL) {
        send_error(r, 400, NULL, JSONRPC_PARSE_ERROR, "parse error: the body is empty");
        return NULL;
    }
    struct json_object *value;
    enum json_guard_verdict verdict;
    switch (http_json_parse(text, len, &value, &verdict)) {
    case HTTP_JSON_OK:
        return value;
    case HTTP_JSON_SYNTAX:
        send_error(r, 400, NULL, JSONRPC_PARSE_ERROR,
                   verdict != JSON_GUARD_OK ? json_guard_message(verdict)
                                            : "parse error: the body is not JSON (or nests "
                                              "deeper than 64 levels)");
        return NULL;
    case HTTP_JSON_CONTENT:
        send_error(r, 400, NULL, JSONRPC_INVALID_REQUEST, json_guard_message(verdict));
        return NULL;
    case HTTP_JSON_NO_MEMORY:
        break;
    }
    send_error(r, 500, NULL, JSONRPC_INTERNAL_ERROR, "out of memory");
    return NULL;
}

static void on_identity(struct http_request *r, const struct identity *who, void *arg)
{
    (void)who;
    (void)arg;
    if (!headers_acceptable(r))
        return;
    struct json_object *body = read_body(r);
    if (body == NULL)
        return;
    struct jsonrpc_message m;
    if (json_object_is_type(body, json_type_array)) {
        send_error(r, 400, NULL, JSONRPC_INVALID_REQUEST,
                   "batches are not supported: MCP 2025-06-18 and later send one message per "
                   "POST");
        json_object_put(body);
        return;
    }
    jsonrpc_read(body, &m);
    switch (m.kind) {
    case JSONRPC_INVALID:
        send_error(r, 400, m.id, JSONRPC_INVALID_REQUEST, m.problem);
        break;
    case JSONRPC_NOTIFICATION:
    case JSONRPC_RESPONSE:
        if (protocol_header_ok(r, NULL))
            http_send_json(r, 202, NULL);
        break;
    case JSONRPC_REQUEST:
        answer_request(r, &m);
        break;
    }
    json_object_put(body);
}

void mcp_post(struct http_request *r)
{
    if (!auth_check_same_origin(r))
        return;
    auth_access_token(r, on_identity, NULL);
}
