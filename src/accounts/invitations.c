/*
 * invitations.c - inviting people to an organization by email or username.
 *
 * Owns the invitation routes. POST {login, role?} (admins, members:write):
 * when login is the email or username of an existing user, that user is
 * added at once ({status: "added", user_id, email, org_name}); otherwise
 * login must be an email and a pending invitation is made ({status:
 * "invited", email, org_name, invitation, token}) with a single-use token
 * (svc_inv_ + 43 base62) that is stored only as its SHA-256 digest and
 * shown only in this answer. Invitations expire after 7 days; statuses are
 * pending, accepted, revoked and expired (pending past expires_at). The
 * invitation role is admin, member or viewer (owner is a 422).
 *
 * GET /invitations/{token} shows the invitation to whoever holds the token
 * (any authenticated user); POST .../accept (an internal operation)
 * adds the caller when their email is the invitation's (403 otherwise); a
 * used, revoked or expired invitation is 404. The list (admins,
 * members:read) is paginated, q on the email.
 */
#include "accounts/invitations.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "accounts/membership.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"
#include "base/token.h"
#include "mgmt/validate.h"

static const char LIST_SQL[] = PAGE_WITH_CURSOR(
    "'-infinity', " PAGE_ZERO_UUID) ", p AS (SELECT i.created_at, i.id, ensign_invitation_form(i) "
                                    "AS item FROM invitations i"
                                    "  WHERE i.org_id = $2::uuid"
                                    "    AND ($3 = '' OR lower(i.email) LIKE "
                                    "ensign_search_pattern($3))"
                                    "    AND (i.created_at, i.id) > (" PAGE_KEY(
                                        1) "::timestamptz, " PAGE_KEY(2) "::uuid)"
                                                                         "  ORDER BY i.created_at, "
                                                                         "i.id LIMIT "
                                                                         "$5::int)" PAGE_SELECT(
                                                                             "created_at, id",
                                                                             "created_at::text, "
                                                                             "id::text");

/* clang-format off */
/* $1 org, $2 inviter or NULL, $3 login, $4 role, $5 digest, $6 audit actor.
 * An existing user is added at once (member.added), else invited. */
static const char CREATE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_invite($1, $2, $3, $4, $5)",
    "CASE w.body::jsonb ->> 'status' WHEN 'added' THEN 'member.added'"
    " ELSE 'invitation.created' END",
    "CASE w.body::jsonb ->> 'status'"
    " WHEN 'added' THEN 'Added ' || ensign_audit_user_name((w.body::jsonb ->> 'user_id')::uuid)"
    "                   || ' as ' || $4"
    " ELSE 'Invited ' || (w.body::jsonb ->> 'email') || ' as ' || $4 END",
    "CASE w.body::jsonb ->> 'status' WHEN 'added' THEN 'members/' || (w.body::jsonb ->> 'user_id')"
    " ELSE 'invitations/' || (w.body::jsonb -> 'invitation' ->> 'id') END", "$6");
/* $1 org, $2 invitation id, $3 audit actor. */
static const char REVOKE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_invitation_revoke($1, $2::uuid)", "'invitation.revoked'",
    "(SELECT 'Revoked the invitation of ' || i.email FROM invitations i"
    "  WHERE i.id = $2::uuid AND i.status = 'pending')", "'invitations/' || $2", "$3");
/* clang-format on */
/* $1 digest. */
static const char LOOKUP_SQL[] =
    "SELECT * FROM ensign_acc_invitation_lookup($1) WHERE status IS NOT NULL";
/* clang-format off */
/* $1 digest, $2 caller, $3 audit actor (no organization). */
static const char ACCEPT_SQL[] = AUDIT_ANSWER_ORG(
    "SELECT * FROM ensign_acc_invitation_accept($1, $2)",
    "(SELECT o.id FROM orgs o WHERE o.slug = w.body::jsonb ->> 'org_slug')",
    "'invitation.accepted'",
    "(SELECT 'Accepted the invitation of ' || i.email || ' and joined as ' || i.role"
    "   FROM invitations i WHERE i.token_digest = $1)", "'members/' || $2", "$3");
/* clang-format on */

struct invitation_creation {
    struct http_request *r;
    struct token_secret secret; /* token.h token_mint */
};

/* ---- list ---- */

void invitations_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct page_request page;
    if (page_read(r, &page))
        page_run(r, LIST_SQL, ctx->org_id, &page, 0, NULL, "invitations");
}

/* ---- create ---- */

static void on_created(PGresult *res, const char *error, void *arg)
{
    struct invitation_creation *ic = arg;
    struct http_request *r = ic->r;
    struct json_object *body = NULL;
    if (db_result_ok(res) && PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "200") == 0)
        body = json_tokener_parse(PQgetvalue(res, 0, 1));
    if (body == NULL) {
        mgmt_answer(r, res, error, NULL);
    } else {
        struct json_object *status;
        if (json_object_object_get_ex(body, "status", &status) &&
            strcmp(json_object_get_string(status), "invited") == 0)
            json_object_object_add(body, "token", json_object_new_string(ic->secret.token));
        http_send_json(r, 200, body);
    }
    explicit_bzero(ic->secret.token, sizeof ic->secret.token);
    free(ic);
}

void invitations_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    const char *login = mgmt_body_text(body, "login"), *role = mgmt_body_text(body, "role");
    if (role == NULL)
        role = "member";
    struct invitation_creation *ic = NULL;
    if ((ic = calloc(1, sizeof *ic)) == NULL || token_mint(TOKEN_PREFIX_INVITE, &ic->secret) != 0) {
        free(ic);
        http_send_error(r, 500, "cannot make an invitation token");
    } else {
        ic->r = r;
        const char *inviter = ctx->actor_user_id[0] ? ctx->actor_user_id : NULL;
        const char *params[] = {ctx->org_id, inviter,           login,
                                role,        ic->secret.digest, ctx->audit_actor};
        if (mgmt_query(r, CREATE_SQL, 6, params, on_created, ic) != 0)
            free(ic);
    }
    json_object_put(body);
}

/* ---- revoke ---- */

void invitations_revoke(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const struct membership_write revoke = {
        .sql = REVOKE_SQL, .param = "id", .not_found = "no such invitation"};
    membership_write(r, ctx, &revoke);
}

/* ---- lookup and accept ---- */

/* The digest of the {token} parameter; false (after answering 404) when it
 * is not an invitation token. */
static bool token_digest_of(struct http_request *r, char digest[TOKEN_DIGEST_HEX_LEN + 1])
{
    const char *token = mgmt_param(r, "token");
    if (!token_well_formed(token, TOKEN_PREFIX_INVITE)) {
        http_send_error(r, 404, "no such invitation");
        return false;
    }
    token_digest_hex(token, strlen(token), digest);
    return true;
}

static void on_lookup(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, "no such invitation");
}

void invitations_lookup(struct http_request *r, const struct mgmt_ctx *ctx)
{
    (void)ctx;
    char digest[TOKEN_DIGEST_HEX_LEN + 1];
    if (!token_digest_of(r, digest))
        return;
    const char *params[] = {digest};
    mgmt_query(r, LOOKUP_SQL, 1, params, on_lookup, r);
}

void invitations_accept(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    char digest[TOKEN_DIGEST_HEX_LEN + 1];
    if (!token_digest_of(r, digest))
        return;
    char actor[AUDIT_ACTOR_JSON_MAX];
    audit_actor_init(actor, r, "", who, NULL);
    const char *params[] = {digest, who->user_id, actor};
    mgmt_query(r, ACCEPT_SQL, 3, params, mgmt_answer_cb, r);
}
