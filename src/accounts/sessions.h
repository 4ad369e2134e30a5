/*
 * sessions.h - browser sessions: POST /v1/session (log in with email and
 * password) and DELETE /v1/session (log out). Route handlers (routes.c);
 * the two helpers below are shared with password_change.c.
 */
#ifndef ENSIGN_SESSIONS_H
#define ENSIGN_SESSIONS_H

#include <stdbool.h>

struct http_request;

void sessions_login(struct http_request *r);
void sessions_logout(struct http_request *r);

/* True when r's Content-Type is application/json (parameters allowed);
 * false after answering 415. */
bool sessions_json_body(struct http_request *r);

/* 503 with Retry-After: the worker's password checks are all taken. */
void sessions_send_busy(struct http_request *r);

#endif
