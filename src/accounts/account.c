/*
 * account.c - the common path of the caller's own routes (see account.h).
 *
 * Invariants: a callback runs only after authentication, the organization
 * token check, the scope check and (for writes) the rate limit passed; the
 * operation table entries are static, so a failed authentication (which
 * never calls back) leaks nothing.
 */
#include "account.h"

#include <string.h>

#include "http.h"
#include "ratelimit.h"

static void on_identity(struct http_request *r, const struct identity *who, void *arg)
{
    const struct account_op *op = arg;
    if (who->kind == IDENTITY_ORG && !op->org_token_ok) {
        http_send_error(r, 403, "an organization token has no account: use a personal token");
        return;
    }
    if (!auth_scope_allows(who, op->scope, op->write)) {
        http_send_error(r, 403,
                        op->write ? "the token's scopes do not allow this write"
                                  : "the token's scopes do not allow this read");
        return;
    }
    if (op->write &&
        !ratelimit_check(r, RATELIMIT_MANAGEMENT, who->token_id, strlen(who->token_id)))
        return;
    op->cb(r, who);
}

void account_begin(struct http_request *r, const struct account_op *op)
{
    auth_access_token(r, on_identity, (void *)op);
}

bool account_may_grant(struct http_request *r, const struct identity *who, bool full,
                       unsigned read_mask, unsigned write_mask)
{
    if (who->full_access)
        return true;
    if (full || (read_mask & ~who->read_mask) != 0 || (write_mask & ~who->write_mask) != 0) {
        http_send_error(r, 403, "a token cannot create a token with more rights than its own");
        return false;
    }
    return true;
}
