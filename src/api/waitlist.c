/*
 * waitlist.c - the public waitlist intake: POST /v1/waitlist.
 *
 * POST /v1/waitlist in doc/api.md: no credential; {email} of 3 to 320 characters in email
 * syntax (the row's request schema, checked with mgmt_checked_body: format
 * email is validate_email_ok, PCRE2), else 422 with field errors; an
 * address already on the list (compared case-insensitively, the unique
 * index on lower(email)) is a no-op success; {accepted: true} once stored
 * or already there, {accepted: false} only while the configuration says
 * `waitlist = closed`.
 *
 * Invariants: every submission takes one request from the client
 * address's waitlist budget before anything else is looked at, so rejected
 * submissions count too (429 in the /v1 envelope with
 * Retry-After). The address comes from http_client_address (trusted
 * proxies). One statement per stored submission.
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/waitlist.h"

#include <json-c/json.h>
#include <string.h>

#include "base/config.h"
#include "http/http.h"
#include "mgmt/mgmt.h"
#include "eval/ratelimit.h"
#include "http/server.h"

/* $1 email. A repeat (any case) changes nothing. */
static const char INSERT_SQL[] =
    "WITH stored AS (INSERT INTO waitlist (email) VALUES ($1)"
    " ON CONFLICT ((lower(email))) DO NOTHING RETURNING 1)"
    " SELECT 200 AS status, '{\"accepted\":true}' AS body, NULL::text AS message";

const char waitlist_request_schema[] =
    "{\"type\":\"object\",\"required\":[\"email\"],\"additionalProperties\":false,"
    "\"properties\":{\"email\":{\"type\":\"string\",\"minLength\":3,\"maxLength\":320,"
    "\"format\":\"email\"}}}";

const char waitlist_response_schema[] = "{\"type\":\"object\",\"required\":[\"accepted\"],"
                                        "\"properties\":{\"accepted\":{\"type\":\"boolean\"}}}";

void waitlist_submit(struct http_request *r)
{
    if (!ratelimit_check_address(r, RATELIMIT_WAITLIST))
        return;
    /* The row's schema is the check: an email of 3 to 320 characters. */
    struct json_object *body = mgmt_checked_body(r, waitlist_request_schema);
    if (body == NULL)
        return;
    const char *email = mgmt_body_text(body, "email");
    if (!r->server->cfg->waitlist_open) {
        http_send_json_text(r, 200, "{\"accepted\":false}");
    } else {
        const char *params[] = {email};
        mgmt_query(r, INSERT_SQL, 1, params, mgmt_answer_cb, r);
    }
    json_object_put(body);
}
