/*
 * project_members.c - who works on a project, and who administers it.
 *
 * Owns the collaborator routes. Collaborator roles are the contract's:
 * read, triage, write, maintain, admin (anything else, organization roles
 * included, is a 422); a collaborator must be a member of the organization
 * (422 otherwise); being added notifies the user
 * (project.collaborator_added). Collaborators are listed in the member form
 * (role = the project role), oldest first, paginated, q on name, email and
 * username. GET .../owners lists who administers the project: its admin
 * collaborators and the organization's owners (role "owner" wins), ordered
 * by user id. Any member reads (projects:read); admins write
 * (projects:write). A project that does not exist or is soft-deleted is 404.
 *
 * Cursors of these lists are bound to the organization and the {project}
 * text as given (slug or id).
 */
#include "accounts/project_members.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "accounts/membership.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"
#include "mgmt/validate.h"

/* $6 org id, $7 project ref; $2 is the cursor scope. */
#define PROJECT_OF_REQUEST "(SELECT x.id FROM ensign_project_find($6::uuid, $7, false) x)"

static const char LIST_SQL[] =
    PAGE_WITH_CURSOR("'-infinity', " PAGE_ZERO_UUID) ", p AS (SELECT pm.created_at, pm.user_id, "
                                                     "ensign_member_form(u, pm.role, pm.created_at)"
                                                     "  AS item FROM project_members pm JOIN users "
                                                     "u ON u.id = pm.user_id"
                                                     "  WHERE pm.project_id = " PROJECT_OF_REQUEST
                                                     " AND NOT u.deleted"
                                                     "    AND ($3 = '' OR "
                                                     "ensign_person_text(u.name, u.email, "
                                                     "u.username)"
                                                     "                    LIKE "
                                                     "ensign_search_pattern($3))"
                                                     "    AND (pm.created_at, pm.user_id) > "
                                                     "(" PAGE_KEY(1) "::timestamptz, " PAGE_KEY(
                                                         2) "::uuid)"
                                                            "  ORDER BY pm.created_at, pm.user_id "
                                                            "LIMIT $5::int)" PAGE_SELECT(
                                                                "created_at, user_id",
                                                                "created_at::text, user_id::text");

static const char OWNERS_SQL[] = PAGE_WITH_CURSOR(
    PAGE_ZERO_UUID) ", o AS (SELECT m.user_id, 'owner' AS role, m.created_at FROM org_members m"
                    "         WHERE m.org_id = $6::uuid AND m.role = 'owner'"
                    "        UNION ALL"
                    "        SELECT pm.user_id, 'admin', pm.created_at FROM project_members pm"
                    "         WHERE pm.project_id = " PROJECT_OF_REQUEST " AND pm.role = 'admin'),"
                    " p AS (SELECT DISTINCT ON (o.user_id) o.user_id,"
                    "              ensign_member_form(u, o.role, o.created_at) AS item"
                    "         FROM o JOIN users u ON u.id = o.user_id"
                    "        WHERE NOT u.deleted AND o.user_id > " PAGE_KEY(
                        1) "::uuid"
                           "          AND ($3 = '' OR ensign_person_text(u.name, u.email, "
                           "u.username)"
                           "                          LIKE ensign_search_pattern($3))"
                           "        ORDER BY o.user_id, o.role = 'owner' DESC LIMIT "
                           "$5::int)" PAGE_SELECT("user_id", "user_id::text");

/* $1 org, $2 project: one row when the project exists (for the 404). */
static const char EXISTS_SQL[] =
    "SELECT 200 AS status, NULL AS body, NULL AS message FROM ensign_project_find($1, $2, false) x"
    " WHERE x.id IS NOT NULL";

/* clang-format off */
/* The project $2 of organization $1 (before the statement). */
#define THE_PROJECT "ensign_project_find($1::uuid, $2, false)"

/* $1 org, $2 project, $3 login, $4 role, $5 audit actor. */
static const char ADD_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_collaborator_add($1, $2, $3, $4)", "'project_member.added'",
    "'Added ' || (ensign_user_by_login($3)).name || ' to project ' || (" THE_PROJECT ").slug"
    " || ' as ' || $4",
    "'projects/' || (" THE_PROJECT ").slug || '/members/' || (ensign_user_by_login($3)).id",
    "$5");
/* $1 org, $2 project, $3 user, $4 audit actor. */
static const char REMOVE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_collaborator_remove($1, $2, $3::uuid)", "'project_member.removed'",
    "'Removed ' || ensign_audit_user_name($3::uuid) || ' from project '"
    " || (" THE_PROJECT ").slug",
    "'projects/' || (" THE_PROJECT ").slug || '/members/' || $3", "$4");
/* $1 org, $2 project, $3 user, $4 role, $5 audit actor. */
static const char ROLE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_collaborator_role($1, $2, $3::uuid, $4)",
    "'project_member.role_changed'",
    "(SELECT 'Changed the role of ' || ensign_audit_user_name($3::uuid) || ' in project '"
    "        || x.slug || ' from ' || pm.role || ' to ' || $4"
    "   FROM " THE_PROJECT " x JOIN project_members pm ON pm.project_id = x.id"
    "  WHERE pm.user_id = $3::uuid AND pm.role <> $4)",
    "'projects/' || (" THE_PROJECT ").slug || '/members/' || $3", "$5");
/* clang-format on */

/* ---- lists: first the 404 of a missing project, then the page ---- */

struct list_kind {
    const char *sql;
    const char *member;
};

static const struct list_kind collaborators = {LIST_SQL, "members"};
static const struct list_kind owners = {OWNERS_SQL, "members"};

struct list_state {
    struct http_request *r;
    const struct list_kind *kind;
    struct page_request page;
    char org_id[AUTH_UUID_LEN + 1];
};

static void on_project(PGresult *res, const char *error, void *arg)
{
    struct list_state *ls = arg;
    struct http_request *r = ls->r;
    if (!db_result_ok(res) || PQntuples(res) != 1) {
        mgmt_answer(r, res, error, "no such project");
    } else {
        char scope[AUTH_UUID_LEN + 2 + ROUTE_PARAM_BYTES];
        const char *ref = mgmt_param(r, "project");
        snprintf(scope, sizeof scope, "%s/%s", ls->org_id, ref);
        const char *extra[] = {ls->org_id, ref};
        page_run(r, ls->kind->sql, scope, &ls->page, 2, extra, ls->kind->member);
    }
    free(ls);
}

static void list_of(struct http_request *r, const struct mgmt_ctx *ctx,
                    const struct list_kind *kind)
{
    struct list_state *ls = calloc(1, sizeof *ls);
    if (ls == NULL) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    if (!page_read(r, &ls->page)) {
        free(ls);
        return;
    }
    ls->r = r;
    ls->kind = kind;
    snprintf(ls->org_id, sizeof ls->org_id, "%s", ctx->org_id);
    const char *params[] = {ctx->org_id, mgmt_param(r, "project")};
    if (mgmt_query(r, EXISTS_SQL, 2, params, on_project, ls) != 0)
        free(ls);
}

void project_members_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    list_of(r, ctx, &collaborators);
}

void project_owners_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    list_of(r, ctx, &owners);
}

/* ---- writes ---- */

/* The role of body (a project role, as the row's schema checked). */
static const char *read_role(const struct json_object *body)
{
    return mgmt_body_text(body, "role");
}

void project_members_add(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const struct membership_write add = {
        .sql = ADD_SQL, .second = MEMBERSHIP_PROJECT, .login = true, .role = read_role};
    membership_write(r, ctx, &add);
}

void project_members_remove(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const struct membership_write remove = {.sql = REMOVE_SQL,
                                                   .second = MEMBERSHIP_PROJECT,
                                                   .param = "userId",
                                                   .not_found =
                                                       "not a collaborator of this project"};
    membership_write(r, ctx, &remove);
}

void project_members_set_role(struct http_request *r, const struct mgmt_ctx *ctx)
{
    static const struct membership_write set_role = {.sql = ROLE_SQL,
                                                     .second = MEMBERSHIP_PROJECT,
                                                     .role = read_role,
                                                     .param = "userId",
                                                     .not_found =
                                                         "not a collaborator of this project"};
    membership_write(r, ctx, &set_role);
}
