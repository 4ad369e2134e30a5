/*
 * schedules.c - scheduled changes of a flag's environment configuration
 * (doc/choices.md "Scheduled changes"): making, listing and cancelling
 * them. Applying them is schedule_apply.c's, in the scheduler process.
 *
 * Owns the create, list and cancel statements. A schedule is
 * {at, environment, changes}: changes is the body of PATCH
 * /flags/{key}/environments/{envKey}, read by that PATCH's own function
 * (environments_read_change) against the flag's variants now, and again
 * when applied. at is an ISO 8601 time (isotime.h) at least 10 s and at
 * most 366 days after the request, by this node's clock.
 *
 * Create: the caller's checks and the flag context (flagctx_dispatch, with
 * the body's environment peeked before the caller is known) in one round
 * trip, then one statement that inserts the row (its trigger NOTIFYs
 * ensign_schedules, waking every node's scheduler) and records the audit
 * event schedule.created. Statuses in order: 401, 429, 404 organization,
 * 403, 400 body, 422 the body's shape (the row's schema: changes is
 * checked by the PATCH's own schema, paths "changes.enabled"), 404 flag,
 * 422 at out of bounds or changes empty, 404 environment, 409 the flag is
 * archived, 422 changes naming what the flag lacks
 * ("changes.offVariantKey"). No
 * revision: the flag does not change until the schedule is applied.
 * An organization token may schedule: createdByUserId is then null and a
 * failure notifies nobody (the audit log records it).
 *
 * Lists: soonest first (at, then creation), at most SCHEDULES_LIST_MAX,
 * ?status= one of pending, applied, failed, cancelled (else 422). Cancel:
 * a pending schedule of this flag becomes cancelled (ack, audit event
 * schedule.cancelled); any other status is a 409; an id not of this flag
 * in this organization, a 404.
 *
 * Called from the route table (routes.c).
 */
#include "api/schedules.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/environments.h"
#include "api/flagctx.h"
#include "http/http.h"
#include "mgmt/audit_record.h"
#include "mgmt/mgmt.h"
#include "mgmt/validate.h"

/* clang-format off */

/*
 * $1 org, $2 flag id, $3 environment id, $4 at, $5 changes (JSON), $6
 * creator user id ("" for an organization token), $7 token id, $8 actor
 * name, $9 audit actor.
 */
static const char CREATE_SQL[] =
    "WITH f AS (SELECT id, key, archived_at FROM flags WHERE id = $2::uuid AND org_id = $1::uuid),"
    " ins AS ("
    "  INSERT INTO flag_schedules (org_id, flag_id, flag_key, environment_id, at, changes,"
    "                              created_by_user_id, created_by_token_id, created_by_name)"
    "  SELECT $1::uuid, f.id, f.key, $3::uuid, $4::timestamptz, $5::jsonb, NULLIF($6, '')::uuid,"
    "         NULLIF($7, '')::uuid, NULLIF($8, '')"
    "    FROM f WHERE f.archived_at IS NULL"
    "  RETURNING *"
    "), aud AS ("
    AUDIT_INSERT("(SELECT 'schedule.created' AS action,"
                 " 'Flag ' || ins.flag_key || ': scheduled a change in ' || e.name || ' for '"
                 " || ensign_iso(ins.at) AS summary,"
                 " 'flags/' || ins.flag_key || '/schedules/' || ins.id AS location"
                 " FROM ins JOIN environments e ON e.id = ins.environment_id) AS s", "$9")
    ")"
    " SELECT " FLAGCTX_STATUS_SQL("201") ","
    "        (SELECT json_build_object('schedule', ensign_schedule_json(ROW(ins.*)::flag_schedules))"
    "           FROM ins),"
    "        " FLAGCTX_MESSAGE_SQL " END";

#define TEXT_OF(n) #n
#define DECIMAL(n) TEXT_OF(n)

#define LIST_ITEMS(where)                                                                          \
    "COALESCE((SELECT json_agg(x.j ORDER BY x.at, x.created_at, x.id)"                             \
    "            FROM (SELECT ensign_schedule_json(s) AS j, s.at, s.created_at, s.id"              \
    "                    FROM flag_schedules s WHERE " where                                      \
    "                   ORDER BY s.at, s.created_at, s.id"                                      \
    "                   LIMIT " DECIMAL(SCHEDULES_LIST_MAX) ") AS x), '[]')"

/* $1 org, $2 flag key, $3 status ("" for every one). */
static const char LIST_FLAG_SQL[] =
    "SELECT CASE WHEN f.id IS NULL THEN 404 ELSE 200 END,"
    "       json_build_object('schedules', "
    LIST_ITEMS("s.flag_id = f.id AND ($3 = '' OR s.status = $3)") "),"
    "       'flag not found'"
    "  FROM (SELECT 1) AS one"
    "  LEFT JOIN flags f ON f.org_id = $1::uuid AND f.key = $2";

/* $1 org, $2 status ("" for every one). */
static const char LIST_ORG_SQL[] =
    "SELECT 200, json_build_object('schedules', "
    LIST_ITEMS("s.org_id = $1::uuid AND ($2 = '' OR s.status = $2)") ")";

/* $1 org, $2 flag key, $3 schedule id, $4 audit actor. */
static const char CANCEL_SQL[] =
    "WITH f AS (SELECT id FROM flags WHERE org_id = $1::uuid AND key = $2),"
    " cur AS (SELECT s.id FROM flag_schedules s JOIN f ON s.flag_id = f.id"
    "          WHERE s.id = $3::uuid),"
    " c AS ("
    "  UPDATE flag_schedules s SET status = 'cancelled', cancelled_at = now()"
    "    FROM cur WHERE s.id = cur.id AND s.status = 'pending'"
    "  RETURNING s.id, s.flag_key, s.at, s.environment_id"
    "), aud AS ("
    AUDIT_INSERT("(SELECT 'schedule.cancelled' AS action,"
                 " 'Flag ' || c.flag_key || ': cancelled the change scheduled in ' || e.name"
                 " || ' for ' || ensign_iso(c.at) AS summary,"
                 " 'flags/' || c.flag_key || '/schedules/' || c.id AS location"
                 " FROM c JOIN environments e ON e.id = c.environment_id) AS s", "$4")
    ")"
    " SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM f) OR NOT EXISTS (SELECT 1 FROM cur) THEN 404"
    "             WHEN EXISTS (SELECT 1 FROM c) THEN 200 ELSE 409 END,"
    "        '{\"ok\": true}',"
    "        CASE WHEN NOT EXISTS (SELECT 1 FROM f) THEN 'flag not found'"
    "             WHEN NOT EXISTS (SELECT 1 FROM cur) THEN 'schedule not found'"
    "             ELSE 'only a pending schedule can be cancelled' END";

/* clang-format on */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- create ---- */

/* The fields a schedule's body gives, borrowed from it. */
struct schedule_body {
    const char *at;
    const char *environment;
    struct json_object *changes;
};

/* The body, its shape checked by the row's schema (at a date-time,
 * environment a key, changes the PATCH's body): at within its bounds and
 * changes not empty (422 errors into v). */
static void read_outer(struct validate *v, const struct json_object *body, struct schedule_body *b)
{
    b->at = mgmt_body_text(body, "at");
    b->environment = mgmt_body_text(body, "environment");
    b->changes = mgmt_body_member(body, "changes");
    int64_t at_ms = 0;
    if (b->at == NULL || !validate_timestamp_parse(b->at, &at_ms))
        validate_error(v, "at", "must be an ISO 8601 time such as 2026-12-01T02:00:00Z");
    else if (at_ms < now_ms() + SCHEDULES_MIN_AHEAD_MS)
        validate_error(v, "at", "must be at least 10 seconds ahead");
    else if (at_ms > now_ms() + SCHEDULES_MAX_AHEAD_MS)
        validate_error(v, "at", "must be at most 366 days ahead");
    if (b->environment == NULL)
        validate_error(v, "environment", "is required");
    if (!json_object_is_type(b->changes, json_type_object) ||
        json_object_object_length(b->changes) == 0)
        validate_error(v, "changes", "must change something");
}

/* changes as the PATCH reads it, its errors under "changes". */
static void read_changes(struct validate *v, const struct schedule_body *b,
                         const struct flagctx *fc)
{
    size_t mark = validate_push_field(v, "changes");
    struct environment_change c;
    environments_read_change(v, b->changes, &fc->refs, &c);
    environments_change_free(&c);
    validate_pop(v, mark);
}

static void send_create(struct http_request *r, const struct mgmt_ctx *ctx,
                        const struct schedule_body *b, const struct flagctx *fc)
{
    const char *params[] = {ctx->org_id,
                            fc->flag_id,
                            fc->env_id,
                            b->at,
                            json_object_to_json_string_ext(b->changes, JSON_C_TO_STRING_PLAIN),
                            ctx->actor_user_id,
                            ctx->who.token_id,
                            ctx->actor_name,
                            ctx->audit_actor};
    mgmt_query(r, CREATE_SQL, 9, params, mgmt_answer_cb, r);
}

static void create_with_context(struct http_request *r, const struct mgmt_ctx *ctx,
                                const struct flagctx *fc)
{
    struct validate v;
    validate_init(&v);
    struct schedule_body b = {0};
    read_outer(&v, ctx->body, &b);
    if (!validate_ok(&v))
        mgmt_send_invalid(r, &v);
    else if (fc->env_id[0] == '\0')
        http_send_error(r, 404, "environment not found");
    else if (fc->archived)
        http_send_error(r, 409, "the flag is archived; restore it first");
    else {
        read_changes(&v, &b, fc);
        if (validate_ok(&v))
            send_create(r, ctx, &b, fc);
        else
            mgmt_send_invalid(r, &v);
    }
    validate_free(&v);
}

void schedules_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct flagctx fc;
    if (flagctx_from_row(r, ctx->row, false, &fc)) {
        create_with_context(r, ctx, &fc);
        flagctx_release(&fc);
    }
    json_object_put(ctx->body);
}

void schedules_create_load(struct http_request *r)
{
    /* The environment is in the body: peeked now, checked once the caller is known. */
    struct json_object *body = mgmt_body_peek(r), *env = NULL;
    char env_key[VALIDATE_KEY_MAX + 1] = "";
    if (body && json_object_object_get_ex(body, "environment", &env) &&
        json_object_is_type(env, json_type_string) && validate_key_ok(json_object_get_string(env)))
        snprintf(env_key, sizeof env_key, "%s", json_object_get_string(env));
    json_object_put(body);
    flagctx_dispatch(r, mgmt_param(r, "key"), env_key, NULL);
}

/* ---- lists ---- */

/* The ?status= filter into out ("" for none); false after answering 422. */
static bool read_status(struct http_request *r, char *out, size_t outlen)
{
    static const char *const statuses[] = {"pending", "applied", "failed", "cancelled"};
    if (!http_query_param(r, "status", out, outlen)) {
        out[0] = '\0';
        return true;
    }
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (strcmp(out, statuses[i]) == 0)
            return true;
    struct validate v;
    validate_init(&v);
    validate_error(&v, "status", "must be one of pending, applied, failed, cancelled");
    mgmt_send_invalid(r, &v);
    validate_free(&v);
    return false;
}

void schedules_list_flag(struct http_request *r, const struct mgmt_ctx *ctx)
{
    char status[16];
    if (!read_status(r, status, sizeof status))
        return;
    const char *params[] = {ctx->org_id, mgmt_param(r, "key"), status};
    mgmt_query(r, LIST_FLAG_SQL, 3, params, mgmt_answer_cb, r);
}

void schedules_list_org(struct http_request *r, const struct mgmt_ctx *ctx)
{
    char status[16];
    if (!read_status(r, status, sizeof status))
        return;
    const char *params[] = {ctx->org_id, status};
    mgmt_query(r, LIST_ORG_SQL, 2, params, mgmt_answer_cb, r);
}

/* ---- cancel ---- */

void schedules_cancel(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *id = mgmt_uuid_param(r, "id", "schedule not found");
    if (id == NULL)
        return;
    const char *params[] = {ctx->org_id, mgmt_param(r, "key"), id, ctx->audit_actor};
    mgmt_query(r, CANCEL_SQL, 4, params, mgmt_answer_cb, r);
}
