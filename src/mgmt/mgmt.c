/*
 * mgmt.c - the common path of /v1/orgs/{org}/... handlers (see mgmt.h).
 *
 * Owns the organization-and-role lookup statement and the house answer
 * shape (status, body, message). A request goes: the access token (auth.h
 * AUTH_TOKEN_CTE) and the organization with the caller's role in ONE
 * statement, then rate limit for writes (shared memory, per token), the
 * 404 and 403 checks, then the handler; the answers keep the order of
 * separate steps (401, 429, 404, 403). The credential is the bearer token
 * or, where the route's row allows it, the session cookie (auth.h
 * auth_credential_digest). mgmt_dispatch is the dispatcher of every
 * route row with an operation. mgmt_begin_org (organization named
 * in the body, caller already authenticated) looks up the organization
 * alone. The body of a row with a request schema is checked against that
 * schema (jsonschema.c) before its operation runs: the row's schema, the
 * one /openapi.json shows, is what is enforced.
 *
 * Invariants: a caller outside the organization always gets the same 404
 * whether or not the organization exists; a callback runs only after every
 * check passed; the context handed to it is plain data on the stack.
 *
 * Called by the route table (mgmt_dispatch), by the loads of rows with an
 * extra statement (mgmt_dispatch_row: flagctx.c, flagrevisions.c) and by
 * the agent (mgmt_begin_org).
 */
#include "mgmt/mgmt.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "http/http.h"
#include "http/json_guard.h"
#include "eval/ratelimit.h"
#include "mgmt/jsonschema.h"
#include "mgmt/validate.h"
#include "http/server.h"

/*
 * $1 org slug (or id: the root API's org_id), $2 user id ("" for
 * an organization token), $3 the organization token's org id ("" for a
 * personal token), $4 token id.
 * Rows: id, slug, role, actor name; none when the caller is not in the
 * organization.
 */
static const char ORG_ROLE_SQL[] =
    MGMT_ORG_SELECT("$1", "$3 <> ''", "NULLIF($2, '')::uuid", "NULLIF($3, '')::uuid",
                    "(SELECT t.name FROM access_tokens t WHERE t.id = $4::uuid)");

/* The token and the organization alone (mgmt.h MGMT_AUTH_ORG_SQL). */
static const char AUTH_ORG_ROLE_SQL[] = MGMT_AUTH_ORG_SQL("", "");

enum { COL_ORG_ID, COL_ORG_SLUG, COL_ROLE, COL_ACTOR_NAME };

static const char *const role_names[] = {"viewer", "member", "admin", "owner"};

struct mgmt_request {
    struct http_request *r;
    struct route_need need;
    mgmt_cb cb;
    void *arg;
    bool call_on_failure; /* mgmt_begin_org: cb also runs (ctx NULL) after a failure */
    struct mgmt_ctx ctx;
};

const char *mgmt_role_name(enum mgmt_role role)
{
    return (unsigned)role < 4 ? role_names[role] : "viewer";
}

int mgmt_role_from_name(const char *name)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(role_names[i], name) == 0)
            return i;
    }
    return -1;
}

/* The organization slug: {org} under /v1, {slug} in the root API. */
static const char *org_param(const struct http_request *r)
{
    const char *org = http_param(r, "org");
    return org ? org : mgmt_param(r, "slug");
}

const char *mgmt_param(const struct http_request *r, const char *name)
{
    const char *value = http_param(r, name);
    return value ? value : "";
}

const char *mgmt_uuid_param(struct http_request *r, const char *name, const char *not_found)
{
    const char *value = mgmt_param(r, name);
    if (validate_uuid_ok(value))
        return value;
    http_send_error(r, 404, not_found);
    return NULL;
}

static void send_org_not_found(struct http_request *r)
{
    http_send_error(r, 404, "organization not found");
}

/* The role check, then the scope check; answers 403 when either fails. */
static bool allowed(struct http_request *r, const struct mgmt_ctx *ctx, struct route_need need)
{
    if ((int)ctx->role < need.role) {
        char message[128];
        snprintf(message, sizeof message, "role %s may not do this (needs %s)",
                 mgmt_role_name(ctx->role), mgmt_role_name((enum mgmt_role)need.role));
        http_send_error(r, 403, message);
        return false;
    }
    if (!auth_scope_allows(&ctx->who, need.scope, need.write)) {
        http_send_error(r, 403,
                        need.write ? "the token's scopes do not allow this write"
                                   : "the token's scopes do not allow this read");
        return false;
    }
    return true;
}

static void copy_column(char *out, size_t outlen, const PGresult *res, int col)
{
    snprintf(out, outlen, "%s", PQgetisnull(res, 0, col) ? "" : PQgetvalue(res, 0, col));
}

/* The organization columns (from column first on) of res into ctx. */
static void ctx_from_org_row(struct http_request *r, struct mgmt_ctx *ctx, const PGresult *res,
                             int first)
{
    copy_column(ctx->org_id, sizeof ctx->org_id, res, first + COL_ORG_ID);
    copy_column(ctx->org_slug, sizeof ctx->org_slug, res, first + COL_ORG_SLUG);
    copy_column(ctx->actor_name, sizeof ctx->actor_name, res, first + COL_ACTOR_NAME);
    int role = mgmt_role_from_name(PQgetvalue(res, 0, first + COL_ROLE));
    ctx->role = role < 0 ? MGMT_ROLE_VIEWER : (enum mgmt_role)role;
    audit_actor_init(ctx->audit_actor, r, ctx->org_id, &ctx->who, ctx->actor_name);
}

static void on_org_row(PGresult *res, const char *error, void *arg)
{
    struct mgmt_request *mr = arg;
    struct http_request *r = mr->r;
    bool called = false;
    if (!db_result_ok(res)) {
        auth_send_db_failure(r, res, error);
    } else if (PQntuples(res) != 1) {
        send_org_not_found(r);
    } else {
        ctx_from_org_row(r, &mr->ctx, res, 0);
        if (allowed(r, &mr->ctx, mr->need)) {
            mr->cb(r, &mr->ctx, mr->arg);
            called = true;
        }
    }
    if (!called && mr->call_on_failure)
        mr->cb(r, NULL, mr->arg);
    free(mr);
}

/*
 * The management rate limit (writes), then the organization query. Returns
 * false after answering r (cb then not called by this path).
 */
static bool lookup_org(struct http_request *r, const struct identity *who, const char *org,
                       struct route_need need, mgmt_cb cb, void *arg, bool call_on_failure)
{
    if (need.write &&
        !ratelimit_check(r, RATELIMIT_MANAGEMENT, who->token_id, strlen(who->token_id)))
        return false;
    struct mgmt_request *mr = calloc(1, sizeof *mr);
    if (mr == NULL) {
        auth_send_db_failure(r, NULL, "out of memory");
        return false;
    }
    *mr = (struct mgmt_request){
        .r = r, .need = need, .cb = cb, .arg = arg, .call_on_failure = call_on_failure};
    mr->ctx.who = *who;
    snprintf(mr->ctx.actor_user_id, sizeof mr->ctx.actor_user_id, "%s", who->user_id);
    const char *params[] = {org, who->user_id, who->org_id, who->token_id};
    if (mgmt_query(r, ORG_ROLE_SQL, 4, params, on_org_row, mr) != 0) {
        free(mr);
        return false;
    }
    return true;
}

/* Runs once the caller may do the operation, with the statement's row. */
typedef void (*row_cb)(struct http_request *r, const struct mgmt_ctx *ctx, const PGresult *res,
                       void *arg);

/* What the callback of a MGMT_AUTH_ORG_SQL statement needs. */
struct auth_org_request {
    struct http_request *r;
    struct route_need need;
    mgmt_cb cb;    /* mgmt_begin */
    row_cb row_cb; /* mgmt_begin_row */
    void *arg;
    bool via_cookie; /* the credential is the session cookie */
};

/* True when row 0 of res has the organization columns (the caller is in it). */
static bool in_org(const PGresult *res)
{
    return PQntuples(res) == 1 && !PQgetisnull(res, 0, AUTH_TOKEN_NCOLUMNS + COL_ORG_ID);
}

/*
 * The answer of a MGMT_AUTH_ORG_SQL statement, in the order separate steps
 * had: 401 (no token row), 429 (writes), 404 (not in the organization),
 * 403, then the operation's callback.
 */
static void on_auth_org_row(PGresult *res, const char *error, void *arg)
{
    struct auth_org_request aor = *(struct auth_org_request *)arg;
    free(arg);
    struct http_request *r = aor.r;
    if (!db_result_ok(res)) {
        auth_send_db_failure(r, res, error);
        return;
    }
    if (PQntuples(res) == 0) {
        auth_send_unauthorized(r, aor.via_cookie ? "invalid or expired session"
                                                 : "invalid access token");
        return;
    }
    struct mgmt_ctx ctx = {0};
    auth_identity_from_row(&ctx.who, res);
    if (aor.need.write &&
        !ratelimit_check(r, RATELIMIT_MANAGEMENT, ctx.who.token_id, strlen(ctx.who.token_id)))
        return;
    if (!in_org(res)) {
        send_org_not_found(r);
        return;
    }
    snprintf(ctx.actor_user_id, sizeof ctx.actor_user_id, "%s", ctx.who.user_id);
    ctx_from_org_row(r, &ctx, res, AUTH_TOKEN_NCOLUMNS);
    if (!allowed(r, &ctx, aor.need))
        return;
    if (aor.row_cb)
        aor.row_cb(r, &ctx, res, aor.arg);
    else
        aor.cb(r, &ctx, aor.arg);
}

#define EXTRA_PARAMS_MAX 8

/* Authentication, the organization and the statement's extras in one round trip. */
static void auth_and_lookup_org(struct http_request *r, const char *sql, int nextra,
                                const char *const *extra, struct auth_org_request init)
{
    char digest[TOKEN_DIGEST_HEX_LEN + 1];
    bool via_cookie;
    if (!auth_credential_digest(r, digest, &via_cookie))
        return;
    if (nextra < 0 || nextra > EXTRA_PARAMS_MAX) {
        auth_send_db_failure(r, NULL, "too many statement parameters");
        return;
    }
    struct auth_org_request *aor = malloc(sizeof *aor);
    if (aor == NULL) {
        auth_send_db_failure(r, NULL, "out of memory");
        return;
    }
    *aor = init;
    aor->via_cookie = via_cookie;
    const char *params[2 + EXTRA_PARAMS_MAX] = {digest, org_param(r)};
    for (int i = 0; i < nextra; i++)
        params[2 + i] = extra[i];
    if (mgmt_query(r, sql, 2 + nextra, params, on_auth_org_row, aor) != 0)
        free(aor);
}

static void on_identity_unknown_org(struct http_request *r, const struct identity *who, void *arg)
{
    (void)who;
    (void)arg;
    send_org_not_found(r);
}

/* Authenticates r, resolves {org} and checks need; then cb, or an answer. */
static void mgmt_begin(struct http_request *r, struct route_need need, mgmt_cb cb, void *arg)
{
    if (!validate_key_ok(org_param(r))) {
        /* No such slug can exist; still authenticate first (401 before 404). */
        auth_access_token(r, on_identity_unknown_org, NULL);
        return;
    }
    auth_and_lookup_org(r, AUTH_ORG_ROLE_SQL, 0, NULL,
                        (struct auth_org_request){.r = r, .need = need, .cb = cb, .arg = arg});
}

/* mgmt_begin, also asking sql (MGMT_AUTH_ORG_SQL) with extra as $3... */
static void mgmt_begin_row(struct http_request *r, struct route_need need, const char *sql,
                           int nextra, const char *const *extra, row_cb cb, void *arg)
{
    if (!validate_key_ok(org_param(r))) {
        auth_access_token(r, on_identity_unknown_org, NULL);
        return;
    }
    auth_and_lookup_org(r, sql, nextra, extra,
                        (struct auth_org_request){.r = r, .need = need, .row_cb = cb, .arg = arg});
}

void mgmt_begin_org(struct http_request *r, const struct identity *who, const char *org,
                    struct route_need need, mgmt_cb cb, void *arg)
{
    if (!lookup_org(r, who, org, need, cb, arg, true))
        cb(r, NULL, arg);
}

/* ---- the dispatcher ---- */

struct json_object *mgmt_checked_body(struct http_request *r, const char *schema_text)
{
    const struct json_object *schema = jsonschema_parsed(schema_text);
    if (schema == NULL) {
        http_send_error(r, 500, "the route's request schema does not parse");
        return NULL;
    }
    struct json_object *body = mgmt_body_object(r);
    if (body == NULL)
        return NULL;
    struct validate v;
    validate_init(&v);
    if (jsonschema_check(&v, schema, body))
        return body;
    json_object_put(body);
    mgmt_send_invalid(r, &v);
    return NULL;
}

/* The row's operation, with the answer row of its load's statement (or
 * NULL), once its body passed the row's request schema. */
static void run_op_with(struct http_request *r, const struct mgmt_ctx *ctx, const PGresult *res,
                        void *arg)
{
    (void)arg;
    const struct route *route = r->match.route;
    struct mgmt_ctx call = *ctx;
    call.row = res;
    if (route->request_schema != NULL &&
        (call.body = mgmt_checked_body(r, route->request_schema)) == NULL)
        return;
    route->op(r, &call);
}

/* mgmt_begin's callback for a row without a load. */
static void run_op(struct http_request *r, const struct mgmt_ctx *ctx, void *arg)
{
    run_op_with(r, ctx, NULL, arg);
}

/* The caller of a row on no organization (or an internal one) is known: its
 * checks, then the operation. */
static void on_own_identity(struct http_request *r, const struct identity *who, void *arg)
{
    (void)arg;
    struct route_need need = r->match.route->need;
    if (who->kind == IDENTITY_ORG && need.caller == ROUTE_CALLER_ACCOUNT) {
        http_send_error(r, 403, "an organization token has no account: use a personal token");
        return;
    }
    if (who->kind == IDENTITY_ORG && need.caller == ROUTE_CALLER_INTERNAL) {
        http_send_error(r, 403, "an internal operation acts for a user: use a personal token");
        return;
    }
    if (need.caller != ROUTE_CALLER_INTERNAL && !auth_scope_allows(who, need.scope, need.write)) {
        http_send_error(r, 403,
                        need.write ? "the token's scopes do not allow this write"
                                   : "the token's scopes do not allow this read");
        return;
    }
    if (need.write &&
        !ratelimit_check(r, RATELIMIT_MANAGEMENT, who->token_id, strlen(who->token_id)))
        return;
    struct mgmt_ctx ctx = {.who = *who};
    snprintf(ctx.actor_user_id, sizeof ctx.actor_user_id, "%s", who->user_id);
    run_op(r, &ctx, NULL);
}

/* The caller of an identity row is known (any credential, no scope). */
static void on_either_identity(struct http_request *r, const struct identity *who, bool via_cookie,
                               void *arg)
{
    struct mgmt_ctx ctx = {.who = *who, .via_cookie = via_cookie};
    snprintf(ctx.actor_user_id, sizeof ctx.actor_user_id, "%s", who->user_id);
    run_op(r, &ctx, arg);
}

void mgmt_dispatch(struct http_request *r)
{
    const struct route *route = r->match.route;
    if (route->need.caller == ROUTE_CALLER_IDENTITY)
        auth_token_or_cookie(r, on_either_identity, NULL);
    else if (route->need.caller == ROUTE_CALLER_INTERNAL)
        auth_internal(r, on_own_identity, NULL);
    else if (route->need.caller != ROUTE_CALLER_ORG)
        auth_access_token(r, on_own_identity, NULL);
    else if (route->load != NULL)
        route->load(r);
    else
        mgmt_begin(r, route->need, run_op, NULL);
}

void mgmt_dispatch_row(struct http_request *r, const char *sql, int nextra,
                       const char *const *extra)
{
    mgmt_begin_row(r, r->match.route->need, sql, nextra, extra, run_op_with, NULL);
}

int mgmt_query(struct http_request *r, const char *sql, int nparams, const char *const *params,
               db_result_cb cb, void *arg)
{
    if (db_query(r->server->db, sql, nparams, params, cb, arg) == 0)
        return 0;
    auth_send_db_failure(r, NULL, "no database connection");
    return -1;
}

/* ---- answers ---- */

static void send_conflict(struct http_request *r, const PGresult *res)
{
    const char *constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
    char message[160];
    snprintf(message, sizeof message, "already exists%s%s", constraint ? ": " : "",
             constraint ? constraint : "");
    http_send_error(r, 409, message);
}

/*
 * The field a constraint names: the column when PostgreSQL reports one,
 * else the middle of TABLE_FIELD_check ("rules_priority_check" gives
 * "priority"), else "body".
 */
static void constraint_field(const PGresult *res, char *out, size_t outlen)
{
    const char *column = PQresultErrorField(res, PG_DIAG_COLUMN_NAME);
    const char *table = PQresultErrorField(res, PG_DIAG_TABLE_NAME);
    const char *constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
    snprintf(out, outlen, "%s", column ? column : "body");
    if (column || !table || !constraint)
        return;
    size_t table_len = strlen(table), len = strlen(constraint), suffix = strlen("_check");
    if (len > table_len + 1 + suffix && strncmp(constraint, table, table_len) == 0 &&
        constraint[table_len] == '_' && strcmp(constraint + len - suffix, "_check") == 0)
        snprintf(out, outlen, "%.*s", (int)(len - table_len - 1 - suffix),
                 constraint + table_len + 1);
}

static void send_unprocessable(struct http_request *r, const PGresult *res)
{
    const char *constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
    const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    char field[128];
    constraint_field(res, field, sizeof field);
    struct validate v;
    validate_init(&v);
    validate_error(&v, field, "%s%s%s", detail ? detail : "invalid value", constraint ? ": " : "",
                   constraint ? constraint : "");
    http_send_validation_error(r, "validation failed", validate_take_errors(&v));
}

void mgmt_send_failure(struct http_request *r, const PGresult *res, const char *error)
{
    const char *state = res ? db_sqlstate(res) : "";
    if (strcmp(state, "23505") == 0)
        send_conflict(r, res);
    else if (strcmp(state, "23503") == 0 || strcmp(state, "23514") == 0 ||
             strcmp(state, "23502") == 0 || strncmp(state, "22", 2) == 0)
        send_unprocessable(r, res);
    else
        auth_send_db_failure(r, res, error);
}

static const char *generic_message(int status)
{
    switch (status) {
    case 400:
        return "bad request";
    case 403:
        return "forbidden";
    case 404:
        return "not found";
    case 409:
        return "conflict";
    case 422:
        return "validation failed";
    default:
        return "request failed";
    }
}

static void answer_error_row(struct http_request *r, int status, const PGresult *res)
{
    const char *message = PQnfields(res) > 2 && !PQgetisnull(res, 0, 2) ? PQgetvalue(res, 0, 2)
                                                                        : generic_message(status);
    if (status == 422 && !PQgetisnull(res, 0, 1)) {
        struct json_object *errors = json_tokener_parse(PQgetvalue(res, 0, 1));
        http_send_validation_error(r, message, errors);
        return;
    }
    http_send_error(r, status, message);
}

void mgmt_answer(struct http_request *r, const PGresult *res, const char *error,
                 const char *not_found)
{
    if (!db_result_ok(res)) {
        mgmt_send_failure(r, res, error);
        return;
    }
    if (PQntuples(res) == 0) {
        http_send_error(r, 404, not_found ? not_found : "not found");
        return;
    }
    if (PQnfields(res) < 2) {
        auth_send_db_failure(r, res, "answer row without status and body");
        return;
    }
    int status = atoi(PQgetvalue(res, 0, 0));
    if (status >= 400) {
        answer_error_row(r, status, res);
        return;
    }
    if (PQgetisnull(res, 0, 1)) {
        http_send_json(r, status, NULL);
        return;
    }
    http_send_json_text(r, status, PQgetvalue(res, 0, 1));
}

void mgmt_answer_cb(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, NULL);
}

struct json_object *mgmt_body_peek(struct http_request *r)
{
    /* Not http_body: it NUL-terminates the buffer in place, once per answer. */
    struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
    size_t len = evbuffer_get_length(in);
    const char *text = len > 0 && len <= INT_MAX ? (const char *)evbuffer_pullup(in, -1) : NULL;
    struct json_tokener *tok = text ? json_tokener_new_ex(HTTP_JSON_MAX_DEPTH) : NULL;
    if (tok == NULL)
        return NULL;
    json_tokener_set_flags(tok, JSON_GUARD_TOKENER_FLAGS);
    struct json_object *body = json_tokener_parse_ex(tok, text, (int)len);
    json_tokener_free(tok);
    if (json_object_is_type(body, json_type_object))
        return body;
    json_object_put(body);
    return NULL;
}

void mgmt_send_invalid(struct http_request *r, struct validate *v)
{
    http_send_validation_error(r, "validation failed", validate_take_errors(v));
}

struct json_object *mgmt_body_object(struct http_request *r)
{
    struct json_object *body = NULL;
    if (!http_parse_json_body(r, false, &body))
        return NULL;
    if (json_object_is_type(body, json_type_object))
        return body;
    json_object_put(body);
    struct validate v;
    validate_init(&v);
    validate_error(&v, NULL, "the request body must be a JSON object");
    http_send_validation_error(r, "validation failed", validate_take_errors(&v));
    return NULL;
}

struct json_object *mgmt_body_member(const struct json_object *body, const char *name)
{
    struct json_object *value = NULL;
    if (body == NULL || !json_object_object_get_ex(body, name, &value))
        return NULL;
    return value;
}

const char *mgmt_body_text(const struct json_object *body, const char *name)
{
    struct json_object *value = mgmt_body_member(body, name);
    return json_object_is_type(value, json_type_string) ? json_object_get_string(value) : NULL;
}
