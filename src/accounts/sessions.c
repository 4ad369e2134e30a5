/*
 * sessions.c - browser sessions (doc/api.md "Credentials"; doc/choices.md
 * "Internal operations, sessions, notifications").
 *
 * POST /v1/session {email, password}: only as application/json (415
 * otherwise: a form or text/plain body is what a foreign page can send
 * without asking) and only from this server's own origin or a non-browser
 * client (auth_same_origin, 403 otherwise); then attempts are limited per
 * client address and per account (login_limit.h, the ratelimit_login
 * budget). The user's scrypt hash (users.password_hash) is checked on the
 * worker's helper threads (password_pool.h), never on its loop; a full
 * pool answers 503 with Retry-After. A wrong password, an unknown or
 * deleted email and a user without a password all get the same 401, after
 * the same scrypt work (an unknown email is checked against
 * PASSWORD_DUMMY_HASH). Success stores a new session (svc_ses_ + 43
 * base62, kept only as its SHA-256 digest) that expires after SESSION_DAYS
 * and answers 200 {user} with Set-Cookie: ensign_session=...; Path=/;
 * HttpOnly; SameSite=Lax; Max-Age (and Secure with session_cookie_secure =
 * 1). The routes of auth.c auth_token_or_cookie accept the cookie.
 *
 * DELETE /v1/session deletes the cookie's session (if any) and answers
 * 200 {ok: true} with a cookie that expires at once (a foreign Origin with
 * a cookie: 403, as for every unsafe method the cookie authenticates).
 *
 * A client that goes away while scrypt runs leaves its request waiting
 * here; the answer is then dropped by http.c. The request stays valid
 * until answered.
 */
#include "accounts/sessions.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "db/auth.h"
#include "mgmt/request_auth.h"
#include "base/config.h"
#include "http/http.h"
#include "accounts/login_limit.h"
#include "mgmt/mgmt.h"
#include "db/password.h"
#include "db/password_pool.h"
#include "http/server.h"
#include "base/token.h"
#include "accounts/schemas.h"

#define SESSION_DAYS 14
#define TEXT_OF(x) #x
#define TEXT_OF_VALUE(x) TEXT_OF(x)

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
    bool found; /* the email names a user with a password */
    char user_id[AUTH_UUID_LEN + 1];
    char password[PASSWORD_MAX_BYTES + 1];
    struct token_secret secret; /* token.h token_mint */
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

static void on_session(PGresult *res, const char *error, void *arg)
{
    struct login *l = arg;
    struct http_request *r = l->r;
    if (db_result_ok(res) && PQntuples(res) == 1) {
        char cookie[TOKEN_MAX_LEN + 96];
        bool secure = r->server->cfg != NULL && r->server->cfg->session_cookie_secure;
        snprintf(cookie, sizeof cookie,
                 "ensign_session=%s; Path=/; HttpOnly; SameSite=Lax; Max-Age=%d%s", l->secret.token,
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
    if (token_mint(TOKEN_PREFIX_SESSION, &l->secret) != 0) {
        http_send_error(r, 500, "cannot make a session");
        free_login(l);
        return;
    }
    const char *params[] = {user_id, l->secret.digest};
    if (mgmt_query(r, CREATE_SQL, 2, params, on_session, l) != 0)
        free_login(l);
}

void sessions_send_busy(struct http_request *r)
{
    char seconds[16];
    snprintf(seconds, sizeof seconds, "%d", PASSWORD_POOL_RETRY_S);
    http_add_header(r, "Retry-After", seconds);
    http_send_error(r, 503, "too many password checks in progress, try again shortly");
}

/* The loop again, after scrypt. */
static void on_verified(enum password_outcome outcome, const char *hash, void *arg)
{
    (void)hash;
    struct login *l = arg;
    if (outcome == PASSWORD_CANCELLED) {
        sessions_send_busy(l->r);
        free_login(l);
    } else if (outcome != PASSWORD_MATCH || !l->found) {
        send_bad_login(l->r);
        free_login(l);
    } else {
        start_session(l, l->user_id);
    }
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
    l->found = PQntuples(res) == 1 && !PQgetisnull(res, 0, 1);
    if (l->found)
        snprintf(l->user_id, sizeof l->user_id, "%s", PQgetvalue(res, 0, 0));
    const char *hash = l->found ? PQgetvalue(res, 0, 1) : PASSWORD_DUMMY_HASH;
    int rc = password_pool_verify(r->server->passwords, hash, l->password, on_verified, l);
    explicit_bzero(l->password, sizeof l->password); /* the job has its copy */
    if (rc != 0) {
        sessions_send_busy(r);
        free_login(l);
    }
}

/* application/json, parameters allowed ("; charset=utf-8"). */
static bool json_media_type(const char *type)
{
    static const char json[] = "application/json";
    if (type == NULL)
        return false;
    type += strspn(type, " \t");
    if (strncasecmp(type, json, sizeof json - 1) != 0)
        return false;
    const char *rest = type + sizeof json - 1;
    rest += strspn(rest, " \t");
    return *rest == '\0' || *rest == ';';
}

bool sessions_json_body(struct http_request *r)
{
    if (json_media_type(http_header(r, "Content-Type")))
        return true;
    http_send_error(r, 415, "the body must be application/json");
    return false;
}

void sessions_login(struct http_request *r)
{
    if (!sessions_json_body(r) || !auth_check_same_origin(r) || !login_limit_check_address(r))
        return;
    /* The row's schema is the check: email 1 to 320 characters, password
     * 1 to 1024. */
    struct json_object *body = mgmt_checked_body(r, schema_acc_login);
    if (body == NULL)
        return;
    const char *email = mgmt_body_text(body, "email");
    const char *password = mgmt_body_text(body, "password");
    struct login *l = NULL;
    if (!login_limit_check_account(r, email)) {
        /* answered 429 */
    } else if ((l = calloc(1, sizeof *l)) == NULL) {
        http_send_error(r, 500, "out of memory");
    } else {
        l->r = r;
        snprintf(l->password, sizeof l->password, "%s", password);
        const char *params[] = {email};
        if (mgmt_query(r, USER_SQL, 1, params, on_user, l) != 0)
            free_login(l);
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
    if (auth_session_cookie(r, cookie, sizeof cookie) && !auth_check_same_origin(r))
        return;
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
