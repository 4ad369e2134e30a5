/*
 * membership.c - the one shape of the member, collaborator and invitation
 * writes (see membership.h).
 *
 * Owns the order of their checks (the body's schema in the dispatcher, the
 * route parameter) and the
 * order of their statement's parameters; the statements and the role
 * vocabularies stay with their resources.
 */
#include "accounts/membership.h"

#include "http/http.h"
#include "mgmt/mgmt.h"
#include "mgmt/validate.h"

/* Queues w's statement with the subject and role (NULL: none). */
static void run(struct http_request *r, const struct mgmt_ctx *ctx,
                const struct membership_write *w, const char *subject, const char *role)
{
    const char *params[5];
    int n = 0;
    params[n++] = ctx->org_id;
    if (w->second == MEMBERSHIP_CALLER_ROLE)
        params[n++] = mgmt_role_name(ctx->role);
    else if (w->second == MEMBERSHIP_PROJECT)
        params[n++] = mgmt_param(r, "project");
    params[n++] = subject;
    if (role != NULL)
        params[n++] = role;
    params[n++] = ctx->audit_actor;
    mgmt_query(r, w->sql, n, params, mgmt_answer_cb, r);
}

/* The route parameter, or NULL after answering 404 when it is not a uuid. */
static const char *subject_param(struct http_request *r, const struct membership_write *w)
{
    const char *value = mgmt_param(r, w->param);
    if (validate_uuid_ok(value))
        return value;
    http_send_error(r, 404, w->not_found);
    return NULL;
}

/* The body's login and role (the row's schema checked them). */
static void with_body(struct http_request *r, const struct mgmt_ctx *ctx,
                      const struct membership_write *w, struct json_object *body)
{
    const char *login = w->login ? mgmt_body_text(body, "login") : NULL;
    const char *role = w->role(body);
    const char *subject = w->login ? login : subject_param(r, w);
    if (subject != NULL)
        run(r, ctx, w, subject, role);
}

void membership_write(struct http_request *r, const struct mgmt_ctx *ctx,
                      const struct membership_write *w)
{
    if (w->role == NULL) {
        const char *subject = subject_param(r, w);
        if (subject != NULL)
            run(r, ctx, w, subject, NULL);
        return;
    }
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed it; ours to put */
    with_body(r, ctx, w, body);
    json_object_put(body);
}
