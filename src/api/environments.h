/*
 * environments.h - GET /v1/orgs/{org}/environments and PATCH
 * /v1/orgs/{org}/flags/{key}/environments/{envKey} (see environments.c).
 */
#ifndef ENSIGN_ENVIRONMENTS_H
#define ENSIGN_ENVIRONMENTS_H

struct http_request;
struct mgmt_ctx;

void environments_list(struct http_request *r, const struct mgmt_ctx *ctx);
void environments_configure(struct http_request *r, const struct mgmt_ctx *ctx);

/* The configure row's load (router.h route_load): the flag and environment. */
void environments_configure_load(struct http_request *r);

#endif
