/*
 * http.h - one request's life in a worker: reading it, answering it.
 *
 * Owns struct http_request (the parsed method, path, query, surface and
 * route parameters of one evhttp request) and every way of answering:
 * JSON bodies, the surface's error body, 405 with Allow, CORS headers on
 * /ofrep. Every response is JSON with a JSON content type, except the
 * dashboard's files (http_send_static) and /metrics (http_send_text). A handler must
 * answer exactly once, now or later (after an asynchronous query); the
 * answer releases the http_request. If the client went away meanwhile,
 * the answer is dropped quietly. An internal request (http_internal_request)
 * has no client: the same handlers answer it through the same functions,
 * and its answer goes to a callback instead of a socket.
 */
#ifndef ENSIGN_HTTP_H
#define ENSIGN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "http/envelope.h"
#include "http/header_index.h"
#include "http/json_guard.h"
#include "http/router.h"

struct evhttp_request;
struct http_server;
struct http_internal; /* an internal request's sink (http_internal_request) */

struct http_request {
    struct evhttp_request *req;
    struct http_server *server;
    unsigned method; /* enum http_method */
    enum http_surface surface;
    const char *path;  /* path part of the URI, still percent-encoded */
    const char *query; /* query string or NULL */
    struct route_match match;
    bool answered;
    bool on_metrics_listener;    /* arrived on metrics_listen's socket */
    uint64_t started_us;         /* CLOCK_MONOTONIC at dispatch */
    bool close_connection;       /* the answer carries Connection: close */
    bool body_terminated;        /* http_body added its NUL (once) */
    size_t body_len;             /* the body's length without that NUL */
    size_t room;                 /* bytes allocated after the struct (http.c) */
    struct header_index headers; /* the often-asked headers (http_header) */
    /* Internal requests only (NULL otherwise): where the answer goes
     * instead of a socket, and the request it runs on behalf of. */
    struct http_internal *sink;
    const struct http_request *origin;
};

/* Route parameter value (decoded), or NULL. */
const char *http_param(const struct http_request *r, const char *name);

/* Request header value or NULL (case-insensitive name). */
const char *http_header(const struct http_request *r, const char *name);

/* Whether a proxy in front says the client spoke https
 * (X-Forwarded-Proto: https, alone or first in a list). */
bool http_forwarded_https(const struct http_request *r);

/* Decoded value of query parameter name, copied into out; false if absent. */
bool http_query_param(const struct http_request *r, const char *name, char *out, size_t outlen);

/*
 * The request body as a NUL-terminated string (pointer valid until the
 * answer), or NULL when there is no body. len receives its length.
 */
const char *http_body(struct http_request *r, size_t *len);

/*
 * Parses the body as JSON. Returns the object (caller owns) or NULL after
 * answering 400 itself (unparseable body, or JSON nesting deeper than
 * HTTP_JSON_MAX_DEPTH). An empty body answers 400 too unless allow_empty,
 * in which case *out is NULL and true is returned.
 */
#define HTTP_JSON_MAX_DEPTH 64
bool http_parse_json_body(struct http_request *r, bool allow_empty, struct json_object **out);

/*
 * The parse under http_parse_json_body, answering nothing: len bytes of
 * text as one strict JSON value, with json_guard.h's checks and nesting at
 * most HTTP_JSON_MAX_DEPTH. HTTP_JSON_OK with *out (caller owns); else
 * *out is NULL and *verdict the guard's verdict (JSON_GUARD_OK when json-c
 * itself refused the text: a syntax error or nesting too deep). SYNTAX:
 * not JSON; CONTENT: JSON that no field may hold (json_guard_message).
 * For handlers that answer in another envelope (the MCP endpoint).
 */
enum http_json_status { HTTP_JSON_OK, HTTP_JSON_SYNTAX, HTTP_JSON_CONTENT, HTTP_JSON_NO_MEMORY };
enum http_json_status http_json_parse(const char *text, size_t len, struct json_object **out,
                                      enum json_guard_verdict *verdict);

/*
 * The client's address as text (IPv4 dotted or IPv6 without brackets),
 * copied into out; "" when unknown. Today the TCP peer; rate limits and
 * the audit log take the client address from here only, so a trusted
 * proxy's X-Forwarded-For is honoured in one place.
 */
void http_client_address(const struct http_request *r, char *out, size_t outlen);

/* The bearer credential of the Authorization header (scheme case-insensitive), or NULL. */
const char *http_bearer(const struct http_request *r);

/* Adds a response header. */
void http_add_header(struct http_request *r, const char *name, const char *value);

/* Adds len bytes of complete header lines, written once beforehand, as one
 * header (http/head_format.h head_format_attach_block): send the answer
 * before attaching another. lines must outlive the answer's send. */
void http_add_header_block(struct http_request *r, const char *lines, size_t len);

/* Answers status with body (ownership of body passes; NULL sends no body). */
void http_send_json(struct http_request *r, int status, struct json_object *body);

/* Answers status with an already serialized JSON text (copied). */
void http_send_json_text(struct http_request *r, int status, const char *json_text);

/* Sends the JSON body written into a (answer.h) without copying it;
 * closes a. The caller checks a->failed first. */
struct http_answer;
void http_send_answer(struct http_request *r, int status, struct http_answer *a);

/* Answers with the surface's error body. For /ofrep, errorCode GENERAL
 * (AUTHENTICATION_ERROR for 401); FLAG_NOT_FOUND is the OFREP handlers' own. */
void http_send_error(struct http_request *r, int status, const char *message);

/* 422 with per-field messages; ownership of errors passes. */
void http_send_validation_error(struct http_request *r, const char *message,
                                struct json_object *errors);

/* /ofrep error body with an explicit code; key may be NULL. */
void http_send_eval_error(struct http_request *r, int status, const char *key,
                          const char *error_code, const char *details);

/* Answers status with a text body of length len (copied), e.g. /metrics. */
void http_send_text(struct http_request *r, int status, const char *content_type, const char *text,
                    size_t len);

/* Answers status with body (len bytes) by reference, not copied: body must
 * outlive the worker's loop (the dashboard's files, ui_files.h). */
void http_send_static(struct http_request *r, int status, const char *content_type,
                      const void *body, size_t len);

/* Answers status with no body (a redirect, with its Location added first). */
void http_send_empty(struct http_request *r, int status);

/* 405 with an Allow header listing methods. */
void http_send_method_not_allowed(struct http_request *r, unsigned methods);

/* 304 with no body. */
void http_send_not_modified(struct http_request *r);

/*
 * Starts a 200 answer whose body follows in chunks (an event stream): the
 * headers (content_type, no caching, Connection: close, and CORS on
 * /ofrep) go out now, r is released and no longer counts as in flight (a
 * draining worker does not wait for it), and the caller owns the returned
 * libevent request until evhttp_send_reply_end() or the connection's end.
 */
struct evhttp_request *http_start_stream(struct http_request *r, const char *content_type);

/* true once an answer was sent (or the client is gone). */
bool http_answered(const struct http_request *r);

/*
 * Internal dispatch: runs (method, path, body) through the same router and
 * handler as a request from the network, on behalf of origin (whose
 * Authorization header it carries, and whose client address it reports),
 * and captures the answer instead of writing it to a socket. cb runs
 * exactly once, always from the event loop, never inside this call, with
 * the status, the body text (NULL when there was none; valid during the
 * call) and the answer's headers (RateLimit-*, Retry-After, ...). path may
 * carry a query ("/v1/orgs/a/flags?stale=true"), percent-encoded. origin
 * must stay unanswered until cb ran. body may be NULL. Returns 0, or -1
 * (out of memory; cb never runs).
 */
struct evkeyvalq;
typedef void (*http_internal_cb)(void *arg, int status, const char *body,
                                 const struct evkeyvalq *headers);
int http_internal_request(const struct http_request *origin, unsigned method, const char *path,
                          const char *body, http_internal_cb cb, void *arg);

/* The evhttp generic callback: arg is the struct http_server. */
void http_dispatch(struct evhttp_request *req, void *arg);

/*
 * The evhttp callback of the metrics_listen socket: serves GET /metrics
 * (through the route table, so it is counted and logged like any other
 * request) and 404 for every other path.
 */
void http_dispatch_metrics_listener(struct evhttp_request *req, void *arg);

/* Tells the HTTP layer which server this process runs (for limits used
 * when libevent itself rejects a request). */
void http_bind_server(struct http_server *w);

#endif
