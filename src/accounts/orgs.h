/*
 * orgs.h - organizations: GET/POST /orgs, PATCH /orgs/{slug},
 * POST /orgs/{slug}/leave. Route handlers (routes.c).
 */
#ifndef ENSIGN_ORGS_H
#define ENSIGN_ORGS_H

struct http_request;
struct mgmt_ctx;

void orgs_list(struct http_request *r, const struct mgmt_ctx *ctx);
void orgs_create(struct http_request *r, const struct mgmt_ctx *ctx);
void orgs_rename(struct http_request *r, const struct mgmt_ctx *ctx);
void orgs_leave(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
