/*
 * internal.c - internal operations (see internal.h).
 *
 *  - PUT /me/deleted {deleted}: sets the caller's soft-delete mirror; a
 *    deleted user gets 401 everywhere except here (with a valid key), so
 *    the product can restore the account; their data stays, their
 *    browser sessions end (an undelete does not bring them back).
 *  - PUT /me/profile: optional strings avatarUrl, bio, company, location,
 *    name, pronouns, publicEmail, username, websiteUrl and the object
 *    socialLinks; a member that is absent stays, null clears it (name
 *    cannot be cleared). A username taken is 409, an invalid one 422.
 *  - POST /internal/sso/provision-member {org_id, role?}: adds the caller
 *    to the organization (id or slug) with role (default member); 404 for
 *    no such organization; already a member is a no-op.
 */
#include "accounts/internal.h"

#include <json-c/json.h>
#include <string.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "mgmt/mgmt.h"
#include "mgmt/validate.h"

/* $1 user, $2 deleted. Deleting ends the user's sessions in the same
 * statement, so an undelete revives none of them (doc/choices.md "Internal
 * operations, sessions, notifications"). */
static const char DELETED_SQL[] =
    "WITH u AS (UPDATE users SET deleted = $2::boolean,"
    "                  deleted_at = CASE WHEN $2::boolean THEN COALESCE(deleted_at, now()) END,"
    "                  updated_at = now()"
    "            WHERE id = $1 RETURNING id),"
    " gone AS (DELETE FROM sessions s USING u WHERE s.user_id = u.id AND $2::boolean)"
    " SELECT 200 AS status, '{\"ok\": true}' AS body, NULL::text AS message FROM u";

/* $1 user, $2 the validated body (jsonb). */
#define PROFILE_FIELD(column, member)                                                              \
    " " column " = CASE WHEN b ? '" member "' THEN b ->> '" member "' ELSE " column " END,"
static const char PROFILE_SQL[] =
    "WITH b AS (SELECT $2::jsonb AS b), u AS (UPDATE users SET"
    " name = COALESCE(b ->> 'name', name)," PROFILE_FIELD("username", "username") PROFILE_FIELD(
        "avatar_url", "avatarUrl") PROFILE_FIELD("bio", "bio") PROFILE_FIELD("company", "company")
        PROFILE_FIELD("location", "location") PROFILE_FIELD("pronouns", "pronouns")
            PROFILE_FIELD("public_email", "publicEmail")
                PROFILE_FIELD("website_url",
                              "websiteUrl") " social_links = CASE WHEN b ? 'socialLinks' THEN "
                                            "COALESCE(NULLIF(b -> 'socialLinks',"
                                            " 'null'::jsonb), '{}') ELSE social_links END,"
                                            " updated_at = now() FROM b WHERE id = $1 RETURNING id)"
                                            " SELECT 200 AS status, '{\"ok\": true}' AS body, "
                                            "NULL::text AS message FROM u";

/* clang-format off */
/* $1 caller, $2 org id or slug, $3 role, $4 audit actor (no organization).
 * Joining an organization one is already a member of is no event. */
#define PROVISIONED_ORG                                                                            \
    "(SELECT o.id FROM orgs o WHERE o.slug = $2 OR o.id::text = lower($2))"
static const char PROVISION_SQL[] = AUDIT_ANSWER_ORG(
    "SELECT * FROM ensign_acc_provision_member($1, $2, $3)", PROVISIONED_ORG, "'member.added'",
    "CASE WHEN NOT EXISTS (SELECT 1 FROM org_members m"
    "                       WHERE m.org_id = " PROVISIONED_ORG " AND m.user_id = $1::uuid)"
    " THEN ensign_audit_user_name($1::uuid) || ' joined as ' || $3 || ' by single sign-on' END",
    "'members/' || $1", "$4");
/* clang-format on */

/* ---- PUT /me/deleted ---- */

void internal_me_deleted(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    bool deleted = json_object_get_boolean(mgmt_body_member(body, "deleted"));
    const char *params[] = {ctx->who.user_id, deleted ? "true" : "false"};
    mgmt_query(r, DELETED_SQL, 2, params, mgmt_answer_cb, r);
    json_object_put(body);
}

/* ---- PUT /me/profile ---- */

void internal_me_profile(struct http_request *r, const struct mgmt_ctx *ctx)
{
    /* The row's schema checked the body: name 1 to 200 characters, username
     * 1 to 39 or null, the other texts at most 2000 or null, socialLinks an
     * object or null. */
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    const char *params[] = {ctx->who.user_id, json_object_to_json_string(body)};
    mgmt_query(r, PROFILE_SQL, 2, params, mgmt_answer_cb, r);
    json_object_put(body);
}

/* ---- POST /internal/sso/provision-member ---- */

void internal_provision_member(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    const char *org = mgmt_body_text(body, "org_id"), *role = mgmt_body_text(body, "role");
    char actor[AUDIT_ACTOR_JSON_MAX];
    audit_actor_init(actor, r, "", who, NULL);
    const char *params[] = {who->user_id, org, role ? role : "member", actor};
    mgmt_query(r, PROVISION_SQL, 4, params, mgmt_answer_cb, r);
    json_object_put(body);
}
