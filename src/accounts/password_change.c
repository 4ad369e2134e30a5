/*
 * password_change.c - PUT /v1/session/password {current, new}
 * (doc/choices.md "Internal operations, sessions, notifications").
 *
 * The caller is a session cookie (with the Origin check of every unsafe
 * method a cookie authenticates, auth.c) or a personal access token of the
 * user; an organization token is a 403 (it has no password). `current` is
 * 1 to 1024 characters, `new` 8 to 1024 (the row's schema: 422 with errors
 * otherwise). Each
 * attempt takes one from the account's login budget (login_limit.h: 429
 * when spent), so guessing `current` here is no faster than logging in.
 * The check of `current` and the hash of `new` run on the worker's helper
 * threads (password_pool.h; 503 with Retry-After when they are all taken);
 * a wrong `current` is a 403. Then one statement stores the new hash (only
 * if the old one is still in place: 409 when another change came first)
 * and deletes every other session of the user: the caller's own session,
 * when it came with a cookie, stays. Answers 200 {"ok": true}.
 *
 * The steps, each a callback on the worker's loop: the dispatcher (the
 * identity and the body's schema), the user row (email, hash), the check of
 * current, the new hash, the update.
 * One struct change carries them and is freed (wiped) by whichever step
 * answers.
 */
#include "accounts/password_change.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/auth.h"
#include "mgmt/request_auth.h"
#include "http/http.h"
#include "accounts/login_limit.h"
#include "mgmt/mgmt.h"
#include "db/password.h"
#include "db/password_pool.h"
#include "http/server.h"
#include "accounts/sessions.h"
#include "base/token.h"

/* $1 user. */
static const char USER_SQL[] =
    "SELECT email, password_hash FROM users WHERE id = $1 AND NOT deleted";

/* $1 user, $2 new hash, $3 the hash `current` was checked against, $4 the
 * caller's session digest ("" for a token): the sessions that end. */
static const char UPDATE_SQL[] =
    "WITH u AS (UPDATE users SET password_hash = $2, updated_at = now()"
    "            WHERE id = $1 AND NOT deleted AND password_hash = $3 RETURNING id),"
    " gone AS (DELETE FROM sessions s USING u WHERE s.user_id = u.id AND s.cookie_digest <> $4)"
    " SELECT id FROM u";

struct change {
    struct http_request *r;
    char user_id[AUTH_UUID_LEN + 1];
    char keep_digest[TOKEN_DIGEST_HEX_LEN + 1]; /* the caller's session, or "" */
    char old_hash[PASSWORD_HASH_MAX];
    char current[PASSWORD_MAX_BYTES + 1];
    char next[PASSWORD_MAX_BYTES + 1];
};

static void free_change(struct change *c)
{
    explicit_bzero(c, sizeof *c);
    free(c);
}

static void on_updated(PGresult *res, const char *error, void *arg)
{
    struct change *c = arg;
    if (!db_result_ok(res))
        auth_send_db_failure(c->r, res, error);
    else if (PQntuples(res) != 1)
        http_send_error(c->r, 409, "the password was changed meanwhile: try again");
    else
        http_send_json_text(c->r, 200, "{\"ok\":true}");
    free_change(c);
}

static void on_new_hash(enum password_outcome outcome, const char *hash, void *arg)
{
    struct change *c = arg;
    if (outcome != PASSWORD_HASHED) {
        if (outcome == PASSWORD_CANCELLED)
            sessions_send_busy(c->r);
        else
            http_send_error(c->r, 500, "cannot hash the new password");
        free_change(c);
        return;
    }
    const char *params[] = {c->user_id, hash, c->old_hash, c->keep_digest};
    if (mgmt_query(c->r, UPDATE_SQL, 4, params, on_updated, c) != 0)
        free_change(c);
}

static void on_current_checked(enum password_outcome outcome, const char *hash, void *arg)
{
    (void)hash;
    struct change *c = arg;
    if (outcome != PASSWORD_MATCH || c->old_hash[0] == '\0') {
        if (outcome == PASSWORD_CANCELLED)
            sessions_send_busy(c->r);
        else
            http_send_error(c->r, 403, "the current password is wrong");
        free_change(c);
        return;
    }
    int rc = password_pool_hash(c->r->server->passwords, c->next, on_new_hash, c);
    explicit_bzero(c->next, sizeof c->next);
    if (rc != 0) {
        sessions_send_busy(c->r);
        free_change(c);
    }
}

static void on_user(PGresult *res, const char *error, void *arg)
{
    struct change *c = arg;
    struct http_request *r = c->r;
    if (!db_result_ok(res)) {
        auth_send_db_failure(r, res, error);
        free_change(c);
        return;
    }
    if (PQntuples(res) != 1) { /* deleted since the identity was read */
        auth_send_unauthorized(r, "invalid access token");
        free_change(c);
        return;
    }
    if (!login_limit_check_account(r, PQgetvalue(res, 0, 0))) {
        free_change(c);
        return;
    }
    /* A user without a password: checked against the dummy, never matches. */
    bool has_hash = !PQgetisnull(res, 0, 1);
    if (has_hash)
        snprintf(c->old_hash, sizeof c->old_hash, "%s", PQgetvalue(res, 0, 1));
    int rc =
        password_pool_verify(r->server->passwords, has_hash ? c->old_hash : PASSWORD_DUMMY_HASH,
                             c->current, on_current_checked, c);
    explicit_bzero(c->current, sizeof c->current);
    if (rc != 0) {
        sessions_send_busy(r);
        free_change(c);
    }
}

/* A new change of the body's passwords (the row's schema checked them:
 * current 1 to 1024 characters, new 8 to 1024), or NULL after answering. */
static struct change *change_of(struct http_request *r, const struct json_object *body)
{
    struct change *c = calloc(1, sizeof *c);
    if (c == NULL) {
        http_send_error(r, 500, "out of memory");
        return NULL;
    }
    c->r = r;
    snprintf(c->current, sizeof c->current, "%s", mgmt_body_text(body, "current"));
    snprintf(c->next, sizeof c->next, "%s", mgmt_body_text(body, "new"));
    return c;
}

void password_change_put(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    struct change *c = NULL;
    if (ctx->who.kind != IDENTITY_USER)
        http_send_error(r, 403, "an organization token has no password to change");
    else
        c = change_of(r, body);
    json_object_put(body);
    if (c == NULL)
        return;
    snprintf(c->user_id, sizeof c->user_id, "%s", ctx->who.user_id);
    char cookie[TOKEN_MAX_LEN];
    if (ctx->via_cookie && auth_session_cookie(r, cookie, sizeof cookie))
        token_digest_hex(cookie, strlen(cookie), c->keep_digest);
    const char *params[] = {c->user_id};
    if (mgmt_query(r, USER_SQL, 1, params, on_user, c) != 0)
        free_change(c);
}
