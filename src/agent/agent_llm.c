/*
 * agent_llm.c - the chat-completions client (see agent_llm.h).
 *
 * One libcurl easy handle per question on the worker's outbound driver
 * (http/outbound.h: libcurl's multi interface on the worker's event
 * base, made on first use). The answer is collected into a bounded
 * buffer; the completion callback runs once from the loop.
 */
#include "agent/agent_llm.h"

#include <ctype.h>
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_tools.h"
#include "http/outbound.h"

#define PROMPT_FLAGS_MAX 200
#define KEY_MAX 4096

struct llm_call {
    CURL *easy;
    struct curl_slist *headers;
    char *body;   /* the request */
    char *answer; /* the response body, up to AGENT_LLM_MAX_BODY */
    size_t answer_len;
    bool too_big;
    char error[CURL_ERROR_SIZE];
    agent_llm_cb cb;
    void *arg;
};

static struct outbound *driver;
static struct event_base *driver_base;

static struct outbound *driver_for(struct event_base *base)
{
    if (driver == NULL || driver_base != base) {
        if (!outbound_global_init())
            return NULL;
        driver = outbound_new(base);
        driver_base = base;
    }
    return driver;
}

static void call_free(struct llm_call *call)
{
    if (call->easy != NULL)
        curl_easy_cleanup(call->easy);
    curl_slist_free_all(call->headers);
    free(call->body);
    free(call->answer);
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

static size_t collect(char *data, size_t size, size_t count, void *arg)
{
    struct llm_call *call = arg;
    size_t len = size * count;
    if (call->answer_len + len > AGENT_LLM_MAX_BODY) {
        call->too_big = true;
        return 0; /* curl ends the transfer with CURLE_WRITE_ERROR */
    }
    char *grown = realloc(call->answer, call->answer_len + len + 1);
    if (grown == NULL)
        return 0;
    call->answer = grown;
    memcpy(call->answer + call->answer_len, data, len);
    call->answer_len += len;
    call->answer[call->answer_len] = '\0';
    return len;
}

static void answered(struct llm_call *call, long code)
{
    if (code != 200) {
        char error[64];
        snprintf(error, sizeof error, "answered HTTP %ld", code);
        call->cb(call->arg, NULL, NULL, error);
        return;
    }
    struct json_tokener *tok = json_tokener_new_ex(64);
    struct json_object *answer =
        tok ? json_tokener_parse_ex(tok, call->answer ? call->answer : "", (int)call->answer_len)
            : NULL;
    if (tok != NULL)
        json_tokener_free(tok);
    struct json_object *message = first_message(answer), *usage = NULL;
    if (answer != NULL)
        json_object_object_get_ex(answer, "usage", &usage);
    if (message == NULL)
        call->cb(call->arg, NULL, NULL, "malformed answer (no choices[0].message object)");
    else
        call->cb(call->arg, message, usage, NULL);
    json_object_put(answer);
}

static void on_done(void *arg, CURL *easy, CURLcode result)
{
    struct llm_call *call = arg;
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    if (call->too_big) {
        call->cb(call->arg, NULL, NULL, "answer larger than 1 MB");
    } else if (result != CURLE_OK) {
        char error[CURL_ERROR_SIZE + 64];
        snprintf(error, sizeof error, "no answer: %s",
                 call->error[0] ? call->error : curl_easy_strerror(result));
        call->cb(call->arg, NULL, NULL, error);
    } else {
        answered(call, code);
    }
    call_free(call);
}

/* The API key in key_file (its first line, surrounding spaces trimmed)
 * into out; false, with why, when the file cannot be read or is empty. */
static bool read_key(const char *key_file, char *out, size_t outlen, const char **why)
{
    FILE *f = fopen(key_file, "r");
    if (f == NULL) {
        *why = strerror(errno);
        return false;
    }
    bool ok = fgets(out, (int)outlen, f) != NULL;
    fclose(f);
    size_t len = ok ? strcspn(out, "\r\n") : 0;
    out[len] = '\0';
    while (len > 0 && isspace((unsigned char)out[len - 1]))
        out[--len] = '\0';
    size_t lead = strspn(out, " \t");
    memmove(out, out + lead, len - lead + 1);
    if (out[0] == '\0') {
        *why = "the file holds no key";
        return false;
    }
    return true;
}

static bool add_header(struct llm_call *call, const char *line)
{
    struct curl_slist *grown = curl_slist_append(call->headers, line);
    if (grown == NULL)
        return false;
    call->headers = grown;
    return true;
}

static bool configure(struct llm_call *call, const char *url)
{
    CURL *e = call->easy;
    return curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, AGENT_LLM_TIMEOUT_S * 1000L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(call->body)) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTPHEADER, call->headers) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_WRITEDATA, call) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->error) == CURLE_OK;
}

bool agent_llm_url_ok(const char *url)
{
    return strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0;
}

int agent_llm_ask(struct event_base *base, const struct agent_llm_endpoint *endpoint,
                  const struct json_object *messages, const struct agent_catalog *catalog,
                  agent_llm_cb cb, void *arg, const char **why)
{
    *why = "out of memory";
    if (!agent_llm_url_ok(endpoint->url)) {
        *why = "only http:// and https:// URLs are supported";
        return -1;
    }
    char key[KEY_MAX], bearer[KEY_MAX + 32];
    if (endpoint->key_file[0] != '\0' && !read_key(endpoint->key_file, key, sizeof key, why))
        return -1;
    struct outbound *out = driver_for(base);
    struct llm_call *call = calloc(1, sizeof *call);
    if (out == NULL || call == NULL) {
        free(call);
        return -1;
    }
    *call = (struct llm_call){.cb = cb, .arg = arg};
    call->body = request_body(endpoint->model[0] ? endpoint->model : "default", messages, catalog);
    call->easy = curl_easy_init();
    bool ok = call->body != NULL && call->easy != NULL &&
              add_header(call, "Content-Type: application/json") &&
              add_header(call, "Accept: application/json");
    if (ok && endpoint->key_file[0] != '\0') {
        snprintf(bearer, sizeof bearer, "Authorization: Bearer %s", key);
        ok = add_header(call, bearer);
    }
    if (!ok || !configure(call, endpoint->url) ||
        outbound_add(out, call->easy, on_done, call) != 0) {
        call_free(call);
        return -1;
    }
    return 0;
}
