/*
 * orgs.c - organizations of the root API.
 *
 * Owns:
 *  - GET /orgs: the caller's organizations in the Organization form with
 *    their role, ordered by slug (slugs never change), paginated, q on
 *    name and slug. An organization token lists its own organization
 *    (role admin). Scope orgs:read.
 *  - POST /orgs {name, slug?}: the slug is derived from the name when
 *    omitted (as a variant key is: doc/choices.md "Variants and keys"),
 *    must match the key pattern, 409 when taken; the creator becomes
 *    owner. Scope orgs:write; personal tokens only.
 *  - PATCH /orgs/{slug} {name}: owners only (orgs:write).
 *  - POST /orgs/{slug}/leave: any member; the last owner gets 409; the
 *    caller's project collaborations in the organization go too.
 * Bodies are checked by the dispatcher against the rows' schemas
 * (name 1 to 200 characters, slug the key pattern or null).
 */
#include "accounts/orgs.h"

#include <json-c/json.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"

static const char LIST_USER_SQL[] =
    PAGE_WITH_CURSOR("''") ", p AS (SELECT o.slug, ensign_org_form(o, m.role) AS item"
                           "  FROM org_members m JOIN orgs o ON o.id = m.org_id"
                           " WHERE m.user_id = $2::uuid"
                           "   AND ($3 = '' OR ensign_project_text(o.name, o.slug)"
                           "                   LIKE ensign_search_pattern($3))"
                           "   AND o.slug > " PAGE_KEY(
                               1) " ORDER BY o.slug LIMIT $5::int)" PAGE_SELECT("slug", "slug");

static const char LIST_ORG_TOKEN_SQL[] =
    PAGE_WITH_CURSOR("''") ", p AS (SELECT o.slug, ensign_org_form(o, 'admin') AS item"
                           "  FROM orgs o WHERE o.id = $2::uuid"
                           "   AND ($3 = '' OR ensign_project_text(o.name, o.slug)"
                           "                   LIKE ensign_search_pattern($3))"
                           "   AND o.slug > " PAGE_KEY(
                               1) " ORDER BY o.slug LIMIT $5::int)" PAGE_SELECT("slug", "slug");

/* clang-format off */
/* $1 creator, $2 name, $3 slug or NULL, $4 audit actor (no organization). */
static const char CREATE_SQL[] = AUDIT_ANSWER_ORG(
    "SELECT * FROM ensign_acc_org_create($1, $2, $3)", "(w.body::jsonb ->> 'id')::uuid",
    "'org.created'", "'Created the organization ' || (w.body::jsonb ->> 'slug')", "'settings'",
    "$4");

/* $1 org, $2 name, $3 caller role, $4 audit actor. */
static const char RENAME_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_org_rename($1, $2, $3)", "'org.renamed'",
    "(SELECT 'Renamed the organization from ' || o.name || ' to ' || $2 FROM orgs o"
    "  WHERE o.id = $1::uuid AND o.name <> $2)", "'settings'", "$4");

/* $1 org, $2 caller, $3 audit actor. */
static const char LEAVE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_org_leave($1, $2)", "'org.left'",
    "ensign_audit_user_name($2::uuid) || ' left the organization'", "'members/' || $2", "$3");
/* clang-format on */

/* ---- GET /orgs ---- */

void orgs_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    struct page_request page;
    if (!page_read(r, &page))
        return;
    if (who->kind == IDENTITY_ORG)
        page_run(r, LIST_ORG_TOKEN_SQL, who->org_id, &page, 0, NULL, "orgs");
    else
        page_run(r, LIST_USER_SQL, who->user_id, &page, 0, NULL, "orgs");
}

/* ---- POST /orgs ---- */

void orgs_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    char actor[AUDIT_ACTOR_JSON_MAX];
    audit_actor_init(actor, r, "", who, NULL);
    const char *params[] = {who->user_id, mgmt_body_text(body, "name"),
                            mgmt_body_text(body, "slug"), actor};
    mgmt_query(r, CREATE_SQL, 4, params, mgmt_answer_cb, r);
    json_object_put(body);
}

/* ---- PATCH /orgs/{slug} ---- */

void orgs_rename(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    const char *params[] = {ctx->org_id, mgmt_body_text(body, "name"), mgmt_role_name(ctx->role),
                            ctx->audit_actor};
    mgmt_query(r, RENAME_SQL, 4, params, mgmt_answer_cb, r);
    json_object_put(body);
}

/* ---- POST /orgs/{slug}/leave ---- */

void orgs_leave(struct http_request *r, const struct mgmt_ctx *ctx)
{
    if (ctx->who.kind == IDENTITY_ORG) {
        http_send_error(r, 403, "an organization token cannot leave its organization");
        return;
    }
    const char *params[] = {ctx->org_id, ctx->who.user_id, ctx->audit_actor};
    mgmt_query(r, LEAVE_SQL, 3, params, mgmt_answer_cb, r);
}
