/*
 * envcopy.c - POST /v1/orgs/{org}/flags/{key}/environments/{envKey}/copy
 * {from: ENV}: the default serve, the off variant and the rules of the
 * flag in environment from become its targeting in envKey; enabled stays
 * as it was (doc/choices.md, "Revision state").
 *
 * Two round trips: the caller's checks and the flag context (envcopy_load,
 * flagctx_dispatch), then ensign_flag_copy_environment of sql/0013: one
 * statement that locks the flag, writes the target's configuration and
 * rules (new rule ids, same order, priorities, descriptions, conditions
 * and serves) and records one revision (environment.copied, "Copied the
 * targeting of Staging to Production") with its audit event, even when
 * the targeting was the same already. Statuses in order: 422 from the
 * dispatcher for a body the row's schema refuses (from missing or not a
 * key), 404 flag, 404 environment, 409 archived, 422 (from unknown, or
 * envKey itself). Role member, scope flags:write. Answers 200
 * {environment} (the target's configuration, as in the flag detail).
 *
 * Called by the dispatcher (mgmt_dispatch) from the route table (routes.c).
 */
#include "api/envcopy.h"

#include "api/flagctx.h"
#include "http/http.h"
#include "mgmt/mgmt.h"

/* $1 flag id, $2 target environment id, $3 source key, $4 actor id, $5 actor name, $6 audit
 * actor. */
static const char COPY_SQL[] =
    "SELECT * FROM ensign_flag_copy_environment($1::uuid, $2::uuid, $3, $4, $5, $6::jsonb)";

/* The body is {from: KEY}, as the row's schema checked. */
static void send_copy(struct http_request *r, const struct mgmt_ctx *ctx, const struct flagctx *fc)
{
    const char *params[] = {fc->flag_id,        fc->env_id,      mgmt_body_text(ctx->body, "from"),
                            ctx->actor_user_id, ctx->actor_name, ctx->audit_actor};
    mgmt_query(r, COPY_SQL, 6, params, mgmt_answer_cb, r);
}

void envcopy_copy(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct flagctx fc;
    if (flagctx_from_row(r, ctx->row, true, &fc)) {
        if (fc.archived)
            http_send_error(r, 409, "the flag is archived; restore it first");
        else
            send_copy(r, ctx, &fc);
        flagctx_release(&fc);
    }
    json_object_put(ctx->body);
}

void envcopy_load(struct http_request *r)
{
    flagctx_dispatch(r, mgmt_param(r, "key"), mgmt_param(r, "envKey"), NULL);
}
