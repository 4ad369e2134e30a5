/*
 * password_change.h - PUT /v1/session/password {current, new}: the
 * signed-in user changes their password (doc/choices.md "Internal
 * operations, sessions, notifications"). The operation of a dispatched
 * row (routes.c, MGMT_IDENTITY_WRITE): the dispatcher authenticated the
 * caller and checked the body against schema_acc_password_change.
 */
#ifndef ENSIGN_PASSWORD_CHANGE_H
#define ENSIGN_PASSWORD_CHANGE_H

struct http_request;
struct mgmt_ctx;

void password_change_put(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
