/*
 * notifications.c - per-user notifications (doc/choices.md "Internal
 * operations, sessions, notifications").
 *
 * Notifications are written by the events that concern a user, in the
 * same transaction as the event (sql/0003: added to an organization, role
 * changed, removed, invited then joined, added to a project). Here they are
 * read: the list {notifications: [{id, kind, title, body, read_at,
 * created_at}]}, newest first, paginated (limit as everywhere, q on title
 * and body); the unread count {count}; marking one read (404 for another
 * user's or an unknown id; marking it again is a no-op) and all read. Only
 * the caller's own are ever visible. Scope notifications (read to list and
 * count, write to mark).
 */
#include "accounts/notifications.h"

#include "http/http.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"

static const char LIST_SQL[] = PAGE_WITH_CURSOR(
    "'infinity', 'ffffffff-ffff-ffff-ffff-ffffffffffff'") ", p AS (SELECT n.created_at, n.id, "
                                                          "ensign_notification_form(n) AS item "
                                                          "FROM notifications n"
                                                          "  WHERE n.user_id = $2::uuid"
                                                          "    AND ($3 = '' OR lower(n.title || ' "
                                                          "' || COALESCE(n.body, ''))"
                                                          "                    LIKE "
                                                          "ensign_search_pattern($3))"
                                                          "    AND (n.created_at, n.id) < "
                                                          "(" PAGE_KEY(1) "::timestamptz,"
                                                                          " " PAGE_KEY(
                                                                              2) "::uuid)"
                                                                                 "  ORDER BY "
                                                                                 "n.created_at "
                                                                                 "DESC, n.id DESC "
                                                                                 "LIMIT "
                                                                                 "$5::"
                                                                                 "int)" PAGE_SELECT(
                                                                                     "created_at "
                                                                                     "DESC, id "
                                                                                     "DESC",
                                                                                     "created_at::"
                                                                                     "text, "
                                                                                     "id::text");

static const char COUNT_SQL[] =
    "SELECT 200 AS status, json_build_object('count', count(*))::text AS body,"
    " NULL::text AS message FROM notifications WHERE user_id = $1 AND read_at IS NULL";

/* $1 user, $2 notification. */
static const char READ_ONE_SQL[] =
    "WITH n AS (UPDATE notifications SET read_at = COALESCE(read_at, now())"
    "            WHERE user_id = $1 AND id = $2::uuid RETURNING id)"
    " SELECT 200 AS status, '{\"ok\": true}' AS body, NULL::text AS message FROM n";

static const char READ_ALL_SQL[] =
    "WITH n AS (UPDATE notifications SET read_at = now()"
    "            WHERE user_id = $1 AND read_at IS NULL RETURNING 1)"
    " SELECT 200 AS status, '{\"ok\": true}' AS body, NULL::text AS message"
    "   FROM (SELECT count(*) FROM n) AS done";

void notifications_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    struct page_request page;
    if (page_read(r, &page))
        page_run(r, LIST_SQL, who->user_id, &page, 0, NULL, "notifications");
}

void notifications_unread_count(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    const char *params[] = {who->user_id};
    mgmt_query(r, COUNT_SQL, 1, params, mgmt_answer_cb, r);
}

void notifications_read_one(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    const char *id = mgmt_uuid_param(r, "id", "no such notification");
    if (id == NULL)
        return;
    const char *params[] = {who->user_id, id};
    mgmt_query(r, READ_ONE_SQL, 2, params, mgmt_answer_cb, r);
}

void notifications_read_all(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    const char *params[] = {who->user_id};
    mgmt_query(r, READ_ALL_SQL, 1, params, mgmt_answer_cb, r);
}
