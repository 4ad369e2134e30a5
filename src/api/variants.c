/*
 * variants.c - the variant resource: POST /flags/{key}/variants, PATCH and
 * DELETE /flags/{key}/variants/{variantKey}; and the variant rules that
 * flag creation shares (key derivation, values per flag type).
 *
 * Owns the variant statements. A write first loads the flag context with
 * the dispatcher's checks (variants_load, flagctx_dispatch: type,
 * archived, keys; one round trip), validates in C, then runs one statement that re-checks the flag
 * under a row lock, writes, and records the revision. Statuses, in
 * order: 404 flag, 409 archived, 422 a boolean flag's fixed variants
 * (doc/choices.md "Variants and keys"), 404 variant, 422 body; delete answers 409
 * while a default serve, an off variant or a rule serve of any
 * environment names the variant.
 *
 * Keys (doc/choices.md "Variants and keys"): from the label, else a string value, else
 * variant-N with N counting the variants the flag ever had; never reused
 * within a flag (deleted keys are retired, sql/0002). Values must match the
 * flag type; numbers without a fraction are stored as integers. A first
 * variant added to a flag created without variants becomes the default
 * serve and the off variant of every environment.
 *
 * Called from the route table and by flags.c.
 */
#include "api/variants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/flagctx.h"
#include "http/http.h"
#include "mgmt/mgmt.h"
#include "api/revisions.h"

/* ---- statements ---- */

/* clang-format off */

/* $1 flag id, $2 key, $3 value (JSON), $4 label, $5 actor id, $6 actor name, $7 audit actor. */
static const char CREATE_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ","
    " v AS ("
    "  INSERT INTO variants AS v (flag_id, org_id, key, value, label, sort_order)"
    "  SELECT f.id, f.org_id, $2, $3::jsonb, $4,"
    "         COALESCE((SELECT max(x.sort_order) + 1 FROM variants x WHERE x.flag_id = f.id), 0)"
    "    FROM f WHERE f.archived_at IS NULL"
    "  RETURNING v.flag_id, v.key, ensign_variant_json(v) AS body"
    "), seq AS ("
    "  UPDATE flags SET variant_seq = variant_seq + 1, updated_at = now()"
    "    FROM v WHERE flags.id = v.flag_id"
    "), fill AS ("
    "  UPDATE flag_environments fe"
    "     SET default_serve = CASE WHEN fe.default_serve = '{}'::jsonb"
    "                              THEN jsonb_build_object('variant', v.key)"
    "                              ELSE fe.default_serve END,"
    "         off_variant_key = COALESCE(fe.off_variant_key, v.key), updated_at = now()"
    "    FROM v WHERE fe.flag_id = v.flag_id"
    "     AND (fe.default_serve = '{}'::jsonb OR fe.off_variant_key IS NULL)"
    "), rev AS ("
    REVISION_INSERT("(SELECT v.flag_id, NULL::uuid AS environment_id,"
                    " 'variant.created' AS action, 'Added variant ' || v.key AS summary,"
                    " ARRAY['value: ' || $3::text] AS changes FROM v) AS s", "$5", "$6")
    "), aud AS (" REVISION_AUDIT("$7") ")"
    " SELECT " FLAGCTX_STATUS_SQL("201") ", json_build_object('variant', (SELECT body FROM v)),"
    "        " FLAGCTX_MESSAGE_SQL " END";

/* $1 flag id, $2 variant key, $3 patch (JSON: value and/or label), $4 actor id, $5 name,
 * $6 audit actor. */
static const char UPDATE_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ","
    " old AS (SELECT * FROM variants WHERE flag_id = $1::uuid AND key = $2),"
    " u AS ("
    "  UPDATE variants v"
    "     SET value = CASE WHEN $3::jsonb ? 'value' THEN $3::jsonb -> 'value' ELSE v.value END,"
    "         label = CASE WHEN $3::jsonb ? 'label' THEN $3::jsonb ->> 'label' ELSE v.label END,"
    "         updated_at = now()"
    "    FROM f, old WHERE v.id = old.id AND f.archived_at IS NULL"
    "  RETURNING v.flag_id, v.key, ensign_variant_json(v) AS body,"
    "    array_remove(ARRAY["
    REVISION_CHANGE("value", "old.value::text", "v.value::text") ", "
    REVISION_CHANGE("label", "old.label", "v.label")
    "    ], NULL) AS changes"
    "), rev AS ("
    REVISION_INSERT("(SELECT u.flag_id, NULL::uuid AS environment_id,"
                    " 'variant.updated' AS action, 'Updated variant ' || u.key AS summary,"
                    " u.changes FROM u WHERE cardinality(u.changes) > 0) AS s", "$4", "$5")
    "), aud AS (" REVISION_AUDIT("$6") ")"
    " SELECT " FLAGCTX_STATUS_SQL("CASE WHEN NOT EXISTS (SELECT 1 FROM old) THEN 404 ELSE 200 END") ","
    "        json_build_object('variant', (SELECT body FROM u)),"
    "        " FLAGCTX_MESSAGE_SQL " ELSE 'variant not found' END";

/* $1 flag id, $2 variant key, $3 actor id, $4 actor name, $5 audit actor. */
static const char DELETE_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ","
    " old AS (SELECT * FROM variants WHERE flag_id = $1::uuid AND key = $2),"
    " refs AS (SELECT 1 FROM flag_environments fe WHERE fe.flag_id = $1::uuid"
    "            AND (ensign_serve_names(fe.default_serve, $2) OR fe.off_variant_key = $2)"
    "          UNION ALL"
    "          SELECT 1 FROM rules r WHERE r.flag_id = $1::uuid"
    "            AND ensign_serve_names(r.serve, $2)),"
    " d AS ("
    "  DELETE FROM variants v USING f, old"
    "   WHERE v.id = old.id AND f.archived_at IS NULL AND NOT EXISTS (SELECT 1 FROM refs)"
    "  RETURNING v.flag_id, v.key"
    "), retire AS ("
    "  UPDATE flags SET retired_variant_keys = array_append(retired_variant_keys, d.key),"
    "                   updated_at = now()"
    "    FROM d WHERE flags.id = d.flag_id"
    "), rev AS ("
    REVISION_INSERT("(SELECT d.flag_id, NULL::uuid AS environment_id,"
                    " 'variant.deleted' AS action, 'Deleted variant ' || d.key AS summary,"
                    " '{}'::text[] AS changes FROM d) AS s", "$3", "$4")
    "), aud AS (" REVISION_AUDIT("$5") ")"
    " SELECT " FLAGCTX_STATUS_SQL("CASE WHEN NOT EXISTS (SELECT 1 FROM old) THEN 404"
                                "     WHEN EXISTS (SELECT 1 FROM refs) THEN 409 ELSE 200 END") ","
    "        '{\"ok\": true}',"
    "        " FLAGCTX_MESSAGE_SQL
    "             WHEN NOT EXISTS (SELECT 1 FROM old) THEN 'variant not found'"
    "             ELSE 'the variant is still served by a default serve, an off variant or a rule'"
    "        END";

/* clang-format on */

/* ---- keys and values ---- */

static bool key_used(const struct json_object *used, const char *key)
{
    return used && flagctx_array_has(used, key);
}

/* base (cut to fit) + "-k". */
static void suffixed(const char *base, long long k, char out[VALIDATE_KEY_MAX + 1])
{
    char suffix[24];
    int suffix_len = snprintf(suffix, sizeof suffix, "-%lld", k);
    int keep = VALIDATE_KEY_MAX - suffix_len;
    int base_len = (int)strlen(base) < keep ? (int)strlen(base) : keep;
    while (base_len > 0 && base[base_len - 1] == '-')
        base_len--;
    snprintf(out, VALIDATE_KEY_MAX + 1, "%.*s%s", base_len, base, suffix);
}

void variants_new_key(const char *label, const struct json_object *value, long long n,
                      const struct json_object *used, char out[VALIDATE_KEY_MAX + 1])
{
    char base[VALIDATE_KEY_MAX + 1] = "";
    if (label)
        validate_slugify(label, base);
    if (!*base && json_object_is_type(value, json_type_string))
        validate_slugify(json_object_get_string((struct json_object *)value), base);
    if (!*base)
        snprintf(base, sizeof base, "variant-%lld", n);
    snprintf(out, VALIDATE_KEY_MAX + 1, "%s", base);
    for (long long k = 2; key_used(used, out); k++)
        suffixed(base, k, out);
}

const char *variants_key_at(const struct json_object *variants, size_t i)
{
    struct json_object *item = json_object_array_get_idx(variants, i);
    struct json_object *key = NULL;
    json_object_object_get_ex(item, "key", &key);
    return json_object_get_string(key);
}

static struct json_object *variant_item(const char *key, struct json_object *value,
                                        const char *label)
{
    struct json_object *item = json_object_new_object();
    json_object_object_add(item, "key", json_object_new_string(key));
    json_object_object_add(item, "value", value);
    json_object_object_add(item, "label", label ? json_object_new_string(label) : NULL);
    return item;
}

/* Checks the value of {value, label} (the row's schema checked the shape)
 * against the flag's type at the current path; returns the label. */
static const char *check_variant_object(struct validate *v, const struct json_object *item,
                                        enum validate_flag_type type)
{
    struct json_object *value = mgmt_body_member(item, "value");
    if (value != NULL)
        validate_variant_value(v, "value", value, type);
    return mgmt_body_text(item, "label");
}

static struct json_object *boolean_variants(void)
{
    struct json_object *list = json_object_new_array();
    json_object_array_add(list, variant_item("on", json_object_new_boolean(1), NULL));
    json_object_array_add(list, variant_item("off", json_object_new_boolean(0), NULL));
    return list;
}

/* Adds item i of the request to list with a fresh key. */
static void add_requested(struct validate *v, struct json_object *list,
                          const struct json_object *item, enum validate_flag_type type, size_t i)
{
    size_t mark = validate_push_index(v, i);
    const char *label = check_variant_object(v, item, type);
    validate_pop(v, mark);
    struct json_object *value = NULL;
    json_object_object_get_ex(item, "value", &value);
    struct json_object *used = json_object_new_array();
    for (size_t k = 0; k < json_object_array_length(list); k++)
        json_object_array_add(used, json_object_new_string(variants_key_at(list, k)));
    char key[VALIDATE_KEY_MAX + 1];
    variants_new_key(label, value, (long long)i + 1, used, key);
    json_object_put(used);
    json_object_array_add(list, variant_item(key, validate_number_canonical(value), label));
}

struct json_object *variants_for_new_flag(struct validate *v, const struct json_object *body,
                                          const char *name, enum validate_flag_type type)
{
    struct json_object *items = mgmt_body_member(body, name);
    if (type == FLAG_TYPE_BOOLEAN) {
        if (items && json_object_array_length(items) > 0)
            validate_error(v, name, "boolean flags have the fixed variants on and off");
        return boolean_variants();
    }
    struct json_object *list = json_object_new_array();
    size_t mark = validate_push_field(v, name);
    for (size_t i = 0; items && i < json_object_array_length(items); i++)
        add_requested(v, list, json_object_array_get_idx(items, i), type, i);
    validate_pop(v, mark);
    return list;
}

/* ---- handlers ---- */

/* A variant write waiting for its flag context. */
struct variant_write {
    struct mgmt_ctx ctx;
    struct json_object *body; /* NULL for delete */
};

static void write_free(struct variant_write *w)
{
    json_object_put(w->body);
    free(w);
}

/* 409 archived or 422 boolean; true when the write may go on. */
static bool flag_writable(struct http_request *r, const struct flagctx *fc)
{
    if (fc->archived) {
        http_send_error(r, 409, "the flag is archived; restore it first");
        return false;
    }
    if (fc->type == FLAG_TYPE_BOOLEAN) {
        struct validate v;
        validate_init(&v);
        validate_error(&v, "variants", "boolean flags have the fixed variants on and off");
        http_send_validation_error(r, "boolean flags have fixed variants",
                                   validate_take_errors(&v));
        return false;
    }
    return true;
}

/* Reads {value, label} of a create or update (the row's schema requires
 * the value of a create), checking the value against the flag's type; NULL
 * after answering 422. The result holds only the given members, canonical. */
static struct json_object *read_variant(struct http_request *r, const struct json_object *body,
                                        enum validate_flag_type type)
{
    struct validate v;
    validate_init(&v);
    check_variant_object(&v, body, type);
    if (!validate_ok(&v)) {
        mgmt_send_invalid(r, &v);
        validate_free(&v);
        return NULL;
    }
    struct json_object *out = json_object_new_object();
    struct json_object *member;
    if (json_object_object_get_ex(body, "value", &member))
        json_object_object_add(out, "value", validate_number_canonical(member));
    if (json_object_object_get_ex(body, "label", &member))
        json_object_object_add(out, "label", json_object_get(member));
    return out;
}

static const char *label_of(const struct json_object *variant)
{
    struct json_object *label = NULL;
    json_object_object_get_ex(variant, "label", &label);
    return label ? json_object_get_string(label) : NULL;
}

static void send_create(struct http_request *r, const struct variant_write *w,
                        const struct flagctx *fc, struct json_object *variant)
{
    struct json_object *value = NULL, *used = json_object_new_array();
    json_object_object_get_ex(variant, "value", &value);
    const char *lists[] = {"variants", "retired"};
    for (size_t i = 0; i < 2; i++) {
        struct json_object *keys = NULL;
        json_object_object_get_ex(fc->data, lists[i], &keys);
        for (size_t k = 0; keys && k < json_object_array_length(keys); k++)
            json_object_array_add(used, json_object_get(json_object_array_get_idx(keys, k)));
    }
    char key[VALIDATE_KEY_MAX + 1];
    variants_new_key(label_of(variant), value, fc->variant_seq + 1, used, key);
    json_object_put(used);
    const char *params[] = {fc->flag_id,
                            key,
                            json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN),
                            label_of(variant),
                            w->ctx.actor_user_id,
                            w->ctx.actor_name,
                            w->ctx.audit_actor};
    mgmt_query(r, CREATE_SQL, 7, params, mgmt_answer_cb, r);
}

static void on_create_context(struct http_request *r, const struct flagctx *fc, void *arg)
{
    struct variant_write *w = arg;
    if (fc && flag_writable(r, fc)) {
        struct json_object *variant = read_variant(r, w->body, fc->type);
        if (variant)
            send_create(r, w, fc, variant);
        json_object_put(variant);
    }
    write_free(w);
}

static void on_update_context(struct http_request *r, const struct flagctx *fc, void *arg)
{
    struct variant_write *w = arg;
    if (fc && flag_writable(r, fc)) {
        struct json_object *patch = read_variant(r, w->body, fc->type);
        if (patch) {
            const char *params[] = {fc->flag_id,
                                    mgmt_param(r, "variantKey"),
                                    json_object_to_json_string(patch),
                                    w->ctx.actor_user_id,
                                    w->ctx.actor_name,
                                    w->ctx.audit_actor};
            mgmt_query(r, UPDATE_SQL, 6, params, mgmt_answer_cb, r);
        }
        json_object_put(patch);
    }
    write_free(w);
}

static void on_delete_context(struct http_request *r, const struct flagctx *fc, void *arg)
{
    struct variant_write *w = arg;
    if (fc && flag_writable(r, fc)) {
        const char *params[] = {fc->flag_id, mgmt_param(r, "variantKey"), w->ctx.actor_user_id,
                                w->ctx.actor_name, w->ctx.audit_actor};
        mgmt_query(r, DELETE_SQL, 5, params, mgmt_answer_cb, r);
    }
    write_free(w);
}

/*
 * The dispatcher answered the caller's checks and the body (400, 422 not
 * an object); ctx->row holds the flag context: the context (404 flag),
 * then the operation (then frees the struct variant_write, and with it
 * ctx->body).
 */
static void write_op(struct http_request *r, const struct mgmt_ctx *ctx, flagctx_cb then)
{
    struct json_object *body = ctx->body;
    struct flagctx fc;
    if (!flagctx_from_row(r, ctx->row, false, &fc)) {
        json_object_put(body);
        return;
    }
    struct variant_write *w = calloc(1, sizeof *w);
    if (w == NULL) {
        json_object_put(body);
        http_send_error(r, 500, "out of memory");
    } else {
        w->ctx = *ctx;
        w->ctx.body = NULL;
        w->ctx.row = NULL;
        w->body = body;
        then(r, &fc, w);
    }
    flagctx_release(&fc);
}

void variants_load(struct http_request *r)
{
    flagctx_dispatch(r, mgmt_param(r, "key"), NULL, NULL);
}

void variants_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_op(r, ctx, on_create_context);
}

void variants_update(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_op(r, ctx, on_update_context);
}

void variants_delete(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_op(r, ctx, on_delete_context);
}
