/*
 * auth.c - who is calling, as the database knows it: the statements that
 * look up an access token, a session cookie or an internal key by digest,
 * the identity of their row, and token scopes.
 *
 * A busy token does not rewrite its row (and queue on its lock) on every
 * request: last_used_at is written only when it is unset or more than a
 * minute old (listings show it to the minute). Answers no HTTP: the
 * request side is mgmt/request_auth.c, its only caller for lookups.
 *
 * Invariant: the plaintext of a credential never reaches this file, only
 * its SHA-256 digest.
 */
#include "db/auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "base/log.h"
#include "base/token.h"

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

bool auth_internal_key_ok(const PGresult *res)
{
    return PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, COL_KEY_OK), "t") == 0;
}

int auth_lookup(struct db *db, enum auth_lookup_kind kind, const char *digest,
                const char *internal_key_digest, db_result_cb cb, void *arg)
{
    const char *params[] = {digest, internal_key_digest};
    switch (kind) {
    case AUTH_LOOKUP_SESSION:
        return db_query(db, SESSION_LOOKUP_SQL, 1, params, cb, arg);
    case AUTH_LOOKUP_INTERNAL:
        return db_query(db, INTERNAL_LOOKUP_SQL, 2, params, cb, arg);
    case AUTH_LOOKUP_TOKEN:
    default:
        return db_query(db, TOKEN_LOOKUP_SQL, 1, params, cb, arg);
    }
}
