/*
 * tokens.c - the caller's personal access tokens (/me/tokens).
 *
 * Owns token creation, listing and revocation for the root API:
 *  - POST {name, full?, scopes?, expires_at?, expires_in_days?} answers
 *    {id, prefix, token}; the plaintext (svc_oat_ + 43 base62) is made
 *    here, stored only as its SHA-256 digest, and added to the answer in C.
 *    Either full: true or a scopes object (doc/api.md "Roles and scopes") is
 *    required. expires_at (RFC 3339) wins over expires_in_days; 0 days
 *    means no expiry; a time in the past is a 422. A token cannot create a
 *    token with more rights than its own (403).
 *  - GET lists the caller's unrevoked personal tokens, oldest first
 *    (pagination.h; q matches the name), in the form {id, name, prefix,
 *    scopes, full, expires_at, last_used_at, created_at}.
 *  - DELETE revokes; from the next request on the token gets 401. Another
 *    user's token, or an unknown id, is 404.
 * The tokens scope guards all three; an organization token gets 403.
 */
#include "accounts/tokens.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accounts/account.h"
#include "http/http.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"
#include "base/token.h"
#include "mgmt/validate.h"

/* $1 user, $2 name, $3 digest, $4 prefix, $5 last four, $6 scopes, $7
 * full, $8 expires_at ("" none), $9 expires_in_days. */
static const char CREATE_SQL[] =
    "WITH t AS (INSERT INTO access_tokens (kind, user_id, name, token_digest, prefix, last_four,"
    "                                      scopes, full_access, expires_at)"
    " VALUES ('personal', $1, $2, $3, $4, $5, $6::jsonb, $7::boolean,"
    "         CASE WHEN $8 <> '' THEN $8::timestamptz"
    "              WHEN $9::int > 0 THEN now() + $9::int * interval '1 day' END)"
    " RETURNING id, prefix)"
    " SELECT 200 AS status, json_build_object('id', id, 'prefix', prefix)::text AS body,"
    " NULL::text AS message FROM t";

static const char LIST_SQL[] = PAGE_WITH_CURSOR(
    "'-infinity', " PAGE_ZERO_UUID) ", p AS (SELECT t.created_at, t.id, ensign_token_form(t) AS "
                                    "item FROM access_tokens t"
                                    "  WHERE t.kind = 'personal' AND t.user_id = $2::uuid AND "
                                    "t.revoked_at IS NULL"
                                    "    AND ($3 = '' OR lower(t.name) LIKE "
                                    "ensign_search_pattern($3))"
                                    "    AND (t.created_at, t.id) > (" PAGE_KEY(
                                        1) "::timestamptz, " PAGE_KEY(2) "::uuid)"
                                                                         "  ORDER BY t.created_at, "
                                                                         "t.id LIMIT "
                                                                         "$5::int)" PAGE_SELECT(
                                                                             "created_at, id",
                                                                             "created_at::text, "
                                                                             "id::text");

/* $1 user, $2 token id. */
static const char REVOKE_SQL[] =
    "WITH t AS (UPDATE access_tokens SET revoked_at = now()"
    "            WHERE kind = 'personal' AND user_id = $1 AND id = $2::uuid"
    "              AND revoked_at IS NULL RETURNING id)"
    " SELECT 200 AS status, '{\"ok\": true}' AS body, NULL::text AS message FROM t";

struct token_creation {
    struct http_request *r;
    struct token_secret secret; /* token.h token_mint */
};

/* ---- create ---- */

static void on_created(PGresult *res, const char *error, void *arg)
{
    struct token_creation *tc = arg;
    struct http_request *r = tc->r;
    if (!db_result_ok(res) || PQntuples(res) != 1) {
        mgmt_answer(r, res, error, NULL);
    } else {
        struct json_object *body = json_tokener_parse(PQgetvalue(res, 0, 1));
        json_object_object_add(body, "token", json_object_new_string(tc->secret.token));
        http_send_json(r, 200, body);
    }
    explicit_bzero(tc->secret.token, sizeof tc->secret.token);
    free(tc);
}

struct token_fields {
    const char *name;
    bool full;
    unsigned read_mask, write_mask;
    char expires_at[64];
    int64_t days;
};

static void read_scopes(struct validate *v, struct json_object *body, struct token_fields *f)
{
    struct json_object *scopes;
    if (!json_object_object_get_ex(body, "scopes", &scopes) || scopes == NULL)
        return;
    const char *bad_key;
    if (auth_scopes_parse(scopes, &f->read_mask, &f->write_mask, &bad_key) != 0) {
        size_t mark = validate_push_field(v, "scopes");
        validate_error(v, bad_key, "%s",
                       bad_key ? "unknown scope or a level other than read or write"
                               : "an object of scope names to \"read\" or \"write\"");
        validate_pop(v, mark);
    }
}

/* The expiry: expires_in_days (0 to 36500) or expires_at (a date-time, as
 * the row's schema checked), which must lie ahead. */
static void read_expiry(struct validate *v, struct json_object *body, struct token_fields *f)
{
    struct json_object *days = mgmt_body_member(body, "expires_in_days");
    if (days != NULL)
        validate_integral(days, &f->days);
    const char *at = mgmt_body_text(body, "expires_at");
    int64_t ms;
    if (at == NULL || !validate_timestamp_parse(at, &ms))
        return;
    if (ms <= (int64_t)time(NULL) * 1000) {
        validate_error(v, "expires_at", "is in the past");
        return;
    }
    snprintf(f->expires_at, sizeof f->expires_at, "%s", at);
}

/* The body's fields (its shape checked by the row's schema), then what
 * crosses them: a scope or full, an expiry ahead. False after a 422. */
static bool read_fields(struct http_request *r, struct json_object *body, struct token_fields *f)
{
    struct validate v;
    validate_init(&v);
    f->name = mgmt_body_text(body, "name");
    struct json_object *full = mgmt_body_member(body, "full");
    f->full = full != NULL && json_object_get_boolean(full);
    read_scopes(&v, body, f);
    read_expiry(&v, body, f);
    if (validate_ok(&v) && !f->full && f->read_mask == 0)
        validate_error(&v, "scopes", "give full: true or at least one scope");
    if (!validate_ok(&v)) {
        mgmt_send_invalid(r, &v);
        return false;
    }
    validate_free(&v);
    return true;
}

void tokens_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    struct json_object *body = ctx->body; /* parsed by the dispatcher; ours to put */
    struct token_fields f = {0};
    if (!read_fields(r, body, &f) ||
        !account_may_grant(r, who, f.full, f.read_mask, f.write_mask)) {
        json_object_put(body);
        return;
    }
    struct token_creation *tc = calloc(1, sizeof *tc);
    if (tc == NULL || token_mint(TOKEN_PREFIX_ACCESS, &tc->secret) != 0) {
        free(tc);
        json_object_put(body);
        http_send_error(r, 500, "cannot make a token");
        return;
    }
    tc->r = r;
    struct json_object *scopes = auth_scopes_json(f.read_mask, f.write_mask);
    char days[24];
    snprintf(days, sizeof days, "%lld", (long long)f.days);
    const char *params[] = {who->user_id,
                            f.name,
                            tc->secret.digest,
                            tc->secret.prefix,
                            tc->secret.last4,
                            json_object_to_json_string(scopes),
                            f.full ? "true" : "false",
                            f.expires_at,
                            days};
    if (mgmt_query(r, CREATE_SQL, 9, params, on_created, tc) != 0) {
        explicit_bzero(tc->secret.token, sizeof tc->secret.token);
        free(tc);
    }
    json_object_put(scopes);
    json_object_put(body);
}

/* ---- list ---- */

void tokens_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    struct page_request page;
    if (page_read(r, &page))
        page_run(r, LIST_SQL, who->user_id, &page, 0, NULL, "tokens");
}

/* ---- revoke ---- */

void tokens_revoke(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    const char *id = mgmt_uuid_param(r, "id", "no such token");
    if (id == NULL)
        return;
    const char *params[] = {who->user_id, id};
    mgmt_query(r, REVOKE_SQL, 2, params, mgmt_answer_cb, r);
}
