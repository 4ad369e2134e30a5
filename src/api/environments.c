/*
 * environments.c - the organization's environments (GET /environments) and
 * a flag's configuration in one of them (PATCH
 * /flags/{key}/environments/{envKey}).
 *
 * Owns those two statements. The list answers {environments: [{id, key,
 * name, createdAt}]} in display order and creates the three defaults when
 * the organization has none (doc/choices.md "Records"; they normally exist
 * from the organization's creation on, sql/0001).
 *
 * Configuration (doc/choices.md "Environment configuration and
 * evaluation"): any of enabled, defaultVariantKey
 * (sets defaultServe to {"variant": K}), offVariantKey, defaultServe; not
 * both defaultVariantKey and defaultServe. Variant keys must exist on the
 * flag (422). The caller's checks and the flag context are one round trip
 * (environments_configure_load, flagctx_dispatch). Statuses in order: 404 flag, 404 environment,
 * 409 archived, 422. The write is one statement that skips an unchanged row (so no snapshot rebuild
 * for a no-op) and records one revision ("Turned on in Production") when something changed; the
 * deferred trigger of sql/0001 moves the configuration generation at commit.
 *
 * Called from the route table.
 */
#include "api/environments.h"

#include <stdlib.h>
#include <string.h>

#include "api/flagctx.h"
#include "http/http.h"
#include "mgmt/mgmt.h"
#include "api/revisions.h"
#include "mgmt/validate.h"

/* clang-format off */

/* $1 org. */
static const char LIST_SQL[] =
    "WITH d AS ("
    "  INSERT INTO environments AS e (org_id, key, name, sort_order)"
    "  SELECT $1::uuid, x.key, x.name, x.ord"
    "    FROM (VALUES ('production', 'Production', 0), ('preview', 'Preview', 1),"
    "                 ('development', 'Development', 2)) AS x(key, name, ord)"
    "   WHERE NOT EXISTS (SELECT 1 FROM environments WHERE org_id = $1::uuid)"
    "  ON CONFLICT (org_id, key) DO NOTHING"
    "  RETURNING ensign_environment_json(e) AS j, e.sort_order, e.key"
    ")"
    " SELECT 200, json_build_object('environments', COALESCE("
    "   (SELECT json_agg(x.j ORDER BY x.sort_order, x.key)"
    "      FROM (SELECT ensign_environment_json(e) AS j, e.sort_order, e.key"
    "              FROM environments e WHERE e.org_id = $1::uuid"
    "            UNION ALL SELECT j, sort_order, key FROM d) AS x), '[]'))";

/*
 * $1 flag id, $2 environment id, $3 enabled ("t", "f" or "" unchanged),
 * $4 default serve (JSON or NULL), $5 off variant key (or NULL), $6 actor
 * id, $7 actor name, $8 audit actor.
 */
static const char CONFIGURE_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ","
    " old AS (SELECT fe.*, e.name AS env_name FROM flag_environments fe"
    "           JOIN environments e ON e.id = fe.environment_id"
    "          WHERE fe.flag_id = $1::uuid AND fe.environment_id = $2::uuid),"
    " new AS (SELECT COALESCE(NULLIF($3, '')::boolean, old.enabled) AS enabled,"
    "                COALESCE($4::jsonb, old.default_serve) AS default_serve,"
    "                COALESCE($5, old.off_variant_key) AS off_variant_key FROM old),"
    " u AS ("
    "  UPDATE flag_environments fe"
    "     SET enabled = new.enabled, default_serve = new.default_serve,"
    "         off_variant_key = new.off_variant_key, updated_at = now()"
    "    FROM f, old, new"
    "   WHERE fe.flag_id = old.flag_id AND fe.environment_id = old.environment_id"
    "     AND f.archived_at IS NULL"
    "     AND (old.enabled, old.default_serve, old.off_variant_key)"
    "         IS DISTINCT FROM (new.enabled, new.default_serve, new.off_variant_key)"
    "  RETURNING fe.flag_id, fe.environment_id, old.env_name,"
    "            old.enabled AS was_enabled, fe.enabled,"
    "    array_remove(ARRAY["
    REVISION_CHANGE("enabled", "old.enabled::text", "fe.enabled::text") ", "
    REVISION_CHANGE("defaultServe", "old.default_serve::text", "fe.default_serve::text") ", "
    REVISION_CHANGE("offVariantKey", "old.off_variant_key", "fe.off_variant_key")
    "    ], NULL) AS changes"
    "), rev AS ("
    REVISION_INSERT("(SELECT u.flag_id, u.environment_id, 'environment.updated' AS action,"
                    " CASE WHEN u.enabled AND NOT u.was_enabled THEN 'Turned on in ' || u.env_name"
                    "      WHEN u.was_enabled AND NOT u.enabled"
                    "      THEN 'Turned off in ' || u.env_name"
                    "      ELSE 'Updated the configuration in ' || u.env_name END AS summary,"
                    " u.changes FROM u) AS s", "$6", "$7")
    "), aud AS (" REVISION_AUDIT("$8") ")"
    " SELECT " FLAGCTX_STATUS_SQL("CASE WHEN NOT EXISTS (SELECT 1 FROM old) THEN 404 ELSE 200 END") ","
    "        '{\"ok\": true}',"
    "        " FLAGCTX_MESSAGE_SQL " ELSE 'environment not found' END";

/* clang-format on */

/* ---- GET /environments ---- */

void environments_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id};
    mgmt_query(r, LIST_SQL, 1, params, mgmt_answer_cb, r);
}

/* ---- PATCH /flags/{key}/environments/{envKey} ---- */

struct configure {
    struct mgmt_ctx ctx;
    struct json_object *body;
};

/* The configuration change as statement values (borrowed from the body,
 * except serve, which is owned). */
struct change {
    const char *enabled; /* "t", "f" or "" */
    struct json_object *serve;
    const char *off_key;
};

/* A variant key member (the row's schema checked its shape) must name a
 * variant of the flag. */
static void check_variant_key(struct validate *v, const struct json_object *body, const char *name,
                              const struct validate_refs *refs, const char **out)
{
    if ((*out = mgmt_body_text(body, name)) == NULL)
        return;
    if (!refs->variant_exists(refs->arg, *out))
        validate_error(v, name, "the flag has no variant %s", *out);
}

/* The change of the body (its shape checked by the row's schema): the
 * variants it names exist, defaultVariantKey and defaultServe are not
 * both given, a rollout's weights are not all zero. */
static void read_change(struct validate *v, const struct json_object *body,
                        const struct validate_refs *refs, struct change *c)
{
    struct json_object *enabled = mgmt_body_member(body, "enabled");
    if (enabled != NULL)
        c->enabled = json_object_get_boolean(enabled) ? "t" : "f";
    const char *default_key = NULL;
    check_variant_key(v, body, "defaultVariantKey", refs, &default_key);
    check_variant_key(v, body, "offVariantKey", refs, &c->off_key);
    struct json_object *serve = NULL;
    if (validate_serve(v, body, "defaultServe", 0, refs, &serve) == VALIDATE_SET) {
        if (default_key)
            validate_error(v, "defaultServe", "give defaultVariantKey or defaultServe, not both");
        c->serve = validate_serve_canonical(serve);
    } else if (default_key) {
        c->serve = json_object_new_object();
        json_object_object_add(c->serve, "variant", json_object_new_string(default_key));
    }
}

static void send_configure(struct http_request *r, const struct configure *cf,
                           const struct flagctx *fc)
{
    struct validate v;
    validate_init(&v);
    struct change c = {"", NULL, NULL};
    read_change(&v, cf->body, &fc->refs, &c);
    if (validate_ok(&v)) {
        const char *params[] = {
            fc->flag_id,        fc->env_id,
            c.enabled,          c.serve ? json_object_to_json_string(c.serve) : NULL,
            c.off_key,          cf->ctx.actor_user_id,
            cf->ctx.actor_name, cf->ctx.audit_actor};
        mgmt_query(r, CONFIGURE_SQL, 8, params, mgmt_answer_cb, r);
    } else {
        mgmt_send_invalid(r, &v);
    }
    json_object_put(c.serve);
    validate_free(&v);
}

/*
 * The dispatcher answered the caller's checks and the body (400, 422 not
 * an object); ctx->row holds the flag context: the context (404 flag, 404
 * environment), 409 when the flag is archived, then the change.
 */
void environments_configure(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct flagctx fc;
    if (flagctx_from_row(r, ctx->row, true, &fc)) {
        struct configure cf = {.ctx = *ctx, .body = ctx->body};
        if (fc.archived)
            http_send_error(r, 409, "the flag is archived; restore it first");
        else
            send_configure(r, &cf, &fc);
        flagctx_release(&fc);
    }
    json_object_put(ctx->body);
}

void environments_configure_load(struct http_request *r)
{
    flagctx_dispatch(r, mgmt_param(r, "key"), mgmt_param(r, "envKey"), NULL);
}
