/*
 * projects.c - projects of an organization (the root API).
 *
 * Owns the project routes. {project} is the slug or the id. A project
 * reads as the Project form {id, org_id, name, slug, description, readme,
 * repository_url, created_by, created_at, updated_at, deleted_at}; with
 * expand[]=organization (GET and DELETE) it also carries organization in
 * the Organization form with the caller's role.
 *
 *  - list: active projects, oldest first, paginated, q on name and slug.
 *  - create {name, slug?, description?, readme?, repository_url?}: the slug
 *    is derived from the name when omitted; 409 when taken (soft-deleted
 *    projects keep theirs); the creator becomes the first admin
 *    collaborator.
 *  - update: any of the create fields; a new slug renames the project and
 *    the old slug answers 404 from then on.
 *  - delete: soft (deleted_at set); the project then reads as 404 and is
 *    listed by GET /orgs/{slug}/deleted-projects (list_deleted: oldest
 *    first, paginated, q on name and slug, as the list).
 *  - restore: clears deleted_at; restoring an active project is a no-op.
 * Any member reads (projects:read); admins write (projects:write).
 */
#include "accounts/projects.h"

#include <json-c/json.h>
#include <string.h>

#include "http/http.h"
#include "mgmt/audit_record.h"
#include "mgmt/mgmt.h"
#include "mgmt/pagination.h"
#include "mgmt/validate.h"

/* A page of the organization's projects ($2) whose deleted_at IS `deleted`
 * (NULL: the active ones; NOT NULL: the soft-deleted ones), oldest first,
 * q ($3) on name and slug. */
/* clang-format off */
#define PROJECT_PAGE_SQL(deleted)                                                             \
    PAGE_WITH_CURSOR("'-infinity', " PAGE_ZERO_UUID)                                          \
    ", p AS (SELECT x.created_at, x.id, ensign_project_form(x) AS item FROM projects x"       \
    "  WHERE x.org_id = $2::uuid AND x.deleted_at IS " deleted                                \
    "    AND ($3 = '' OR ensign_project_text(x.name, x.slug) LIKE ensign_search_pattern($3))" \
    "    AND (x.created_at, x.id) > (" PAGE_KEY(1) "::timestamptz, " PAGE_KEY(2) "::uuid)"    \
    "  ORDER BY x.created_at, x.id LIMIT $5::int)"                                            \
    PAGE_SELECT("created_at, id", "created_at::text, id::text")
/* clang-format on */

static const char LIST_SQL[] = PROJECT_PAGE_SQL("NULL");
static const char DELETED_SQL[] = PROJECT_PAGE_SQL("NOT NULL");

/* clang-format off */
/* The project of a successful answer. */
#define ANSWER_PROJECT "(w.body::jsonb ->> 'slug')"

/* $1 org, $2 creator or NULL, $3 name, $4 slug, $5 description, $6 readme, $7 url,
 * $8 audit actor. */
static const char CREATE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_project_create($1, $2, $3, $4, $5, $6, $7)", "'project.created'",
    "'Created project ' || " ANSWER_PROJECT, "'projects/' || " ANSWER_PROJECT, "$8");
/* clang-format on */

/* $1 org, $2 project, $3 organization form or NULL. */
static const char GET_SQL[] =
    "SELECT * FROM ensign_project_answer(ensign_project_find($1, $2, false), $3::jsonb)";

/* clang-format off */
/* $1 org, $2 project, $3 name, $4 slug, $5 description, $6 readme, $7 url, $8 audit actor. */
static const char UPDATE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_project_update($1, $2, $3, $4, $5, $6, $7)", "'project.updated'",
    "'Updated project ' || " ANSWER_PROJECT, "'projects/' || " ANSWER_PROJECT, "$8");

/* $1 org, $2 project, $3 organization form or NULL, $4 audit actor. */
static const char DELETE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_project_delete($1, $2, $3::jsonb)", "'project.deleted'",
    "'Deleted project ' || " ANSWER_PROJECT, "'projects/' || " ANSWER_PROJECT, "$4");

/* $1 org, $2 project, $3 audit actor. Restoring an active project is no event. */
static const char RESTORE_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_project_restore($1, $2)", "'project.restored'",
    "(SELECT 'Restored project ' || x.slug FROM projects x"
    "  WHERE x.org_id = $1::uuid AND x.slug = " ANSWER_PROJECT " AND x.deleted_at IS NOT NULL)",
    "'projects/' || " ANSWER_PROJECT, "$3");
/* clang-format on */

/* $1 org, $2 role: the Organization form (for expand[]=organization). */
#define ORG_FORM_SQL "(SELECT ensign_org_form(o, $3) FROM orgs o WHERE o.id = $1)"
static const char GET_EXPANDED_SQL[] =
    "SELECT * FROM ensign_project_answer(ensign_project_find($1, $2, false), " ORG_FORM_SQL ")";
/* clang-format off */
/* $1 org, $2 project, $3 role, $4 audit actor. */
static const char DELETE_EXPANDED_SQL[] = AUDIT_ANSWER(
    "SELECT * FROM ensign_acc_project_delete($1, $2, " ORG_FORM_SQL ")", "'project.deleted'",
    "'Deleted project ' || " ANSWER_PROJECT, "'projects/' || " ANSWER_PROJECT, "$4");
/* clang-format on */

/* True when the query string asks for expand[]=organization. */
static bool expand_organization(const struct http_request *r)
{
    const char *q = r->query;
    while (q != NULL && *q != '\0') {
        size_t len = strcspn(q, "&");
        if ((len == 21 && strncmp(q, "expand[]=organization", 21) == 0) ||
            (len == 25 && strncmp(q, "expand%5B%5D=organization", 25) == 0) ||
            (len == 19 && strncmp(q, "expand=organization", 19) == 0))
            return true;
        q += len + (q[len] == '&');
    }
    return false;
}

/* ---- list ---- */

void projects_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct page_request page;
    if (page_read(r, &page))
        page_run(r, LIST_SQL, ctx->org_id, &page, 0, NULL, "projects");
}

void projects_list_deleted(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct page_request page;
    if (page_read(r, &page))
        page_run(r, DELETED_SQL, ctx->org_id, &page, 0, NULL, "projects");
}

/* ---- create and update ---- */

struct project_fields {
    const char *name, *slug, *description, *readme, *url;
};

/* The members of a body the row's schema checked (name 1 to 200
 * characters, slug the key pattern, description and repository_url at most
 * 2000, readme at most 100000); absent ones are NULL. */
static void read_fields(const struct json_object *body, struct project_fields *f)
{
    f->name = mgmt_body_text(body, "name");
    f->slug = mgmt_body_text(body, "slug");
    f->description = mgmt_body_text(body, "description");
    f->readme = mgmt_body_text(body, "readme");
    f->url = mgmt_body_text(body, "repository_url");
}

static void write_project(struct http_request *r, const struct mgmt_ctx *ctx, bool create)
{
    struct json_object *body = ctx->body; /* mgmt_dispatch parsed and checked it; ours to put */
    struct project_fields f = {0};
    read_fields(body, &f);
    if (create) {
        const char *creator = ctx->actor_user_id[0] ? ctx->actor_user_id : NULL;
        const char *params[] = {ctx->org_id,   creator,  f.name, f.slug,
                                f.description, f.readme, f.url,  ctx->audit_actor};
        mgmt_query(r, CREATE_SQL, 8, params, mgmt_answer_cb, r);
    } else {
        const char *params[] = {
            ctx->org_id, mgmt_param(r, "project"), f.name, f.slug, f.description, f.readme,
            f.url,       ctx->audit_actor};
        mgmt_query(r, UPDATE_SQL, 8, params, mgmt_answer_cb, r);
    }
    json_object_put(body);
}

void projects_create(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_project(r, ctx, true);
}

void projects_update(struct http_request *r, const struct mgmt_ctx *ctx)
{
    write_project(r, ctx, false);
}

/* ---- read, delete, restore ---- */

static void run_one(struct http_request *r, const struct mgmt_ctx *ctx, const char *plain_sql,
                    const char *expanded_sql)
{
    bool expand = expanded_sql != NULL && expand_organization(r);
    const char *params[] = {ctx->org_id, mgmt_param(r, "project"), mgmt_role_name(ctx->role)};
    mgmt_query(r, expand ? expanded_sql : plain_sql, expand ? 3 : 2, params, mgmt_answer_cb, r);
}

void projects_get(struct http_request *r, const struct mgmt_ctx *ctx)
{
    if (expand_organization(r)) {
        run_one(r, ctx, GET_SQL, GET_EXPANDED_SQL);
        return;
    }
    const char *params[] = {ctx->org_id, mgmt_param(r, "project"), NULL};
    mgmt_query(r, GET_SQL, 3, params, mgmt_answer_cb, r);
}

void projects_delete(struct http_request *r, const struct mgmt_ctx *ctx)
{
    bool expand = expand_organization(r);
    const char *params[] = {ctx->org_id, mgmt_param(r, "project"),
                            expand ? mgmt_role_name(ctx->role) : NULL, ctx->audit_actor};
    mgmt_query(r, expand ? DELETE_EXPANDED_SQL : DELETE_SQL, 4, params, mgmt_answer_cb, r);
}

void projects_restore(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id, mgmt_param(r, "project"), ctx->audit_actor};
    mgmt_query(r, RESTORE_SQL, 3, params, mgmt_answer_cb, r);
}
