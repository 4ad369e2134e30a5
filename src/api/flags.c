/*
 * flags.c - the flag resource: /v1/orgs/{org}/flags and /flags/{key}
 * (create, list, detail, update, delete, archive, restore, usage).
 *
 * Owns the flag statements. Every handler is one statement after the
 * caller is resolved (mgmt.c): the JSON answer is built by PostgreSQL with
 * the record forms of sql/0002_flag_management.sql (the list: plain rows
 * written as JSON by flaglist.c, with their per-row extras: names,
 * production value, usage, from the same query, page by page with
 * pagination.h's cursor and Link; the detail: flagdetail.c,
 * its revisions as plain rows), and
 * writes record their revision in the same statement (revisions.h).
 *
 * Creation (doc/choices.md "Variants and keys", "Environment configuration
 * and evaluation"): the name starts as the key;
 * boolean flags get the fixed variants on/off and refuse others; other
 * types get keys derived from the label, else a string value, else
 * variant-N; every environment starts disabled with the first variant as
 * default serve and as off variant "off" (boolean) or the second variant
 * (the first when alone). A flag without variants has an empty default
 * serve and no off variant until its first variant arrives (variants.c).
 *
 * Archiving an archived flag and restoring an active one answer 200
 * without change (doc/choices.md "Records"); metadata updates are allowed
 * while archived.
 *
 * Called from the route table.
 */
#include "api/flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/flagdetail.h"
#include "api/flaglist.h"
#include "base/config.h"
#include "http/http.h"
#include "http/server.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"
#include "api/revisions.h"
#include "mgmt/validate.h"
#include "api/variants.h"

/* ---- statements ---- */

/* clang-format off */

/*
 * $1 org, $2 key, $3 description, $4 type, $5 tags (JSON), $6 variants
 * (JSON [{key, value, label}]), $7 default serve (JSON), $8 off variant
 * key, $9 actor user id, $10 actor name, $11 variant count, $12 audit actor.
 */
static const char CREATE_SQL[] =
    "WITH f AS ("
    "  INSERT INTO flags AS f (org_id, key, name, description, type, tags, created_by_user_id,"
    "                          variant_seq)"
    "  VALUES ($1::uuid, $2, $2, $3, $4, ARRAY(SELECT jsonb_array_elements_text($5::jsonb)),"
    "          NULLIF($9, '')::uuid, $11::integer)"
    "  ON CONFLICT (org_id, key) DO NOTHING"
    "  RETURNING f.id, f.org_id, f.key, f.type, ensign_flag_detail_json(f) AS body"
    "), v AS ("
    "  INSERT INTO variants (flag_id, org_id, key, value, label, sort_order)"
    "  SELECT f.id, f.org_id, x.item ->> 'key', x.item -> 'value', x.item ->> 'label', x.ord - 1"
    "    FROM f, jsonb_array_elements($6::jsonb) WITH ORDINALITY AS x(item, ord)"
    "), fe AS ("
    "  INSERT INTO flag_environments (flag_id, environment_id, default_serve, off_variant_key)"
    "  SELECT f.id, e.id, $7::jsonb, $8 FROM f JOIN environments e ON e.org_id = f.org_id"
    "), rev AS ("
    REVISION_INSERT("(SELECT f.id AS flag_id, NULL::uuid AS environment_id,"
                    " 'flag.created' AS action,"
                    " 'Created ' || f.type || ' flag ' || f.key AS summary,"
                    " '{}'::text[] AS changes FROM f) AS s", "$9", "$10")
    "), aud AS ("
    AUDIT_INSERT("(SELECT 'flag.created' AS action,"
                 " 'Created ' || f.type || ' flag ' || f.key AS summary,"
                 " 'flags/' || f.key AS location FROM f) AS s", "$12")
    ")"
    " SELECT CASE WHEN f.id IS NULL THEN 409 ELSE 201 END,"
    "        json_build_object('flag', f.body),"
    "        'a flag with this key already exists'"
    "   FROM (SELECT 1) AS one LEFT JOIN f ON true";

/* $1 org, $2 key, $3 patch (JSON, only the given members), $4 actor id, $5 actor name,
 * $6 audit actor. */
static const char UPDATE_SQL[] =
    "WITH old AS (SELECT f.* FROM flags f WHERE f.org_id = $1::uuid AND f.key = $2 FOR UPDATE),"
    " p AS (SELECT $3::jsonb AS p),"
    " bad AS (SELECT 1 FROM p WHERE p.p ->> 'maintainerUserId' IS NOT NULL"
    "           AND NOT EXISTS (SELECT 1 FROM org_members m WHERE m.org_id = $1::uuid"
    "                              AND m.user_id = (p.p ->> 'maintainerUserId')::uuid)),"
    " u AS ("
    "  UPDATE flags f SET"
    "    name = CASE WHEN p.p ? 'name' THEN p.p ->> 'name' ELSE f.name END,"
    "    description = CASE WHEN p.p ? 'description' THEN p.p ->> 'description'"
    "                       ELSE f.description END,"
    "    maintainer_user_id = CASE WHEN p.p ? 'maintainerUserId'"
    "                              THEN (p.p ->> 'maintainerUserId')::uuid"
    "                              ELSE f.maintainer_user_id END,"
    "    permanent = CASE WHEN p.p ? 'permanent' THEN (p.p ->> 'permanent')::boolean"
    "                     ELSE f.permanent END,"
    "    tags = CASE WHEN p.p ? 'tags' THEN ARRAY(SELECT jsonb_array_elements_text(p.p -> 'tags'))"
    "                ELSE f.tags END,"
    "    updated_at = now()"
    "   FROM old, p WHERE f.id = old.id AND NOT EXISTS (SELECT 1 FROM bad)"
    "  RETURNING f.id, ensign_flag_detail_json(f) AS body,"
    "    array_remove(ARRAY["
    REVISION_CHANGE("name", "old.name", "f.name") ", "
    REVISION_CHANGE("description", "old.description", "f.description") ", "
    REVISION_CHANGE("maintainer", "old.maintainer_user_id::text", "f.maintainer_user_id::text") ", "
    REVISION_CHANGE("permanent", "old.permanent::text", "f.permanent::text") ", "
    REVISION_CHANGE("tags", "array_to_string(old.tags, ', ')", "array_to_string(f.tags, ', ')")
    "    ], NULL) AS changes"
    "), rev AS ("
    REVISION_INSERT("(SELECT u.id AS flag_id, NULL::uuid AS environment_id,"
                    " 'flag.updated' AS action, 'Updated the flag settings' AS summary,"
                    " u.changes FROM u WHERE cardinality(u.changes) > 0) AS s", "$4", "$5")
    "), aud AS (" REVISION_AUDIT("$6") ")"
    " SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM old) THEN 404"
    "             WHEN EXISTS (SELECT 1 FROM bad) THEN 422 ELSE 200 END,"
    "        CASE WHEN EXISTS (SELECT 1 FROM bad)"
    "             THEN json_build_object('maintainerUserId',"
    "                                    json_build_array('is not a member of the organization'))"
    "             ELSE json_build_object('flag', (SELECT body FROM u)) END,"
    "        CASE WHEN EXISTS (SELECT 1 FROM old) THEN 'validation failed'"
    "             ELSE 'flag not found' END";

/* $1 org, $2 key, $3 audit actor. */
static const char DELETE_SQL[] =
    "WITH d AS (DELETE FROM flags WHERE org_id = $1::uuid AND key = $2 RETURNING key),"
    " aud AS ("
    AUDIT_INSERT("(SELECT 'flag.deleted' AS action, 'Deleted flag ' || d.key AS summary,"
                 " 'flags/' || d.key AS location FROM d) AS s", "$3")
    ")"
    " SELECT CASE WHEN EXISTS (SELECT 1 FROM d) THEN 200 ELSE 404 END, '{\"ok\": true}',"
    "        'flag not found'";

/* $1 org, $2 key, $3 "t" to archive or "f" to restore, $4 actor id, $5 actor name,
 * $6 audit actor. */
static const char ARCHIVE_SQL[] =
    "WITH old AS (SELECT f.id, f.archived_at, ensign_flag_detail_json(f) AS body"
    "               FROM flags f WHERE f.org_id = $1::uuid AND f.key = $2 FOR UPDATE),"
    " u AS ("
    "  UPDATE flags f SET archived_at = CASE WHEN $3::boolean THEN now() END, updated_at = now()"
    "    FROM old WHERE f.id = old.id AND (old.archived_at IS NULL) = $3::boolean"
    "  RETURNING f.id, ensign_flag_detail_json(f) AS body"
    "), rev AS ("
    REVISION_INSERT("(SELECT u.id AS flag_id, NULL::uuid AS environment_id,"
                    " CASE WHEN $3::boolean THEN 'flag.archived' ELSE 'flag.restored' END AS action,"
                    " CASE WHEN $3::boolean THEN 'Archived the flag' ELSE 'Restored the flag' END"
                    " AS summary, '{}'::text[] AS changes FROM u) AS s", "$4", "$5")
    "), aud AS (" REVISION_AUDIT("$6") ")"
    " SELECT CASE WHEN old.id IS NULL THEN 404 ELSE 200 END,"
    "        json_build_object('flag', COALESCE(u.body, old.body)), 'flag not found'"
    "   FROM (SELECT 1) AS one LEFT JOIN old ON true LEFT JOIN u ON true";

/* Per environment: totals, variants, and evaluations per day over 30 days. */
#define USAGE_ENV_SQL                                                                              \
    "json_build_object('key', e.key, 'name', e.name,"                                              \
    "  'total', COALESCE((SELECT sum(c.count) FROM usage_counters c"                             \
    "                      WHERE c.flag_id = f.id AND c.environment_id = e.id), 0),"             \
    "  'lastSeenAt', (SELECT ensign_iso(max(c.last_seen_at)) FROM usage_counters c"              \
    "                  WHERE c.flag_id = f.id AND c.environment_id = e.id),"                      \
    "  'variants', COALESCE((SELECT json_agg(json_build_object('key', x.k, 'count', x.n)"        \
    "                                        ORDER BY x.n DESC, x.k)"                             \
    "                          FROM (SELECT c.variant_key AS k, sum(c.count) AS n"                \
    "                                  FROM usage_counters c"                                     \
    "                                 WHERE c.flag_id = f.id AND c.environment_id = e.id"        \
    "                                 GROUP BY c.variant_key) AS x), '[]'),"                       \
    "  'series', (SELECT json_agg(json_build_object('day', to_char(d, 'YYYY-MM-DD'),"             \
    "                     'count', COALESCE((SELECT sum(c.count) FROM usage_counters c"           \
    "                                         WHERE c.flag_id = f.id AND c.environment_id = e.id" \
    "                                           AND c.hour >= d"                                   \
    "                                           AND c.hour < d + interval '1 day'), 0))"          \
    "                     ORDER BY d)"                                                             \
    "                FROM generate_series(date_trunc('day', now()) - interval '29 days',"         \
    "                                     date_trunc('day', now()), interval '1 day') AS d))"

/* $1 org, $2 key. */
static const char USAGE_SQL[] =
    "SELECT 200, json_build_object('usage', json_build_object("
    "  'total', COALESCE((SELECT sum(c.count) FROM usage_counters c WHERE c.flag_id = f.id), 0),"
    "  'lastSeenAt', (SELECT ensign_iso(max(c.last_seen_at)) FROM usage_counters c"
    "                  WHERE c.flag_id = f.id),"
    "  'environments', COALESCE((SELECT json_agg(" USAGE_ENV_SQL " ORDER BY e.sort_order, e.key)"
    "                              FROM environments e WHERE e.org_id = f.org_id), '[]')))"
    "  FROM flags f WHERE f.org_id = $1::uuid AND f.key = $2";

/* clang-format on */

/* ---- create ---- */

/* What a valid creation request says, as statement parameters. */
struct new_flag {
    const char *key;
    const char *description; /* NULL: none */
    enum validate_flag_type type;
    struct json_object *tags;     /* borrowed from the body, or NULL */
    struct json_object *variants; /* [{key, value, label}]; owned */
};

/* The body's members (the row's schema checked them); the variants are
 * checked against the type (variants.c). */
static void read_new_flag(struct validate *v, const struct json_object *body, struct new_flag *nf)
{
    nf->key = mgmt_body_text(body, "slug");
    nf->description = mgmt_body_text(body, "description");
    nf->tags = mgmt_body_member(body, "tags");
    const char *type = mgmt_body_text(body, "type");
    nf->type =
        type ? (enum validate_flag_type)validate_flag_type_from_name(type) : FLAG_TYPE_BOOLEAN;
    nf->variants = variants_for_new_flag(v, body, "variants", nf->type);
}

/* The default serve and off variant of every environment (doc/choices.md
 * "Environment configuration and evaluation"). */
static void default_configuration(const struct new_flag *nf, struct json_object **serve,
                                  const char **off_key)
{
    size_t n = json_object_array_length(nf->variants);
    *serve = json_object_new_object();
    *off_key = NULL;
    if (n == 0)
        return;
    const char *first = variants_key_at(nf->variants, 0);
    json_object_object_add(*serve, "variant", json_object_new_string(first));
    *off_key = nf->type == FLAG_TYPE_BOOLEAN ? "off" : variants_key_at(nf->variants, n > 1);
}

static void send_create(struct http_request *r, const struct mgmt_ctx *ctx,
                        const struct new_flag *nf)
{
    struct json_object *serve;
    const char *off_key;
    default_configuration(nf, &serve, &off_key);
    char count[24];
    snprintf(count, sizeof count, "%zu", json_object_array_length(nf->variants));
    const char *params[] = {ctx->org_id,
                            nf->key,
                            nf->description,
                            validate_flag_type_name(nf->type),
                            nf->tags ? json_object_to_json_string(nf->tags) : "[]",
                            json_object_to_json_string(nf->variants),
                            json_object_to_json_string(serve),
                            off_key,
                            ctx->actor_user_id,
                            ctx->actor_name,
                            count,
                            ctx->audit_actor};
    mgmt_query(r, CREATE_SQL, 12, params, mgmt_answer_cb, r);
    json_object_put(serve);
}

void flags_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed it; ours to put */
    struct validate v;
    validate_init(&v);
    struct new_flag nf = {0};
    read_new_flag(&v, body, &nf);
    if (validate_ok(&v))
        send_create(r, ctx, &nf);
    else
        mgmt_send_invalid(r, &v);
    validate_free(&v);
    json_object_put(nf.variants);
    json_object_put(body);
}

/* ---- list, detail, usage, delete ---- */

/* Answers 200 with body written in C from res (freed here), or 500 with
 * why when writing it failed. */
static void send_written(struct http_request *r, const PGresult *res, char *body, const char *why)
{
    if (body == NULL) {
        auth_send_db_failure(r, res, why);
        return;
    }
    http_send_json_text(r, 200, body);
    free(body);
}

/* A list request between its statement and its answer (flags_list). */
struct list_page {
    struct http_request *r;
    struct page_request page;
};

static void on_list_rows(PGresult *res, const char *error, void *arg)
{
    struct list_page *lp = arg;
    struct http_request *r = lp->r;
    if (!db_result_ok(res)) {
        if (!page_send_rejected(r, res))
            mgmt_send_failure(r, res, error);
    } else {
        const char *next = flaglist_next_cursor(res, lp->page.limit);
        if (next != NULL)
            page_add_next_link(r, &lp->page, next);
        send_written(r, res, flaglist_json(res, lp->page.limit), "cannot write the flag list");
    }
    free(lp);
}

/* stale_after_days as the interval the list and detail statements take:
 * seconds, so that adding it to a timestamptz needs no time zone. */
static void stale_after(const struct http_request *r, char out[32])
{
    snprintf(out, 32, "%lld seconds", (long long)r->server->cfg->stale_after_days * 86400);
}

/* "t" when the query parameter name is true (or 1), else "f". */
static const char *query_flag(const struct http_request *r, const char *name)
{
    char value[8] = "";
    http_query_param(r, name, value, sizeof value);
    return strcmp(value, "true") == 0 || strcmp(value, "1") == 0 ? "t" : "f";
}

/* Now minus stale_after_days, as a timestamptz text in UTC. */
static void stale_horizon(const struct http_request *r, char out[32])
{
    time_t horizon = time(NULL) - (time_t)r->server->cfg->stale_after_days * 86400;
    struct tm tm;
    if (gmtime_r(&horizon, &tm) == NULL || strftime(out, 32, "%Y-%m-%d %H:%M:%S+00", &tm) == 0)
        snprintf(out, 32, "-infinity");
}

/* The filters of a list in its Link and its cursor's scope: the cursor
 * of one list is refused by another (pagination.h). */
static void list_filters(struct list_page *lp, const char *org_id, bool archived, bool stale,
                         char *scope, size_t scope_len)
{
    snprintf(lp->page.link_extra, sizeof lp->page.link_extra, "%s%s",
             archived ? "archived=true&" : "", stale ? "stale=true&" : "");
    snprintf(scope, scope_len, "%s/%s%s", org_id, archived ? "archived" : "active",
             stale ? "/stale" : "");
}

void flags_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct list_page *lp = malloc(sizeof *lp);
    if (lp == NULL) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    lp->r = r;
    if (!page_read_bounded(r, &lp->page, FLAGLIST_LIMIT_DEFAULT, FLAGLIST_LIMIT_MAX)) {
        free(lp);
        return;
    }
    bool archived = query_flag(r, "archived")[0] == 't';
    bool stale_only = query_flag(r, "stale")[0] == 't';
    char after[32], horizon[32], fetch[16], scope[AUTH_UUID_LEN + 32];
    stale_after(r, after);
    stale_horizon(r, horizon);
    snprintf(fetch, sizeof fetch, "%d", lp->page.limit + 1);
    list_filters(lp, ctx->org_id, archived, stale_only, scope, sizeof scope);
    const char *params[] = {r->match.route->pattern,
                            scope,
                            lp->page.q,
                            lp->page.cursor,
                            fetch,
                            ctx->org_id,
                            after,
                            horizon};
    const char *sql = flaglist_statement(archived, lp->page.q, stale_only);
    if (mgmt_query(r, sql, 8, params, on_list_rows, lp) != 0)
        free(lp);
}

static void on_flag_not_found(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, "flag not found");
}

/* Runs sql with ($1 org, $2 flag key). */
static void query_by_key(struct http_request *r, const struct mgmt_ctx *ctx, const char *sql)
{
    const char *params[] = {ctx->org_id, mgmt_param(r, "key")};
    mgmt_query(r, sql, 2, params, on_flag_not_found, r);
}

static void on_detail_rows(PGresult *res, const char *error, void *arg)
{
    struct http_request *r = arg;
    if (!db_result_ok(res)) {
        mgmt_send_failure(r, res, error);
        return;
    }
    if (PQntuples(res) == 0) {
        http_send_error(r, 404, "flag not found");
        return;
    }
    send_written(r, res, flagdetail_json(res), "cannot write the flag detail");
}

void flags_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    char after[32], horizon[32];
    stale_after(r, after);
    stale_horizon(r, horizon);
    const char *params[] = {ctx->org_id, mgmt_param(r, "key"), after, horizon};
    mgmt_query(r, FLAGDETAIL_SQL, 4, params, on_detail_rows, r);
}

void flags_usage(struct http_request *r, const struct mgmt_ctx *ctx)
{
    query_by_key(r, ctx, USAGE_SQL);
}

void flags_delete(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id, mgmt_param(r, "key"), ctx->audit_actor};
    mgmt_query(r, DELETE_SQL, 3, params, on_flag_not_found, r);
}

/* ---- update ---- */

/* Copies member name of body into patch when present. */
static void copy_if_present(struct json_object *patch, const struct json_object *body,
                            const char *name)
{
    struct json_object *value;
    if (json_object_object_get_ex(body, name, &value))
        json_object_object_add(patch, name, json_object_get(value));
}

/* The patch: the given members of the body (the row's schema checked them). */
static struct json_object *read_patch(const struct json_object *body)
{
    static const char *const fields[] = {"name",      "description", "maintainerUserId",
                                         "permanent", "tags",        NULL};
    struct json_object *patch = json_object_new_object();
    for (const char *const *f = fields; *f; f++)
        copy_if_present(patch, body, *f);
    return patch;
}

void flags_update(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    struct json_object *patch = read_patch(body);
    const char *params[] = {
        ctx->org_id,        mgmt_param(r, "key"), json_object_to_json_string(patch),
        ctx->actor_user_id, ctx->actor_name,      ctx->audit_actor};
    mgmt_query(r, UPDATE_SQL, 6, params, on_flag_not_found, r);
    json_object_put(patch);
    json_object_put(body);
}

/* ---- archive, restore ---- */

static void set_archived(struct http_request *r, const struct mgmt_ctx *ctx, bool archived)
{
    const char *params[] = {ctx->org_id,        mgmt_param(r, "key"), archived ? "t" : "f",
                            ctx->actor_user_id, ctx->actor_name,      ctx->audit_actor};
    mgmt_query(r, ARCHIVE_SQL, 6, params, on_flag_not_found, r);
}

void flags_archive(struct http_request *r, const struct mgmt_ctx *ctx)
{
    set_archived(r, ctx, true);
}

void flags_restore(struct http_request *r, const struct mgmt_ctx *ctx)
{
    set_archived(r, ctx, false);
}
