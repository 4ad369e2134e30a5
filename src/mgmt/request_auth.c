/*
 * request_auth.c - authenticating a management request: the credential it
 * carries, the Origin check of the browser surface, and the answers when
 * it does not authenticate.
 *
 * A bearer credential is checked for the svc_oat_ shape before any query
 * (an SDK key or garbage never reaches the database); a session cookie for
 * the svc_ses_ shape and, with an unsafe method, the Origin check, before
 * its session is looked up. Which credential a request may use is read
 * from its route's row (router.h auth): auth_credential_digest is the one
 * place that decides, for the dispatcher (mgmt.c) and auth_access_token
 * alike. The lookups themselves are db/auth.c's.
 *
 * Invariants: the plaintext credential is never logged; a request that
 * does not authenticate is answered here and its callback never runs.
 *
 * Called by the dispatcher (mgmt.c), sessions.c, password_change.c, the
 * agent.
 */
#include "mgmt/request_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/config.h"
#include "base/log.h"
#include "base/token.h"
#include "db/db.h"
#include "http/http.h"
#include "http/server.h"

struct auth_request {
    struct http_request *r;
    auth_cb cb;
    auth_either_cb either_cb;
    void *arg;
    bool via_cookie; /* a session cookie, not a token */
    bool internal;   /* the Ensign-Internal-Key must be valid too */
};

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
    if (ar.internal && !auth_internal_key_ok(res)) {
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

/* Queues the lookup of digest for ar (freed when it cannot be queued). */
static void lookup(struct http_request *r, enum auth_lookup_kind kind, const char *digest,
                   const char *key_digest, struct auth_request init)
{
    struct auth_request *ar = malloc(sizeof *ar);
    if (ar == NULL) {
        auth_send_db_failure(r, NULL, "out of memory");
        return;
    }
    *ar = init;
    if (auth_lookup(r->server->db, kind, digest, key_digest, on_identity_row, ar) != 0) {
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
    lookup(r, AUTH_LOOKUP_TOKEN, digest, "",
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
    lookup(r, AUTH_LOOKUP_INTERNAL, digest, key_digest,
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
        init.via_cookie = true;
        lookup(r, AUTH_LOOKUP_SESSION, digest, "", init);
        return;
    }
    if (!auth_bearer_digest(r, digest))
        return;
    lookup(r, AUTH_LOOKUP_TOKEN, digest, "", init);
}
