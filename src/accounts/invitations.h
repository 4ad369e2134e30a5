/*
 * invitations.h - invitations to an organization: GET/POST
 * /orgs/{slug}/invitations, DELETE /orgs/{slug}/invitations/{id},
 * GET /invitations/{token}, POST /invitations/{token}/accept (internal).
 * Route handlers (routes.c).
 */
#ifndef ENSIGN_INVITATIONS_H
#define ENSIGN_INVITATIONS_H

struct http_request;
struct mgmt_ctx;

void invitations_list(struct http_request *r, const struct mgmt_ctx *ctx);
void invitations_create(struct http_request *r, const struct mgmt_ctx *ctx);
void invitations_revoke(struct http_request *r, const struct mgmt_ctx *ctx);
void invitations_lookup(struct http_request *r, const struct mgmt_ctx *ctx);
void invitations_accept(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
