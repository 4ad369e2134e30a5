/*
 * org_members.c - who belongs to an organization, and with which role.
 *
 * Owns the member routes of the root API. Members are listed in
 * the member form {user_id, name, email, username, role, created_at},
 * oldest membership first, paginated; q matches name, email and username
 * (trigram index, sql/0003). Any member reads (members:read); admins add,
 * remove and change roles (members:write); only owners make or unmake
 * owners (403 otherwise); the last owner can be neither removed nor demoted
 * (409). The affected user gets a notification (org.member_added,
 * org.member_removed, org.role_changed) in the same transaction
 * (sql/0003 ensign_acc_member_*).
 */
#include "accounts/org_members.h"

#include <json-c/json.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "accounts/membership.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"
#include "mgmt/validate.h"

static const char LIST_SQL[] = PAGE_WITH_CURSOR(
    "'-infinity', " PAGE_ZERO_UUID) ", p AS (SELECT m.created_at, m.user_id, ensign_member_form(u, "
                                    "m.role, m.created_at) AS item"
                                    "  FROM org_members m JOIN users u ON u.id = m.user_id"
                                    "  WHERE m.org_id = $2::uuid AND NOT u.deleted"
                                    "    AND ($3 = '' OR ensign_person_text(u.name, u.email, "
                                    "u.username)"
                                    "                    LIKE ensign_search_pattern($3))"
                                    "    AND (m.created_at, m.user_id) > (" PAGE_KEY(
                                        1) "::timestamptz, " PAGE_KEY(2) "::uuid)"
                                                                         "  ORDER BY m.created_at, "
                                                                         "m.user_id LIMIT "
                                                                         "$5::int)" PAGE_SELECT(
                                                                             "created_at, user_id",
                                                                             "created_at::text, "
                                                                             "user_id::text");

/* clang-format off */
/* $1 org, $2 caller role, $3 login, $4 role, $5 audit actor. */
static const char ADD_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_member_add($1, $2, $3, $4)", "'member.added'",
    "'Added ' || (ensign_user_by_login($3)).name || ' as ' || $4",
    "'members/' || (ensign_user_by_login($3)).id", "$5");
/* $1 org, $2 caller role, $3 member, $4 audit actor. */
static const char REMOVE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_member_remove($1, $2, $3::uuid)", "'member.removed'",
    "'Removed ' || ensign_audit_user_name($3::uuid) || ' from the organization'",
    "'members/' || $3", "$4");
/* $1 org, $2 caller role, $3 member, $4 role, $5 audit actor. */
static const char ROLE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_member_role($1, $2, $3::uuid, $4)", "'member.role_changed'",
    "(SELECT 'Changed the role of ' || ensign_audit_user_name($3::uuid) || ' from ' || m.role"
    "        || ' to ' || $4 FROM org_members m"
    "  WHERE m.org_id = $1::uuid AND m.user_id = $3::uuid AND m.role <> $4)",
    "'members/' || $3", "$5");
/* clang-format on */

void org_members_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct page_request page;
    if (page_read(r, &page))
        page_run(r, LIST_SQL, ctx->org_id, &page, 0, NULL, "members");
}

/* The role of body (one of the organization roles, as the row's schema
 * checked), member when absent or null. */
static const char *optional_role(const struct json_object *body)
{
    const char *role = mgmt_body_text(body, "role");
    return role ? role : "member";
}

static const char *required_role(const struct json_object *body)
{
    return mgmt_body_text(body, "role");
}

void org_members_add(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const struct membership_write add = {
        .sql = ADD_SQL, .second = MEMBERSHIP_CALLER_ROLE, .login = true, .role = optional_role};
    membership_write(r, ctx, &add);
}

void org_members_remove(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const struct membership_write remove = {.sql = REMOVE_SQL,
                                                   .second = MEMBERSHIP_CALLER_ROLE,
                                                   .param = "userId",
                                                   .not_found =
                                                       "not a member of this organization"};
    membership_write(r, ctx, &remove);
}

void org_members_set_role(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const struct membership_write set_role = {.sql = ROLE_SQL,
                                                     .second = MEMBERSHIP_CALLER_ROLE,
                                                     .role = required_role,
                                                     .param = "userId",
                                                     .not_found =
                                                         "not a member of this organization"};
    membership_write(r, ctx, &set_role);
}
