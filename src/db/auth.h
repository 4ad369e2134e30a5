/*
 * auth.h - who is calling, as the database knows it: the statements that
 * look up an access token, a session or an internal key, the identity
 * they yield, and token scopes. Answers no HTTP: the request side (which
 * credential a request carries, the Origin check, the 401/503 answers) is
 * mgmt/request_auth.h.
 *
 * An access token (svc_oat_ + 43 base62) is looked up by the SHA-256 digest
 * of its whole plaintext in one database round trip, which also records
 * last_used_at. A personal token acts as its user, an organization token as
 * its organization with role admin (doc/api.md "Credentials"). Scopes are
 * the names of doc/api.md "Roles and scopes", each "read" or "write" (write
 * implies read); full access grants every scope.
 *
 * Called by mgmt/request_auth.c, the dispatcher (mgmt/mgmt.c) and the
 * token routes (scopes). Not linked into the core library.
 */
#ifndef ENSIGN_AUTH_H
#define ENSIGN_AUTH_H

#include <stdbool.h>
#include <json-c/json.h>
#include <libpq-fe.h>

#include "base/token.h"
#include "db/db.h"

struct db;

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

/* The identity of row 0 of a result whose first columns are
 * AUTH_TOKEN_COLUMNS. */
void auth_identity_from_row(struct identity *who, const PGresult *res);

/* Which statement auth_lookup runs. */
enum auth_lookup_kind {
    AUTH_LOOKUP_TOKEN,    /* an access token (or a session: AUTH_TOKEN_CTE) */
    AUTH_LOOKUP_SESSION,  /* a session cookie only; touches last_used_at */
    AUTH_LOOKUP_INTERNAL, /* an access token, deleted users' too, and the internal key */
};

/*
 * Queues the statement that authenticates a credential by its SHA-256
 * digest (hex) on db: cb gets a result of zero rows (unknown, revoked,
 * expired) or one row whose first columns are AUTH_TOKEN_COLUMNS
 * (auth_identity_from_row); AUTH_LOOKUP_INTERNAL also takes the digest of
 * the Ensign-Internal-Key header ("" when absent) and adds the column
 * auth_internal_key_ok reads. Returns db_query's answer (-1: not queued,
 * cb will not run).
 */
int auth_lookup(struct db *db, enum auth_lookup_kind kind, const char *digest,
                const char *internal_key_digest, db_result_cb cb, void *arg);

/* True when row 0 of an AUTH_LOOKUP_INTERNAL result has a valid internal key. */
bool auth_internal_key_ok(const PGresult *res);

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

#endif
