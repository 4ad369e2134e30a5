/*
 * schedules.h - scheduled changes of a flag's environment configuration:
 * POST, GET /v1/orgs/{org}/flags/{key}/schedules, DELETE .../{id} and
 * GET /v1/orgs/{org}/schedules (see schedules.c). Applying them is
 * schedule_apply.h's, in the scheduler process.
 */
#ifndef ENSIGN_SCHEDULES_H
#define ENSIGN_SCHEDULES_H

struct http_request;
struct mgmt_ctx;

/* The create row's load (router.h route_load): the flag and the body's environment. */
void schedules_create_load(struct http_request *r);
void schedules_create(struct http_request *r, const struct mgmt_ctx *ctx);
void schedules_list_flag(struct http_request *r, const struct mgmt_ctx *ctx);
void schedules_list_org(struct http_request *r, const struct mgmt_ctx *ctx);
void schedules_cancel(struct http_request *r, const struct mgmt_ctx *ctx);

/* Bounds of a schedule's at, from the time of the request. */
#define SCHEDULES_MIN_AHEAD_MS 10000LL
#define SCHEDULES_MAX_AHEAD_MS (366LL * 24 * 3600 * 1000)

/* Most schedules a list answers (soonest first). */
#define SCHEDULES_LIST_MAX 1000

#endif
