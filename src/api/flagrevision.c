/*
 * flagrevision.c - one revision of a flag with its state, and the restore
 * of that state: GET /v1/orgs/{org}/flags/{key}/revisions/{id} and POST
 * /v1/orgs/{org}/flags/{key}/revisions/{id}/restore (doc/choices.md,
 * "Revision state").
 *
 * A revision's state is the flag's targeting as it stood after the change
 * (name, description, tags, and per environment enabled, default serve,
 * off variant and rules), recorded by the trigger of sql/0013 in the
 * statement that wrote the revision; null for revisions written before.
 *
 * GET: one round trip (the row's load answers the revision with the
 * caller's checks): 404 flag not found, 404 revision not found (also an id
 * that is not a UUID, or a revision of another flag). Any role, scope
 * flags:read.
 *
 * Restore: two round trips (the checks with the flag's id, then
 * ensign_flag_restore_revision of sql/0013: one statement that locks the
 * flag, writes the targeting back and records one revision,
 * flag.revision_restored, with its audit event). Statuses in order: 404
 * flag, 404 revision, 409 archived flag, 409 revision without state, 409
 * variants the state serves that the flag no longer has (named; variants
 * are not recreated), 409 segments its rules use that no longer exist.
 * Environments created since the revision keep their targeting. Role
 * member, scope flags:write. Answers 200 {revision} (the new revision with
 * its state).
 *
 * Called by the dispatcher (mgmt_dispatch) from the route table (routes.c).
 */
#include "api/flagrevision.h"

#include "http/http.h"
#include "mgmt/mgmt.h"

/* clang-format off */

/* The row's load, $3 the flag key, $4 the revision id: the flag's id (NULL
 * when the organization has no such flag), then the revision's detail
 * form (NULL when the flag has no such revision). */
static const char GET_SQL[] = MGMT_AUTH_ORG_SQL(
    ", fl.id::text, rv.body",
    " LEFT JOIN LATERAL (SELECT f.id FROM flags f"
    "                     WHERE f.org_id = org.id AND f.key = $3) AS fl ON true"
    " LEFT JOIN LATERAL (SELECT json_build_object('revision',"
    "                             ensign_revision_json(r) || jsonb_build_object('state', r.state))"
    "                             AS body"
    "                      FROM revisions r"
    "                     WHERE r.flag_id = fl.id"
    "                       AND r.id = (CASE WHEN $4 ~* '^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$'"
    "                                        THEN $4 END)::uuid) AS rv ON true");

/* The restore's load, $3 the flag key: the flag's id. */
static const char FLAG_SQL[] = MGMT_AUTH_ORG_SQL(
    ", fl.id::text",
    " LEFT JOIN LATERAL (SELECT f.id FROM flags f"
    "                     WHERE f.org_id = org.id AND f.key = $3) AS fl ON true");

/* $1 flag id, $2 revision id (text), $3 actor id, $4 actor name, $5 audit actor. */
static const char RESTORE_SQL[] =
    "SELECT * FROM ensign_flag_restore_revision($1::uuid, $2, $3, $4, $5::jsonb)";

/* clang-format on */

void flag_revision_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const PGresult *res = ctx->row;
    if (PQgetisnull(res, 0, MGMT_ROW_FIRST))
        http_send_error(r, 404, "flag not found");
    else if (PQgetisnull(res, 0, MGMT_ROW_FIRST + 1))
        http_send_error(r, 404, "revision not found");
    else
        http_send_json_text(r, 200, PQgetvalue(res, 0, MGMT_ROW_FIRST + 1));
}

void flag_revision_get_load(struct http_request *r)
{
    const char *extra[] = {mgmt_param(r, "key"), mgmt_param(r, "id")};
    mgmt_dispatch_row(r, GET_SQL, 2, extra);
}

void flag_revision_restore(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const PGresult *res = ctx->row;
    if (PQgetisnull(res, 0, MGMT_ROW_FIRST)) {
        http_send_error(r, 404, "flag not found");
        return;
    }
    const char *params[] = {PQgetvalue(res, 0, MGMT_ROW_FIRST), mgmt_param(r, "id"),
                            ctx->actor_user_id, ctx->actor_name, ctx->audit_actor};
    mgmt_query(r, RESTORE_SQL, 5, params, mgmt_answer_cb, r);
}

void flag_revision_restore_load(struct http_request *r)
{
    const char *extra[] = {mgmt_param(r, "key")};
    mgmt_dispatch_row(r, FLAG_SQL, 1, extra);
}
