/*
 * agent.h - the agent's routes (the root API; doc/choices.md "Agent"):
 *
 *   POST /ai/messages         a conversation in, a reply and proposed
 *                             actions out; nothing is written
 *   POST /ai/actions/execute  runs one confirmed action as the caller,
 *                             through the REST route's own handler
 *
 * Errors are Problem bodies (the routes are outside /v1 and /ofrep).
 * Checks in order: access token (401), the token's flags:read scope (403),
 * the body (400 unparseable, 422 the row's schema), the management rate
 * limit on /ai/messages (429), its byte limits (422), the organization
 * org_id (id or slug; 404 when the caller is not in it, 403 when the token
 * may not read flags there). Execute then answers what the
 * REST operation answered: {"result": BODY} on success, else its status
 * (403 role, 404, 409, 422 with field errors, 429) as a Problem.
 *
 * Limits (422 past them): a message's content at most
 * AGENT_MESSAGE_MAX_BYTES bytes, at most AGENT_MESSAGES_MAX messages, and
 * AGENT_CONVERSATION_MAX_BYTES bytes of content in all.
 *
 * Called from the route table (daemon/routes.c).
 */
#ifndef ENSIGN_AGENT_H
#define ENSIGN_AGENT_H

struct http_request;
struct mgmt_ctx;

#define AGENT_MESSAGE_MAX_BYTES 4000
#define AGENT_MESSAGES_MAX 50
#define AGENT_CONVERSATION_MAX_BYTES 32000

/* The operations of the two rows (the dispatcher checked the body). */
void agent_messages(struct http_request *r, const struct mgmt_ctx *ctx);
void agent_execute(struct http_request *r, const struct mgmt_ctx *ctx);

/* JSON Schemas of the bodies, for /openapi.json. */
extern const char agent_messages_request_schema[];
extern const char agent_messages_response_schema[];
extern const char agent_execute_request_schema[];
extern const char agent_execute_response_schema[];

#endif
