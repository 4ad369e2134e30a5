/*
 * audit_verify.h - GET /orgs/{slug}/audit/verify: the organization's audit
 * hash chain checked the way `ensignctl audit verify` checks it (the
 * checks are db/auditwalk.h's, shared): {ok, events, brokenAt, detail}.
 * Route handler, called by the dispatcher from the route table (routes.c)
 * once the caller is an admin with scope audit.
 */
#ifndef ENSIGN_AUDIT_VERIFY_H
#define ENSIGN_AUDIT_VERIFY_H

struct http_request;
struct mgmt_ctx;

void audit_verify(struct http_request *r, const struct mgmt_ctx *ctx);

/* OpenAPI schema of the answer. */
extern const char audit_verify_schema[];

#endif
