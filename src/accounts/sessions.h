/*
 * sessions.h - browser sessions: POST /v1/session (log in with email and
 * password) and DELETE /v1/session (log out). Route handlers (routes.c).
 */
#ifndef ENSIGN_SESSIONS_H
#define ENSIGN_SESSIONS_H

struct http_request;

void sessions_login(struct http_request *r);
void sessions_logout(struct http_request *r);

#endif
