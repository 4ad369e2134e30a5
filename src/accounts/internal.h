/*
 * internal.h - the operations marked internal (doc/api.md "Credentials"):
 * PUT /me/deleted, PUT /me/profile, POST /internal/sso/provision-member,
 * and the common path of every internal operation (POST
 * /invitations/{token}/accept is in invitations.c).
 *
 * internal_begin checks, in order: the access token (401, a deleted user's
 * token included), the Ensign-Internal-Key header (403), a personal token
 * (403 for an organization token); then the handler answers, 404 for a
 * missing target. Writes are rate limited like other management writes.
 */
#ifndef ENSIGN_INTERNAL_H
#define ENSIGN_INTERNAL_H

#include "auth.h"

struct http_request;

typedef void (*internal_cb)(struct http_request *r, const struct identity *who);

/* cb must be a function of static storage (it is). */
struct internal_op {
    internal_cb cb;
};

void internal_begin_op(struct http_request *r, const struct internal_op *op);

/* Declares the static operation of cb and begins it. */
#define internal_begin(r, cb)                                                                      \
    do {                                                                                           \
        static const struct internal_op internal_op_ = {cb};                                       \
        internal_begin_op(r, &internal_op_);                                                       \
    } while (0)

void internal_me_deleted(struct http_request *r);
void internal_me_profile(struct http_request *r);
void internal_provision_member(struct http_request *r);

#endif
