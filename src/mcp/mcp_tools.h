/*
 * mcp_tools.h - the tools of the MCP endpoint (doc/api.md "POST /mcp",
 * doc/choices.md "MCP"): each tool is one REST operation of /v1, named by
 * the method and pattern of its row in the route table.
 *
 *   create_flag              POST  /v1/orgs/{org}/flags                 the body's members
 *   update_flag_environment  PATCH .../flags/{key}/environments/{envKey} {flag, environment,
 *                                                                        changes = the body}
 *   add_rule                 POST  .../environments/{envKey}/rules      {flag, environment, rule}
 *   archive_flag, restore_flag POST .../flags/{key}/archive, /restore   {flag}
 *   create_segment           POST  /v1/orgs/{org}/segments              the body's members
 *   list_flags               GET   /v1/orgs/{org}/flags                 {q, stale, archived}
 *   list_stale_flags         GET   /v1/orgs/{org}/flags?stale=true
 *   get_flag, flag_usage     GET   .../flags/{key}, .../flags/{key}/usage {flag}
 *   evaluate_flag            POST  /v1/orgs/{org}/environments/{envKey}/evaluate
 *                                                                       {environment, context,
 * flags} list_segments            GET   /v1/orgs/{org}/segments list_environments        GET
 * /v1/orgs/{org}/environments restore_revision         POST  .../flags/{key}/revisions/{id}/restore
 * {flag, revision} schedule_change          POST  .../flags/{key}/schedules            {at,
 * environment, changes}
 *
 * Every tool also takes org, the organization's slug. The first six and
 * the last two are the agent's tools (agent/agent_tools.h) with the same
 * input. Owns the
 * tool table, each tool's input JSON Schema (built from its row: the
 * path's parameters, the query parameters the tool passes, and the row's
 * own request schema, the one the REST validation uses) and the REST
 * request of a call. A tool whose row is not in the table is not offered.
 *
 * Pure: the route table is the caller's. Called by mcp.c; unit-tested in
 * tests/unit/test_mcp.c.
 */
#ifndef ENSIGN_MCP_TOOLS_H
#define ENSIGN_MCP_TOOLS_H

#include <stddef.h>
#include <json-c/json.h>

#include "http/router.h"

#define MCP_PATH_MAX 2048
#define MCP_CURSOR_MAX 400 /* bytes of a list's cursor argument (a flag list's is ~140) */
#define MCP_CURSOR_MAX_TEXT "400"
#define MCP_ARGUMENT_MAX 200 /* bytes of a path argument (a slug, key or id) */

struct mcp_rest_call {
    unsigned method;         /* enum http_method bit */
    char path[MCP_PATH_MAX]; /* percent-encoded, with the query when there is one */
    char *body;              /* JSON text (malloc'd), or NULL for no body */
};

/* The tools/list array: {name, title, description, inputSchema, annotations}
 * of every tool whose row is in routes (caller owns). */
struct json_object *mcp_tools_list(const struct route *routes, size_t count);

/*
 * The REST request of tool name called with arguments (an object, or NULL
 * for none). Returns 0 (free out->body with free()), or -1 with a sentence
 * in why: an unknown tool, a missing or ill-typed path or query argument,
 * an argument the tool does not take. What the body holds is left to the
 * REST operation, which validates it as for any client.
 */
int mcp_tool_request(const struct route *routes, size_t count, const char *name,
                     const struct json_object *arguments, struct mcp_rest_call *out, char *why,
                     size_t why_len);

#endif
