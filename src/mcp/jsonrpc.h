/*
 * jsonrpc.h - JSON-RPC 2.0 messages as the MCP endpoint reads and writes
 * them (doc/api.md "POST /mcp", doc/choices.md "MCP").
 *
 * Owns the classification of one parsed JSON value as a request (method
 * and id), a notification (method, no id), a response (result or error
 * with an id) or an invalid message (with the reason), and the response
 * objects sent back. MCP narrows JSON-RPC: an id is a string or an
 * integer, never null; params, when present, is an object.
 *
 * Pure: no I/O, no allocation beyond the json-c objects returned. A
 * jsonrpc_message borrows from the value it was read from. Called by
 * mcp.c; unit-tested in tests/unit/test_mcp.c.
 */
#ifndef ENSIGN_JSONRPC_H
#define ENSIGN_JSONRPC_H

#include <json-c/json.h>

#define JSONRPC_PARSE_ERROR (-32700)
#define JSONRPC_INVALID_REQUEST (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS (-32602)
#define JSONRPC_INTERNAL_ERROR (-32603)

enum jsonrpc_kind { JSONRPC_REQUEST, JSONRPC_NOTIFICATION, JSONRPC_RESPONSE, JSONRPC_INVALID };

struct jsonrpc_message {
    enum jsonrpc_kind kind;
    struct json_object *id;     /* borrowed; NULL for a notification, or an invalid
                                   message whose id cannot be told */
    const char *method;         /* requests and notifications */
    struct json_object *params; /* borrowed; NULL when absent */
    const char *problem;        /* JSONRPC_INVALID: why, a static sentence */
};

/* Reads value (one message, not a batch) into out. */
void jsonrpc_read(struct json_object *value, struct jsonrpc_message *out);

/* {"jsonrpc":"2.0","id":id,"result":result}; takes result, not id. */
struct json_object *jsonrpc_result(struct json_object *id, struct json_object *result);

/* {"jsonrpc":"2.0","id":id or null,"error":{code,message}}; message is copied. */
struct json_object *jsonrpc_error(struct json_object *id, int code, const char *message);

#endif
