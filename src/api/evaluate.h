/*
 * evaluate.h - POST /v1/orgs/{org}/environments/{envKey}/evaluate, the
 * dashboard's evaluation of an environment for a context (see
 * evaluate.c). An operation of the route table.
 */
#ifndef ENSIGN_EVALUATE_H
#define ENSIGN_EVALUATE_H

struct http_request;
struct mgmt_ctx;

void evaluate_environment(struct http_request *r, const struct mgmt_ctx *ctx);

/* The request and success schemas, for the route table. */
extern const char evaluate_request_schema[];
extern const char evaluate_response_schema[];

#endif
