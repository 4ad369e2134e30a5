/*
 * agent_tools.h - the agent's tools (doc/choices.md "Agent"): each one
 * REST operation of /v1 (doc/api.md), its input exactly that
 * operation's body plus the keys naming what it acts on.
 *
 *   create_flag              POST  /v1/orgs/{org}/flags                       input = body
 *   update_flag_environment  PATCH /v1/orgs/{org}/flags/{flag}/environments/{environment}
 *                            input {flag, environment, changes}, body = changes
 *   add_rule                 POST  .../flags/{flag}/environments/{environment}/rules
 *                            input {flag, environment, rule}, body = rule
 *   archive_flag             POST  /v1/orgs/{org}/flags/{flag}/archive      input {flag}
 *   restore_flag             POST  /v1/orgs/{org}/flags/{flag}/restore      input {flag}
 *   create_segment           POST  /v1/orgs/{org}/segments                  input = body
 *
 * Owns the mapping from (tool, input) to the REST request that execute
 * dispatches internally (agent_tool_request: only the shape needed to
 * build the path is checked here; the REST handler validates the body, as
 * for any client), and the check a proposal from a language model passes
 * before it is shown (agent_tool_check: tool known, input shape valid, the
 * flag, environment, variants and segments exist, through validate.c).
 * Also the tool definitions sent to such a model. Pure.
 *
 * Called by agent.c (execute) and agent_llm.c (proposals).
 */
#ifndef ENSIGN_AGENT_TOOLS_H
#define ENSIGN_AGENT_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "agent/agent_catalog.h"
#include "mgmt/validate.h"

#define AGENT_PATH_MAX 256

struct agent_rest_call {
    unsigned method; /* enum http_method bit */
    char path[AGENT_PATH_MAX];
    char *body; /* JSON text (malloc'd), or NULL for no body */
};

/* True when name is one of the tools above. */
bool agent_tool_known(const char *name);

/*
 * The REST request of tool with input in organization org_slug. Returns 0,
 * or -1 after recording the problems in v (an unknown tool under "tool",
 * input problems under "input..."). Free out->body with free().
 */
int agent_tool_request(const char *tool, const struct json_object *input, const char *org_slug,
                       struct agent_rest_call *out, struct validate *v);

/*
 * Checks a proposed (tool, input) against the catalogue. Returns true, or
 * false with the reasons (one line) in why.
 */
bool agent_tool_check(const struct agent_catalog *c, const char *tool,
                      const struct json_object *input, char *why, size_t why_len);

/* A one-line summary of a checked proposal ("enable the flag x in production"). */
void agent_tool_summary(const char *tool, const struct json_object *input, char *out,
                        size_t out_len);

/* The OpenAI "tools" array describing the tools (caller owns). */
struct json_object *agent_tools_openai(void);

#endif
