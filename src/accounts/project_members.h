/*
 * project_members.h - project collaborators and owners:
 * GET/POST /orgs/{slug}/projects/{project}/members,
 * DELETE .../members/{userId}, PUT .../members/{userId}/role,
 * GET .../owners. Route handlers (routes.c).
 */
#ifndef ENSIGN_PROJECT_MEMBERS_H
#define ENSIGN_PROJECT_MEMBERS_H

struct http_request;
struct mgmt_ctx;

void project_members_list(struct http_request *r, const struct mgmt_ctx *ctx);
void project_members_add(struct http_request *r, const struct mgmt_ctx *ctx);
void project_members_remove(struct http_request *r, const struct mgmt_ctx *ctx);
void project_members_set_role(struct http_request *r, const struct mgmt_ctx *ctx);
void project_owners_list(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
