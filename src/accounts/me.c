/*
 * me.c - the caller's own identity: GET /v1/me and GET /me.
 *
 * Both authenticate the access token (auth.c, one round trip) and then read
 * the caller in one more query.
 *
 *  - GET /v1/me (/v1): {"kind": "user", "via": "token", "user":
 *    {id, name, email, username|null}} for a personal token, {"kind":
 *    "organization", "via": "token", "organization": {id, name, slug, plan}}
 *    for an organization token; exactly these fields. A browser session
 *    cookie (doc/api.md "Credentials", sessions.c) answers the user form with
 *    "via": "cookie".
 *  - GET /me (the root API): {"user": {id, email, created_at, name,
 *    username|null}, "orgs": [Organization form {id, name, slug, role,
 *    enforce_two_factor, require_sso, created_at}, ...]} for a personal
 *    token, organizations ordered by slug. An organization token has no
 *    user: it answers {"user": null, "orgs": [its organization with role
 *    "admin"]}, since such a token acts as the organization with role admin
 *    (doc/api.md "Credentials"). Timestamps are RFC 3339 in UTC with
 *    microseconds ("2025-01-31T12:00:00.123456Z"). The JSON is built by
 *    PostgreSQL in the same single statement.
 *
 * A user deleted, or an organization removed, between authentication and
 * the read answers 401 like an unknown token. Called from the route table.
 */
#include "accounts/me.h"

#include <json-c/json.h>
#include <stdlib.h>

#include "db/auth.h"
#include "mgmt/request_auth.h"
#include "db/db.h"
#include "http/http.h"
#include "mgmt/mgmt.h"
#include "http/server.h"

static const char V1_USER_SQL[] =
    "SELECT id, name, email, username FROM users WHERE id = $1 AND NOT deleted";

static const char V1_ORG_SQL[] = "SELECT id, name, slug, plan FROM orgs WHERE id = $1";

enum { COL_ID, COL_NAME, COL_EMAIL_OR_SLUG, COL_USERNAME_OR_PLAN };

#define RFC3339(column)                                                                            \
    "to_char(" column " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/* The root API's Organization form of orgs row o with role. */
#define ORG_FORM(role)                                                                             \
    "json_build_object('id', o.id, 'name', o.name, 'slug', o.slug, 'role', " role ","              \
    " 'enforce_two_factor', o.enforce_two_factor, 'require_sso', o.require_sso,"                   \
    " 'created_at', " RFC3339("o.created_at") ")"

/* $1 user id: one row, one column, the whole body as JSON text. */
static const char ROOT_USER_SQL[] =
    "SELECT json_build_object("
    "  'user', json_build_object('id', u.id, 'email', u.email,"
    "    'created_at', " RFC3339(
        "u.created_at") ", 'name', u.name, 'username', u.username),"
                        "  'orgs', COALESCE((SELECT json_agg(" ORG_FORM(
                            "m.role") " ORDER BY o.slug)"
                                      "                      FROM org_members m JOIN orgs o ON "
                                      "o.id = m.org_id"
                                      "                     WHERE m.user_id = u.id), '[]'::json))"
                                      "  FROM users u WHERE u.id = $1 AND NOT u.deleted";

/* $1 org id: as above for an organization token. */
static const char ROOT_ORG_SQL[] =
    "SELECT json_build_object('user', NULL, 'orgs', json_build_array(" ORG_FORM(
        "'admin'") "))"
                   "  FROM orgs o WHERE o.id = $1";

/* Queues sql for the caller's id; answers r itself when it cannot. */
static void query_caller(struct http_request *r, const char *sql, const char *id, db_result_cb cb)
{
    const char *params[] = {id};
    if (db_query(r->server->db, sql, 1, params, cb, r) != 0)
        auth_send_db_failure(r, NULL, "no database connection");
}

/* false (after answering r) unless res holds exactly one row. */
static bool one_row(struct http_request *r, const PGresult *res, const char *error)
{
    if (!db_result_ok(res)) {
        auth_send_db_failure(r, res, error);
        return false;
    }
    if (PQntuples(res) != 1) {
        auth_send_unauthorized(r, "invalid access token");
        return false;
    }
    return true;
}

static struct json_object *text_or_null(const PGresult *res, int col)
{
    if (PQgetisnull(res, 0, col))
        return NULL;
    return json_object_new_string(PQgetvalue(res, 0, col));
}

/* ---- GET /v1/me ---- */

/* The request and how its caller authenticated ("via"), carried to the
 * user row's callback. */
struct v1_caller {
    struct http_request *r;
    bool via_cookie;
};

static void send_v1_identity(struct http_request *r, bool via_cookie, const char *kind,
                             const char *member, struct json_object *who)
{
    struct json_object *body = json_object_new_object();
    json_object_object_add(body, "kind", json_object_new_string(kind));
    json_object_object_add(body, "via", json_object_new_string(via_cookie ? "cookie" : "token"));
    json_object_object_add(body, member, who);
    http_send_json(r, 200, body);
}

static void on_v1_user_row(PGresult *res, const char *error, void *arg)
{
    struct v1_caller caller = *(struct v1_caller *)arg;
    free(arg);
    struct http_request *r = caller.r;
    if (!one_row(r, res, error))
        return;
    struct json_object *user = json_object_new_object();
    json_object_object_add(user, "id", text_or_null(res, COL_ID));
    json_object_object_add(user, "name", text_or_null(res, COL_NAME));
    json_object_object_add(user, "email", text_or_null(res, COL_EMAIL_OR_SLUG));
    json_object_object_add(user, "username", text_or_null(res, COL_USERNAME_OR_PLAN));
    send_v1_identity(r, caller.via_cookie, "user", "user", user);
}

static void on_v1_org_row(PGresult *res, const char *error, void *arg)
{
    struct http_request *r = arg;
    if (!one_row(r, res, error))
        return;
    struct json_object *org = json_object_new_object();
    json_object_object_add(org, "id", text_or_null(res, COL_ID));
    json_object_object_add(org, "name", text_or_null(res, COL_NAME));
    json_object_object_add(org, "slug", text_or_null(res, COL_EMAIL_OR_SLUG));
    json_object_object_add(org, "plan", text_or_null(res, COL_USERNAME_OR_PLAN));
    send_v1_identity(r, false, "organization", "organization", org);
}

void me_v1_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    if (who->kind == IDENTITY_ORG) {
        query_caller(r, V1_ORG_SQL, who->org_id, on_v1_org_row);
        return;
    }
    struct v1_caller *caller = malloc(sizeof *caller);
    if (caller == NULL) {
        auth_send_db_failure(r, NULL, "out of memory");
        return;
    }
    *caller = (struct v1_caller){r, ctx->via_cookie};
    const char *params[] = {who->user_id};
    if (db_query(r->server->db, V1_USER_SQL, 1, params, on_v1_user_row, caller) != 0) {
        free(caller);
        auth_send_db_failure(r, NULL, "no database connection");
    }
}

/* ---- GET /me ---- */

static void on_root_row(PGresult *res, const char *error, void *arg)
{
    struct http_request *r = arg;
    if (!one_row(r, res, error))
        return;
    struct json_object *body = json_tokener_parse(PQgetvalue(res, 0, 0));
    if (body == NULL) {
        auth_send_db_failure(r, res, "unparseable JSON from the database");
        return;
    }
    http_send_json(r, 200, body);
}

void me_root_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const struct identity *who = &ctx->who;
    if (who->kind == IDENTITY_ORG)
        query_caller(r, ROOT_ORG_SQL, who->org_id, on_root_row);
    else
        query_caller(r, ROOT_USER_SQL, who->user_id, on_root_row);
}
