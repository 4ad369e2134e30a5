/*
 * rules.c - targeting rules of a flag in one environment:
 * /v1/orgs/{org}/flags/{key}/environments/{envKey}/rules (POST append,
 * GET list, PUT replace), /rules/{ruleId} (PATCH, DELETE) and
 * /rules/reorder (POST).
 *
 * Owns the rule statements and the rule body rules. A write takes two
 * round trips: a first validation pass that only collects the segment and
 * entity keys the conditions name (answering nothing), then ONE statement
 * for the caller (the dispatcher, mgmt.c) and the flag context with those
 * keys (rules_load, the rows' load: flagctx_dispatch); then, in the order of separate steps, the
 * caller's answers (401, 429, 404, 403), the body (400), the context (404 flag, 404 environment),
 * 409 when the flag is archived, the real validation (422, with paths such as
 * "rules[3].conditions[0].operator"), then ONE statement that locks the flag row, writes, and
 * records the revision: a replacement deletes and inserts the whole ordered set and is one
 * revision.
 *
 * Limits (the rule schemas of doc/api.md): description 500, 50
 * conditions per rule, priority 0 to 2^53-1, 200 rules in a replace or a
 * reorder; an append beyond 200 rules in the environment is a 422 too, so
 * every rule set stays reorderable. A reorder lists every rule of the
 * environment exactly once (doc/choices.md "Variants and keys"). An append without a
 * priority goes after the last rule; a replace or reorder numbers the
 * rules 0, 1, 2, ... Rules are evaluated by (priority, created_at).
 *
 * Called from the route table.
 */
#include "api/rules.h"

#include <stdlib.h>
#include <strings.h>

#include "api/flagctx.h"
#include "http/http.h"
#include "mgmt/jsonschema.h"
#include "mgmt/mgmt.h"
#include "api/revisions.h"
#include "mgmt/validate.h"

/* ---- statements ---- */

/* clang-format off */

/* $1 org, $2 flag key, $3 environment key. */
static const char LIST_SQL[] =
    "SELECT CASE WHEN f.id IS NULL OR e.id IS NULL THEN 404 ELSE 200 END,"
    "       json_build_object('rules', COALESCE((SELECT json_agg(ensign_rule_json(r)"
    "                                                  ORDER BY r.priority, r.created_at, r.id)"
    "                                              FROM rules r WHERE r.flag_id = f.id"
    "                                               AND r.environment_id = e.id), '[]')),"
    "       CASE WHEN f.id IS NULL THEN 'flag not found' ELSE 'environment not found' END"
    "  FROM (SELECT 1) AS one"
    "  LEFT JOIN flags f ON f.org_id = $1::uuid AND f.key = $2"
    "  LEFT JOIN environments e ON e.org_id = $1::uuid AND e.key = $3";

/* Every write: $1 flag id, $2 environment id, and last the audit actor (after the
 * actor id and name); the environment's name. */
#define ENV_SQL "env AS (SELECT name FROM environments WHERE id = $2::uuid)"

/* $3 rule (JSON {priority?, description?, conditions?, serve}), $4 actor id, $5 name. */
static const char CREATE_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ", " ENV_SQL ","
    " n AS (SELECT count(*) AS n, max(priority) AS top FROM rules"
    "        WHERE flag_id = $1::uuid AND environment_id = $2::uuid),"
    " ins AS ("
    "  INSERT INTO rules AS r (flag_id, org_id, environment_id, priority, description,"
    "                          conditions, serve)"
    "  SELECT $1::uuid, f.org_id, $2::uuid,"
    "         COALESCE(($3::jsonb ->> 'priority')::bigint, (SELECT COALESCE(top + 1, 0) FROM n)),"
    "         $3::jsonb ->> 'description', COALESCE($3::jsonb -> 'conditions', '[]'),"
    "         $3::jsonb -> 'serve'"
    "    FROM f WHERE f.archived_at IS NULL AND (SELECT n FROM n) < 200"
    "  RETURNING r.flag_id, r.environment_id, ensign_rule_json(r) AS body"
    "), rev AS ("
    REVISION_INSERT("(SELECT ins.flag_id, ins.environment_id, 'rule.created' AS action,"
                    " 'Added a rule in ' || env.name AS summary,"
                    " ARRAY['serve: ' || (ins.body ->> 'serve')] AS changes"
                    " FROM ins, env) AS s", "$4", "$5")
    "), aud AS (" REVISION_AUDIT("$6") ")"
    " SELECT " FLAGCTX_STATUS_SQL("CASE WHEN (SELECT n FROM n) >= 200 THEN 422 ELSE 201 END") ","
    "        CASE WHEN (SELECT n FROM n) >= 200"
    "             THEN json_build_object('rules',"
    "                    json_build_array('an environment has at most 200 rules'))"
    "             ELSE json_build_object('rule', (SELECT body FROM ins)) END,"
    "        " FLAGCTX_MESSAGE_SQL " ELSE 'validation failed' END";

/* $3 rules (JSON array of {description?, conditions?, serve}), $4 actor id, $5 name. */
static const char REPLACE_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ", " ENV_SQL ","
    " old AS (SELECT count(*) AS n FROM rules"
    "          WHERE flag_id = $1::uuid AND environment_id = $2::uuid),"
    " del AS ("
    "  DELETE FROM rules r USING f"
    "   WHERE r.flag_id = $1::uuid AND r.environment_id = $2::uuid AND f.archived_at IS NULL"
    "), ins AS ("
    "  INSERT INTO rules AS r (flag_id, org_id, environment_id, priority, description,"
    "                          conditions, serve)"
    "  SELECT $1::uuid, f.org_id, $2::uuid, x.ord - 1, x.item ->> 'description',"
    "         COALESCE(x.item -> 'conditions', '[]'), x.item -> 'serve'"
    "    FROM f, jsonb_array_elements($3::jsonb) WITH ORDINALITY AS x(item, ord)"
    "   WHERE f.archived_at IS NULL"
    "  RETURNING r.priority, ensign_rule_json(r) AS body"
    "), rev AS ("
    REVISION_INSERT("(SELECT f.id AS flag_id, $2::uuid AS environment_id,"
                    " 'rules.replaced' AS action, 'Replaced the rules in ' || env.name AS summary,"
                    " ARRAY['rules: ' || old.n || ' → ' || jsonb_array_length($3::jsonb)]"
                    " AS changes FROM f, env, old WHERE f.archived_at IS NULL) AS s", "$4", "$5")
    "), aud AS (" REVISION_AUDIT("$6") ")"
    " SELECT " FLAGCTX_STATUS_SQL("200") ","
    "        json_build_object('rules', COALESCE((SELECT json_agg(body ORDER BY priority)"
    "                                               FROM ins), '[]')),"
    "        " FLAGCTX_MESSAGE_SQL " END";

/* The rule $3 of the flag and environment. */
#define OLD_RULE_SQL                                                                               \
    "old AS (SELECT * FROM rules WHERE id = $3::uuid"                                              \
    "          AND flag_id = $1::uuid AND environment_id = $2::uuid)"

/* $3 rule id, $4 patch (JSON, only the given members), $5 actor id, $6 name. */
static const char UPDATE_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ", " ENV_SQL ", " OLD_RULE_SQL ","
    " u AS ("
    "  UPDATE rules r"
    "     SET priority = COALESCE(($4::jsonb ->> 'priority')::bigint, r.priority),"
    "         description = CASE WHEN $4::jsonb ? 'description' THEN $4::jsonb ->> 'description'"
    "                            ELSE r.description END,"
    "         conditions = COALESCE($4::jsonb -> 'conditions', r.conditions),"
    "         serve = COALESCE($4::jsonb -> 'serve', r.serve), updated_at = now()"
    "    FROM f, old WHERE r.id = old.id AND f.archived_at IS NULL"
    "  RETURNING r.flag_id, r.environment_id, ensign_rule_json(r) AS body,"
    "    array_remove(ARRAY["
    REVISION_CHANGE("priority", "old.priority::text", "r.priority::text") ", "
    REVISION_CHANGE("description", "old.description", "r.description") ", "
    REVISION_CHANGE("conditions", "old.conditions::text", "r.conditions::text") ", "
    REVISION_CHANGE("serve", "old.serve::text", "r.serve::text")
    "    ], NULL) AS changes"
    "), rev AS ("
    REVISION_INSERT("(SELECT u.flag_id, u.environment_id, 'rule.updated' AS action,"
                    " 'Updated a rule in ' || env.name AS summary, u.changes"
                    " FROM u, env WHERE cardinality(u.changes) > 0) AS s", "$5", "$6")
    "), aud AS (" REVISION_AUDIT("$7") ")"
    " SELECT " FLAGCTX_STATUS_SQL("CASE WHEN NOT EXISTS (SELECT 1 FROM old) THEN 404 ELSE 200 END") ","
    "        json_build_object('rule', (SELECT body FROM u)),"
    "        " FLAGCTX_MESSAGE_SQL " ELSE 'rule not found' END";

/* $3 rule id, $4 actor id, $5 name. */
static const char DELETE_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ", " ENV_SQL ", " OLD_RULE_SQL ","
    " d AS ("
    "  DELETE FROM rules r USING f, old WHERE r.id = old.id AND f.archived_at IS NULL"
    "  RETURNING r.flag_id, r.environment_id, r.serve"
    "), rev AS ("
    REVISION_INSERT("(SELECT d.flag_id, d.environment_id, 'rule.deleted' AS action,"
                    " 'Deleted a rule in ' || env.name AS summary,"
                    " ARRAY['serve: ' || d.serve::text] AS changes FROM d, env) AS s", "$4", "$5")
    "), aud AS (" REVISION_AUDIT("$6") ")"
    " SELECT " FLAGCTX_STATUS_SQL("CASE WHEN NOT EXISTS (SELECT 1 FROM old) THEN 404 ELSE 200 END") ","
    "        '{\"ok\": true}',"
    "        " FLAGCTX_MESSAGE_SQL " ELSE 'rule not found' END";

/* $3 rule ids in the new order (JSON array of distinct uuids), $4 actor id, $5 name. */
static const char REORDER_SQL[] =
    "WITH " FLAGCTX_LOCK_SQL ", " ENV_SQL ","
    " cur AS (SELECT id FROM rules WHERE flag_id = $1::uuid AND environment_id = $2::uuid),"
    " want AS (SELECT x.id::uuid AS id, x.ord"
    "            FROM jsonb_array_elements_text($3::jsonb) WITH ORDINALITY AS x(id, ord)),"
    " ok AS (SELECT (SELECT count(*) FROM cur) = (SELECT count(*) FROM want)"
    "               AND NOT EXISTS (SELECT id FROM cur EXCEPT SELECT id FROM want) AS ok),"
    " u AS ("
    "  UPDATE rules r SET priority = want.ord - 1, updated_at = now()"
    "    FROM f, want, ok"
    "   WHERE r.id = want.id AND r.flag_id = $1::uuid AND r.environment_id = $2::uuid"
    "     AND f.archived_at IS NULL AND ok.ok"
    "), rev AS ("
    REVISION_INSERT("(SELECT f.id AS flag_id, $2::uuid AS environment_id,"
                    " 'rules.reordered' AS action, 'Reordered the rules in ' || env.name"
                    " AS summary, '{}'::text[] AS changes"
                    " FROM f, env, ok WHERE f.archived_at IS NULL AND ok.ok) AS s", "$4", "$5")
    "), aud AS (" REVISION_AUDIT("$6") ")"
    " SELECT " FLAGCTX_STATUS_SQL("CASE WHEN (SELECT ok FROM ok) THEN 200 ELSE 422 END") ","
    "        CASE WHEN (SELECT ok FROM ok) THEN '{\"ok\": true}'::json"
    "             ELSE json_build_object('ruleIds', json_build_array("
    "                    'must list every rule of the environment exactly once')) END,"
    "        " FLAGCTX_MESSAGE_SQL " ELSE 'validation failed' END";

/* clang-format on */

/* ---- bodies ---- */

enum rule_op { RULE_CREATE, RULE_REPLACE, RULE_UPDATE, RULE_DELETE, RULE_REORDER };

/* Adds body[name] to out when present (a new reference). */
static void copy_member(struct json_object *out, const struct json_object *body, const char *name)
{
    struct json_object *value;
    if (json_object_object_get_ex(body, name, &value))
        json_object_object_add(out, name, json_object_get(value));
}

/*
 * Checks one rule object at the current path (the row's schema checked its
 * shape) for what needs the flag and the organization: the variants its
 * serve names, the segments and entity attributes its conditions name,
 * each condition's values for its operator, a rollout's weights not all
 * zero. Returns its canonical form (only the given members; serve
 * canonical; a new object).
 */
static struct json_object *read_rule(struct validate *v, const struct json_object *rule,
                                     const struct validate_refs *refs, enum rule_op op)
{
    struct json_object *out = json_object_new_object();
    copy_member(out, rule, "description");
    if (validate_conditions(v, rule, "conditions", true, refs, NULL) == VALIDATE_SET)
        copy_member(out, rule, "conditions");
    int64_t priority;
    struct json_object *given = mgmt_body_member(rule, "priority");
    if (op != RULE_REPLACE && given != NULL && validate_integral(given, &priority))
        json_object_object_add(out, "priority", json_object_new_int64(priority));
    struct json_object *serve;
    unsigned serve_flags = op == RULE_UPDATE ? 0 : VALIDATE_REQUIRED;
    if (validate_serve(v, rule, "serve", serve_flags, refs, &serve) == VALIDATE_SET)
        json_object_object_add(out, "serve", validate_serve_canonical(serve));
    return out;
}

static struct json_object *read_replace(struct validate *v, const struct json_object *body,
                                        const struct validate_refs *refs)
{
    struct json_object *rules = mgmt_body_member(body, "rules");
    struct json_object *out = json_object_new_array();
    size_t mark = validate_push_field(v, "rules");
    for (size_t i = 0; i < json_object_array_length(rules); i++) {
        size_t item = validate_push_index(v, i);
        json_object_array_add(
            out, read_rule(v, json_object_array_get_idx(rules, i), refs, RULE_REPLACE));
        validate_pop(v, item);
    }
    validate_pop(v, mark);
    return out;
}

/* True when ids[0..i) holds ids[i] (uuids compare case-insensitively). */
static bool listed_before(struct json_object *ids, size_t i)
{
    const char *id = json_object_get_string(json_object_array_get_idx(ids, i));
    for (size_t k = 0; k < i; k++) {
        if (strcasecmp(id, json_object_get_string(json_object_array_get_idx(ids, k))) == 0)
            return true;
    }
    return false;
}

/* The rule ids (uuids, as the row's schema says), none listed twice. */
static struct json_object *read_reorder(struct validate *v, const struct json_object *body)
{
    struct json_object *ids = mgmt_body_member(body, "ruleIds");
    size_t mark = validate_push_field(v, "ruleIds");
    for (size_t i = 0; i < json_object_array_length(ids); i++) {
        size_t item = validate_push_index(v, i);
        if (listed_before(ids, i))
            validate_error(v, NULL, "lists a rule twice");
        validate_pop(v, item);
    }
    validate_pop(v, mark);
    return json_object_get(ids);
}

/* The statement's JSON parameter for op, or NULL (errors in v). */
static struct json_object *read_body(struct validate *v, enum rule_op op,
                                     const struct json_object *body,
                                     const struct validate_refs *refs)
{
    switch (op) {
    case RULE_CREATE:
    case RULE_UPDATE:
        return read_rule(v, body, refs, op);
    case RULE_REPLACE:
        return read_replace(v, body, refs);
    case RULE_REORDER:
        return read_reorder(v, body);
    case RULE_DELETE:
        break;
    }
    return NULL;
}

/* ---- writes ---- */

static void send_write(struct http_request *r, enum rule_op op, const struct mgmt_ctx *ctx,
                       const struct flagctx *fc, const struct json_object *param)
{
    static const char *const sql[] = {CREATE_SQL, REPLACE_SQL, UPDATE_SQL, DELETE_SQL, REORDER_SQL};
    const char *json = param ? json_object_to_json_string((struct json_object *)param) : NULL;
    const char *rule_id = mgmt_param(r, "ruleId");
    bool by_id = op == RULE_UPDATE || op == RULE_DELETE;
    const char *params[7] = {fc->flag_id, fc->env_id};
    int n = 2;
    if (by_id)
        params[n++] = rule_id;
    if (json)
        params[n++] = json;
    params[n++] = ctx->actor_user_id;
    params[n++] = ctx->actor_name;
    params[n++] = ctx->audit_actor;
    mgmt_query(r, sql[op], n, params, mgmt_answer_cb, r);
}

static void write_with_context(struct http_request *r, enum rule_op op, const struct mgmt_ctx *ctx,
                               const struct json_object *body, const struct flagctx *fc)
{
    if (fc->archived) {
        http_send_error(r, 409, "the flag is archived; restore it first");
        return;
    }
    bool by_id = op == RULE_UPDATE || op == RULE_DELETE;
    if (by_id && !validate_uuid_ok(mgmt_param(r, "ruleId"))) {
        http_send_error(r, 404, "rule not found");
        return;
    }
    struct validate v;
    validate_init(&v);
    struct json_object *param = read_body(&v, op, body, &fc->refs);
    if (validate_ok(&v))
        send_write(r, op, ctx, fc, param);
    else
        mgmt_send_invalid(r, &v);
    json_object_put(param);
    validate_free(&v);
}

/*
 * The dispatcher answered the caller's checks and the body (400, 422 not
 * an object); ctx->row holds the flag context: the context (404 flag, 404
 * environment), then the write's own checks. The operation owns ctx->body.
 */
static void write_op(struct http_request *r, const struct mgmt_ctx *ctx, enum rule_op op)
{
    struct flagctx fc;
    if (flagctx_from_row(r, ctx->row, true, &fc)) {
        write_with_context(r, op, ctx, ctx->body, &fc);
        flagctx_release(&fc);
    }
    json_object_put(ctx->body);
}

/*
 * First pass, before the caller is known: only collects the keys a body of
 * the schema's shape names (its errors come again later). Answers nothing: a body that does
 * not parse collects nothing and is answered 400 after the caller's checks.
 */
static void collect_wanted(struct http_request *r, enum rule_op op, struct flagctx_wanted *wanted)
{
    struct json_object *body = mgmt_body_peek(r);
    /* read_body trusts the shape the row's schema gives (the dispatcher
     * checks it again, and answers for it, after the caller's checks). */
    const struct json_object *schema = jsonschema_parsed(r->match.route->request_schema);
    struct validate v;
    validate_init(&v);
    if (schema != NULL && body != NULL && jsonschema_check(&v, schema, body))
        json_object_put(read_body(&v, op, body, &wanted->refs));
    validate_free(&v);
    json_object_put(body);
}

/* The rule operation of a route row's op. */
static enum rule_op op_of(const struct route *route)
{
    if (route->op == rules_create)
        return RULE_CREATE;
    if (route->op == rules_replace)
        return RULE_REPLACE;
    if (route->op == rules_update)
        return RULE_UPDATE;
    if (route->op == rules_reorder)
        return RULE_REORDER;
    return RULE_DELETE;
}

void rules_load(struct http_request *r)
{
    enum rule_op op = op_of(r->match.route);
    struct flagctx_wanted wanted;
    flagctx_wanted_init(&wanted);
    if (op != RULE_DELETE)
        collect_wanted(r, op, &wanted);
    flagctx_dispatch(r, mgmt_param(r, "key"), mgmt_param(r, "envKey"), &wanted);
    flagctx_wanted_free(&wanted);
}

void rules_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_op(r, ctx, RULE_CREATE);
}

void rules_replace(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_op(r, ctx, RULE_REPLACE);
}

void rules_update(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_op(r, ctx, RULE_UPDATE);
}

void rules_delete(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_op(r, ctx, RULE_DELETE);
}

void rules_reorder(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_op(r, ctx, RULE_REORDER);
}

/* ---- list ---- */

void rules_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id, mgmt_param(r, "key"), mgmt_param(r, "envKey")};
    mgmt_query(r, LIST_SQL, 3, params, mgmt_answer_cb, r);
}
