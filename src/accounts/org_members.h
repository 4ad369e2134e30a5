/*
 * org_members.h - members of an organization (the root API):
 * GET/POST /orgs/{slug}/members, DELETE /orgs/{slug}/members/{userId},
 * PUT /orgs/{slug}/members/{userId}/role. Route handlers (routes.c).
 */
#ifndef ENSIGN_ORG_MEMBERS_H
#define ENSIGN_ORG_MEMBERS_H

struct http_request;
struct mgmt_ctx;

void org_members_list(struct http_request *r, const struct mgmt_ctx *ctx);
void org_members_add(struct http_request *r, const struct mgmt_ctx *ctx);
void org_members_remove(struct http_request *r, const struct mgmt_ctx *ctx);
void org_members_set_role(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
