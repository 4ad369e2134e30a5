/*
 * account.h - the common path of the root API's routes that act on
 * the caller's own account rather than an organization: /me/tokens,
 * /notifications, GET/POST /orgs, /invitations/{token}.
 *
 * Authenticates the access token (auth.c), then checks, in this order:
 *   403  an organization token (it has no account) unless the operation
 *        allows one, or a scope the token lacks (write needs "write")
 *   429  the management write rate limit (writes only, per token)
 * and calls back with the identity. Answers every failure itself (401,
 * 403, 429, 503) and then never calls back.
 *
 * Also the house answers of the root API's write functions
 * (SELECT (ensign_acc_...(...)).* gives status, body, message; see
 * src/api/mgmt.h mgmt_answer).
 *
 * Called by tokens.c, notifications.c, orgs.c, invitations.c.
 */
#ifndef ENSIGN_ACCOUNT_H
#define ENSIGN_ACCOUNT_H

#include <stdbool.h>

#include "auth.h"

struct http_request;

typedef void (*account_cb)(struct http_request *r, const struct identity *who);

/* One operation: its scope (enum auth_scope bit), level, whether an
 * organization token may call it, and the callback. Static storage. */
struct account_op {
    unsigned scope;
    bool write;
    bool org_token_ok;
    account_cb cb;
};

void account_begin(struct http_request *r, const struct account_op *op);

/* Answers 403 for a token that may not create a token with these rights
 * (more than its own); returns false then. */
bool account_may_grant(struct http_request *r, const struct identity *who, bool full,
                       unsigned read_mask, unsigned write_mask);

#endif
