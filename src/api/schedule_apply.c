/*
 * schedule_apply.c - applies due scheduled changes (see schedule_apply.h).
 *
 * Owns the claim, the outcome statements and the order of one
 * application:
 *   BEGIN; claim the soonest due pending rows (up to SCHEDULE_BATCH) FOR
 *   UPDATE SKIP LOCKED; for each row: SAVEPOINT one; read the flag context
 *   (flagctx.h), locking the flag FOR UPDATE NOWAIT; validate the change
 *   (the PATCH's own schema, flagschema_configure, then
 *   environments_read_change, the PATCH's own); ENVIRONMENTS_CONFIGURE_SQL
 *   (the PATCH's own statement: revision, audit event, configuration
 *   NOTIFY at COMMIT); mark the row applied. COMMIT.
 * A change that fails validation, or whose write the database refuses
 * (rolled back to the row's savepoint), marks the row failed instead, with
 * a notification to its creator and an audit event, in the same
 * transaction. A row whose flag is locked is rolled back to its savepoint
 * and left pending for the next claim (SCHEDULE_BUSY).
 *
 * Locks: the schedule's row first (the claim), then its flag with NOWAIT.
 * Deleting a flag takes them in the other order (the flag, then its
 * schedules through sql/0014's trigger), and a write to the flag holds the
 * flag's lock for a moment: NOWAIT turns those into SCHEDULE_BUSY (that
 * row is left for a claim shortly after) instead of a wait in a cycle.
 *
 * Who may still apply it: a schedule made by a user is applied while that
 * user is a member of the organization with a role that writes flags
 * (member and up) and not deleted; one made by an organization token while
 * the token is neither revoked nor expired. Otherwise it fails (doc/choices.md
 * "Scheduled changes").
 *
 * Called by the scheduler process (src/daemon/scheduler.c).
 */
#include "api/schedule_apply.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api/environments.h"
#include "api/flagctx.h"
#include "api/flagschemas.h"
#include "db/dbsync.h"
#include "mgmt/audit_record.h"
#include "mgmt/jsonschema.h"
#include "mgmt/validate.h"

/* clang-format off */

static const char CLAIM_SQL[] =
    "SELECT s.id, s.org_id, s.flag_key, e.key, s.changes::text,"
    "       COALESCE(s.created_by_user_id::text, ''), COALESCE(s.created_by_token_id::text, ''),"
    "       COALESCE(u.name, s.created_by_name, ''),"
    "       CASE WHEN s.created_by_user_id IS NOT NULL"
    "            THEN NOT u.deleted AND EXISTS (SELECT 1 FROM org_members m"
    "                                            WHERE m.org_id = s.org_id"
    "                                              AND m.user_id = s.created_by_user_id"
    "                                              AND m.role <> 'viewer')"
    "            ELSE EXISTS (SELECT 1 FROM access_tokens t"
    "                          WHERE t.id = s.created_by_token_id AND t.kind = 'organization'"
    "                            AND t.org_id = s.org_id AND t.revoked_at IS NULL"
    "                            AND (t.expires_at IS NULL OR t.expires_at > now())) END"
    "  FROM flag_schedules s"
    "  JOIN environments e ON e.id = s.environment_id"
    "  LEFT JOIN users u ON u.id = s.created_by_user_id"
    " WHERE s.status = 'pending' AND s.at <= now()"
    " ORDER BY s.at, s.id LIMIT $1::int"
    " FOR UPDATE OF s SKIP LOCKED";

enum {
    COL_ID, COL_ORG, COL_FLAG_KEY, COL_ENV_KEY, COL_CHANGES, COL_USER, COL_TOKEN, COL_NAME,
    COL_ALLOWED
};

/* Each claimed row is finished under this savepoint (apply_rows). */
static const char SAVEPOINT_ONE[] = "SAVEPOINT one";
static const char ROLLBACK_ONE[] = "ROLLBACK TO SAVEPOINT one";

static const char APPLIED_SQL[] =
    "UPDATE flag_schedules SET status = 'applied', applied_at = clock_timestamp()"
    " WHERE id = $1::uuid";

/* $1 schedule, $2 the reason, $3 audit actor. */
static const char FAILED_SQL[] =
    "WITH u AS ("
    "  UPDATE flag_schedules SET status = 'failed', error = left($2, 2000)"
    "   WHERE id = $1::uuid RETURNING *"
    "), n AS ("
    "  INSERT INTO notifications (user_id, org_id, kind, title, body)"
    "  SELECT usr.id, u.org_id, 'flag.schedule_failed',"
    "         'A scheduled change of ' || u.flag_key || ' was not applied',"
    "         'The change of ' || u.flag_key || ' in ' || e.name || ' scheduled for '"
    "         || ensign_iso(u.at) || ' failed: ' || u.error"
    "    FROM u JOIN environments e ON e.id = u.environment_id"
    "    JOIN users usr ON usr.id = u.created_by_user_id"
    "), aud AS ("
    AUDIT_INSERT("(SELECT 'schedule.failed' AS action,"
                 " 'Flag ' || u.flag_key || ': the change scheduled in ' || e.name || ' for '"
                 " || ensign_iso(u.at) || ' failed: ' || u.error AS summary,"
                 " 'flags/' || u.flag_key || '/schedules/' || u.id AS location"
                 " FROM u JOIN environments e ON e.id = u.environment_id) AS s", "$3")
    ")"
    " SELECT count(*) FROM u";

/* No row when none is pending: GREATEST ignores a NULL argument, so
 * without the HAVING no schedule at all read as "due now" and the
 * scheduler claimed every CLAIMLOOP_RETRY_MS, idle. */
static const char NEXT_DUE_SQL[] =
    "SELECT GREATEST(0, ceil(extract(epoch FROM min(at) - clock_timestamp()) * 1000))::bigint"
    "  FROM flag_schedules WHERE status = 'pending' HAVING count(*) > 0";

/* clang-format on */

#define LOCK_NOT_AVAILABLE "55P03"

/* The claimed row; text borrowed from the claim's result. */
struct claimed {
    const char *id, *org_id, *flag_key, *env_key, *changes;
    struct identity who; /* user_id "" for an organization token */
    const char *actor_name;
    bool allowed;
    char audit_actor[AUDIT_ACTOR_JSON_MAX];
};

static void claimed_from(struct claimed *c, const PGresult *res, int row)
{
    memset(c, 0, sizeof *c);
    c->id = PQgetvalue(res, row, COL_ID);
    c->org_id = PQgetvalue(res, row, COL_ORG);
    c->flag_key = PQgetvalue(res, row, COL_FLAG_KEY);
    c->env_key = PQgetvalue(res, row, COL_ENV_KEY);
    c->changes = PQgetvalue(res, row, COL_CHANGES);
    snprintf(c->who.user_id, sizeof c->who.user_id, "%s", PQgetvalue(res, row, COL_USER));
    snprintf(c->who.token_id, sizeof c->who.token_id, "%s", PQgetvalue(res, row, COL_TOKEN));
    c->who.kind = c->who.user_id[0] ? IDENTITY_USER : IDENTITY_ORG;
    c->actor_name = PQgetvalue(res, row, COL_NAME);
    c->allowed = strcmp(PQgetvalue(res, row, COL_ALLOWED), "t") == 0;
    audit_actor_init(c->audit_actor, NULL, c->org_id, &c->who, c->actor_name);
}

static void set_error(char *err, size_t errlen, const char *what, const char *why)
{
    snprintf(err, errlen, "%s: %.300s", what, why);
}

/* Marks c failed for reason (notification, audit event); SCHEDULE_FAILED or ERROR. */
static enum schedule_outcome fail(PGconn *conn, const struct claimed *c, const char *reason,
                                  char *err, size_t errlen)
{
    struct dbsync_error error;
    const char *params[] = {c->id, reason, c->audit_actor};
    if (dbsync_command(conn, FAILED_SQL, 3, params, &error) != 0) {
        set_error(err, errlen, "cannot mark a schedule failed", error.message);
        return SCHEDULE_ERROR;
    }
    snprintf(err, errlen, "schedule %s: %s", c->id, reason);
    return SCHEDULE_FAILED;
}

/* The validation errors of v as one line: "changes.offVariantKey: ...; ...". */
static void errors_text(struct validate *v, char *out, size_t outlen)
{
    struct json_object *errors = validate_take_errors(v);
    size_t n = 0;
    out[0] = '\0';
    json_object_object_foreach(errors, field, messages)
    {
        for (size_t i = 0; i < json_object_array_length(messages) && n < outlen; i++) {
            const char *m = json_object_get_string(json_object_array_get_idx(messages, i));
            int w = snprintf(out + n, outlen - n, "%s%s: %s", n ? "; " : "", field, m ? m : "");
            n += w > 0 ? (size_t)w : 0;
        }
    }
    json_object_put(errors);
}

/* Writes the validated change c as the PATCH does, under a savepoint. */
static enum schedule_outcome write_change(PGconn *conn, const struct claimed *c,
                                          const struct flagctx *fc,
                                          const struct environment_change *change, char *err,
                                          size_t errlen)
{
    struct dbsync_error error;
    const char *params[ENVIRONMENTS_CONFIGURE_NPARAMS] = {
        fc->flag_id,
        fc->env_id,
        change->enabled,
        change->serve ? json_object_to_json_string(change->serve) : NULL,
        change->off_key,
        c->who.user_id,
        c->actor_name,
        c->audit_actor,
        "flag.schedule_applied",
        "Scheduled change: "};
    PGresult *res = dbsync_exec(conn, ENVIRONMENTS_CONFIGURE_SQL, ENVIRONMENTS_CONFIGURE_NPARAMS,
                                params, &error);
    if (res == NULL) {
        if (PQstatus(conn) != CONNECTION_OK ||
            dbsync_command(conn, ROLLBACK_ONE, 0, NULL, &error) != 0) {
            set_error(err, errlen, "cannot apply a schedule", error.message);
            return SCHEDULE_ERROR;
        }
        return fail(conn, c, error.message, err, errlen);
    }
    bool done = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "200") == 0;
    char message[256] = "the change was refused";
    if (!done && PQntuples(res) == 1 && PQnfields(res) > 2 && !PQgetisnull(res, 0, 2))
        snprintf(message, sizeof message, "%s", PQgetvalue(res, 0, 2));
    PQclear(res);
    if (!done)
        return fail(conn, c, message, err, errlen);
    const char *id[] = {c->id};
    if (dbsync_command(conn, APPLIED_SQL, 1, id, &error) != 0) {
        set_error(err, errlen, "cannot mark a schedule applied", error.message);
        return SCHEDULE_ERROR;
    }
    snprintf(err, errlen, "schedule %s", c->id);
    return SCHEDULE_APPLIED;
}

/* Validates c's change against the flag's context fc, then writes it. */
static enum schedule_outcome apply_with_context(PGconn *conn, const struct claimed *c,
                                                const struct flagctx *fc, char *err, size_t errlen)
{
    if (fc->archived)
        return fail(conn, c, "the flag is archived", err, errlen);
    struct json_object *body = json_tokener_parse(c->changes);
    if (!json_object_is_type(body, json_type_object)) {
        json_object_put(body);
        return fail(conn, c, "the stored change is not a JSON object", err, errlen);
    }
    struct validate v;
    validate_init(&v);
    size_t mark = validate_push_field(&v, "changes");
    /* The PATCH's schema, then what the PATCH checks against the flag. */
    const struct json_object *schema = jsonschema_parsed(flagschema_configure);
    struct environment_change change = {"", NULL, NULL};
    if (schema == NULL)
        validate_error(&v, NULL, "the environment configuration schema does not parse");
    else if (jsonschema_check(&v, schema, body))
        environments_read_change(&v, body, &fc->refs, &change);
    validate_pop(&v, mark);
    enum schedule_outcome outcome;
    if (validate_ok(&v)) {
        outcome = write_change(conn, c, fc, &change, err, errlen);
    } else {
        char reason[1024];
        errors_text(&v, reason, sizeof reason);
        outcome = fail(conn, c, reason, err, errlen);
    }
    environments_change_free(&change);
    validate_free(&v);
    json_object_put(body);
    return outcome;
}

/* The claimed schedule c: its flag locked with its context, then applied or failed. */
static enum schedule_outcome apply_claimed(PGconn *conn, const struct claimed *c, char *err,
                                           size_t errlen)
{
    if (!c->allowed)
        return fail(conn, c,
                    c->who.user_id[0] ? "the user who scheduled it may no longer change flags"
                                      : "the organization token that scheduled it is revoked or "
                                        "expired",
                    err, errlen);
    struct dbsync_error error;
    const char *params[] = {c->org_id, c->flag_key, c->env_key};
    PGresult *res = dbsync_exec(conn, FLAGCTX_LOCKED_SQL, 3, params, &error);
    if (res == NULL) {
        if (dbsync_error_is(&error, LOCK_NOT_AVAILABLE))
            return SCHEDULE_BUSY;
        set_error(err, errlen, "cannot lock the flag of a schedule", error.message);
        return SCHEDULE_ERROR;
    }
    struct flagctx fc;
    enum schedule_outcome outcome;
    if (flagctx_from_result(res, &fc)) {
        outcome = apply_with_context(conn, c, &fc, err, errlen);
        flagctx_release(&fc);
    } else {
        outcome = fail(conn, c, "the flag or the environment no longer exists", err, errlen);
    }
    PQclear(res);
    return outcome;
}

/* Notes what happened to one schedule for the log (line of ok outcomes). */
static void note(struct schedule_batch *b, enum schedule_outcome outcome, const char *line)
{
    if (outcome == SCHEDULE_APPLIED)
        b->applied++;
    else if (outcome == SCHEDULE_FAILED)
        b->failed++;
    else if (outcome == SCHEDULE_BUSY)
        b->busy++;
    if ((outcome == SCHEDULE_APPLIED || outcome == SCHEDULE_FAILED) && b->lines < SCHEDULE_BATCH)
        snprintf(b->line[b->lines++], sizeof b->line[0], "%s %.480s",
                 outcome == SCHEDULE_APPLIED ? "applied" : "failed", line);
}

/* Each claimed row under its own savepoint: a busy flag leaves that row as it was. */
static enum schedule_outcome apply_rows(PGconn *conn, const PGresult *res, struct schedule_batch *b,
                                        char *err, size_t errlen)
{
    struct dbsync_error error;
    for (int row = 0; row < PQntuples(res); row++) {
        if (dbsync_command(conn, SAVEPOINT_ONE, 0, NULL, &error) != 0) {
            set_error(err, errlen, "savepoint", error.message);
            return SCHEDULE_ERROR;
        }
        char line[SCHEDULE_LINE_MAX];
        struct claimed c;
        claimed_from(&c, res, row);
        enum schedule_outcome outcome = apply_claimed(conn, &c, line, sizeof line);
        if (outcome == SCHEDULE_ERROR) {
            snprintf(err, errlen, "%s", line);
            return SCHEDULE_ERROR;
        }
        if (outcome == SCHEDULE_BUSY && dbsync_command(conn, ROLLBACK_ONE, 0, NULL, &error) != 0) {
            set_error(err, errlen, ROLLBACK_ONE, error.message);
            return SCHEDULE_ERROR;
        }
        note(b, outcome, line);
    }
    return b->applied + b->failed > 0 ? SCHEDULE_APPLIED
           : b->busy > 0              ? SCHEDULE_BUSY
                                      : SCHEDULE_NONE;
}

enum schedule_outcome schedule_apply_due(PGconn *conn, struct schedule_batch *b, char *err,
                                         size_t errlen)
{
    struct dbsync_error error;
    memset(b, 0, sizeof *b);
    err[0] = '\0';
    if (dbsync_begin(conn, &error) != 0) {
        set_error(err, errlen, "begin", error.message);
        return SCHEDULE_ERROR;
    }
    char limit[16];
    snprintf(limit, sizeof limit, "%d", SCHEDULE_BATCH);
    const char *params[] = {limit};
    PGresult *res = dbsync_exec(conn, CLAIM_SQL, 1, params, &error);
    if (res == NULL) {
        dbsync_rollback(conn);
        set_error(err, errlen, "cannot claim schedules", error.message);
        return SCHEDULE_ERROR;
    }
    enum schedule_outcome outcome = apply_rows(conn, res, b, err, errlen);
    PQclear(res);
    if (outcome != SCHEDULE_APPLIED) {
        dbsync_rollback(conn);
        return outcome;
    }
    if (dbsync_commit(conn, &error) != 0) {
        dbsync_rollback(conn);
        set_error(err, errlen, "cannot commit schedules", error.message);
        return SCHEDULE_ERROR;
    }
    return outcome;
}

long long schedule_next_due_ms(PGconn *conn)
{
    struct dbsync_error error;
    PGresult *res = dbsync_exec(conn, NEXT_DUE_SQL, 0, NULL, &error);
    if (res == NULL)
        return -2;
    long long ms = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)
                       ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                       : -1;
    PQclear(res);
    return ms;
}
