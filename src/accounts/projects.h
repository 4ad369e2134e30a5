/*
 * projects.h - projects of an organization: GET/POST
 * /orgs/{slug}/projects, GET/PATCH/DELETE /orgs/{slug}/projects/{project},
 * POST /orgs/{slug}/projects/{project}/restore, GET
 * /orgs/{slug}/deleted-projects. Route handlers (routes.c).
 */
#ifndef ENSIGN_PROJECTS_H
#define ENSIGN_PROJECTS_H

struct http_request;
struct mgmt_ctx;

void projects_list(struct http_request *r, const struct mgmt_ctx *ctx);
void projects_list_deleted(struct http_request *r, const struct mgmt_ctx *ctx);
void projects_create(struct http_request *r, const struct mgmt_ctx *ctx);
void projects_get(struct http_request *r, const struct mgmt_ctx *ctx);
void projects_update(struct http_request *r, const struct mgmt_ctx *ctx);
void projects_delete(struct http_request *r, const struct mgmt_ctx *ctx);
void projects_restore(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
