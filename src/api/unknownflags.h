/*
 * unknownflags.h - the flag keys SDKs asked for that name no flag:
 * GET /v1/orgs/{org}/unknown-flags.
 *
 * A route handler called by the worker's dispatch from the route table
 * (routes.c); the schema text describes its body in /openapi.json.
 */
#ifndef ENSIGN_UNKNOWNFLAGS_H
#define ENSIGN_UNKNOWNFLAGS_H

struct http_request;
struct mgmt_ctx;

/* GET /v1/orgs/{org}/unknown-flags[?environment=KEY]: 200 {flags: [{key,
 * environment, count, lastSeenAt}]}, most recently seen first; 404 when
 * environment names none of the organization's. */
void unknownflags_list(struct http_request *r, const struct mgmt_ctx *ctx);

extern const char unknownflags_list_schema[];

#endif
