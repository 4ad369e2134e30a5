/*
 * mcp.h - POST /mcp: the Model Context Protocol's streamable HTTP
 * transport, flags for coding agents (doc/api.md "POST /mcp",
 * doc/choices.md "MCP").
 *
 * One JSON-RPC 2.0 message per POST (protocol versions MCP_VERSIONS; no
 * batches, which those versions removed), answered with one JSON body
 * (application/json; or, to a client whose Accept takes text/event-stream
 * and not JSON, one message event of an event stream). No sessions and no
 * GET stream: every POST stands alone, so any worker of any node answers
 * it. A request gets 200 and its response; a notification or a response
 * 202 and no body. Methods:
 * initialize (the client's version when supported, else the newest),
 * ping, tools/list, tools/call (mcp_tools.h); any other request -32601.
 *
 * Checks in order: the Origin (403 when a browser's foreign origin), the
 * access token (Authorization: Bearer; no session cookie: 401 with
 * WWW-Authenticate), Content-Type application/json (415), an Accept that
 * allows JSON or an event stream (406), the body (400 with -32700 unparseable or nested
 * deeper than HTTP_JSON_MAX_DEPTH, -32600 a batch or not a JSON-RPC
 * message), MCP-Protocol-Version when sent (400 when not supported).
 * The body's size is bounded by max_body_bytes (413) as on every route.
 *
 * tools/call runs the tool's REST request (http_internal_request) with the
 * caller's own Authorization, through the same router, dispatcher and
 * handler as a client's request: role, scope, validation, rate limit,
 * revision and audit are the route's. A 2xx answer is the tool's result
 * (the body as text content and as structuredContent), anything else a
 * result with isError, the REST error's message as text, and
 * structuredContent {error: {status, message, errors?, retryAfterSeconds?}}.
 *
 * Called from the route table (daemon/routes.c).
 */
#ifndef ENSIGN_MCP_H
#define ENSIGN_MCP_H

struct http_request;

/* Newest first: what initialize offers and MCP-Protocol-Version may say. */
#define MCP_VERSIONS                                                                               \
    {                                                                                              \
        "2025-11-25", "2025-06-18"                                                                 \
    }

void mcp_post(struct http_request *r);

/* JSON Schemas of the body, for /openapi.json. */
extern const char mcp_request_schema[];
extern const char mcp_response_schema[];

#endif
