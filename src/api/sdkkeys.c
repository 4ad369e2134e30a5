/*
 * sdkkeys.c - SDK keys of an organization: /v1/orgs/{org}/sdk-keys.
 *
 * Owns the SDK key routes: create (201 {key} with the plaintext token),
 * list ({keys}, masked, oldest first) and revoke ({ok: true}). A key is
 * {id, name, environmentKey, prefix, lastFour, masked, lastUsedAt,
 * revokedAt, createdAt}; environmentKey is null once its environment is
 * gone.
 *
 * Invariants:
 *  - The secret (svc_sdk_ + 43 base62 characters, token.c) is generated
 *    here and stored only as its SHA-256 digest with its display prefix
 *    and last four characters. The plaintext is never sent to PostgreSQL
 *    (statement logs could keep it) and is added to the creation answer in
 *    C, the only time it is shown; the buffer is wiped afterwards.
 *  - Creation names an environment of the caller's organization by key:
 *    an unknown key is 404. One statement per request.
 *  - Revoking sets revokedAt once; revoking a revoked key is a no-op 200.
 *    An id that is not a uuid, or a key of another organization, is 404.
 *    Evaluation stops accepting the key within refresh_interval_ms (the
 *    revocation moves the configuration generation).
 *  - Roles (doc/api.md "Roles and scopes"): admin only, for reading too; the
 *    token needs the flags scope. Writes are rate limited by mgmt.c.
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/sdkkeys.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "mgmt/mgmt.h"
#include "base/token.h"

#define KEY_LAST_USED_AT MGMT_SQL_ISO("k.last_used_at")
#define KEY_REVOKED_AT MGMT_SQL_ISO("k.revoked_at")
#define KEY_CREATED_AT MGMT_SQL_ISO("k.created_at")

/* Key k with its environment env (which may be a NULL row). */
#define KEY_FORM                                                                                   \
    "json_build_object('id', k.id, 'name', k.name, 'environmentKey', env.key,"                     \
    " 'prefix', k.prefix, 'lastFour', k.last_four,"                                                \
    " 'masked', k.prefix || chr(8230) || k.last_four,"                                             \
    " 'lastUsedAt', " KEY_LAST_USED_AT ", 'revokedAt', " KEY_REVOKED_AT ","                        \
    " 'createdAt', " KEY_CREATED_AT ")"

/* $1 org id. */
static const char LIST_SQL[] =
    "SELECT 200 AS status, json_build_object('keys', COALESCE(json_agg(" KEY_FORM
    " ORDER BY k.created_at, k.id), '[]'::json))::text AS body, NULL::text AS message"
    " FROM sdk_keys k LEFT JOIN environments env ON env.id = k.environment_id"
    " WHERE k.org_id = $1";

/* clang-format off */

/* $1 org id, $2 environment key, $3 name, $4 digest, $5 prefix, $6 last
 * four, $7 creating user or NULL, $8 audit actor. No row: no such
 * environment. */
static const char CREATE_SQL[] =
    "WITH k AS (INSERT INTO sdk_keys (org_id, environment_id, name, token_digest, prefix,"
    "                                 last_four, created_by_user_id)"
    "           SELECT $1, e.id, $3, $4, $5, $6, $7 FROM environments e"
    "            WHERE e.org_id = $1 AND e.key = $2 RETURNING *),"
    " aud AS (" AUDIT_INSERT("(SELECT 'sdk_key.created' AS action,"
                             " 'Created SDK key ' || k.name || ' (' || k.prefix || ') for '"
                             " || $2 AS summary, 'sdk-keys/' || k.id AS location FROM k) AS s",
                             "$8") ")"
    " SELECT 201 AS status, json_build_object('key', " KEY_FORM ")::text AS body,"
    " NULL::text AS message FROM k JOIN environments env ON env.id = k.environment_id";

/* $1 org id, $2 key id, $3 audit actor. Only a key not yet revoked makes
 * an event. */
static const char REVOKE_SQL[] =
    "WITH k AS (SELECT id, name, prefix, revoked_at FROM sdk_keys"
    "            WHERE org_id = $1 AND id = $2 FOR UPDATE),"
    " u AS (UPDATE sdk_keys SET revoked_at = now()"
    "        WHERE id IN (SELECT id FROM k WHERE revoked_at IS NULL) RETURNING id, name, prefix),"
    " aud AS (" AUDIT_INSERT("(SELECT 'sdk_key.revoked' AS action,"
                             " 'Revoked SDK key ' || u.name || ' (' || u.prefix || ')' AS summary,"
                             " 'sdk-keys/' || u.id AS location FROM u) AS s", "$3") ")"
    " SELECT 200 AS status, '{\"ok\": true}' AS body, NULL::text AS message FROM k";

/* clang-format on */

/* A creation in flight: the plaintext waits here for the answer. */
struct sdkkey_creation {
    struct http_request *r;
    struct token_secret secret; /* token.h token_mint */
};

static void creation_free(struct sdkkey_creation *c)
{
    explicit_bzero(c->secret.token, sizeof c->secret.token);
    free(c);
}

/* Adds the token to the {key} body of a 201 row and sends it; false when
 * the row is anything else. */
static bool send_with_token(struct sdkkey_creation *c, const PGresult *res)
{
    if (!db_result_ok(res) || PQntuples(res) != 1 || PQnfields(res) < 2 ||
        strcmp(PQgetvalue(res, 0, 0), "201") != 0)
        return false;
    struct json_object *body = json_tokener_parse(PQgetvalue(res, 0, 1)), *key;
    if (body == NULL || !json_object_object_get_ex(body, "key", &key)) {
        json_object_put(body);
        return false;
    }
    json_object_object_add(key, "token", json_object_new_string(c->secret.token));
    http_send_json(c->r, 201, body);
    return true;
}

static void on_created(PGresult *res, const char *error, void *arg)
{
    struct sdkkey_creation *c = arg;
    if (!send_with_token(c, res))
        mgmt_answer(c->r, res, error, "environment not found");
    creation_free(c);
}

/* Generates the secret and queues the insert; answers r on failure. */
static void insert_key(struct http_request *r, const struct mgmt_ctx *ctx, const char *name,
                       const char *environment)
{
    struct sdkkey_creation *c = calloc(1, sizeof *c);
    if (c == NULL || token_mint(TOKEN_PREFIX_SDK, &c->secret) != 0) {
        free(c);
        http_send_error(r, 500, "cannot generate an SDK key");
        return;
    }
    c->r = r;
    const char *creator = ctx->actor_user_id[0] != '\0' ? ctx->actor_user_id : NULL;
    const char *params[] = {ctx->org_id,      environment,     name,    c->secret.digest,
                            c->secret.prefix, c->secret.last4, creator, ctx->audit_actor};
    if (mgmt_query(r, CREATE_SQL, 8, params, on_created, c) != 0)
        creation_free(c);
}

void sdkkeys_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    /* The row's schema checked the body (name 1 to 120 characters,
     * environment any length: a key no environment has is a 404, not a 422). */
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    struct json_object *name, *environment;
    json_object_object_get_ex(body, "name", &name);
    json_object_object_get_ex(body, "environment", &environment);
    insert_key(r, ctx, json_object_get_string(name), json_object_get_string(environment));
    json_object_put(body);
}

static void answer_key(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, "SDK key not found");
}

void sdkkeys_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id};
    mgmt_query(r, LIST_SQL, 1, params, mgmt_answer_cb, r);
}

void sdkkeys_revoke(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *id = mgmt_uuid_param(r, "id", "SDK key not found");
    if (id == NULL)
        return;
    const char *params[] = {ctx->org_id, id, ctx->audit_actor};
    mgmt_query(r, REVOKE_SQL, 3, params, answer_key, r);
}

/* ---- schemas ---- */

#define KEY_PROPERTIES                                                                             \
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},\"name\":{\"type\":\"string\"},"             \
    "\"environmentKey\":{\"type\":[\"string\",\"null\"]},"                                         \
    "\"prefix\":{\"type\":\"string\"},\"lastFour\":{\"type\":\"string\"},"                         \
    "\"masked\":{\"type\":\"string\"},"                                                            \
    "\"lastUsedAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"},"                    \
    "\"revokedAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"},"                     \
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"}"

#define KEY_REQUIRED                                                                               \
    "\"id\",\"name\",\"environmentKey\",\"prefix\",\"lastFour\",\"masked\",\"lastUsedAt\","        \
    "\"revokedAt\",\"createdAt\""

const char sdkkeys_create_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[\"name\",\"environment\"],\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":120},"
    "\"environment\":{\"type\":\"string\",\"minLength\":1,"
    "\"description\":\"The key of an environment of the organization.\"}}}";

const char sdkkeys_created_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"key\"],"
    "\"properties\":{\"key\":{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[" KEY_REQUIRED ",\"token\"],\"properties\":{" KEY_PROPERTIES ","
    "\"token\":{\"type\":\"string\",\"description\":\"The plaintext SDK key (svc_sdk_...), "
    "returned only here.\"}}}}}";

const char sdkkeys_list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"keys\"],"
    "\"properties\":{\"keys\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"additionalProperties\":false,\"required\":[" KEY_REQUIRED "],"
    "\"properties\":{" KEY_PROPERTIES "}}}}}";
