/*
 * jsonrpc.c - reading and writing JSON-RPC 2.0 messages (see jsonrpc.h).
 */
#include "mcp/jsonrpc.h"

#include <stdbool.h>
#include <string.h>

/* An id MCP allows: a string or an integer. */
static bool id_usable(struct json_object *id)
{
    return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

static void invalid(struct jsonrpc_message *out, struct json_object *id, const char *why)
{
    out->kind = JSONRPC_INVALID;
    out->id = id_usable(id) ? id : NULL;
    out->problem = why;
}

void jsonrpc_read(struct json_object *value, struct jsonrpc_message *out)
{
    memset(out, 0, sizeof *out);
    if (!json_object_is_type(value, json_type_object)) {
        invalid(out, NULL, "a JSON-RPC message is an object");
        return;
    }
    struct json_object *version = NULL, *id = NULL, *method = NULL, *params = NULL;
    json_object_object_get_ex(value, "jsonrpc", &version);
    bool has_id = json_object_object_get_ex(value, "id", &id);
    bool has_method = json_object_object_get_ex(value, "method", &method);
    bool has_params = json_object_object_get_ex(value, "params", &params);
    if (!json_object_is_type(version, json_type_string) ||
        strcmp(json_object_get_string(version), "2.0") != 0) {
        invalid(out, id, "jsonrpc must be \"2.0\"");
        return;
    }
    if (has_id && !id_usable(id)) {
        invalid(out, NULL, "id must be a string or an integer");
        return;
    }
    if (!has_method) {
        bool answer = json_object_object_get_ex(value, "result", NULL) ||
                      json_object_object_get_ex(value, "error", NULL);
        if (!answer || !has_id) {
            invalid(out, id, "a message needs a method (or is a response with an id)");
            return;
        }
        out->kind = JSONRPC_RESPONSE;
        out->id = id;
        return;
    }
    if (!json_object_is_type(method, json_type_string) || json_object_get_string_len(method) == 0) {
        invalid(out, id, "method must be a non-empty string");
        return;
    }
    if (has_params && !json_object_is_type(params, json_type_object)) {
        invalid(out, id, "params must be an object");
        return;
    }
    out->kind = has_id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
    out->id = has_id ? id : NULL;
    out->method = json_object_get_string(method);
    out->params = params;
}

static struct json_object *envelope(struct json_object *id)
{
    struct json_object *msg = json_object_new_object();
    json_object_object_add(msg, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(msg, "id", id ? json_object_get(id) : NULL);
    return msg;
}

struct json_object *jsonrpc_result(struct json_object *id, struct json_object *result)
{
    struct json_object *msg = envelope(id);
    json_object_object_add(msg, "result", result);
    return msg;
}

struct json_object *jsonrpc_error(struct json_object *id, int code, const char *message)
{
    struct json_object *msg = envelope(id), *error = json_object_new_object();
    json_object_object_add(error, "code", json_object_new_int(code));
    json_object_object_add(error, "message", json_object_new_string(message));
    json_object_object_add(msg, "error", error);
    return msg;
}
