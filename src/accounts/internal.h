/*
 * internal.h - the operations marked internal (doc/api.md "Credentials"):
 * PUT /me/deleted, PUT /me/profile, POST /internal/sso/provision-member
 * (POST /invitations/{token}/accept is in invitations.c).
 *
 * Their rows' need (routes.c MGMT_INTERNAL) has the dispatcher (api/mgmt.c
 * mgmt_dispatch) check, in order: the access token (401, a deleted user's
 * token included), the Ensign-Internal-Key header (403), a personal token
 * (403 for an organization token), the management write rate limit (429);
 * then the operation answers, 404 for a missing target.
 */
#ifndef ENSIGN_INTERNAL_H
#define ENSIGN_INTERNAL_H

#include "db/auth.h"

struct http_request;
struct mgmt_ctx;

void internal_me_deleted(struct http_request *r, const struct mgmt_ctx *ctx);
void internal_me_profile(struct http_request *r, const struct mgmt_ctx *ctx);
void internal_provision_member(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
