/*
 * agent_llm.c - the chat-completions client (see agent_llm.h).
 *
 * One evhttp connection per question, freed from the event loop after its
 * request completed (libevent does not allow freeing a connection inside
 * its own request callback). evhttp calls the completion callback exactly
 * once, with a response, with a request whose response code is 0, or with
 * NULL (connection refused, reset, timed out).
 */
#include "agent/agent_llm.h"

#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_tools.h"

#define PROMPT_FLAGS_MAX 200

struct llm_call {
    struct event_base *base;
    struct evhttp_connection *conn;
    agent_llm_cb cb;
    void *arg;
};

static struct evdns_base *dns;
static struct event_base *dns_event_base;

static struct evdns_base *dns_for(struct event_base *base)
{
    if (dns == NULL || dns_event_base != base) {
        dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
        dns_event_base = base;
    }
    return dns;
}

static void free_connection(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    evhttp_connection_free(arg);
}

static void finish(struct llm_call *call, struct json_object *message, struct json_object *usage,
                   const char *error)
{
    call->cb(call->arg, message, usage, error);
    if (event_base_once(call->base, -1, EV_TIMEOUT, free_connection, call->conn, NULL) != 0)
        evhttp_connection_free_on_completion(call->conn);
    free(call);
}

/* choices[0].message of a parsed answer, or NULL. */
static struct json_object *first_message(struct json_object *answer)
{
    struct json_object *choices, *message;
    if (!json_object_is_type(answer, json_type_object) ||
        !json_object_object_get_ex(answer, "choices", &choices) ||
        !json_object_is_type(choices, json_type_array) || json_object_array_length(choices) == 0 ||
        !json_object_object_get_ex(json_object_array_get_idx(choices, 0), "message", &message) ||
        !json_object_is_type(message, json_type_object))
        return NULL;
    return message;
}

static void on_answer(struct evhttp_request *req, void *arg)
{
    struct llm_call *call = arg;
    int code = req ? evhttp_request_get_response_code(req) : 0;
    if (code == 0) {
        finish(call, NULL, NULL, "no answer (unreachable, connection reset or timed out)");
        return;
    }
    if (code != 200) {
        char error[64];
        snprintf(error, sizeof error, "answered HTTP %d", code);
        finish(call, NULL, NULL, error);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *text = len ? (const char *)evbuffer_pullup(in, -1) : "";
    struct json_tokener *tok = json_tokener_new_ex(64);
    struct json_object *answer = tok ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
    if (tok != NULL)
        json_tokener_free(tok);
    struct json_object *message = first_message(answer), *usage = NULL;
    if (answer != NULL)
        json_object_object_get_ex(answer, "usage", &usage);
    if (message == NULL)
        finish(call, NULL, NULL, "malformed answer (no choices[0].message object)");
    else
        finish(call, message, usage, NULL);
    json_object_put(answer);
}

static void add_flag_line(FILE *f, const struct json_object *flag)
{
    fprintf(f, "- %s (%s%s), variants:", agent_flag_key(flag), agent_flag_type(flag),
            agent_flag_archived(flag) ? ", archived" : "");
    struct json_object *variants = agent_flag_variants(flag);
    for (size_t i = 0; variants && i < json_object_array_length(variants); i++)
        fprintf(f, " %s", json_object_get_string(json_object_array_get_idx(variants, i)));
    fputc('\n', f);
}

/* The system prompt: what the agent may do, and the organization's names. */
static char *system_prompt(const struct agent_catalog *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        return NULL;
    fputs("You are the assistant of Ensign, a feature-flag service. Propose changes only "
          "by calling the tools; each call becomes one proposal a person confirms. Never "
          "invent flags, environments, variants or segments: use only the names below. When "
          "the request is ambiguous, ask a question instead of calling a tool.\n",
          f);
    fprintf(f, "Environments: %s\n",
            json_object_to_json_string_ext(c->environments, JSON_C_TO_STRING_PLAIN));
    fprintf(f, "Segments: %s\nFlags:\n",
            json_object_to_json_string_ext(c->segments, JSON_C_TO_STRING_PLAIN));
    size_t n = json_object_array_length(c->flags);
    for (size_t i = 0; i < n && i < PROMPT_FLAGS_MAX; i++)
        add_flag_line(f, json_object_array_get_idx(c->flags, i));
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static char *request_body(const char *model, const struct json_object *messages,
                          const struct agent_catalog *c)
{
    char *prompt = system_prompt(c);
    if (prompt == NULL)
        return NULL;
    struct json_object *body = json_object_new_object(), *list = json_object_new_array();
    struct json_object *system = json_object_new_object();
    json_object_object_add(system, "role", json_object_new_string("system"));
    json_object_object_add(system, "content", json_object_new_string(prompt));
    free(prompt);
    json_object_array_add(list, system);
    for (size_t i = 0; i < json_object_array_length(messages); i++)
        json_object_array_add(list, json_object_get(json_object_array_get_idx(messages, i)));
    json_object_object_add(body, "model", json_object_new_string(model));
    json_object_object_add(body, "messages", list);
    json_object_object_add(body, "tools", agent_tools_openai());
    json_object_object_add(body, "tool_choice", json_object_new_string("auto"));
    char *text = strdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
    json_object_put(body);
    return text;
}

/* Starts the POST on a new connection; returns 0 or -1 (nothing started). */
static int send_request(struct llm_call *call, const struct evhttp_uri *uri, const char *body)
{
    const char *host = evhttp_uri_get_host(uri);
    int port = evhttp_uri_get_port(uri);
    const char *path = evhttp_uri_get_path(uri);
    const char *query = evhttp_uri_get_query(uri);
    char target[2048];
    snprintf(target, sizeof target, "%s%s%s", path && *path ? path : "/", query ? "?" : "",
             query ? query : "");
    call->conn = evhttp_connection_base_new(call->base, dns_for(call->base), host,
                                            (unsigned short)(port > 0 ? port : 80));
    if (call->conn == NULL)
        return -1;
    evhttp_connection_set_timeout(call->conn, AGENT_LLM_TIMEOUT_S);
    evhttp_connection_set_retries(call->conn, 0);
    evhttp_connection_set_max_body_size(call->conn, AGENT_LLM_MAX_BODY);
    struct evhttp_request *req = evhttp_request_new(on_answer, call);
    if (req == NULL) {
        evhttp_connection_free(call->conn);
        return -1;
    }
    struct evkeyvalq *headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Host", host);
    evhttp_add_header(headers, "Content-Type", "application/json");
    evhttp_add_header(headers, "Accept", "application/json");
    evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    if (evhttp_make_request(call->conn, req, EVHTTP_REQ_POST, target) != 0) {
        /* evhttp_make_request frees req on failure */
        evhttp_connection_free(call->conn);
        return -1;
    }
    return 0;
}

int agent_llm_ask(struct event_base *base, const char *url, const struct json_object *messages,
                  const struct agent_catalog *catalog, agent_llm_cb cb, void *arg)
{
    struct evhttp_uri *uri = evhttp_uri_parse(url);
    if (uri == NULL || evhttp_uri_get_scheme(uri) == NULL ||
        strcmp(evhttp_uri_get_scheme(uri), "http") != 0 || evhttp_uri_get_host(uri) == NULL) {
        if (uri != NULL)
            evhttp_uri_free(uri);
        return -1;
    }
    const char *fragment = evhttp_uri_get_fragment(uri);
    char *body = request_body(fragment && *fragment ? fragment : "default", messages, catalog);
    struct llm_call *call = calloc(1, sizeof *call);
    int rc = -1;
    if (body != NULL && call != NULL) {
        *call = (struct llm_call){.base = base, .cb = cb, .arg = arg};
        rc = send_request(call, uri, body);
    }
    if (rc != 0)
        free(call);
    free(body);
    evhttp_uri_free(uri);
    return rc;
}
