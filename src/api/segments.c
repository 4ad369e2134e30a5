/*
 * segments.c - reusable audiences of an organization: /v1/orgs/{org}/segments.
 *
 * Owns the segment routes: create (201 {segment}, 409 when the key exists),
 * list ({segments} ordered by key), read ({segment}), update (any of name,
 * description, conditions; an empty object changes nothing and answers the
 * segment as it is) and delete ({ok: true}).
 *
 * Invariants:
 *  - Every answer comes from one statement that builds the JSON body in
 *    PostgreSQL (mgmt.h's house result shape status/body/message).
 *  - The body's shape (members, types, lengths, the key pattern, at most 50
 *    conditions, none naming a segment) is the row's request schema, checked
 *    by the dispatcher before a handler runs (src/mgmt/jsonschema.h). The
 *    handler checks what depends on the operator and the database with
 *    validate.c (doc/choices.md "Conditions") before anything is written. An attribute path whose
 * first element names an entity
 *    ("user.plan") must name an attribute that entity declares; only
 *    when a condition has such a dotted path is the organization's entity
 *    declarations read first (one more round trip).
 *  - Deleting a segment that a targeting rule still references answers 409
 *    and deletes nothing (like a variant still referenced): remove or edit
 *    the rules first. The segment row is locked while the references are
 *    counted.
 *  - Roles (doc/api.md "Roles and scopes"): viewer reads, member writes; the
 *    token needs the flags scope. Writes are rate limited by mgmt.c.
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/segments.h"

#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "mgmt/mgmt.h"
#include "mgmt/validate.h"

#define SEGMENT_CREATED_AT MGMT_SQL_ISO("s.created_at")
#define SEGMENT_UPDATED_AT MGMT_SQL_ISO("s.updated_at")

#define SEGMENT_FORM                                                                               \
    "json_build_object('id', s.id, 'key', s.key, 'name', s.name,"                                  \
    " 'description', s.description, 'conditions', s.conditions,"                                   \
    " 'createdAt', " SEGMENT_CREATED_AT ", 'updatedAt', " SEGMENT_UPDATED_AT ")"

/* A list item: the segment and usedBy, the keys of the flags whose rules
 * use it (the dashboard's segment screen shows them; DELETE's 409 names
 * the same flags). */
#define SEGMENT_LIST_FORM                                                                          \
    "json_build_object('id', s.id, 'key', s.key, 'name', s.name,"                                  \
    " 'description', s.description, 'conditions', s.conditions,"                                   \
    " 'createdAt', " SEGMENT_CREATED_AT ", 'updatedAt', " SEGMENT_UPDATED_AT ","                   \
    " 'usedBy', (SELECT COALESCE(json_agg(DISTINCT f.key ORDER BY f.key), '[]'::json)"             \
    "              FROM rules r JOIN flags f ON f.id = r.flag_id"                                  \
    "             WHERE f.org_id = s.org_id"                                                       \
    "               AND r.conditions @> jsonb_build_array(jsonb_build_object('segment', s.key))))"

/* $1 org id. */
static const char LIST_SQL[] =
    "SELECT 200 AS status,"
    " json_build_object('segments', COALESCE(json_agg(" SEGMENT_LIST_FORM " ORDER BY s.key),"
    " '[]'::json))::text AS body, NULL::text AS message"
    " FROM segments s WHERE s.org_id = $1";

/* $1 org id, $2 key. */
static const char GET_SQL[] =
    "SELECT 200 AS status, json_build_object('segment', " SEGMENT_FORM ")::text AS body,"
    " NULL::text AS message FROM segments s WHERE s.org_id = $1 AND s.key = $2";

/* clang-format off */

/* $1 org id, $2 key, $3 name, $4 description, $5 conditions (JSON array),
 * $6 audit actor. */
static const char CREATE_SQL[] =
    "WITH s AS (INSERT INTO segments (org_id, key, name, description, conditions)"
    "           VALUES ($1, $2, $3, $4, $5::jsonb)"
    "           ON CONFLICT (org_id, key) DO NOTHING RETURNING *),"
    " aud AS (" AUDIT_INSERT("(SELECT 'segment.created' AS action,"
                             " 'Created segment ' || s.key AS summary,"
                             " 'segments/' || s.key AS location FROM s) AS s", "$6") ")"
    " SELECT 201 AS status, json_build_object('segment', " SEGMENT_FORM ")::text AS body,"
    " NULL::text AS message FROM s"
    " UNION ALL SELECT 409, NULL, 'a segment with this key already exists'"
    " WHERE NOT EXISTS (SELECT 1 FROM s)";

/* $1 org id, $2 key, $3 name or NULL (keep), $4 'true' to set the
 * description to $5 (NULL clears it), $6 conditions or NULL (keep), $7
 * audit actor. */
static const char UPDATE_SQL[] =
    "WITH s AS (UPDATE segments SET name = COALESCE($3, name),"
    "                  description = CASE WHEN $4::boolean THEN $5 ELSE description END,"
    "                  conditions = COALESCE($6::jsonb, conditions), updated_at = now()"
    "            WHERE org_id = $1 AND key = $2 RETURNING *),"
    " aud AS (" AUDIT_INSERT("(SELECT 'segment.updated' AS action,"
                             " 'Updated segment ' || s.key AS summary,"
                             " 'segments/' || s.key AS location FROM s) AS s", "$7") ")"
    " SELECT 200 AS status, json_build_object('segment', " SEGMENT_FORM ")::text AS body,"
    " NULL::text AS message FROM s";

/* $1 org id, $2 key, $3 audit actor: 200, or 409 naming the flags whose
 * rules use it. */
static const char DELETE_SQL[] =
    "WITH s AS (SELECT id, key FROM segments WHERE org_id = $1 AND key = $2 FOR UPDATE),"
    " users AS (SELECT DISTINCT f.key FROM s, rules r JOIN flags f ON f.id = r.flag_id"
    "            WHERE f.org_id = $1"
    "              AND r.conditions @> jsonb_build_array(jsonb_build_object('segment', s.key))),"
    " d AS (DELETE FROM segments WHERE id IN (SELECT id FROM s)"
    "        AND NOT EXISTS (SELECT 1 FROM users) RETURNING id, key),"
    " aud AS (" AUDIT_INSERT("(SELECT 'segment.deleted' AS action,"
                             " 'Deleted segment ' || d.key AS summary,"
                             " 'segments/' || d.key AS location FROM d) AS s", "$3") ")"
    " SELECT CASE WHEN EXISTS (SELECT 1 FROM d) THEN 200 ELSE 409 END AS status,"
    " CASE WHEN EXISTS (SELECT 1 FROM d) THEN '{\"ok\": true}' END AS body,"
    " CASE WHEN EXISTS (SELECT 1 FROM d) THEN NULL"
    "      ELSE 'segment is still used by rules of flags: '"
    "           || (SELECT string_agg(key, ', ' ORDER BY key) FROM users) END AS message"
    " FROM s";

/* clang-format on */

/* $1 org id: {entityKey: {attributeKey: dataType}} of every entity. */
static const char ENTITY_ATTRIBUTES_SQL[] =
    "SELECT COALESCE(json_object_agg(e.key,"
    "  (SELECT COALESCE(json_object_agg(a.key, a.data_type), '{}'::json)"
    "     FROM entity_attributes a WHERE a.entity_id = e.id)), '{}'::json)::text"
    " FROM entities e WHERE e.org_id = $1";

/* One create or update while its body is validated and written. */
struct segment_write {
    struct http_request *r;
    char org_id[AUTH_UUID_LEN + 1];
    char audit_actor[AUDIT_ACTOR_JSON_MAX];
    bool create;
    struct json_object *body;     /* the request object; owned */
    struct json_object *entities; /* ENTITY_ATTRIBUTES_SQL's object, or NULL; owned */
};

static void segment_write_free(struct segment_write *w)
{
    json_object_put(w->body);
    json_object_put(w->entities);
    free(w);
}

static const char *json_text(struct json_object *value)
{
    return json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN);
}

static void answer_segment(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, "segment not found");
}

/* ---- entity references ---- */

static enum validate_attr_ref entity_attribute(void *arg, const char *entity, const char *attribute)
{
    const struct segment_write *w = arg;
    struct json_object *attributes;
    if (!json_object_object_get_ex(w->entities, entity, &attributes))
        return VALIDATE_ATTR_NOT_ENTITY;
    if (json_object_object_get_ex(attributes, attribute, NULL))
        return VALIDATE_ATTR_DECLARED;
    return VALIDATE_ATTR_UNDECLARED;
}

/* True when some condition has a dotted attribute path (an entity may be named). */
static bool conditions_name_paths(const struct json_object *body)
{
    struct json_object *conditions, *attribute;
    if (!json_object_object_get_ex(body, "conditions", &conditions) ||
        !json_object_is_type(conditions, json_type_array))
        return false;
    size_t n = json_object_array_length(conditions);
    for (size_t i = 0; i < n; i++) {
        struct json_object *condition = json_object_array_get_idx(conditions, i);
        if (json_object_is_type(condition, json_type_object) &&
            json_object_object_get_ex(condition, "attribute", &attribute) &&
            json_object_is_type(attribute, json_type_string) &&
            strchr(json_object_get_string(attribute), '.') != NULL)
            return true;
    }
    return false;
}

/* ---- validation ---- */

/* The conditions as JSON text, or fallback when absent. */
static const char *checked_conditions(struct validate *v, struct segment_write *w,
                                      const char *fallback)
{
    struct validate_refs refs = {.arg = w};
    if (w->entities != NULL)
        refs.entity_attribute = entity_attribute;
    struct json_object *conditions = NULL;
    if (validate_conditions(v, w->body, "conditions", false, &refs, &conditions) != VALIDATE_SET ||
        conditions == NULL)
        return fallback;
    return json_text(conditions);
}

static void send_invalid(struct http_request *r, struct validate *v)
{
    http_send_validation_error(r, "validation failed", validate_take_errors(v));
}

static void write_created(struct segment_write *w)
{
    struct validate v;
    validate_init(&v);
    const char *key = mgmt_body_text(w->body, "key"), *name = mgmt_body_text(w->body, "name");
    const char *description = mgmt_body_text(w->body, "description");
    const char *conditions = checked_conditions(&v, w, "[]");
    if (!validate_ok(&v)) {
        send_invalid(w->r, &v);
    } else {
        const char *params[] = {w->org_id, key, name, description, conditions, w->audit_actor};
        mgmt_query(w->r, CREATE_SQL, 6, params, answer_segment, w->r);
    }
    validate_free(&v);
}

static void write_updated(struct segment_write *w)
{
    struct validate v;
    validate_init(&v);
    const char *name = mgmt_body_text(w->body, "name");
    const char *description = mgmt_body_text(w->body, "description");
    const char *set_description =
        json_object_object_get_ex(w->body, "description", NULL) ? "t" : "f";
    const char *conditions = checked_conditions(&v, w, NULL);
    const char *key = mgmt_param(w->r, "key");
    if (!validate_ok(&v)) {
        send_invalid(w->r, &v);
    } else if (json_object_object_length(w->body) == 0) {
        const char *params[] = {w->org_id, key};
        mgmt_query(w->r, GET_SQL, 2, params, answer_segment, w->r);
    } else {
        const char *params[] = {w->org_id,   key,        name,          set_description,
                                description, conditions, w->audit_actor};
        mgmt_query(w->r, UPDATE_SQL, 7, params, answer_segment, w->r);
    }
    validate_free(&v);
}

/* Validates and writes; frees w. */
static void write_segment(struct segment_write *w)
{
    if (w->create)
        write_created(w);
    else
        write_updated(w);
    segment_write_free(w);
}

static void on_entities(PGresult *res, const char *error, void *arg)
{
    struct segment_write *w = arg;
    if (!db_result_ok(res) || PQntuples(res) != 1) {
        mgmt_send_failure(w->r, res, error);
        segment_write_free(w);
        return;
    }
    w->entities = json_tokener_parse(PQgetvalue(res, 0, 0));
    if (w->entities == NULL) {
        mgmt_send_failure(w->r, NULL, "unparseable entity declarations");
        segment_write_free(w);
        return;
    }
    write_segment(w);
}

static void begin_write(struct http_request *r, const struct mgmt_ctx *ctx, bool create)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed it; ours to put */
    struct segment_write *w = calloc(1, sizeof *w);
    if (w == NULL) {
        json_object_put(body);
        http_send_error(r, 500, "out of memory");
        return;
    }
    w->r = r;
    w->create = create;
    w->body = body;
    memcpy(w->org_id, ctx->org_id, sizeof w->org_id);
    memcpy(w->audit_actor, ctx->audit_actor, sizeof w->audit_actor);
    if (!conditions_name_paths(body)) {
        write_segment(w);
        return;
    }
    const char *params[] = {w->org_id};
    if (mgmt_query(r, ENTITY_ATTRIBUTES_SQL, 1, params, on_entities, w) != 0)
        segment_write_free(w);
}

/* ---- handlers ---- */

void segments_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    begin_write(r, ctx, true);
}

void segments_update(struct http_request *r, const struct mgmt_ctx *ctx)
{
    begin_write(r, ctx, false);
}

void segments_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id};
    mgmt_query(r, LIST_SQL, 1, params, mgmt_answer_cb, r);
}

void segments_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id, mgmt_param(r, "key")};
    mgmt_query(r, GET_SQL, 2, params, answer_segment, r);
}

void segments_delete(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id, mgmt_param(r, "key"), ctx->audit_actor};
    mgmt_query(r, DELETE_SQL, 3, params, answer_segment, r);
}

/* ---- schemas ---- */

#define CONDITION_SCHEMA                                                                           \
    "{\"type\":\"object\",\"additionalProperties\":false,"                                         \
    "\"required\":[\"attribute\",\"operator\"],"                                                   \
    "\"description\":\"An attribute condition (a segment never names a segment). The handler"      \
    " checks what depends on the operator: values absent for exists and not_exists, else 1 to"     \
    " 100 (exactly 1 for single-value operators) of its kind (numbers, semantic versions,"         \
    " ISO 8601 timestamps, PCRE2 patterns that compile), and that an attribute path naming"        \
    " an entity names an attribute it declares.\","                                                \
    "\"properties\":{"                                                                             \
    "\"attribute\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200},"                       \
    "\"operator\":{\"type\":\"string\",\"enum\":" COND_OPS_SCHEMA_ENUM "},"                        \
    "\"values\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":100,"                              \
    "\"items\":{\"type\":[\"string\",\"number\",\"boolean\"]}},"                                   \
    "\"caseInsensitive\":{\"type\":\"boolean\"},"                                                  \
    "\"negate\":{\"type\":\"boolean\"}}}"

#define CONDITIONS_SCHEMA "{\"type\":\"array\",\"maxItems\":50,\"items\":" CONDITION_SCHEMA "}"

#define KEY_SCHEMA                                                                                 \
    "{\"type\":\"string\",\"minLength\":1,\"maxLength\":63,"                                       \
    "\"pattern\":\"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$\"}"

#define SEGMENT_SCHEMA                                                                             \
    "{\"type\":\"object\",\"additionalProperties\":false,"                                         \
    "\"required\":[\"id\",\"key\",\"name\",\"description\",\"conditions\",\"createdAt\","          \
    "\"updatedAt\"],\"properties\":{"                                                              \
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},\"key\":{\"type\":\"string\"},"              \
    "\"name\":{\"type\":\"string\"},\"description\":{\"type\":[\"string\",\"null\"]},"             \
    "\"conditions\":" CONDITIONS_SCHEMA ","                                                        \
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"                                \
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"}}}"

const char segments_create_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"key\",\"name\"],"
    "\"properties\":{\"key\":" KEY_SCHEMA ","
    "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200},"
    "\"description\":{\"type\":[\"string\",\"null\"],\"maxLength\":2000},"
    "\"conditions\":" CONDITIONS_SCHEMA "}}";

const char segments_update_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200},"
    "\"description\":{\"type\":[\"string\",\"null\"],\"maxLength\":2000},"
    "\"conditions\":" CONDITIONS_SCHEMA "}}";

const char segments_one_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"segment\"],"
    "\"properties\":{\"segment\":" SEGMENT_SCHEMA "}}";

#define SEGMENT_LIST_ITEM_SCHEMA                                                                   \
    "{\"type\":\"object\",\"additionalProperties\":false,"                                         \
    "\"required\":[\"id\",\"key\",\"name\",\"description\",\"conditions\",\"createdAt\","          \
    "\"updatedAt\",\"usedBy\"],\"properties\":{"                                                   \
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},\"key\":{\"type\":\"string\"},"              \
    "\"name\":{\"type\":\"string\"},\"description\":{\"type\":[\"string\",\"null\"]},"             \
    "\"conditions\":" CONDITIONS_SCHEMA ","                                                        \
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"                                \
    "\"updatedAt\":{\"type\":\"string\",\"format\":\"date-time\"},"                                \
    "\"usedBy\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}"

const char segments_list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"segments\"],"
    "\"properties\":{\"segments\":{\"type\":\"array\",\"items\":" SEGMENT_LIST_ITEM_SCHEMA "}}}";

const char segments_ack_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"ok\"],"
    "\"properties\":{\"ok\":{\"type\":\"boolean\"}}}";
