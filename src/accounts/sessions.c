/*
 * sessions.c - browser sessions (decisions.md sections 5 and 7a).
 *
 * POST /v1/session {email, password}: attempts are limited per client
 * address (ratelimit_login, its own budget, http_client_address); the
 * user's scrypt hash (users.password_hash, set by `ensignctl user create
 * --password-stdin`) is checked with libscrypt; a wrong password, an
 * unknown or deleted email and a user without a password all get the same
 * 401, after the same scrypt work (an unknown email is checked against a
 * dummy hash). Success stores a new session (svc_ses_ + 43 base62, kept
 * only as its SHA-256 digest) that expires after SESSION_DAYS and answers
 * 200 {user} with Set-Cookie: ensign_session=...; Path=/; HttpOnly;
 * SameSite=Lax; Max-Age (and Secure with session_cookie_secure = 1). Only GET /v1/me and GET /me
 * accept the cookie (auth.c auth_token_or_cookie).
 *
 * DELETE /v1/session deletes the cookie's session (if any) and answers
 * 200 {ok: true} with a cookie that expires at once.
 *
 * scrypt runs in the worker (tens of milliseconds); the login limit bounds
 * how much of a worker it can take. It never runs on /ofrep.
 */
#include "sessions.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "config.h"
#include "http.h"
#include "mgmt.h"
#include "password.h"
#include "ratelimit.h"
#include "server.h"
#include "token.h"
#include "validate.h"

#define SESSION_DAYS 14
#define TEXT_OF(x) #x
#define TEXT_OF_VALUE(x) TEXT_OF(x)
#define EMAIL_MAX_CHARS 320

/* $1 email. */
static const char USER_SQL[] =
    "SELECT id, password_hash FROM users WHERE lower(email) = lower($1) AND NOT deleted";

/* $1 user, $2 cookie digest. */
static const char CREATE_SQL[] =
    "WITH s AS (INSERT INTO sessions (user_id, cookie_digest, expires_at)"
    "           VALUES ($1, $2, now() + interval '" TEXT_OF_VALUE(
        SESSION_DAYS) " days') RETURNING user_id),"
                      " gone AS (DELETE FROM sessions WHERE expires_at < now() - interval '1 day')"
                      " SELECT 200 AS status, json_build_object('user', ensign_user_form(u))::text "
                      "AS body,"
                      " NULL::text AS message FROM s JOIN users u ON u.id = s.user_id";

/* $1 cookie digest. */
static const char DELETE_SQL[] = "DELETE FROM sessions WHERE cookie_digest = $1";

struct login {
    struct http_request *r;
    char password[PASSWORD_MAX_LEN + 1];
    char token[TOKEN_MAX_LEN];
};

static void free_login(struct login *l)
{
    explicit_bzero(l, sizeof *l);
    free(l);
}

static void send_bad_login(struct http_request *r)
{
    auth_send_unauthorized(r, "wrong email or password");
}

/* A valid hash of no one's password, so unknown emails cost one scrypt too. */
static const char *dummy_hash(void)
{
    static char hash[PASSWORD_HASH_MAX];
    if (hash[0] == '\0' && password_hash("no such user: dummy password", hash) != 0)
        hash[0] = '\0';
    return hash;
}

static void on_session(PGresult *res, const char *error, void *arg)
{
    struct login *l = arg;
    struct http_request *r = l->r;
    if (db_result_ok(res) && PQntuples(res) == 1) {
        char cookie[TOKEN_MAX_LEN + 96];
        bool secure = r->server->cfg != NULL && r->server->cfg->session_cookie_secure;
        snprintf(cookie, sizeof cookie,
                 "ensign_session=%s; Path=/; HttpOnly; SameSite=Lax; Max-Age=%d%s", l->token,
                 SESSION_DAYS * 86400, secure ? "; Secure" : "");
        http_add_header(r, "Set-Cookie", cookie);
        explicit_bzero(cookie, sizeof cookie);
    }
    mgmt_answer(r, res, error, NULL);
    free_login(l);
}

static void start_session(struct login *l, const char *user_id)
{
    struct http_request *r = l->r;
    if (token_generate(TOKEN_PREFIX_SESSION, l->token, sizeof l->token) != 0) {
        http_send_error(r, 500, "cannot make a session");
        free_login(l);
        return;
    }
    char digest[TOKEN_DIGEST_HEX_LEN + 1];
    token_digest_hex(l->token, strlen(l->token), digest);
    const char *params[] = {user_id, digest};
    if (mgmt_query(r, CREATE_SQL, 2, params, on_session, l) != 0)
        free_login(l);
}

static void on_user(PGresult *res, const char *error, void *arg)
{
    struct login *l = arg;
    struct http_request *r = l->r;
    if (!db_result_ok(res)) {
        auth_send_db_failure(r, res, error);
        free_login(l);
        return;
    }
    bool found = PQntuples(res) == 1 && !PQgetisnull(res, 0, 1);
    const char *hash = found ? PQgetvalue(res, 0, 1) : dummy_hash();
    bool good = password_verify(hash, l->password) && found;
    if (!good) {
        send_bad_login(r);
        free_login(l);
        return;
    }
    start_session(l, PQgetvalue(res, 0, 0));
}

void sessions_login(struct http_request *r)
{
    char address[64];
    http_client_address(r, address, sizeof address);
    if (!ratelimit_check(r, RATELIMIT_LOGIN, address, strlen(address)))
        return;
    struct json_object *body = mgmt_body_object(r);
    if (body == NULL)
        return;
    static const char *const allowed[] = {"email", "password", NULL};
    struct validate v;
    validate_init(&v);
    const char *email = NULL, *password = NULL;
    validate_only_fields(&v, body, allowed);
    validate_string(&v, body, "email", 1, EMAIL_MAX_CHARS, VALIDATE_REQUIRED, &email);
    validate_string(&v, body, "password", 1, PASSWORD_MAX_LEN, VALIDATE_REQUIRED, &password);
    struct login *l = NULL;
    if (!validate_ok(&v)) {
        mgmt_send_invalid(r, &v);
    } else if ((l = calloc(1, sizeof *l)) == NULL) {
        validate_free(&v);
        http_send_error(r, 500, "out of memory");
    } else {
        l->r = r;
        snprintf(l->password, sizeof l->password, "%s", password);
        const char *params[] = {email};
        if (mgmt_query(r, USER_SQL, 1, params, on_user, l) != 0)
            free_login(l);
        validate_free(&v);
    }
    json_object_put(body);
}

static void on_logout(PGresult *res, const char *error, void *arg)
{
    struct http_request *r = arg;
    if (!db_result_ok(res)) {
        auth_send_db_failure(r, res, error);
        return;
    }
    http_send_json_text(r, 200, "{\"ok\":true}");
}

void sessions_logout(struct http_request *r)
{
    char cookie[TOKEN_MAX_LEN];
    http_add_header(r, "Set-Cookie", "ensign_session=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0");
    if (!auth_session_cookie(r, cookie, sizeof cookie) ||
        !token_well_formed(cookie, TOKEN_PREFIX_SESSION)) {
        http_send_json_text(r, 200, "{\"ok\":true}");
        return;
    }
    char digest[TOKEN_DIGEST_HEX_LEN + 1];
    token_digest_hex(cookie, strlen(cookie), digest);
    const char *params[] = {digest};
    mgmt_query(r, DELETE_SQL, 1, params, on_logout, r);
}
