/*
 * auth.c - access-token authentication for management routes, token
 * scopes, and the answer to a failed database query.
 *
 * Owns the token lookup statement. A bearer credential is checked for the
 * svc_oat_ shape before any query (an SDK key or garbage never reaches the
 * database), then its SHA-256 digest is looked up in one statement that
 * also touches last_used_at. To keep busy tokens from rewriting their row
 * (and queueing on its lock) on every request, last_used_at is written only
 * when it is unset or more than a minute old: listings show it to the
 * minute.
 *
 * Invariants: the plaintext token is never logged or stored; a request that
 * does not authenticate is answered here and its callback never runs; the
 * callback runs with the identity on the stack, valid only during the call.
 *
 * Owns the one Origin check of the browser surface (auth_same_origin):
 * the login route calls it, and every request authenticated by the
 * session cookie with an unsafe method passes it here, before the
 * session is looked up (doc/api.md "Credentials", session cookie).
 *
 * Which credential a request may use is read from its route's row
 * (router.h auth): auth_credential_digest is the one place that decides,
 * for the dispatcher (mgmt.c) and auth_access_token alike.
 *
 * Called by management handlers through auth_access_token, and by the
 * management dispatcher (api/mgmt.c).
 */
#include "db/auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/config.h"
#include "db/db.h"
#include "http/http.h"
#include "base/log.h"
#include "base/token.h"
#include "http/server.h"

/*
 * $1: token digest. Rows: id, kind, user_id, org_id, scopes, full_access.
 * A personal token of a deleted (or missing) user does not match.
 */
static const char TOKEN_LOOKUP_SQL[] =
    "WITH " AUTH_TOKEN_CTE " SELECT " AUTH_TOKEN_COLUMNS " FROM token";

/*
 * $1: token digest, $2: internal key digest ("" when absent). As above,
 * deleted users included, plus key_ok; touches nothing.
 */
static const char INTERNAL_LOOKUP_SQL[] =
    "SELECT t.id, t.kind, t.user_id, t.org_id, t.scopes, t.full_access,"
    "       EXISTS (SELECT 1 FROM internal_keys k"
    "                WHERE k.key_digest = $2 AND k.revoked_at IS NULL) AS key_ok"
    "  FROM access_tokens t"
    "  LEFT JOIN users u ON u.id = t.user_id"
    " WHERE t.token_digest = $1"
    "   AND t.revoked_at IS NULL"
    "   AND (t.expires_at IS NULL OR t.expires_at > now())"
    "   AND (t.kind = 'organization' OR u.id IS NOT NULL)";

/* $1: cookie digest. A session acts as its user with full access. */
static const char SESSION_LOOKUP_SQL[] =
    "WITH s AS (UPDATE sessions x SET last_used_at = now()"
    "            FROM users u"
    "           WHERE x.cookie_digest = $1 AND x.expires_at > now()"
    "             AND u.id = x.user_id AND NOT u.deleted"
    "           RETURNING x.id, x.user_id)"
    " SELECT s.id, 'personal', s.user_id, NULL, '{}', true FROM s";

enum { COL_ID, COL_KIND, COL_USER_ID, COL_ORG_ID, COL_SCOPES, COL_FULL_ACCESS, COL_KEY_OK };

static const char *const scope_names[] = {"flags", "orgs",   "projects",     "members",
                                          "audit", "tokens", "notifications"};

struct auth_request {
    struct http_request *r;
    auth_cb cb;
    auth_either_cb either_cb;
    void *arg;
    bool via_cookie; /* a session cookie, not a token */
    bool internal;   /* the Ensign-Internal-Key must be valid too */
};

/* ---- scopes ---- */

unsigned auth_scope_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof scope_names / sizeof scope_names[0]; i++) {
        if (strcmp(name, scope_names[i]) == 0)
            return 1u << i;
    }
    return 0;
}

int auth_scopes_parse(const struct json_object *scopes, unsigned *read_mask, unsigned *write_mask,
                      const char **bad_key)
{
    *read_mask = 0;
    *write_mask = 0;
    *bad_key = NULL;
    if (!json_object_is_type(scopes, json_type_object))
        return -1;
    int rc = 0;
    json_object_object_foreach((struct json_object *)scopes, key, value)
    {
        unsigned bit = auth_scope_from_name(key);
        const char *level =
            json_object_is_type(value, json_type_string) ? json_object_get_string(value) : "";
        bool write = strcmp(level, "write") == 0;
        if (bit == 0 || (!write && strcmp(level, "read") != 0)) {
            if (rc == 0)
                *bad_key = key;
            rc = -1;
            continue;
        }
        *read_mask |= bit;
        if (write)
            *write_mask |= bit;
    }
    return rc;
}

struct json_object *auth_scopes_json(unsigned read_mask, unsigned write_mask)
{
    struct json_object *scopes = json_object_new_object();
    for (size_t i = 0; i < sizeof scope_names / sizeof scope_names[0]; i++) {
        unsigned bit = 1u << i;
        if ((write_mask | read_mask) & bit)
            json_object_object_add(scopes, scope_names[i],
                                   json_object_new_string(write_mask & bit ? "write" : "read"));
    }
    return scopes;
}

bool auth_scope_allows(const struct identity *who, unsigned scope, bool write)
{
    if (who->full_access)
        return true;
    return ((write ? who->write_mask : who->read_mask) & scope) == scope && scope != 0;
}

/* ---- answers ---- */

void auth_send_unauthorized(struct http_request *r, const char *message)
{
    http_add_header(r, "WWW-Authenticate", "Bearer");
    http_send_error(r, 401, message);
}

void auth_send_db_failure(struct http_request *r, const PGresult *res, const char *error)
{
    const char *why = error ? error : res ? PQresultErrorMessage(res) : "no result";
    int why_len = (int)strcspn(why, "\n"); /* one log line */
    if (db_unavailable(res)) {
        log_debug("%s %s: database unavailable: %.*s", router_method_name(r->method), r->path,
                  why_len, why);
        http_add_header(r, "Retry-After", "1");
        http_send_error(r, 503, "database unavailable, try again shortly");
        return;
    }
    log_error("%s %s: query failed: SQLSTATE %s: %.*s", router_method_name(r->method), r->path,
              db_sqlstate(res), why_len, why);
    http_send_error(r, 500, "internal error");
}

/* ---- lookup ---- */

static void copy_field(char *out, size_t outlen, const PGresult *res, int col)
{
    snprintf(out, outlen, "%s", PQgetisnull(res, 0, col) ? "" : PQgetvalue(res, 0, col));
}

void auth_identity_from_row(struct identity *who, const PGresult *res)
{
    memset(who, 0, sizeof *who);
    bool org = strcmp(PQgetvalue(res, 0, COL_KIND), "organization") == 0;
    who->kind = org ? IDENTITY_ORG : IDENTITY_USER;
    copy_field(who->token_id, sizeof who->token_id, res, COL_ID);
    if (org)
        copy_field(who->org_id, sizeof who->org_id, res, COL_ORG_ID);
    else
        copy_field(who->user_id, sizeof who->user_id, res, COL_USER_ID);
    who->full_access = strcmp(PQgetvalue(res, 0, COL_FULL_ACCESS), "t") == 0;
    struct json_object *scopes = json_tokener_parse(PQgetvalue(res, 0, COL_SCOPES));
    const char *bad_key;
    if (auth_scopes_parse(scopes, &who->read_mask, &who->write_mask, &bad_key) != 0)
        log_warn("access token %s: ignoring invalid scope %s", who->token_id,
                 bad_key ? bad_key : "object");
    json_object_put(scopes);
}

/* The answer of every lookup: a token, an internal operation (key_ok
 * column), or a session cookie. */
static void on_identity_row(PGresult *res, const char *error, void *arg)
{
    struct auth_request ar = *(struct auth_request *)arg;
    free(arg);
    if (!db_result_ok(res)) {
        auth_send_db_failure(ar.r, res, error);
        return;
    }
    if (PQntuples(res) != 1) {
        auth_send_unauthorized(ar.r, ar.via_cookie ? "invalid or expired session"
                                                   : "invalid access token");
        return;
    }
    if (ar.internal && strcmp(PQgetvalue(res, 0, COL_KEY_OK), "t") != 0) {
        http_send_error(ar.r, 403, "internal operation: missing or invalid Ensign-Internal-Key");
        return;
    }
    struct identity who;
    auth_identity_from_row(&who, res);
    if (ar.either_cb != NULL)
        ar.either_cb(ar.r, &who, ar.via_cookie, ar.arg);
    else
        ar.cb(ar.r, &who, ar.arg);
}

bool auth_bearer_digest(struct http_request *r, char digest[TOKEN_DIGEST_HEX_LEN + 1])
{
    const char *token = http_bearer(r);
    if (token == NULL) {
        auth_send_unauthorized(r, "missing access token");
        return false;
    }
    if (token_well_formed(token, TOKEN_PREFIX_SDK)) {
        auth_send_unauthorized(r, "invalid access token: an SDK key is not accepted here");
        return false;
    }
    if (!token_well_formed(token, TOKEN_PREFIX_ACCESS)) {
        auth_send_unauthorized(r, "invalid access token");
        return false;
    }
    token_digest_hex(token, strlen(token), digest);
    return true;
}

/* Queues sql with params for ar (freed when it cannot be queued). */
static void lookup(struct http_request *r, const char *sql, int nparams, const char *const *params,
                   db_result_cb cb, struct auth_request init)
{
    struct auth_request *ar = malloc(sizeof *ar);
    if (ar == NULL) {
        auth_send_db_failure(r, NULL, "out of memory");
        return;
    }
    *ar = init;
    if (db_query(r->server->db, sql, nparams, params, cb, ar) != 0) {
        free(ar);
        auth_send_db_failure(r, NULL, "no database connection");
    }
}

/* The cookie's digest, after its shape and (unsafe methods) Origin checks. */
static bool cookie_digest(struct http_request *r, const char *cookie,
                          char digest[TOKEN_DIGEST_HEX_LEN + 1])
{
    if (!token_well_formed(cookie, TOKEN_PREFIX_SESSION)) {
        auth_send_unauthorized(r, "invalid or expired session");
        return false;
    }
    bool safe = (r->method & (METHOD_GET | METHOD_HEAD | METHOD_OPTIONS | METHOD_QUERY)) != 0;
    if (!safe && !auth_check_same_origin(r))
        return false;
    token_digest_hex(cookie, strlen(cookie), digest);
    return true;
}

/* True when r carries no Authorization header but a session cookie (into cookie). */
static bool by_cookie(const struct http_request *r, char *cookie, size_t len)
{
    return http_header(r, "Authorization") == NULL && auth_session_cookie(r, cookie, len);
}

bool auth_credential_digest(struct http_request *r, char digest[TOKEN_DIGEST_HEX_LEN + 1],
                            bool *via_cookie)
{
    char cookie[TOKEN_MAX_LEN];
    const struct route *route = r->match.route;
    *via_cookie = route != NULL && route->auth == ROUTE_AUTH_TOKEN_OR_COOKIE &&
                  by_cookie(r, cookie, sizeof cookie);
    if (*via_cookie)
        return cookie_digest(r, cookie, digest);
    return auth_bearer_digest(r, digest);
}

void auth_access_token(struct http_request *r, auth_cb cb, void *arg)
{
    char digest[TOKEN_DIGEST_HEX_LEN + 1];
    bool via_cookie;
    if (!auth_credential_digest(r, digest, &via_cookie))
        return;
    const char *params[] = {digest};
    lookup(r, TOKEN_LOOKUP_SQL, 1, params, on_identity_row,
           (struct auth_request){.r = r, .cb = cb, .arg = arg, .via_cookie = via_cookie});
}

/* ---- internal operations ---- */

void auth_internal(struct http_request *r, auth_cb cb, void *arg)
{
    char digest[TOKEN_DIGEST_HEX_LEN + 1], key_digest[TOKEN_DIGEST_HEX_LEN + 1] = "";
    if (!auth_bearer_digest(r, digest))
        return;
    const char *key = http_header(r, "Ensign-Internal-Key");
    if (key != NULL && token_well_formed(key, TOKEN_PREFIX_INTERNAL))
        token_digest_hex(key, strlen(key), key_digest);
    const char *params[] = {digest, key_digest};
    lookup(r, INTERNAL_LOOKUP_SQL, 2, params, on_identity_row,
           (struct auth_request){.r = r, .cb = cb, .arg = arg, .internal = true});
}

/* ---- the Origin check ---- */

/* scheme://Host of r: https with session_cookie_secure = 1 or when a proxy
 * says X-Forwarded-Proto: https (a header a cross-site browser request
 * cannot carry without a preflight), else http. False without a Host. */
static bool own_origin(const struct http_request *r, char *out, size_t outlen)
{
    const char *host = http_header(r, "Host");
    bool https =
        (r->server != NULL && r->server->cfg != NULL && r->server->cfg->session_cookie_secure) ||
        http_forwarded_https(r);
    if (host == NULL || host[0] == '\0')
        return false;
    int n = snprintf(out, outlen, "%s://%s", https ? "https" : "http", host);
    return n > 0 && (size_t)n < outlen;
}

bool auth_same_origin(const struct http_request *r)
{
    const char *site = http_header(r, "Sec-Fetch-Site");
    const char *origin = http_header(r, "Origin");
    if (site == NULL && origin == NULL)
        return true; /* not a browser (curl, an SDK, a script) */
    if (site != NULL && strcasecmp(site, "same-origin") == 0)
        return true;
    char own[300];
    return origin != NULL && own_origin(r, own, sizeof own) && strcasecmp(origin, own) == 0;
}

bool auth_check_same_origin(struct http_request *r)
{
    if (auth_same_origin(r))
        return true;
    http_send_error(r, 403, "cross-origin request refused: Origin is not this server's");
    return false;
}

/* ---- session cookie ---- */

bool auth_session_cookie(const struct http_request *r, char *out, size_t outlen)
{
    static const char name[] = "ensign_session=";
    const char *cookies = http_header(r, "Cookie");
    for (const char *p = cookies; p != NULL && *p != '\0';) {
        p += strspn(p, " ;");
        size_t len = strcspn(p, ";");
        if (strncmp(p, name, sizeof name - 1) == 0) {
            size_t value_len = len - (sizeof name - 1);
            if (value_len + 1 > outlen)
                return false;
            memcpy(out, p + sizeof name - 1, value_len);
            out[value_len] = '\0';
            return true;
        }
        p += len;
    }
    return false;
}

void auth_token_or_cookie(struct http_request *r, auth_either_cb cb, void *arg)
{
    char digest[TOKEN_DIGEST_HEX_LEN + 1], cookie[TOKEN_MAX_LEN];
    struct auth_request init = {.r = r, .either_cb = cb, .arg = arg};
    if (by_cookie(r, cookie, sizeof cookie)) {
        if (!cookie_digest(r, cookie, digest))
            return;
        const char *params[] = {digest};
        init.via_cookie = true;
        lookup(r, SESSION_LOOKUP_SQL, 1, params, on_identity_row, init);
        return;
    }
    if (!auth_bearer_digest(r, digest))
        return;
    const char *params[] = {digest};
    lookup(r, TOKEN_LOOKUP_SQL, 1, params, on_identity_row, init);
}
