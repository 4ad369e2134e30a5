/*
 * envusage.h - the daily evaluation counts of every flag of one
 * environment over the last seven days:
 * GET /v1/orgs/{org}/environments/{envKey}/usage.
 *
 * A route handler called by the worker's dispatch from the route table
 * (routes.c); the schema text describes its body in /openapi.json.
 */
#ifndef ENSIGN_ENVUSAGE_H
#define ENSIGN_ENVUSAGE_H

struct http_request;
struct mgmt_ctx;

/* 200 {environment, days: [7 UTC dates, oldest first], flags: [{key,
 * series: [7 counts]}]} (flags counted in those days only, by key); 404
 * when envKey names none of the organization's environments. */
void envusage_week(struct http_request *r, const struct mgmt_ctx *ctx);

extern const char envusage_week_schema[];

#endif
