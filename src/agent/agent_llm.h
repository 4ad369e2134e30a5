/*
 * agent_llm.h - the optional language-model client: an OpenAI-compatible
 * chat-completions endpoint (agent_llm_url) with tool calling.
 *
 * Non-blocking on the worker's event loop: libcurl's multi interface on
 * the worker's event base (http/outbound.h), a timeout of
 * AGENT_LLM_TIMEOUT_S seconds in all, answers larger than
 * AGENT_LLM_MAX_BODY refused, no redirects. http:// and https:// URLs;
 * https is verified against the system's CA store. The API key, when
 * agent_llm_key_file names a file, is its first line, read at each
 * question (so a rotated key needs no reload) and sent as a Bearer token;
 * the model is agent_llm_model (agent.c falls back on the URL's fragment,
 * then "default").
 *
 * The answer's tool calls are not trusted here: agent.c checks each one
 * (agent_tool_check) before it is shown. Called by agent.c.
 */
#ifndef ENSIGN_AGENT_LLM_H
#define ENSIGN_AGENT_LLM_H

#include <json-c/json.h>
#include <stdbool.h>

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

/* Where the questions go. */
struct agent_llm_endpoint {
    const char *url;      /* http:// or https://, without a fragment */
    const char *model;    /* "" for "default" */
    const char *key_file; /* "" for no API key */
};

/* True for an http:// or https:// URL. */
bool agent_llm_url_ok(const char *url);

/*
 * Sends the conversation (an array of {role, content}) with a system
 * prompt describing the catalogue and the tools. cb runs exactly once,
 * from the event loop, never inside this call. Returns 0, or -1 with
 * nothing started (*why says: not an http(s) URL, the key file cannot be
 * read, out of memory): cb never runs then.
 */
int agent_llm_ask(struct event_base *base, const struct agent_llm_endpoint *endpoint,
                  const struct json_object *messages, const struct agent_catalog *catalog,
                  agent_llm_cb cb, void *arg, const char **why);

#endif
