/*
 * intake.h - everything before a request reaches http_dispatch: accepting
 * connections, the request head's deadline, the framing checks.
 *
 * libevent 2.1's evhttp gives no hook between reading a request's head and
 * reading its body, nor a deadline for the whole head, nor a way to tag a
 * request before it is dispatched. intake.c takes them by interposing
 * libevent's own exported functions (evhttp_request_new/free and the head
 * parsers, which evhttp calls through the PLT; see intake.c), and keeps one
 * guard per live request (= per open connection) in a fixed pool sized by
 * max_connections_per_worker:
 *
 *  - the head and body must arrive within request_timeout_ms of the
 *    request's first byte, or the connection is closed;
 *  - framing that RFC 9112 section 6 makes unrecoverable (two different
 *    Content-Length values, a Transfer-Encoding other than chunked,
 *    Transfer-Encoding with Content-Length), a missing or repeated Host on
 *    HTTP/1.1, NUL bytes in the head, a field name that is not a token
 *    ("Content-Length : 5"), a bare CR in a field value, a
 *    Content-Length that is not 1*DIGIT ("+5") and a Host value with
 *    characters no host has ("a b") are answered 400 and closed, without
 *    reading a body that could smuggle a second request; a field value's
 *    leading HTAB is stripped as its leading spaces are;
 *  - the surface (/v1, /ofrep, the rest) is remembered from the request
 *    line, so the errors libevent raises itself answer the right body;
 *  - at max_connections_per_worker open connections the worker stops
 *    accepting (new clients wait in the kernel's queue) until one closes;
 *  - chunk-size lines are checked by RFC 9112 section 7.1: a chunk
 *    extension ("20;ext=1") is accepted, a malformed size ("0x2", "+2",
 *    " 2", "2<NUL>") is 400;
 *  - with the node's accept balance joined (accept_balance.h), the worker
 *    accepts only while it holds no more connections than the least
 *    loaded sibling that accepts;
 *  - accept() failing for want of descriptors (EMFILE, ENFILE) pauses
 *    accepting for INTAKE_ACCEPT_PAUSE_MS and is logged once per
 *    INTAKE_LOG_INTERVAL_S, instead of libevent's retry loop and log flood.
 *
 * One intake per process (a worker); started by worker.c after binding.
 */
#ifndef ENSIGN_INTAKE_H
#define ENSIGN_INTAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "http/envelope.h"

struct evhttp_request;
struct evkeyvalq;
struct evconnlistener;
struct http_server;
struct accept_balance;

#define INTAKE_ACCEPT_PAUSE_MS 100
#define INTAKE_LOG_INTERVAL_S 10
#define INTAKE_BALANCE_IDLE_CHECK_MS 25 /* re-check while accepting with connections open */
#define INTAKE_BALANCE_STARVE_MS 20     /* a connection waiting this long is taken anyway */

/* Starts guarding w's evhttp: a pool of max_connections guards. 0 or -1. */
int intake_start(struct http_server *w, size_t max_connections, int request_timeout_ms);

/* Stops guarding and frees the pool; after evhttp_free. */
void intake_end(void);

/* Adds a listening socket: its accept errors and pauses are handled here. */
void intake_add_listener(struct evconnlistener *listener);

/* Joins the accept balance as the given slot (after the listeners are
 * added): publishes this worker's open connections and from then on
 * accepts only while the balance rule allows it. Leaves it (the entry
 * says absent) in intake_forget_listeners and intake_end. */
void intake_balance_join(struct accept_balance *table, unsigned slot);

/* Forgets every listener (before the worker deletes them to drain). */
void intake_forget_listeners(void);

/* Called when req is dispatched: its deadline no longer applies. Returns
 * the framing error found in its head (and *status), or NULL. */
const char *intake_dispatched(struct evhttp_request *req, int *status);

/* 414 when req's request line, 431 when its headers outgrew
 * max_header_bytes; else 0. */
int intake_head_too_long(struct evhttp_request *req);

/* True when the last chunk-size line read was malformed (libevent then
 * reports a body too large; the answer is 400). */
bool intake_chunk_size_malformed(void);

/* The surface of req's request line, or -1 when it was never seen. */
int intake_surface(struct evhttp_request *req);

/* RFC 9110 section 5.6.2: name is 1*tchar. */
bool intake_token_ok(const char *name);

/* A Content-Length value: 1*DIGIT and nothing else (RFC 9110 section 8.6). */
bool intake_digits_ok(const char *value);

/* A Host value: uri-host [":" port] characters only, no white space. */
bool intake_host_ok(const char *value);

/* A chunk-size line of len bytes (RFC 9112 section 7.1): 1*HEXDIG, then
 * the end or optional white space and ";" with an extension free of
 * control characters; a NUL before len is malformed. */
bool intake_chunk_size_line_ok(const char *line, size_t len);

/*
 * The framing rules on a parsed head (pure): NULL when acceptable, else a
 * message and *status (400, or 505 for an HTTP major version other than 1).
 */
const char *intake_framing_check(const struct evkeyvalq *headers, int major, int minor,
                                 int *status);

#endif
