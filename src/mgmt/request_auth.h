/*
 * request_auth.h - authenticating a management request: which credential
 * it carries (a bearer access token, or the session cookie where its
 * route's row allows one), the Origin check of the browser surface, and
 * the answers when it does not authenticate (401, 403) or the database
 * cannot tell (503, 500).
 *
 * The database side (the lookup statements, the identity of a row,
 * scopes) is db/auth.h; this file is where a request meets it. Invariant:
 * a request that does not authenticate is answered here and its callback
 * never runs; the callback runs with the identity on the stack, valid
 * only during the call; no plaintext credential is logged.
 *
 * Called by the dispatcher (mgmt.c) and the few handlers that answer a
 * credential question themselves (sessions, password change, agent).
 */
#ifndef ENSIGN_REQUEST_AUTH_H
#define ENSIGN_REQUEST_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <libpq-fe.h>

#include "base/token.h"
#include "db/auth.h"

struct http_request;

/* Runs once the caller is known; who is valid only during the call. */
typedef void (*auth_cb)(struct http_request *r, const struct identity *who, void *arg);

/*
 * Authenticates the Authorization: Bearer access token of r (or the
 * session cookie where the route's row allows it: auth_credential_digest;
 * a session acts as its user with every scope). On success
 * calls cb (from the event loop, after one database round trip). Otherwise
 * answers r itself and never calls cb: 401 for a missing, malformed,
 * unknown, revoked or expired token, an SDK key, or a token of a deleted
 * user; 503 with Retry-After when the database is unavailable; 500 when the
 * query fails otherwise.
 */
void auth_access_token(struct http_request *r, auth_cb cb, void *arg);

/* The SHA-256 digest (hex) of r's bearer access token; false after
 * answering 401 (missing, malformed, an SDK key). */
bool auth_bearer_digest(struct http_request *r, char digest[TOKEN_DIGEST_HEX_LEN + 1]);

/*
 * The SHA-256 digest (hex) of r's credential, the one place where a route's
 * credential is chosen: the bearer access token, or, when the route's row
 * says ROUTE_AUTH_TOKEN_OR_COOKIE and r has no Authorization header, the
 * ensign_session cookie (*via_cookie true); a cookie with an unsafe method
 * (not GET, HEAD, OPTIONS or QUERY) must pass auth_same_origin. False
 * after answering 401 (missing, malformed, an SDK key) or 403 (Origin).
 */
bool auth_credential_digest(struct http_request *r, char digest[TOKEN_DIGEST_HEX_LEN + 1],
                            bool *via_cookie);

/*
 * Authenticates an internal operation (doc/api.md "Credentials"): the
 * access token as auth_access_token does, except that a deleted user's
 * token is accepted, then the Ensign-Internal-Key header, an unrevoked key
 * of internal_keys (by SHA-256 digest), in one round trip. Answers 401 for
 * a missing or invalid access token, then 403 (Problem) for a missing or
 * invalid key; calls cb only when both are good. Same query failures as
 * auth_access_token.
 */
void auth_internal(struct http_request *r, auth_cb cb, void *arg);

/*
 * Authenticates the routes a browser session may call (GET /v1/me, GET
 * /me, PUT /v1/session/password): the bearer access token when there
 * is an Authorization header, else the ensign_session cookie (a session
 * of sessions, by SHA-256 digest, not expired, of a user not deleted),
 * which acts as its user with every scope; *via_cookie tells which. The
 * same failures as auth_access_token, and 403 for a cookie with an unsafe
 * method (not GET, HEAD, OPTIONS or QUERY) that fails auth_same_origin.
 */
typedef void (*auth_either_cb)(struct http_request *r, const struct identity *who, bool via_cookie,
                               void *arg);
void auth_token_or_cookie(struct http_request *r, auth_either_cb cb, void *arg);

/*
 * The Origin check of the browser surface (doc/api.md "Credentials",
 * session cookie), the one place it is made: true when r carries Sec-Fetch-Site:
 * same-origin, or an Origin equal to the server's own (scheme://Host of r,
 * the scheme https with session_cookie_secure = 1 or X-Forwarded-Proto:
 * https, else http), or neither header (not a browser). False for a
 * foreign Origin, Origin "null", Sec-Fetch-Site cross-site, same-site or
 * none without the own Origin.
 */
bool auth_same_origin(const struct http_request *r);

/* auth_same_origin, answering 403 (and returning false) when it fails. */
bool auth_check_same_origin(struct http_request *r);

/* The value of the ensign_session cookie of r copied into out, or false. */
bool auth_session_cookie(const struct http_request *r, char *out, size_t outlen);

/* Answers 401 with WWW-Authenticate: Bearer and the surface's error body. */
void auth_send_unauthorized(struct http_request *r, const char *message);

/*
 * Answers a failed database query: 503 "database unavailable" with
 * Retry-After when db_unavailable(res) (logged at debug level: db.c logs
 * the outage itself), else 500 (logged as an error). error is
 * the text the db callback received (may be NULL).
 */
void auth_send_db_failure(struct http_request *r, const PGresult *res, const char *error);

#endif
