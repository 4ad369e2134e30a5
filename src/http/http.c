/*
 * http.c - one request's life in a worker: dispatch from the route table,
 * reading the request, and every way of answering it.
 *
 * Invariants:
 *  - Every response carries a JSON content type (application/json, or
 *    application/problem+json for Problem bodies), except 204 preflight,
 *    304 and redirects, which carry no body, /metrics (text) and the
 *    dashboard's files (http_send_static, their own types).
 *  - Each dispatched request is answered exactly once; the answer frees the
 *    struct http_request. worker->in_flight counts dispatched, unanswered
 *    requests (internal ones included), which is what a draining worker
 *    waits for; an event stream (http_start_stream) stops counting once its
 *    headers are sent.
 *  - /ofrep responses always carry Vary: Origin, and the Access-Control-*
 *    headers when the request carries Origin (doc/api.md "Browsers"):
 *    server-side SDKs send no Origin, and five headers fewer per answer
 *    are a tenth of what an evaluation costs beyond a bare request.
 *  - A worker keeps up to REQUEST_CACHE released requests for the next
 *    ones (request_new, release): a struct http_request is over 1 KB, and
 *    glibc serves a chunk that large only after folding every small free
 *    chunk back into its bins (malloc_consolidate), which took 2.5% of a
 *    worker under evaluation load. A worker is one thread.
 *  - Answers are written into the request's own output buffer, never a
 *    second evbuffer.
 *  - The answer is where each request is counted for /metrics (route
 *    class, status, bytes, time) and logged (access_log.h; with
 *    access_log = management, /ofrep requests are not): method, path
 *    without the query string, status, duration, bytes; never a header,
 *    so no credential reaches the log.
 *
 * libevent answers some malformed requests itself (bad request line,
 * oversized headers or body) with an HTML page from evhttp_send_error().
 * Ensign defines evhttp_send_error() (see the end of this file): libevent
 * calls it through its PLT, so the executable's definition takes its
 * place and those answers become JSON too. tests/e2e checks this; the
 * start-up proof (libevent_replacements.c, which lists every replacement)
 * refuses to start when libevent does not call it.
 *
 * Internal requests (http_internal_request) go through the same router
 * and handlers; only the last step differs: send_raw and
 * http_send_json_text hand status, body and headers to the request's sink
 * instead of evhttp_send_reply. So an operation run on behalf of another
 * request (the agent's execute) cannot differ from the REST route.
 */
#include "http/http.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <sys/queue.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/access_log.h"
#include "http/answer.h"
#include "http/libevent_replacements.h"
#include "base/config.h"
#include "http/early_write.h"
#include "http/head_format.h"
#include "http/intake.h"
#include "http/json_guard.h"
#include "base/log.h"
#include "http/metrics.h"
#include "http/query_method.h"
#include "http/server.h"

/* The worker serving in this process; the interposed evhttp_send_error
 * needs its limits. Set by http_dispatch's caller via http_bind_server. */
static struct http_server *bound_server;

void http_bind_server(struct http_server *w)
{
    bound_server = w;
}

/* ---- reading the request ---- */

const char *http_param(const struct http_request *r, const char *name)
{
    return route_param(&r->match, name);
}

const char *http_header(const struct http_request *r, const char *name)
{
    int slot = r->headers.built ? header_index_slot(name) : -1;
    if (slot >= 0)
        return r->headers.value[slot];
    return evhttp_find_header(evhttp_request_get_input_headers(r->req), name);
}

bool http_forwarded_https(const struct http_request *r)
{
    const char *proto = http_header(r, "X-Forwarded-Proto");
    return proto != NULL && strncasecmp(proto, "https", 5) == 0 &&
           (proto[5] == '\0' || proto[5] == ',' || proto[5] == ' ');
}

bool http_query_param(const struct http_request *r, const char *name, char *out, size_t outlen)
{
    if (r->query == NULL)
        return false;
    struct evkeyvalq params;
    TAILQ_INIT(&params);
    if (evhttp_parse_query_str(r->query, &params) != 0) {
        evhttp_clear_headers(&params);
        return false;
    }
    const char *value = evhttp_find_header(&params, name);
    bool found = value != NULL && strlen(value) < outlen;
    if (found)
        memcpy(out, value, strlen(value) + 1);
    evhttp_clear_headers(&params);
    return found;
}

const char *http_body(struct http_request *r, size_t *len)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
    if (!r->body_terminated) {
        size_t n = evbuffer_get_length(in);
        /* NUL-terminate in place, once: the buffer is ours until the
         * answer, and a second call must not see the first NUL. */
        if (n > 0 && evbuffer_add(in, "", 1) != 0)
            return NULL;
        r->body_terminated = true;
        r->body_len = n;
    }
    *len = r->body_len;
    if (r->body_len == 0)
        return NULL;
    return (const char *)evbuffer_pullup(in, -1);
}

/* Answers what json_guard found: 400 for text that is not JSON (not UTF-8,
 * a NUL byte; on /ofrep PARSE_ERROR), 422 for content no field may hold
 * (on /ofrep INVALID_CONTEXT), with the envelope's errors: the body as a
 * whole, as validate.c names it. */
static void send_guard_error(struct http_request *r, enum json_guard_verdict verdict)
{
    bool text = json_guard_not_json(verdict);
    const char *message = json_guard_message(verdict);
    if (r->surface == SURFACE_OFREP) {
        http_send_eval_error(r, 400, NULL, text ? "PARSE_ERROR" : "INVALID_CONTEXT", message);
    } else if (text) {
        http_send_error(r, 400, message);
    } else {
        struct json_object *errors = json_object_new_object();
        struct json_object *list = json_object_new_array();
        json_object_array_add(list, json_object_new_string(message));
        json_object_object_add(errors, "body", list);
        http_send_validation_error(r, message, errors);
    }
}

enum http_json_status http_json_parse(const char *text, size_t len, struct json_object **out,
                                      enum json_guard_verdict *verdict)
{
    *out = NULL;
    size_t members;
    *verdict = json_guard_scan(text, len, 0, &members);
    if (*verdict != JSON_GUARD_OK)
        return json_guard_not_json(*verdict) ? HTTP_JSON_SYNTAX : HTTP_JSON_CONTENT;
    struct json_tokener *tok = json_tokener_new_ex(HTTP_JSON_MAX_DEPTH);
    if (tok == NULL)
        return HTTP_JSON_NO_MEMORY;
    json_tokener_set_flags(tok, JSON_GUARD_TOKENER_FLAGS);
    struct json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    bool complete = err == json_tokener_success && end + strspn(text + end, " \t\r\n") == len;
    json_tokener_free(tok);
    if (!complete) {
        json_object_put(obj);
        return HTTP_JSON_SYNTAX;
    }
    if (!json_guard_members_kept(obj, members)) {
        json_object_put(obj);
        *verdict = JSON_GUARD_DUPLICATE_KEY;
        return HTTP_JSON_CONTENT;
    }
    *out = obj;
    return HTTP_JSON_OK;
}

bool http_parse_json_body(struct http_request *r, bool allow_empty, struct json_object **out)
{
    size_t len;
    const char *text = http_body(r, &len);
    *out = NULL;
    if (text == NULL) {
        if (allow_empty)
            return true;
        http_send_error(r, 400, "a JSON request body is required");
        return false;
    }
    enum json_guard_verdict verdict;
    switch (http_json_parse(text, len, out, &verdict)) {
    case HTTP_JSON_OK:
        return true;
    case HTTP_JSON_NO_MEMORY:
        http_send_error(r, 500, "out of memory");
        return false;
    case HTTP_JSON_SYNTAX:
    case HTTP_JSON_CONTENT:
        break;
    }
    if (verdict != JSON_GUARD_OK)
        send_guard_error(r, verdict);
    else if (r->surface == SURFACE_OFREP)
        http_send_eval_error(r, 400, NULL, "PARSE_ERROR", "request body is not valid JSON");
    else
        http_send_error(r, 400, "request body is not valid JSON");
    return false;
}

/* text (len bytes) as an IPv6 address, IPv4 mapped into ::ffff:0:0/96. */
static bool parse_address(const char *text, size_t len, struct in6_addr *out)
{
    char buf[INET6_ADDRSTRLEN];
    struct in_addr v4;
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, text, len);
    buf[len] = '\0';
    if (inet_pton(AF_INET6, buf, out) == 1)
        return true;
    if (inet_pton(AF_INET, buf, &v4) != 1)
        return false;
    memset(out, 0, sizeof *out);
    out->s6_addr[10] = 0xff;
    out->s6_addr[11] = 0xff;
    memcpy(&out->s6_addr[12], &v4, 4);
    return true;
}

/* True when addr is one of the space-separated addresses of list. */
static bool address_listed(const char *list, const struct in6_addr *addr)
{
    for (const char *p = list; p != NULL && *p != '\0';) {
        p += strspn(p, " \t");
        size_t n = strcspn(p, " \t");
        struct in6_addr entry;
        if (n > 0 && parse_address(p, n, &entry) && memcmp(&entry, addr, sizeof entry) == 0)
            return true;
        p += n;
    }
    return false;
}

/*
 * Walks X-Forwarded-For from the right (the entry the nearest proxy
 * added) past the trusted proxies to the first address that is not one:
 * the client. Entries left of it are the client's to invent and are
 * never read. Returns false when an entry is not an address.
 */
static bool forwarded_client(const struct evkeyvalq *headers, const char *trusted,
                             struct in6_addr *client)
{
    const struct evkeyval *kv;
    TAILQ_FOREACH_REVERSE(kv, headers, evkeyvalq, next)
    {
        if (strcasecmp(kv->key, "X-Forwarded-For") != 0)
            continue;
        const char *v = kv->value;
        for (size_t end = strlen(v); end > 0;) {
            size_t start = end;
            while (start > 0 && v[start - 1] != ',')
                start--;
            const char *entry = v + start + strspn(v + start, " \t");
            size_t n = (size_t)(v + end - entry);
            while (n > 0 && (entry[n - 1] == ' ' || entry[n - 1] == '\t'))
                n--;
            if (!parse_address(entry, n, client))
                return false;
            if (!address_listed(trusted, client))
                return true;
            end = start > 0 ? start - 1 : 0;
        }
    }
    return true; /* every hop trusted: the leftmost stands */
}

void http_client_address(const struct http_request *r, char *out, size_t outlen)
{
    if (r->origin != NULL) {
        http_client_address(r->origin, out, outlen);
        return;
    }
    char *host = NULL;
    ev_uint16_t port = 0;
    struct evhttp_connection *evcon = evhttp_request_get_connection(r->req);
    if (outlen == 0)
        return;
    out[0] = '\0';
    if (evcon == NULL)
        return;
    evhttp_connection_get_peer(evcon, &host, &port);
    if (host == NULL)
        return;
    snprintf(out, outlen, "%s", host);
    const char *trusted = r->server != NULL ? r->server->cfg->trusted_proxies : NULL;
    struct in6_addr peer, client;
    if (trusted == NULL || trusted[0] == '\0' || !parse_address(host, strlen(host), &peer) ||
        !address_listed(trusted, &peer))
        return;
    client = peer;
    if (!forwarded_client(evhttp_request_get_input_headers(r->req), trusted, &client))
        return; /* garbage from a trusted proxy: the proxy is the client */
    char text[INET6_ADDRSTRLEN];
    bool mapped = IN6_IS_ADDR_V4MAPPED(&client);
    if (inet_ntop(mapped ? AF_INET : AF_INET6, mapped ? (const void *)&client.s6_addr[12] : &client,
                  text, sizeof text) != NULL)
        snprintf(out, outlen, "%s", text);
}

const char *http_bearer(const struct http_request *r)
{
    const char *auth = http_header(r, "Authorization");
    if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
        return NULL;
    auth += 7;
    while (*auth == ' ')
        auth++;
    return *auth ? auth : NULL;
}

/* ---- answering ---- */

void http_add_header(struct http_request *r, const char *name, const char *value)
{
    evhttp_add_header(evhttp_request_get_output_headers(r->req), name, value);
}

void http_add_header_block(struct http_request *r, const char *lines, size_t len)
{
    head_format_attach_block(evhttp_request_get_output_headers(r->req), lines, len);
}

/* Vary: Origin, and with Origin the Access-Control-* headers (doc/choices.md
 * "Browsers and the wire"). */
static void add_cors_headers(struct evhttp_request *req, const char *origin,
                             const struct config *cfg)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Vary", "Origin");
    if (origin == NULL)
        return;
    const char *allowed = cfg != NULL ? cfg->cors_allow_origins : "*";
    if (strcmp(allowed, "*") == 0) {
        evhttp_add_header(out, "Access-Control-Allow-Origin", "*");
    } else {
        size_t olen = strlen(origin);
        for (const char *p = allowed; *p;) {
            size_t n = strcspn(p, " ");
            if (n == olen && strncmp(p, origin, n) == 0) {
                evhttp_add_header(out, "Access-Control-Allow-Origin", origin);
                break;
            }
            p += n;
            p += strspn(p, " ");
        }
    }
    evhttp_add_header(out, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    evhttp_add_header(out, "Access-Control-Allow-Headers",
                      "Authorization, Content-Type, If-None-Match, X-API-Key, Last-Event-ID");
    evhttp_add_header(out, "Access-Control-Expose-Headers", "ETag, Retry-After");
    evhttp_add_header(out, "Access-Control-Max-Age", "86400");
}

static uint64_t monotonic_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

/* The request's access line, unless access_log = management and it was
 * an evaluation or an event stream (every /ofrep path). */
static void access_log(struct http_server *w, const struct http_request *r, int status,
                       size_t bytes, uint64_t us)
{
    if (w->cfg->access_log != CONFIG_ACCESS_LOG_ALL &&
        metrics_class_of(r->path) == METRICS_CLASS_EVALUATION)
        return;
    access_log_request(w->access_log, router_method_name(r->method), r->path, status, us, bytes);
}

/* ---- request memory ---- */

#define REQUEST_URI_ROOM 256 /* URI bytes a kept request has room for */
#define REQUEST_CACHE 16

static struct http_request *request_cache[REQUEST_CACHE];
static size_t request_cached;

/* A zeroed request with room for uri_len + 1 bytes after it. */
static struct http_request *request_alloc(size_t uri_len)
{
    if (uri_len + 1 > REQUEST_URI_ROOM || request_cached == 0) {
        size_t room = uri_len + 1 > REQUEST_URI_ROOM ? uri_len + 1 : REQUEST_URI_ROOM;
        struct http_request *r = calloc(1, sizeof *r + room);
        if (r != NULL)
            r->room = room;
        return r;
    }
    struct http_request *r = request_cache[--request_cached];
    memset(r, 0, sizeof *r);
    r->room = REQUEST_URI_ROOM;
    return r;
}

static void request_free(struct http_request *r)
{
    if (r->room == REQUEST_URI_ROOM && request_cached < REQUEST_CACHE)
        request_cache[request_cached++] = r;
    else
        free(r);
}

/* Sends r's complete answer (headers and body already in place). */
static void send_reply(struct http_request *r, int status)
{
    early_write_send_reply(r->server != NULL ? r->server->early : NULL, r->req, status,
                           envelope_reason_phrase(status));
}

/* Counts and logs the answer (status, body bytes), then frees r. */
static void release(struct http_request *r, int status, size_t bytes)
{
    struct http_server *w = r->server;
    uint64_t us = monotonic_us() - r->started_us;
    if (w != NULL && w->metrics != NULL)
        metrics_count_request(
            w->metrics, r->match.route != NULL ? metrics_class_of(r->path) : METRICS_CLASS_OTHER,
            status, bytes, us);
    if (w != NULL && w->access_log != NULL && w->cfg != NULL)
        access_log(w, r, status, bytes, us);
    r->answered = true;
    if (r->server != NULL && r->server->in_flight > 0)
        r->server->in_flight--;
    request_free(r);
}

static void internal_capture(struct http_request *r, int status, const char *text, size_t len);

/* Sends status and an optional body with the given content type; frees r. */
static void send_raw(struct http_request *r, int status, const char *content_type,
                     struct json_object *body)
{
    if (r->sink != NULL) {
        const int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
        const char *text = body ? json_object_to_json_string_ext(body, flags) : NULL;
        internal_capture(r, status, text, text ? strlen(text) : 0);
        json_object_put(body);
        return;
    }
    struct evhttp_request *req = r->req;
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    if (r->surface == SURFACE_OFREP)
        add_cors_headers(r->req, r->headers.value[HEADER_ORIGIN],
                         r->server ? r->server->cfg : NULL);
    if ((status == 429 || status == 503) && evhttp_find_header(out, "Retry-After") == NULL)
        evhttp_add_header(out, "Retry-After", "1");
    if ((r->server != NULL && r->server->draining) || r->close_connection)
        evhttp_add_header(out, "Connection", "close");
    size_t bytes = 0;
    if (body != NULL) {
        evhttp_add_header(out, "Content-Type", content_type);
        const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN |
                                                                    JSON_C_TO_STRING_NOSLASHESCAPE);
        bytes = strlen(text);
        evbuffer_add(evhttp_request_get_output_buffer(req), text, bytes);
        json_object_put(body);
    }
    send_reply(r, status);
    release(r, status, bytes);
}

void http_send_json(struct http_request *r, int status, struct json_object *body)
{
    send_raw(r, status, "application/json", body);
}

/* The headers every answer with a body of content_type carries. */
static void add_body_headers(struct http_request *r, const char *content_type)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(r->req);
    if (r->surface == SURFACE_OFREP)
        add_cors_headers(r->req, r->headers.value[HEADER_ORIGIN],
                         r->server ? r->server->cfg : NULL);
    evhttp_add_header(out, "Content-Type", content_type);
    if ((r->server != NULL && r->server->draining) || r->close_connection)
        evhttp_add_header(out, "Connection", "close");
}

void http_send_text(struct http_request *r, int status, const char *content_type, const char *text,
                    size_t len)
{
    if (r->sink != NULL) {
        internal_capture(r, status, text, len);
        return;
    }
    add_body_headers(r, content_type);
    evbuffer_add(evhttp_request_get_output_buffer(r->req), text, len);
    send_reply(r, status);
    release(r, status, len);
}

void http_send_static(struct http_request *r, int status, const char *content_type,
                      const void *body, size_t len)
{
    if (r->sink != NULL) {
        internal_capture(r, status, (const char *)body, len);
        return;
    }
    add_body_headers(r, content_type);
    evbuffer_add_reference(evhttp_request_get_output_buffer(r->req), body, len, NULL, NULL);
    send_reply(r, status);
    release(r, status, len);
}

void http_send_empty(struct http_request *r, int status)
{
    send_raw(r, status, NULL, NULL);
}

void http_send_answer(struct http_request *r, int status, struct http_answer *a)
{
    size_t len = http_answer_length(a);
    if (r->sink != NULL) {
        char *text = http_answer_join(a, &len);
        if (text == NULL)
            status = 500;
        internal_capture(r, status, text, len);
        free(text);
        return;
    }
    add_body_headers(r, "application/json");
    if (!http_answer_attach(a, evhttp_request_get_output_buffer(r->req)))
        len = 0;
    send_reply(r, status);
    release(r, status, len);
}

void http_send_json_text(struct http_request *r, int status, const char *json_text)
{
    http_send_text(r, status, "application/json", json_text, strlen(json_text));
}

static const char *default_eval_code(int status)
{
    if (status == 401)
        return "AUTHENTICATION_ERROR";
    return "GENERAL";
}

static void send_error_body(struct http_request *r, int status, const char *message,
                            struct json_object *errors)
{
    switch (r->surface) {
    case SURFACE_V1:
        send_raw(r, status, "application/json", envelope_v1(status, message, errors));
        break;
    case SURFACE_OFREP:
        json_object_put(errors);
        send_raw(r, status, "application/json",
                 envelope_ofrep(status, NULL, default_eval_code(status), message));
        break;
    case SURFACE_ROOT:
        send_raw(r, status, "application/problem+json",
                 envelope_problem(status, message, r->path, errors));
        break;
    }
}

void http_send_error(struct http_request *r, int status, const char *message)
{
    send_error_body(r, status, message, NULL);
}

void http_send_validation_error(struct http_request *r, const char *message,
                                struct json_object *errors)
{
    send_error_body(r, 422, message, errors);
}

void http_send_eval_error(struct http_request *r, int status, const char *key,
                          const char *error_code, const char *details)
{
    send_raw(r, status, "application/json", envelope_ofrep(status, key, error_code, details));
}

/* The request's method as sent, for messages (the router knows only the
 * methods it routes). */
static const char *command_name(enum evhttp_cmd_type type)
{
    switch (type) {
    case EVHTTP_REQ_TRACE:
        return "TRACE";
    case EVHTTP_REQ_CONNECT:
        return "CONNECT";
    default:
        return NULL;
    }
}

void http_send_method_not_allowed(struct http_request *r, unsigned methods)
{
    char allow[128];
    router_allow_header(methods, allow, sizeof allow);
    http_add_header(r, "Allow", allow);
    char message[192];
    snprintf(message, sizeof message, "method %s is not allowed here; allowed: %s",
             command_name(evhttp_request_get_command(r->req)) != NULL
                 ? command_name(evhttp_request_get_command(r->req))
                 : router_method_name(r->method),
             allow);
    http_send_error(r, 405, message);
}

void http_send_not_modified(struct http_request *r)
{
    send_raw(r, 304, NULL, NULL);
}

struct evhttp_request *http_start_stream(struct http_request *r, const char *content_type)
{
    struct evhttp_request *req = r->req;
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    if (r->surface == SURFACE_OFREP)
        add_cors_headers(r->req, r->headers.value[HEADER_ORIGIN],
                         r->server ? r->server->cfg : NULL);
    evhttp_add_header(out, "Content-Type", content_type);
    evhttp_add_header(out, "Cache-Control", "no-store");
    evhttp_add_header(out, "X-Accel-Buffering", "no");
    evhttp_add_header(out, "Connection", "close");
    evhttp_send_reply_start(req, 200, envelope_reason_phrase(200));
    release(r, 200, 0);
    return req;
}

bool http_answered(const struct http_request *r)
{
    return r->answered;
}

/* ---- dispatch ---- */

static unsigned method_bit(enum evhttp_cmd_type type)
{
    switch (type) {
    case EVHTTP_REQ_GET:
        return METHOD_GET;
    case EVHTTP_REQ_HEAD:
        return METHOD_HEAD;
    case EVHTTP_REQ_POST:
        return METHOD_POST;
    case EVHTTP_REQ_PUT:
        return METHOD_PUT;
    case EVHTTP_REQ_PATCH:
        return METHOD_PATCH;
    case EVHTTP_REQ_DELETE:
        return METHOD_DELETE;
    case EVHTTP_REQ_OPTIONS:
        return METHOD_OPTIONS;
    default:
        return METHOD_OTHER;
    }
}

static void answer_preflight(struct http_request *r)
{
    send_raw(r, 204, NULL, NULL);
}

static void route_request(struct http_request *r)
{
    struct http_server *w = r->server;
    if (r->surface == SURFACE_OFREP && r->method == METHOD_OPTIONS) {
        answer_preflight(r);
        return;
    }
    enum route_result found =
        w->route_index != NULL
            ? route_index_match(w->route_index, r->method, r->path, &r->match)
            : router_match(w->routes, w->route_count, r->method, r->path, &r->match);
    switch (found) {
    case ROUTE_FOUND:
        r->match.route->handler(r);
        return;
    case ROUTE_METHOD_NOT_ALLOWED:
        http_send_method_not_allowed(r, r->match.allowed);
        return;
    case ROUTE_NOT_FOUND:
        break;
    }
    char message[160];
    snprintf(message, sizeof message, "no such path: %.*s", (int)json_guard_utf8_cut(r->path, 120),
             r->path);
    if (r->surface == SURFACE_OFREP) /* not a flag: GENERAL, not FLAG_NOT_FOUND */
        http_send_eval_error(r, 404, NULL, "GENERAL", message);
    else
        http_send_error(r, 404, message);
}

/* Splits the URI into path and query without allocating beyond r. */
static struct http_request *request_new(struct evhttp_request *req, struct http_server *w)
{
    const char *uri = evhttp_request_get_uri(req);
    size_t uri_len = strlen(uri);
    struct http_request *r = request_alloc(uri_len);
    if (r == NULL)
        return NULL;
    char *copy = (char *)(r + 1);
    memcpy(copy, uri, uri_len + 1);
    char *hash = strchr(copy, '#');
    if (hash != NULL)
        *hash = '\0';
    char *question = strchr(copy, '?');
    if (question != NULL) {
        *question = '\0';
        r->query = question + 1;
    }
    r->req = req;
    r->server = w;
    r->path = copy;
    r->method = method_bit(evhttp_request_get_command(req));
    header_index_build(&r->headers, evhttp_request_get_input_headers(req));
    if (r->method == METHOD_POST && query_method_override(r->headers.value[HEADER_METHOD_OVERRIDE]))
        r->method = METHOD_QUERY; /* query_method.c */
    r->surface = envelope_surface_for_path(copy);
    r->started_us = monotonic_us();
    return r;
}

/* One request from either listener; the metrics listener serves /metrics only. */
static void dispatch(struct evhttp_request *req, struct http_server *w, bool metrics_listener)
{
    struct http_request *r = request_new(req, w);
    if (r == NULL) {
        evhttp_send_reply(req, 503, "Service Unavailable", NULL);
        return;
    }
    w->in_flight++;
    if (w->requests_served != NULL)
        atomic_fetch_add_explicit(w->requests_served, 1, memory_order_relaxed);
    r->on_metrics_listener = metrics_listener;
    if (req->major != 1 || req->minor > 1) { /* answered as HTTP/1.1 */
        req->major = 1;
        req->minor = 1;
    }
    int status = 0;
    const char *framing = intake_dispatched(req, &status);
    if (framing != NULL) {
        r->close_connection = true;
        http_send_error(r, status, framing);
        return;
    }
    if (evhttp_request_get_command(req) == EVHTTP_REQ_CONNECT) {
        /* libevent keeps a CONNECT connection open whatever the answer
         * says (it expects a tunnel); as a GET it is closed as asked. */
        req->type = EVHTTP_REQ_GET;
        r->close_connection = true;
        http_add_header(r, "Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS");
        http_send_error(r, 405, "method CONNECT is not supported");
        return;
    }
    if (r->path[0] != '/') {
        http_send_error(r, 400, "the request target must be an absolute path");
        return;
    }
    if (metrics_listener && strcmp(r->path, "/metrics") != 0) {
        http_send_error(r, 404, "this address serves only /metrics");
        return;
    }
    route_request(r);
}

void http_dispatch(struct evhttp_request *req, void *arg)
{
    dispatch(req, arg, false);
}

void http_dispatch_metrics_listener(struct evhttp_request *req, void *arg)
{
    dispatch(req, arg, true);
}

/* ---- internal requests ---- */

struct http_internal {
    http_internal_cb cb;
    void *arg;
    struct event_base *base;
    struct evhttp_request *req; /* not connected: holds headers and bodies */
    int status;
    char *body; /* the captured answer (owned), or NULL */
};

static void internal_free(struct http_internal *in)
{
    evhttp_request_free(in->req);
    free(in->body);
    free(in);
}

static void internal_deliver(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct http_internal *in = arg;
    in->cb(in->arg, in->status, in->body, evhttp_request_get_output_headers(in->req));
    internal_free(in);
}

/* The answer of an internal request: kept, r released, cb scheduled. */
static void internal_capture(struct http_request *r, int status, const char *text, size_t len)
{
    struct http_internal *in = r->sink;
    in->status = status;
    if (text != NULL && (in->body = strndup(text, len)) == NULL)
        in->status = 500;
    release(r, status, len);
    if (event_base_once(in->base, -1, EV_TIMEOUT, internal_deliver, in, NULL) != 0)
        internal_deliver(-1, 0, in); /* cannot schedule: deliver now rather than never */
}

/* A request without a connection carrying origin's credential and body. */
static struct evhttp_request *internal_evrequest(const struct http_request *origin,
                                                 const char *body)
{
    struct evhttp_request *req = evhttp_request_new(NULL, NULL);
    if (req == NULL)
        return NULL;
    struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
    /* The caller's credential: its token, or the session cookie (the
     * origin request passed the Origin check, and carries no other header
     * here, so the inner one is not a cross-site request). */
    const char *auth = http_header(origin, "Authorization");
    const char *cookie = auth == NULL ? http_header(origin, "Cookie") : NULL;
    bool ok = auth == NULL || evhttp_add_header(headers, "Authorization", auth) == 0;
    if (ok && cookie != NULL)
        ok = evhttp_add_header(headers, "Cookie", cookie) == 0;
    if (ok && body != NULL)
        ok = evhttp_add_header(headers, "Content-Type", "application/json") == 0 &&
             evbuffer_add(evhttp_request_get_input_buffer(req), body, strlen(body)) == 0;
    if (!ok) {
        evhttp_request_free(req);
        return NULL;
    }
    return req;
}

int http_internal_request(const struct http_request *origin, unsigned method, const char *path,
                          const char *body, http_internal_cb cb, void *arg)
{
    size_t path_len = strlen(path);
    struct http_internal *in = calloc(1, sizeof *in);
    struct http_request *r = calloc(1, sizeof *r + path_len + 1);
    struct evhttp_request *req = internal_evrequest(origin, body);
    if (in == NULL || r == NULL || req == NULL) {
        if (req != NULL)
            evhttp_request_free(req);
        free(in);
        free(r);
        return -1;
    }
    *in = (struct http_internal){cb, arg, origin->server->base, req, 0, NULL};
    char *copy = (char *)(r + 1);
    memcpy(copy, path, path_len + 1);
    char *question = strchr(copy, '?');
    if (question != NULL) {
        *question = '\0';
        r->query = question + 1;
    }
    r->req = req;
    r->server = origin->server;
    r->path = copy;
    r->method = method;
    header_index_build(&r->headers, evhttp_request_get_input_headers(req));
    r->surface = envelope_surface_for_path(copy);
    r->sink = in;
    r->origin = origin;
    r->started_us = monotonic_us();
    origin->server->in_flight++;
    route_request(r);
    return 0;
}

/* ---- libevent's own error answers, made JSON ---- */

static bool headers_were_too_large(struct evhttp_request *req)
{
    if (bound_server == NULL)
        return false;
    size_t limit = (size_t)bound_server->cfg->max_header_bytes;
    if (req->headers_size > limit)
        return true;
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    if (evcon == NULL)
        return false;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    return bev != NULL && evbuffer_get_length(bufferevent_get_input(bev)) > limit;
}

/*
 * Replaces libevent's HTML error page. libevent frees the request URI
 * before it reports a malformed request or an oversized body, so the
 * surface comes from intake.c, which saw the request line; only when no
 * request line was ever seen is the body {message, status}, the /v1
 * envelope, which every client of the three surfaces can read.
 */
void evhttp_send_error(struct evhttp_request *req, int error, const char *reason)
{
    (void)reason;
    libevent_replacement_reached(REPLACEMENT_EVHTTP_SEND_ERROR);
    if (error == 413 && req->chunked && intake_chunk_size_malformed())
        error = 400;
    if (error == 400 && req->uri == NULL && intake_head_too_long(req) != 0)
        error = intake_head_too_long(req);
    else if (error == 400 && req->uri == NULL && headers_were_too_large(req))
        error = 431;
    if (req->major == 0) {
        req->major = 1;
        req->minor = 1;
    }
    int known = intake_surface(req);
    enum http_surface surface = req->uri != NULL ? envelope_surface_for_path(req->uri)
                                : known >= 0     ? (enum http_surface)known
                                                 : SURFACE_V1;
    const char *message = error == 400 && req->chunked ? "malformed chunked request body"
                          : error == 431               ? "request header fields too large"
                          : error == 414               ? "request line too long"
                          : error == 413               ? "request body too large"
                          : error == 400               ? "malformed HTTP request"
                                                       : envelope_reason_phrase(error);
    struct json_object *body;
    if (surface == SURFACE_OFREP)
        body = envelope_ofrep(error, NULL, "GENERAL", message);
    else if (surface == SURFACE_ROOT)
        body = envelope_problem(error, message, NULL, NULL);
    else
        body = envelope_v1(error, message, NULL);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_clear_headers(out);
    if (surface == SURFACE_OFREP || req->uri == NULL)
        add_cors_headers(req, evhttp_find_header(evhttp_request_get_input_headers(req), "Origin"),
                         bound_server ? bound_server->cfg : NULL);
    evhttp_add_header(out, "Content-Type",
                      surface == SURFACE_ROOT ? "application/problem+json" : "application/json");
    evhttp_add_header(out, "Connection", "close");
    struct evbuffer *buf = evbuffer_new();
    const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
    size_t bytes = strlen(text);
    if (buf != NULL)
        evbuffer_add(buf, text, bytes);
    evhttp_send_reply(req, error, envelope_reason_phrase(error), buf);
    if (buf != NULL)
        evbuffer_free(buf);
    json_object_put(body);
    if (bound_server != NULL && bound_server->metrics != NULL)
        metrics_count_request(bound_server->metrics, METRICS_CLASS_OTHER, error, bytes, 0);
}
