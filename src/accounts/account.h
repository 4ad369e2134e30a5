/*
 * account.h - what the caller's own routes (/me/tokens, /notifications,
 * GET/POST /orgs, /invitations/{token}) share beyond their rows: the
 * grant check of token creation. Their credential, the organization token
 * check, their scope and the rate limit are their rows' (routes.c
 * MGMT_OWN, enforced by api/mgmt.c mgmt_dispatch).
 *
 * Called by tokens.c.
 */
#ifndef ENSIGN_ACCOUNT_H
#define ENSIGN_ACCOUNT_H

#include <stdbool.h>

#include "db/auth.h"

struct http_request;

/* Answers 403 for a token that may not create a token with these rights
 * (more than its own); returns false then. */
bool account_may_grant(struct http_request *r, const struct identity *who, bool full,
                       unsigned read_mask, unsigned write_mask);

#endif
