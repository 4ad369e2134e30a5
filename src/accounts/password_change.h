/*
 * password_change.h - PUT /v1/session/password {current, new}: the
 * signed-in user changes their password (doc/choices.md "Internal
 * operations, sessions, notifications"). Route
 * handler (routes.c).
 */
#ifndef ENSIGN_PASSWORD_CHANGE_H
#define ENSIGN_PASSWORD_CHANGE_H

struct http_request;

void password_change_put(struct http_request *r);

#endif
