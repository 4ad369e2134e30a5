/*
 * flagrevisions.c - a flag's whole history, newest first, page by page:
 * GET /v1/orgs/{org}/flags/{key}/revisions.
 *
 * The flag detail shows the newest 20 revisions only (sql/0011); this
 * list reaches all of them. Items are the detail's revision form
 * (ensign_revision_json of sql/0002: id, action, summary, changes,
 * userName, createdAt), in the detail's order (createdAt, then id,
 * newest first), so its first page of 20 is the detail's revisions.
 * Pagination is the root API's (pagination.h: limit 1 to 100,
 * default 30, an opaque keyset cursor, the next page in a Link header),
 * q searches action, summary, change lines and user name
 * (case-insensitive). The cursor is bound to the organization and to the
 * flag's id: a flag deleted and created again under the same key does not
 * take the old flag's cursors.
 *
 * Two round trips: the access token, the organization and the flag's id
 * in one (the row's load, in the dispatcher's statement; 404 when there
 * is no such flag), then the page. Authorization: the row's need (any
 * role, scope flags:read).
 *
 * Called by the dispatcher (mgmt_dispatch) from the route table (routes.c).
 */
#include "api/flagrevisions.h"

#include <stdio.h>
#include <stdlib.h>

#include "http/http.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"

/* clang-format off */

/* The row's load statement (mgmt_dispatch_row), $3 the flag key: the flag's id as the first
 * extra column (NULL when the organization has no such flag). */
static const char FLAG_SQL[] = MGMT_AUTH_ORG_SQL(
    ", fl.id::text",
    " LEFT JOIN LATERAL (SELECT f.id FROM flags f"
    "                     WHERE f.org_id = org.id AND f.key = $3) AS fl ON true");

/* The page statement (pagination.h: $1 to $5), $6 the flag's id. */
static const char LIST_SQL[] =
    PAGE_WITH_CURSOR("'infinity', 'ffffffff-ffff-ffff-ffff-ffffffffffff'") ","
    " p AS (SELECT r.created_at, r.id, ensign_revision_json(r) AS item"
    "         FROM revisions r"
    "        WHERE r.flag_id = $6::uuid"
    "          AND ($3 = '' OR lower(r.action || ' ' || COALESCE(r.summary, '') || ' '"
    "                                || array_to_string(r.changes, ' ') || ' '"
    "                                || COALESCE(r.user_name, ''))"
    "                          LIKE ensign_search_pattern($3))"
    "          AND (r.created_at, r.id) < (" PAGE_KEY(1) "::timestamptz, " PAGE_KEY(2) "::uuid)"
    "        ORDER BY r.created_at DESC, r.id DESC LIMIT $5::int)"
    PAGE_SELECT("created_at DESC, id DESC", "created_at::text, id::text");

/* clang-format on */

void flags_revisions(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const PGresult *res = ctx->row;
    if (PQgetisnull(res, 0, MGMT_ROW_FIRST)) {
        http_send_error(r, 404, "flag not found");
        return;
    }
    struct page_request *page = malloc(sizeof *page);
    if (page == NULL) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    if (page_read(r, page)) {
        const char *flag_id = PQgetvalue(res, 0, MGMT_ROW_FIRST);
        char scope[2 * AUTH_UUID_LEN + 2];
        snprintf(scope, sizeof scope, "%s/%s", ctx->org_id, flag_id);
        const char *extra[] = {flag_id};
        page_run(r, LIST_SQL, scope, page, 1, extra, "revisions");
    }
    free(page);
}

void flags_revisions_load(struct http_request *r)
{
    const char *extra[] = {mgmt_param(r, "key")};
    mgmt_dispatch_row(r, FLAG_SQL, 1, extra);
}
