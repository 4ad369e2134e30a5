/*
 * me.h - the caller's own identity: GET /v1/me (the /v1 error envelope)
 * and GET /me (the root API, Problem errors).
 *
 * Their rows' need is MGMT_IDENTITY: the dispatcher (api/mgmt.c)
 * authenticates the access token or the session cookie; they read the
 * caller's user or organization in one more query.
 */
#ifndef ENSIGN_ME_H
#define ENSIGN_ME_H

struct http_request;
struct mgmt_ctx;

/* GET /v1/me: {kind: "user", via, user} or {kind: "organization", via, organization}. */
void me_v1_get(struct http_request *r, const struct mgmt_ctx *ctx);

/* GET /me: {user, orgs}. */
void me_root_get(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
