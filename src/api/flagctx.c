/*
 * flagctx.c - the context a flag write validates against (see flagctx.h).
 *
 * Owns the context statement, part of the caller's statement
 * (flagctx_dispatch, mgmt.h MGMT_AUTH_ORG_SQL: one round trip for the
 * caller and the context). Invariants: a struct flagctx lives on its user's
 * stack, its data object freed by flagctx_release.
 *
 * Called by variants.c, rules.c, environments.c and schedules.c; the
 * context alone (FLAGCTX_LOCKED_SQL) by schedule_apply.c.
 */
#include "api/flagctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "http/http.h"
#include "mgmt/mgmt.h"

/* clang-format off */

/*
 * The context of flag flag_key (an SQL expression) in organization org_id,
 * with environment env_key ("" for none), the segment keys segments and
 * the entity keys entities (JSON arrays). Rows: none when the flag does
 * not exist; else id, type, archived, variant_seq, env_id (NULL when asked
 * for and missing), data.
 */
#define CONTEXT_SELECT(org_id, flag_key, env_key, segments, entities)                              \
    "SELECT f.id, f.type, f.archived_at IS NOT NULL AS archived, f.variant_seq, e.id AS env_id,"   \
    "  json_build_object("                                                                         \
    "    'variants', COALESCE((SELECT json_agg(v.key ORDER BY v.sort_order, v.created_at, v.id)"   \
    "                            FROM variants v WHERE v.flag_id = f.id), '[]'),"                  \
    "    'retired', to_json(f.retired_variant_keys),"                                              \
    "    'segments', COALESCE((SELECT json_agg(s.key) FROM segments s"                             \
    "                           WHERE s.org_id = f.org_id AND s.key IN"                            \
    "                                 (SELECT jsonb_array_elements_text(" segments "::jsonb))),"   \
    "                         '[]'),"                                                              \
    "    'entities', COALESCE((SELECT json_object_agg(en.key,"                                     \
    "                                   COALESCE((SELECT json_agg(a.key)"                          \
    "                                               FROM entity_attributes a"                      \
    "                                              WHERE a.entity_id = en.id), '[]'))"             \
    "                            FROM entities en"                                                 \
    "                           WHERE en.org_id = f.org_id AND en.key IN"                          \
    "                                 (SELECT jsonb_array_elements_text(" entities "::jsonb))),"   \
    "                         '{}')) AS data"                                                      \
    "  FROM flags f"                                                                               \
    "  LEFT JOIN environments e ON e.org_id = f.org_id AND e.key = " env_key                       \
    " WHERE f.org_id = " org_id " AND f.key = " flag_key

/* With the caller (mgmt.h): $3 flag key, $4 environment key, $5 segment
 * and $6 entity keys; the context columns are NULL without the flag. */
static const char AUTH_CONTEXT_SQL[] = MGMT_AUTH_ORG_SQL(
    ", fc.id, fc.type, fc.archived, fc.variant_seq, fc.env_id, fc.data",
    "LEFT JOIN LATERAL (" CONTEXT_SELECT("org.id", "$3", "$4", "$5", "$6") ") AS fc ON true");

/* The context alone, the flag locked (flagctx.h FLAGCTX_LOCKED_SQL): $1
 * organization id, $2 flag key, $3 environment key; no segments or
 * entities. */
const char FLAGCTX_LOCKED_SQL[] =
    CONTEXT_SELECT("$1::uuid", "$2", "$3", "'[]'", "'[]'") " FOR UPDATE OF f NOWAIT";

/* clang-format on */

enum { COL_FLAG_ID, COL_TYPE, COL_ARCHIVED, COL_VARIANT_SEQ, COL_ENV_ID, COL_DATA };

bool flagctx_array_has(const struct json_object *array, const char *s)
{
    size_t n = json_object_array_length(array);
    for (size_t i = 0; i < n; i++) {
        const char *item = json_object_get_string(json_object_array_get_idx(array, i));
        if (item && strcmp(item, s) == 0)
            return true;
    }
    return false;
}

/* ---- the collecting pass ---- */

static void add_unique(struct json_object *array, const char *s)
{
    if (!flagctx_array_has(array, s))
        json_object_array_add(array, json_object_new_string(s));
}

static bool want_segment(void *arg, const char *key)
{
    struct flagctx_wanted *w = arg;
    add_unique(w->segments, key);
    return true;
}

static enum validate_attr_ref want_entity(void *arg, const char *entity, const char *attribute)
{
    (void)attribute;
    struct flagctx_wanted *w = arg;
    add_unique(w->entities, entity);
    return VALIDATE_ATTR_DECLARED;
}

void flagctx_wanted_init(struct flagctx_wanted *w)
{
    w->segments = json_object_new_array();
    w->entities = json_object_new_array();
    w->refs = (struct validate_refs){w, want_segment, want_entity, NULL};
}

void flagctx_wanted_free(struct flagctx_wanted *w)
{
    json_object_put(w->segments);
    json_object_put(w->entities);
    w->segments = w->entities = NULL;
}

/* ---- the resolving pass ---- */

static struct json_object *data_member(const struct flagctx *fc, const char *name)
{
    struct json_object *member = NULL;
    json_object_object_get_ex(fc->data, name, &member);
    return member;
}

static bool has_segment(void *arg, const char *key)
{
    return flagctx_array_has(data_member(arg, "segments"), key);
}

static bool has_variant(void *arg, const char *key)
{
    return flagctx_array_has(data_member(arg, "variants"), key);
}

static enum validate_attr_ref entity_attribute(void *arg, const char *entity, const char *attribute)
{
    struct json_object *attributes;
    if (!json_object_object_get_ex(data_member(arg, "entities"), entity, &attributes))
        return VALIDATE_ATTR_NOT_ENTITY;
    return flagctx_array_has(attributes, attribute) ? VALIDATE_ATTR_DECLARED
                                                    : VALIDATE_ATTR_UNDECLARED;
}

/* The context of row 0 of res, its columns from first on. */
static void context_from_row(struct flagctx *fc, const PGresult *res, int first)
{
    memset(fc, 0, sizeof *fc);
    snprintf(fc->flag_id, sizeof fc->flag_id, "%s", PQgetvalue(res, 0, first + COL_FLAG_ID));
    if (!PQgetisnull(res, 0, first + COL_ENV_ID))
        snprintf(fc->env_id, sizeof fc->env_id, "%s", PQgetvalue(res, 0, first + COL_ENV_ID));
    int type = validate_flag_type_from_name(PQgetvalue(res, 0, first + COL_TYPE));
    fc->type = type < 0 ? FLAG_TYPE_BOOLEAN : (enum validate_flag_type)type;
    fc->archived = strcmp(PQgetvalue(res, 0, first + COL_ARCHIVED), "t") == 0;
    fc->variant_seq = atoll(PQgetvalue(res, 0, first + COL_VARIANT_SEQ));
    fc->data = json_tokener_parse(PQgetvalue(res, 0, first + COL_DATA));
    fc->refs = (struct validate_refs){fc, has_segment, entity_attribute, has_variant};
}

/*
 * The context of a successful result's row 0 (columns from first on) into
 * fc; false after answering r (404 flag or environment not found, 500).
 */
static bool context_of(struct http_request *r, const PGresult *res, int first, bool want_env,
                       struct flagctx *fc)
{
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, first + COL_FLAG_ID)) {
        http_send_error(r, 404, "flag not found");
        return false;
    }
    if (want_env && PQgetisnull(res, 0, first + COL_ENV_ID)) {
        http_send_error(r, 404, "environment not found");
        return false;
    }
    context_from_row(fc, res, first);
    if (fc->data == NULL) {
        mgmt_send_failure(r, res, "unparseable flag context");
        return false;
    }
    return true;
}

bool flagctx_from_result(const PGresult *res, struct flagctx *fc)
{
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, COL_FLAG_ID) || PQgetisnull(res, 0, COL_ENV_ID))
        return false;
    context_from_row(fc, res, 0);
    if (fc->data != NULL)
        return true;
    flagctx_release(fc);
    return false;
}

void flagctx_release(struct flagctx *fc)
{
    json_object_put(fc->data);
    fc->data = NULL;
}

bool flagctx_from_row(struct http_request *r, const PGresult *res, bool want_env,
                      struct flagctx *fc)
{
    return context_of(r, res, MGMT_ROW_FIRST, want_env, fc);
}

void flagctx_dispatch(struct http_request *r, const char *flag_key, const char *env_key,
                      const struct flagctx_wanted *wanted)
{
    const char *extra[] = {flag_key, env_key ? env_key : "",
                           wanted ? json_object_to_json_string(wanted->segments) : "[]",
                           wanted ? json_object_to_json_string(wanted->entities) : "[]"};
    mgmt_dispatch_row(r, AUTH_CONTEXT_SQL, 4, extra);
}
