/*
 * agent_llm.h - the optional language-model client: an OpenAI-compatible
 * chat-completions endpoint (agent_llm_url) with tool calling.
 *
 * Non-blocking on the worker's event loop: libevent's evhttp client, names
 * resolved by evdns (one evdns base per process, made on first use), a
 * fixed timeout of AGENT_LLM_TIMEOUT_S seconds for connecting and for the
 * answer, answers larger than AGENT_LLM_MAX_BODY refused. Only http:// URLs
 * (no TLS in this client: put a local proxy in front of an https endpoint);
 * no API key is sent. The model name is the URL's fragment
 * (http://127.0.0.1:8000/v1/chat/completions#llama3), "default" without one.
 *
 * The answer's tool calls are not trusted here: agent.c checks each one
 * (agent_tool_check) before it is shown. Called by agent.c.
 */
#ifndef ENSIGN_AGENT_LLM_H
#define ENSIGN_AGENT_LLM_H

#include <json-c/json.h>

#include "agent/agent_catalog.h"

#define AGENT_LLM_TIMEOUT_S 5
#define AGENT_LLM_MAX_BODY (1024 * 1024)

struct event_base;

/*
 * Runs once: with message (choices[0].message of the answer: content and
 * tool_calls) and usage (the answer's usage object, or NULL), both valid
 * during the call; or with message NULL and error saying why the endpoint
 * could not answer (unreachable, timeout, HTTP status, malformed answer).
 */
typedef void (*agent_llm_cb)(void *arg, struct json_object *message, struct json_object *usage,
                             const char *error);

/*
 * Sends the conversation (an array of {role, content}) with a system
 * prompt describing the catalogue and the tools. cb runs exactly once,
 * from the event loop, never inside this call. Returns 0, or -1 with
 * nothing started (bad URL, out of memory): cb never runs then.
 */
int agent_llm_ask(struct event_base *base, const char *url, const struct json_object *messages,
                  const struct agent_catalog *catalog, agent_llm_cb cb, void *arg);

#endif
