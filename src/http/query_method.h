/*
 * query_method.h - the HTTP QUERY method (a safe GET with a body, used by
 * the list routes of the root API: /orgs, /me/tokens, ...) on libevent 2.1.
 *
 * libevent 2.1's evhttp knows a fixed set of methods: it passes any other
 * one through only as "unknown", without its name and without reading its
 * body (the body bytes are then parsed as the next request). So QUERY is
 * turned into what evhttp does handle, before evhttp sees it: every
 * connection's bufferevent gets a callback on its input buffer that, when a
 * read starts a new request whose line begins "QUERY ", rewrites that line
 * in place to "POST " and adds the header X-HTTP-Method-Override: QUERY.
 * http.c then dispatches a POST carrying that header as QUERY, so the
 * widely used method-override header works for clients that cannot send
 * QUERY too (it only ever selects QUERY, never another method).
 *
 * Limits: a QUERY whose request line is split over two reads, or that is
 * pipelined behind another request in the same read, is not rewritten and
 * gets libevent's 501 (as before); ordinary requests are untouched.
 *
 * Called by the worker (evhttp_set_bevcb) and http.c.
 */
#ifndef ENSIGN_QUERY_METHOD_H
#define ENSIGN_QUERY_METHOD_H

#include <stdbool.h>

struct bufferevent;
struct evbuffer;
struct event_base;

#define QUERY_METHOD_OVERRIDE_HEADER "X-HTTP-Method-Override"
#define QUERY_METHOD_MAX_SINGLE_WRITE (256 * 1024) /* bytes one write(2) may take */

/* evhttp_set_bevcb callback: a socket bufferevent with the rewrite on its
 * input buffer and writes of up to QUERY_METHOD_MAX_SINGLE_WRITE (arg
 * unused). */
struct bufferevent *query_method_bufferevent(struct event_base *base, void *arg);

/* Puts the rewrite on an input buffer (what query_method_bufferevent does
 * to its bufferevent's); 0, or -1 when out of memory. */
int query_method_watch(struct evbuffer *in);

/* True when a POST's X-HTTP-Method-Override header value names QUERY. */
bool query_method_override(const char *header_value);

#endif
