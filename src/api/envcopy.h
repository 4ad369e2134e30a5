/*
 * envcopy.h - copy a flag's targeting from one environment to another:
 * POST /v1/orgs/{org}/flags/{key}/environments/{envKey}/copy (see
 * envcopy.c). An operation of the route table.
 */
#ifndef ENSIGN_ENVCOPY_H
#define ENSIGN_ENVCOPY_H

struct http_request;
struct mgmt_ctx;

/* The operation and its load (the flag context of flagctx.h). */
void envcopy_copy(struct http_request *r, const struct mgmt_ctx *ctx);
void envcopy_load(struct http_request *r);

#endif
