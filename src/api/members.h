/*
 * members.h - the member list of /v1:
 * GET /v1/orgs/{org}/members.
 *
 * A route handler called by the worker's dispatch from the route table
 * (routes.c); the schema text describes its body in /openapi.json.
 */
#ifndef ENSIGN_MEMBERS_H
#define ENSIGN_MEMBERS_H

struct http_request;
struct mgmt_ctx;

/* GET /v1/orgs/{org}/members: 200 {members: [{userId, name, email, username, role}]}. */
void members_v1_list(struct http_request *r, const struct mgmt_ctx *ctx);

extern const char members_v1_list_schema[];

#endif
