/*
 * entities.c - known entities of an organization and their typed
 * attributes: /v1/orgs/{org}/entities.
 *
 * Owns the entity routes: create (201 {entity}, 409 when the key exists),
 * list ({entities} ordered by key), read ({entity}), update (any of label,
 * attributes; attributes replaces the whole set; an empty object changes
 * nothing and answers the entity as it is) and delete ({ok: true}). An
 * entity is {id, key, label, attributes: [{key, dataType, labels}],
 * createdAt, updatedAt} (doc/choices.md "Records").
 *
 * Invariants:
 *  - At most 100 attributes, keys 1 to 120 characters and unique within
 *    the entity, dataType string (the default), number or boolean, labels
 *    null or at most 200 strings of at most 120 characters. Attributes
 *    keep the order of the request. The row's request schema says all of
 *    it but uniqueness, and the dispatcher enforces it before a handler
 *    runs (src/mgmt/jsonschema.h); the handlers check the unique keys.
 *  - Each request is one statement building its JSON in PostgreSQL. A
 *    replacement deletes the attributes that are no longer named and
 *    upserts the others (keyed by (entity, key)), so the two parts of the
 *    statement never touch the same row.
 *  - Rules and segments name entity attributes in their conditions
 *    (doc/choices.md "Conditions"), checked when those are written. Changing or
 *    deleting an entity later is allowed: a condition whose attribute is
 *    no longer declared is compared as a plain context attribute.
 *  - Roles (doc/api.md "Roles and scopes"): viewer reads, member writes; the
 *    token needs the flags scope. Writes are rate limited by mgmt.c.
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/entities.h"

#include <string.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "mgmt/mgmt.h"
#include "mgmt/validate.h"

/* The entity e with the attributes JSON expression attributes. */
#define ENTITY_CREATED_AT MGMT_SQL_ISO("e.created_at")
#define ENTITY_UPDATED_AT MGMT_SQL_ISO("e.updated_at")
#define ENTITY_FORM(attributes)                                                                    \
    "json_build_object('id', e.id, 'key', e.key, 'label', e.label, 'attributes', " attributes      \
    ", 'createdAt', " ENTITY_CREATED_AT ", 'updatedAt', " ENTITY_UPDATED_AT ")"

/* The attributes of rows a (key, data_type, labels, sort_order), in order. */
#define ATTRIBUTES_OF(rows)                                                                        \
    "COALESCE((SELECT json_agg(json_build_object('key', a.key, 'dataType', a.data_type,"           \
    " 'labels', a.labels) ORDER BY a.sort_order, a.key) FROM " rows "), '[]'::json)"

#define STORED_ATTRIBUTES ATTRIBUTES_OF("entity_attributes a WHERE a.entity_id = e.id")

/* Attribute rows of the normalized JSON array $4 for the entities e. */
#define ATTRIBUTE_ROWS                                                                             \
    " SELECT e.id, x.item->>'key', x.item->>'dataType',"                                           \
    "  CASE WHEN jsonb_typeof(x.item->'labels') = 'array'"                                         \
    "   THEN ARRAY(SELECT l FROM jsonb_array_elements_text(x.item->'labels')"                      \
    "              WITH ORDINALITY AS t(l, n) ORDER BY n) END, x.n"                                \
    " FROM e, jsonb_array_elements($4::jsonb) WITH ORDINALITY AS x(item, n)"

#define STORED_ENTITY ENTITY_FORM(STORED_ATTRIBUTES)
#define INSERTED_ENTITY ENTITY_FORM(ATTRIBUTES_OF("put a"))
#define UPDATED_ENTITY                                                                             \
    ENTITY_FORM("CASE WHEN $4::jsonb IS NULL THEN " STORED_ATTRIBUTES                              \
                " ELSE " ATTRIBUTES_OF("put a") " END")

/* Inserts the attributes of $4 for the entities e, returning them as put. */
#define PUT_ATTRIBUTES                                                                             \
    " put AS (INSERT INTO entity_attributes"                                                       \
    "           (entity_id, key, data_type, labels, sort_order)" ATTRIBUTE_ROWS

/* $1 org id. */
static const char LIST_SQL[] =
    "SELECT 200 AS status,"
    " json_build_object('entities', COALESCE(json_agg(" STORED_ENTITY " ORDER BY e.key),"
    " '[]'::json))::text AS body, NULL::text AS message"
    " FROM entities e WHERE e.org_id = $1";

/* $1 org id, $2 key. */
static const char GET_SQL[] =
    "SELECT 200 AS status, json_build_object('entity', " STORED_ENTITY ")::text AS body,"
    " NULL::text AS message FROM entities e WHERE e.org_id = $1 AND e.key = $2";

/* clang-format off */

/* $1 org id, $2 key, $3 label, $4 normalized attributes, $5 audit actor. */
static const char CREATE_SQL[] =
    "WITH e AS (INSERT INTO entities (org_id, key, label) VALUES ($1, $2, $3)"
    "           ON CONFLICT (org_id, key) DO NOTHING RETURNING *)," PUT_ATTRIBUTES
    "         RETURNING key, data_type, labels, sort_order),"
    " aud AS (" AUDIT_INSERT("(SELECT 'entity.created' AS action,"
                             " 'Created entity ' || e.key AS summary,"
                             " 'entities/' || e.key AS location FROM e) AS s", "$5") ")"
    " SELECT 201 AS status, json_build_object('entity', " INSERTED_ENTITY ")::text AS body,"
    " NULL::text AS message FROM e"
    " UNION ALL SELECT 409, NULL, 'an entity with this key already exists'"
    " WHERE NOT EXISTS (SELECT 1 FROM e)";

/* $1 org id, $2 key, $3 label or NULL (keep), $4 normalized attributes or
 * NULL (keep), $5 audit actor. */
static const char UPDATE_SQL[] =
    "WITH e AS (UPDATE entities SET label = COALESCE($3, label), updated_at = now()"
    "            WHERE org_id = $1 AND key = $2 RETURNING *),"
    " gone AS (DELETE FROM entity_attributes d USING e"
    "           WHERE $4::jsonb IS NOT NULL AND d.entity_id = e.id"
    "             AND d.key NOT IN (SELECT i->>'key'"
    "                                 FROM jsonb_array_elements($4::jsonb) i))," PUT_ATTRIBUTES
    "         ON CONFLICT (entity_id, key) DO UPDATE SET data_type = EXCLUDED.data_type,"
    "           labels = EXCLUDED.labels, sort_order = EXCLUDED.sort_order"
    "         RETURNING key, data_type, labels, sort_order),"
    " aud AS (" AUDIT_INSERT("(SELECT 'entity.updated' AS action,"
                             " 'Updated entity ' || e.key AS summary,"
                             " 'entities/' || e.key AS location FROM e) AS s", "$5") ")"
    " SELECT 200 AS status, json_build_object('entity', " UPDATED_ENTITY ")::text AS body,"
    " NULL::text AS message FROM e";

/* $1 org id, $2 key, $3 audit actor. */
static const char DELETE_SQL[] =
    "WITH d AS (DELETE FROM entities WHERE org_id = $1 AND key = $2 RETURNING id, key),"
    " aud AS (" AUDIT_INSERT("(SELECT 'entity.deleted' AS action,"
                             " 'Deleted entity ' || d.key AS summary,"
                             " 'entities/' || d.key AS location FROM d) AS s", "$3") ")"
    " SELECT 200 AS status, '{\"ok\": true}' AS body, NULL::text AS message FROM d";

/* clang-format on */

static void answer_entity(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, "entity not found");
}

static void send_invalid(struct http_request *r, struct validate *v)
{
    http_send_validation_error(r, "validation failed", validate_take_errors(v));
}

/* ---- attributes ---- */

/* True when an earlier item of attributes has key. */
static bool key_seen(struct json_object *attributes, size_t before, const char *key)
{
    for (size_t i = 0; i < before; i++) {
        struct json_object *other =
            mgmt_body_member(json_object_array_get_idx(attributes, i), "key");
        if (strcmp(json_object_get_string(other), key) == 0)
            return true;
    }
    return false;
}

/*
 * The attributes array body.attributes (its shape checked by the row's
 * schema) as normalized JSON (every item {key, dataType, labels}, dataType
 * "string" when absent); NULL when absent, or after recording a duplicate
 * key (the one rule the schema cannot say).
 */
static struct json_object *checked_attributes(struct validate *v, const struct json_object *body)
{
    struct json_object *attributes = mgmt_body_member(body, "attributes");
    if (attributes == NULL)
        return NULL;
    struct json_object *normalized = json_object_new_array();
    size_t n = json_object_array_length(attributes);
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(attributes, i);
        const char *key = json_object_get_string(mgmt_body_member(item, "key"));
        struct json_object *type = mgmt_body_member(item, "dataType");
        if (key_seen(attributes, i, key)) {
            size_t mark = validate_push_field(v, "attributes");
            validate_push_index(v, i);
            validate_error(v, "key", "duplicate attribute key '%s'", key);
            validate_pop(v, mark);
        }
        struct json_object *out = json_object_new_object();
        json_object_object_add(out, "key", json_object_new_string(key));
        json_object_object_add(
            out, "dataType",
            json_object_new_string(type ? json_object_get_string(type) : "string"));
        json_object_object_add(out, "labels", json_object_get(mgmt_body_member(item, "labels")));
        json_object_array_add(normalized, out);
    }
    if (!validate_ok(v)) {
        json_object_put(normalized);
        return NULL;
    }
    return normalized;
}

static const char *json_text(struct json_object *value)
{
    return value == NULL ? NULL : json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN);
}

/* ---- handlers ---- */

void entities_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    struct validate v;
    validate_init(&v);
    const char *key = json_object_get_string(mgmt_body_member(body, "key"));
    const char *label = json_object_get_string(mgmt_body_member(body, "label"));
    struct json_object *attributes = checked_attributes(&v, body);
    if (!validate_ok(&v)) {
        send_invalid(r, &v);
    } else {
        const char *params[] = {ctx->org_id, key, label,
                                attributes == NULL ? "[]" : json_text(attributes),
                                ctx->audit_actor};
        mgmt_query(r, CREATE_SQL, 5, params, answer_entity, r);
    }
    validate_free(&v);
    json_object_put(attributes);
    json_object_put(body);
}

void entities_update(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    struct validate v;
    validate_init(&v);
    struct json_object *label_member = mgmt_body_member(body, "label");
    const char *label = label_member ? json_object_get_string(label_member) : NULL;
    struct json_object *attributes = checked_attributes(&v, body);
    const char *key = mgmt_param(r, "key");
    if (!validate_ok(&v)) {
        send_invalid(r, &v);
    } else if (json_object_object_length(body) == 0) {
        const char *params[] = {ctx->org_id, key};
        mgmt_query(r, GET_SQL, 2, params, answer_entity, r);
    } else {
        const char *params[] = {ctx->org_id, key, label, json_text(attributes), ctx->audit_actor};
        mgmt_query(r, UPDATE_SQL, 5, params, answer_entity, r);
    }
    validate_free(&v);
    json_object_put(attributes);
    json_object_put(body);
}

void entities_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id};
    mgmt_query(r, LIST_SQL, 1, params, mgmt_answer_cb, r);
}

void entities_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id, mgmt_param(r, "key")};
    mgmt_query(r, GET_SQL, 2, params, answer_entity, r);
}

void entities_delete(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id, mgmt_param(r, "key"), ctx->audit_actor};
    mgmt_query(r, DELETE_SQL, 3, params, answer_entity, r);
}

/* ---- schemas ---- */

#define ATTRIBUTE_SCHEMA                                                                           \
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"key\"],"                  \
    "\"description\":\"Keys are unique within the entity (checked by the handler).\","             \
    "\"properties\":{\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":120},"             \
    "\"dataType\":{\"type\":\"string\",\"enum\":[\"string\",\"number\",\"boolean\"],"              \
    "\"default\":\"string\"},"                                                                     \
    "\"labels\":{\"type\":[\"array\",\"null\"],\"maxItems\":200,"                                  \
    "\"items\":{\"type\":\"string\",\"maxLength\":120}}}}"

#define ATTRIBUTES_SCHEMA "{\"type\":\"array\",\"maxItems\":100,\"items\":" ATTRIBUTE_SCHEMA "}"

#define ENTITY_SCHEMA                                                                              \
    "{\"type\":\"object\",\"additionalProperties\":false,"                                         \
    "\"required\":[\"id\",\"key\",\"label\",\"attributes\",\"createdAt\",\"updatedAt\"],"          \
    "\"properties\":{\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"                            \
    "\"key\":{\"type\":\"string\"},\"label\":{\"type\":\"string\"},"                               \
    "\"attributes\":{\"type\":\"array\",\"items\":{\"type\":\"object\","                           \
    "\"additionalProperties\":false,\"required\":[\"key\",\"dataType\",\"labels\"],"               \
    "\"properties\":{\"key\":{\"type\":\"string\"},"                                               \
    "\"dataType\":{\"type\":\"string\",\"enum\":[\"string\",\"number\",\"boolean\"]},"             \
    "\"labels\":{\"type\":[\"array\",\"null\"],\"items\":{\"type\":\"string\"}}}}},"               \
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"                                \
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}}}"

const char entities_create_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"key\",\"label\"],"
    "\"properties\":{\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63,"
    "\"pattern\":\"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$\"},"
    "\"label\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200},"
    "\"attributes\":" ATTRIBUTES_SCHEMA "}}";

const char entities_update_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    "\"label\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200},"
    "\"attributes\":" ATTRIBUTES_SCHEMA "}}";

const char entities_one_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"entity\"],"
    "\"properties\":{\"entity\":" ENTITY_SCHEMA "}}";

const char entities_list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"entities\"],"
    "\"properties\":{\"entities\":{\"type\":\"array\",\"items\":" ENTITY_SCHEMA "}}}";
