/*
 * http.c - one request's life in a worker: dispatch from the route table,
 * reading the request, and every way of answering it.
 *
 * Invariants:
 *  - Every response carries a JSON content type (application/json, or
 *    application/problem+json for Problem bodies), except 204 preflight and
 *    304, which carry no body.
 *  - Each dispatched request is answered exactly once; the answer frees the
 *    struct http_request. worker->in_flight counts dispatched, unanswered
 *    requests, which is what a draining worker waits for.
 *  - /ofrep responses always carry the CORS headers (decisions.md section 8).
 *  - The answer is where each request is counted for /metrics (route
 *    class, status, bytes, time) and logged (the access log, when on):
 *    method, path without the query string, status, duration, bytes; never
 *    a header, so no credential reaches the log.
 *
 * libevent answers some malformed requests itself (bad request line,
 * oversized headers or body) with an HTML page from evhttp_send_error().
 * Ensign defines evhttp_send_error() (see the end of this file): libevent
 * calls it through its PLT, so the executable's definition takes its
 * place and those answers become JSON too. tests/e2e checks this.
 */
#include "http.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <stdatomic.h>
#include <sys/queue.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "server.h"

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
    return evhttp_find_header(evhttp_request_get_input_headers(r->req), name);
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
    size_t n = evbuffer_get_length(in);
    *len = n;
    if (n == 0)
        return NULL;
    /* NUL-terminate in place: the buffer is ours until the answer. */
    if (evbuffer_add(in, "", 1) != 0)
        return NULL;
    return (const char *)evbuffer_pullup(in, -1);
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
    struct json_tokener *tok = json_tokener_new_ex(HTTP_JSON_MAX_DEPTH);
    if (tok == NULL) {
        http_send_error(r, 500, "out of memory");
        return false;
    }
    struct json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    bool complete = err == json_tokener_success && end + strspn(text + end, " \t\r\n") == len;
    json_tokener_free(tok);
    if (!complete) {
        json_object_put(obj);
        if (r->surface == SURFACE_OFREP)
            http_send_eval_error(r, 400, NULL, "PARSE_ERROR", "request body is not valid JSON");
        else
            http_send_error(r, 400, "request body is not valid JSON");
        return false;
    }
    *out = obj;
    return true;
}

void http_client_address(const struct http_request *r, char *out, size_t outlen)
{
    char *host = NULL;
    ev_uint16_t port = 0;
    struct evhttp_connection *evcon = evhttp_request_get_connection(r->req);
    if (outlen == 0)
        return;
    out[0] = '\0';
    if (evcon == NULL)
        return;
    evhttp_connection_get_peer(evcon, &host, &port);
    if (host != NULL)
        snprintf(out, outlen, "%s", host);
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

static void add_cors_headers(struct evhttp_request *req, const struct config *cfg)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    const char *allowed = cfg != NULL ? cfg->cors_allow_origins : "*";
    const char *origin = evhttp_find_header(evhttp_request_get_input_headers(req), "Origin");
    if (strcmp(allowed, "*") == 0) {
        evhttp_add_header(out, "Access-Control-Allow-Origin", "*");
    } else if (origin != NULL) {
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
        evhttp_add_header(out, "Vary", "Origin");
    }
    evhttp_add_header(out, "Access-Control-Allow-Methods", "POST, OPTIONS");
    evhttp_add_header(out, "Access-Control-Allow-Headers",
                      "Authorization, Content-Type, If-None-Match, X-API-Key");
    evhttp_add_header(out, "Access-Control-Expose-Headers", "ETag, Retry-After");
    evhttp_add_header(out, "Access-Control-Max-Age", "86400");
}

static uint64_t monotonic_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
}

static void access_log(const struct http_request *r, int status, size_t bytes, uint64_t us)
{
    char path[512];
    log_event(LOG_LEVEL_INFO,
              "event=access method=%s path=%s status=%d duration_ms=%llu.%03llu bytes=%zu",
              router_method_name(r->method), log_value(path, sizeof path, r->path), status,
              (unsigned long long)(us / 1000), (unsigned long long)(us % 1000), bytes);
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
    if (w != NULL && w->cfg != NULL && w->cfg->access_log && log_enabled(LOG_LEVEL_INFO))
        access_log(r, status, bytes, us);
    r->answered = true;
    if (r->server != NULL && r->server->in_flight > 0)
        r->server->in_flight--;
    free(r);
}

/* Sends status and an optional body with the given content type; frees r. */
static void send_raw(struct http_request *r, int status, const char *content_type,
                     struct json_object *body)
{
    struct evhttp_request *req = r->req;
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    if (r->surface == SURFACE_OFREP)
        add_cors_headers(req, r->server ? r->server->cfg : NULL);
    if ((status == 429 || status == 503) && evhttp_find_header(out, "Retry-After") == NULL)
        evhttp_add_header(out, "Retry-After", "1");
    if (r->server != NULL && r->server->draining)
        evhttp_add_header(out, "Connection", "close");
    struct evbuffer *buf = NULL;
    size_t bytes = 0;
    if (body != NULL) {
        evhttp_add_header(out, "Content-Type", content_type);
        buf = evbuffer_new();
        const char *text = json_object_to_json_string_ext(
            body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        bytes = strlen(text);
        if (buf != NULL)
            evbuffer_add(buf, text, bytes);
        json_object_put(body);
    }
    evhttp_send_reply(req, status, envelope_reason_phrase(status), buf);
    if (buf != NULL)
        evbuffer_free(buf);
    release(r, status, bytes);
}

void http_send_json(struct http_request *r, int status, struct json_object *body)
{
    send_raw(r, status, "application/json", body);
}

void http_send_text(struct http_request *r, int status, const char *content_type, const char *text,
                    size_t len)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(r->req);
    if (r->surface == SURFACE_OFREP)
        add_cors_headers(r->req, r->server ? r->server->cfg : NULL);
    evhttp_add_header(out, "Content-Type", content_type);
    if (r->server != NULL && r->server->draining)
        evhttp_add_header(out, "Connection", "close");
    struct evbuffer *buf = evbuffer_new();
    if (buf != NULL)
        evbuffer_add(buf, text, len);
    evhttp_send_reply(r->req, status, envelope_reason_phrase(status), buf);
    if (buf != NULL)
        evbuffer_free(buf);
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

void http_send_method_not_allowed(struct http_request *r, unsigned methods)
{
    char allow[128];
    router_allow_header(methods, allow, sizeof allow);
    http_add_header(r, "Allow", allow);
    char message[192];
    snprintf(message, sizeof message, "method %s is not allowed here; allowed: %s",
             router_method_name(r->method), allow);
    http_send_error(r, 405, message);
}

void http_send_not_modified(struct http_request *r)
{
    send_raw(r, 304, NULL, NULL);
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
    switch (router_match(w->routes, w->route_count, r->method, r->path, &r->match)) {
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
    snprintf(message, sizeof message, "no such path: %.120s", r->path);
    if (r->surface == SURFACE_OFREP) /* not a flag: decisions.md section 8 */
        http_send_eval_error(r, 404, NULL, "GENERAL", message);
    else
        http_send_error(r, 404, message);
}

/* Splits the URI into path and query without allocating beyond r. */
static struct http_request *request_new(struct evhttp_request *req, struct http_server *w)
{
    const char *uri = evhttp_request_get_uri(req);
    size_t uri_len = strlen(uri);
    struct http_request *r = calloc(1, sizeof *r + uri_len + 1);
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
 * surface is usually unknown here: the body is then {message, status},
 * the /v1 envelope, which every client of the three surfaces can read.
 */
void evhttp_send_error(struct evhttp_request *req, int error, const char *reason)
{
    (void)reason;
    if (error == 400 && req->uri == NULL && headers_were_too_large(req))
        error = 431;
    if (req->major == 0) {
        req->major = 1;
        req->minor = 1;
    }
    enum http_surface surface =
        req->uri != NULL ? envelope_surface_for_path(req->uri) : SURFACE_V1;
    const char *message = error == 431   ? "request header fields too large"
                          : error == 413 ? "request body too large"
                          : error == 400 ? "malformed HTTP request"
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
        add_cors_headers(req, bound_server ? bound_server->cfg : NULL);
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
