/*
 * auth.h - who is calling: access-token authentication for management
 * routes, token scopes, and the answer when the database cannot tell.
 *
 * An access token (svc_oat_ + 43 base62) is looked up by the SHA-256 digest
 * of its whole plaintext in one database round trip, which also records
 * last_used_at. A personal token acts as its user, an organization token as
 * its organization with role admin (doc/api.md "Credentials"). Scopes are
 * the names of doc/api.md "Roles and scopes", each "read" or "write" (write
 * implies read); full access grants every scope.
 *
 * Called by management handlers (me.c and every /v1 and root-API
 * resource). Not linked into the core library.
 */
#ifndef ENSIGN_AUTH_H
#define ENSIGN_AUTH_H

#include <stdbool.h>
#include <json-c/json.h>
#include <libpq-fe.h>

#include "base/token.h"

struct http_request;

enum identity_kind { IDENTITY_USER, IDENTITY_ORG };

/* Scope bits; names "flags", "orgs", "projects", "members", "audit",
 * "tokens", "notifications". */
enum auth_scope {
    AUTH_SCOPE_FLAGS = 1u << 0,
    AUTH_SCOPE_ORGS = 1u << 1,
    AUTH_SCOPE_PROJECTS = 1u << 2,
    AUTH_SCOPE_MEMBERS = 1u << 3,
    AUTH_SCOPE_AUDIT = 1u << 4,
    AUTH_SCOPE_TOKENS = 1u << 5,
    AUTH_SCOPE_NOTIFICATIONS = 1u << 6
};
#define AUTH_SCOPE_ALL 0x7fu

#define AUTH_UUID_LEN 36

struct identity {
    enum identity_kind kind;
    char token_id[AUTH_UUID_LEN + 1];
    char user_id[AUTH_UUID_LEN + 1]; /* "" for an organization token */
    char org_id[AUTH_UUID_LEN + 1];  /* "" for a personal token */
    bool full_access;
    unsigned read_mask;  /* enum auth_scope bits; every write bit is set here too */
    unsigned write_mask; /* enum auth_scope bits */
};

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

/*
 * The credential lookup for a statement that goes on with what the caller
 * may see, so that authentication and the next question take one round
 * trip (mgmt.c): AUTH_TOKEN_CTE is the text of WITH items with $1 the
 * credential digest (auth_credential_digest), "token" (at most one row:
 * id, kind, user_id, org_id, scopes, full_access, last_used_at, name) of
 * a valid access token or of a live session of a user not deleted (which
 * acts as its user with full access), and "touched" / "touched_session"
 * (record last_used_at, at most once a minute). The digest of a bearer
 * (svc_oat_) and of a cookie (svc_ses_) cannot be confused: the shape is
 * checked before the digest is taken. AUTH_TOKEN_COLUMNS selects the
 * columns auth_identity_from_row reads, which must come first in the row.
 * No row means 401.
 */
#define AUTH_TOKEN_CTE                                                                             \
    "token AS ("                                                                                   \
    "  SELECT t.id, t.kind, t.user_id, t.org_id, t.scopes, t.full_access, t.last_used_at, t.name"  \
    "    FROM access_tokens t"                                                                     \
    "    LEFT JOIN users u ON u.id = t.user_id"                                                    \
    "   WHERE t.token_digest = $1"                                                                 \
    "     AND t.revoked_at IS NULL"                                                                \
    "     AND (t.expires_at IS NULL OR t.expires_at > now())"                                      \
    "     AND (t.kind = 'organization' OR (u.id IS NOT NULL AND NOT u.deleted))"                   \
    "  UNION ALL"                                                                                  \
    "  SELECT s.id, 'personal', s.user_id, NULL, '{}'::jsonb, true, s.last_used_at, NULL"          \
    "    FROM sessions s JOIN users u ON u.id = s.user_id"                                         \
    "   WHERE s.cookie_digest = $1 AND s.expires_at > now() AND NOT u.deleted"                     \
    "), touched AS ("                                                                              \
    "  UPDATE access_tokens a SET last_used_at = now()"                                            \
    "    FROM token"                                                                               \
    "   WHERE a.id = token.id"                                                                     \
    "     AND (token.last_used_at IS NULL"                                                         \
    "          OR token.last_used_at < now() - interval '1 minute')"                               \
    "), touched_session AS ("                                                                      \
    "  UPDATE sessions x SET last_used_at = now()"                                                 \
    "    FROM token"                                                                               \
    "   WHERE x.id = token.id"                                                                     \
    "     AND (token.last_used_at IS NULL"                                                         \
    "          OR token.last_used_at < now() - interval '1 minute')"                               \
    ")"

#define AUTH_TOKEN_COLUMNS                                                                         \
    "token.id, token.kind, token.user_id, token.org_id, token.scopes, token.full_access"
#define AUTH_TOKEN_NCOLUMNS 6

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

/* The identity of row 0 of a result whose first columns are
 * AUTH_TOKEN_COLUMNS. */
void auth_identity_from_row(struct identity *who, const PGresult *res);

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

/* True when who may use scope (one enum auth_scope bit) for reading or writing. */
bool auth_scope_allows(const struct identity *who, unsigned scope, bool write);

/* The bit of a scope name, or 0 for an unknown name. */
unsigned auth_scope_from_name(const char *name);

/*
 * Reads a scopes object ({"flags": "write", "audit": "read"}) into masks.
 * Returns 0, or -1 when scopes is not an object or has an unknown name or a
 * value other than "read"/"write" (*bad_key then names it, or is NULL for
 * a non-object); the masks hold the valid entries either way.
 */
int auth_scopes_parse(const struct json_object *scopes, unsigned *read_mask, unsigned *write_mask,
                      const char **bad_key);

/* The canonical scopes object of masks: {"flags": "write", "audit": "read"}
 * (write wins over read). Caller owns it. */
struct json_object *auth_scopes_json(unsigned read_mask, unsigned write_mask);

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
