/*
 * me.h - the caller's own identity: GET /v1/me (the /v1 error envelope)
 * and GET /me (the root API, Problem errors).
 *
 * Both authenticate with an access token through auth.c and read the
 * caller's user or organization in one more query. Route handlers, called
 * by the worker's dispatch from the route table (routes.c).
 */
#ifndef ENSIGN_ME_H
#define ENSIGN_ME_H

struct http_request;

/* GET /v1/me: {kind: "user", via, user} or {kind: "organization", via, organization}. */
void me_v1_get(struct http_request *r);

/* GET /me: {user, orgs}. */
void me_root_get(struct http_request *r);

#endif
