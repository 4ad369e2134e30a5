/*
 * account.c - the grant check of the caller's own token creation (see
 * account.h).
 */
#include "accounts/account.h"

#include "http/http.h"

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
