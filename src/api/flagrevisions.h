/*
 * flagrevisions.h - a flag's whole history: GET
 * /v1/orgs/{org}/flags/{key}/revisions (see flagrevisions.c). An
 * operation of the route table.
 */
#ifndef ENSIGN_FLAGREVISIONS_H
#define ENSIGN_FLAGREVISIONS_H

struct http_request;
struct mgmt_ctx;

/* GET /flags/{key}/revisions; its load (router.h route_load) asks the
 * flag's id in the dispatcher's round trip. */
void flags_revisions(struct http_request *r, const struct mgmt_ctx *ctx);
void flags_revisions_load(struct http_request *r);

#endif
