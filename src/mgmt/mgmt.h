/*
 * mgmt.h - the common path of every /v1/orgs/{org}/... management handler.
 *
 * Owns: authenticating the access token (auth.c) and resolving the {org}
 * slug and the caller's role in it (one query for both), the role and
 * scope checks of doc/api.md "Roles and scopes", the management write rate limit, and the common
 * ways to run a handler's statement and answer from its result.
 *
 * Statuses answered here, before the handler's callback runs:
 *   401  no/invalid access token (auth.c)
 *   404  the organization does not exist or the caller is not in it (a
 *        personal token's user is not a member; an organization token of
 *        another organization): existence is never revealed
 *   403  the role may not do the operation, or the token's scopes do not
 *        allow it (write needs the scope at "write", read at "read")
 *   429  management write rate limit (writes only)
 *   503  database unavailable (Retry-After), 500 other query failures
 *
 * Roles (doc/api.md "Roles and scopes"): viewer reads; member also writes flags,
 * variants, rules, segments and entities; admin also SDK keys, members,
 * invitations, projects and audit settings; owner also renames the
 * organization and manages owners. An organization token acts as role
 * admin in its own organization only.
 *
 * Transactions: a worker has one connection with a FIFO of queries, so a
 * handler never spreads BEGIN/COMMIT over several queued queries. Each
 * write is one statement (data-modifying CTEs) or a PL/pgSQL function.
 *
 * Called by the resource handlers (flags.c, variants.c, rules.c,
 * environments.c, segments.c, entities.c, sdkkeys.c, members.c, ...).
 */
#ifndef ENSIGN_MGMT_H
#define ENSIGN_MGMT_H

#include <stdbool.h>
#include <json-c/json.h>
#include <libpq-fe.h>

#include "mgmt/audit_record.h"
#include "db/auth.h"
#include "mgmt/request_auth.h"
#include "db/db.h"
#include "http/router.h"

struct http_request;

/* Organization roles, in increasing power. */
enum mgmt_role { MGMT_ROLE_VIEWER, MGMT_ROLE_MEMBER, MGMT_ROLE_ADMIN, MGMT_ROLE_OWNER };

/* What an operation needs: struct route_need (router.h), a minimum role
 * (enum mgmt_role), one enum auth_scope bit at read or write level.
 * Writes are also rate limited. MGMT_NEED(ROLE, SCOPE, write) is the
 * initializer the route table's rows use; it also names role and scope
 * for /openapi.json from the same tokens. */
#define MGMT_NEED(role, scope, is_write)                                                           \
    {                                                                                              \
        MGMT_ROLE_##role, AUTH_SCOPE_##scope, is_write, #role, #scope, ROUTE_CALLER_ORG            \
    }

/* The need of an operation on no organization: the caller's own account
 * (ROUTE_CALLER_ACCOUNT: an organization token is refused, 403) or any
 * token (ROUTE_CALLER_ANY), with one scope. No role. */
#define MGMT_OWN(caller, scope, is_write)                                                          \
    {                                                                                              \
        MGMT_ROLE_VIEWER, AUTH_SCOPE_##scope, is_write, NULL, #scope, ROUTE_CALLER_##caller        \
    }

/* The need of an operation that answers who the caller is (/v1/me, /me):
 * any credential, no scope; ctx->via_cookie tells which credential. */
#define MGMT_IDENTITY                                                                              \
    {                                                                                              \
        MGMT_ROLE_VIEWER, 0, false, NULL, NULL, ROUTE_CALLER_IDENTITY                              \
    }

/* The need of an operation on the caller's own credential (PUT
 * /v1/session/password): any credential, no scope, a write. The dispatcher
 * adds no management rate limit (the operation spends the login budget). */
#define MGMT_IDENTITY_WRITE                                                                        \
    {                                                                                              \
        MGMT_ROLE_VIEWER, 0, true, NULL, NULL, ROUTE_CALLER_IDENTITY                               \
    }

/* The need of an internal operation (the access token of a user, a deleted
 * one's too, and the Ensign-Internal-Key header; no scope; always rate
 * limited as a write). */
#define MGMT_INTERNAL                                                                              \
    {                                                                                              \
        MGMT_ROLE_VIEWER, 0, true, NULL, NULL, ROUTE_CALLER_INTERNAL                               \
    }

/* The need of callers outside the route table (mgmt_begin_org: the agent). */
#define MGMT_FLAGS_READ ((struct route_need)MGMT_NEED(VIEWER, FLAGS, false))

#define MGMT_SLUG_BYTES 64  /* 63 characters of [a-z0-9-] + NUL */
#define MGMT_NAME_BYTES 801 /* 200 characters of up to 4 UTF-8 bytes + NUL */

/*
 * The resolved caller. Plain data but for body (which the operation owns):
 * a handler that needs it after its callback returns copies the struct by
 * value.
 */
struct mgmt_ctx {
    struct identity who;                    /* the authenticated token */
    char org_id[AUTH_UUID_LEN + 1];         /* the {org} organization's id */
    char org_slug[MGMT_SLUG_BYTES];         /* its slug */
    enum mgmt_role role;                    /* the caller's role in it */
    char actor_user_id[AUTH_UUID_LEN + 1];  /* the user; "" for an organization token */
    char actor_name[MGMT_NAME_BYTES];       /* user name, or the organization token's name */
    char audit_actor[AUDIT_ACTOR_JSON_MAX]; /* the audit actor parameter (audit_record.h) */
    struct json_object *body;               /* mgmt_dispatch: the parsed request body of a row
                                               with a request schema, the operation's to put;
                                               else NULL */
    bool via_cookie;                        /* MGMT_IDENTITY(_WRITE) rows: the credential
                                               was the session cookie */
    const PGresult *row;                    /* a row with load: the answer of its statement
                                               (extras from MGMT_ROW_FIRST on), valid during
                                               the call; else NULL */
};

/*
 * The dispatcher of every organization operation (a route row with op
 * set): the one place where the row's credential and need are enforced
 * before the operation runs. The credential: the bearer access token, or,
 * on a row of auth ROUTE_AUTH_TOKEN_OR_COOKIE without an Authorization
 * header, the ensign_session cookie (auth_credential_digest: the Origin
 * check for unsafe methods, 403). Then the {org} or {slug} organization
 * and the row's need, with the statuses above in their order (401, 429,
 * 404, 403); then, for a row with a request schema, the body is parsed
 * into ctx->body (400 unparseable or empty, 422 not an object: the
 * operation gets an object, and owns it); then route->op(r, ctx). It is
 * the row's handler.
 */
void mgmt_dispatch(struct http_request *r);
/*
 * A row whose need is MGMT_OWN (no organization) goes: 401, 403 an
 * organization token on an ACCOUNT row, 403 the scope, 429 (writes), then
 * the body as above and the operation, with ctx->who and actor_user_id
 * set and no organization (org_id "").
 * A row whose need is MGMT_IDENTITY or MGMT_IDENTITY_WRITE: 401 (auth.h
 * auth_token_or_cookie), then the body as above and the operation with
 * ctx->who and ctx->via_cookie.
 * A row whose need is MGMT_INTERNAL: 401 (auth.h auth_internal: a deleted
 * user's token is taken), 403 the Ensign-Internal-Key, 403 an organization
 * token, 429, then the body and the operation, as for MGMT_OWN.
 */

/*
 * For a row's load (router.h route_load) only: the dispatcher's checks of
 * the row, in the same one round trip also asking sql (a MGMT_AUTH_ORG_SQL
 * statement) with its nextra (at most 8) parameters extra as $3...; the
 * operation then gets the answer row in ctx->row. Same statuses, same
 * order as mgmt_dispatch.
 */
void mgmt_dispatch_row(struct http_request *r, const char *sql, int nextra,
                       const char *const *extra);

/* Runs once the caller may do the operation; ctx is valid during the call. */
typedef void (*mgmt_cb)(struct http_request *r, const struct mgmt_ctx *ctx, void *arg);

/*
 * The organization org (an SQL text expression: slug, or id) with the
 * caller's role and actor name in it; no row when the caller is not in it.
 * The caller: is_org_token (a boolean expression), user_id (uuid, of a
 * personal token), token_org_id and token_name (of an organization token).
 */
#define MGMT_ORG_SELECT(org, is_org_token, user_id, token_org_id, token_name)                      \
    "SELECT o.id, o.slug,"                                                                         \
    "       CASE WHEN " is_org_token " THEN 'admin' ELSE m.role END AS role,"                      \
    "       CASE WHEN " is_org_token " THEN " token_name " ELSE u.name END AS actor_name"          \
    "  FROM orgs o"                                                                                \
    "  LEFT JOIN org_members m ON m.org_id = o.id AND m.user_id = " user_id                        \
    "                         AND NOT (" is_org_token ")"                                          \
    "  LEFT JOIN users u ON u.id = m.user_id"                                                      \
    " WHERE (o.slug = " org " OR o.id = (CASE WHEN " org                                           \
    "        ~* '^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$' THEN " org " END)::uuid)"            \
    "   AND ((" is_org_token " AND o.id = " token_org_id ")"                                       \
    "        OR (NOT (" is_org_token ") AND m.user_id IS NOT NULL))"

/*
 * The statement the dispatcher runs, with more: $1 the token digest, $2 the
 * {org} slug or id, then the caller's own parameters from $3 on.
 * extra_columns (text starting with ", ", or "") come after the token
 * columns and the organization's (so from column MGMT_ROW_FIRST on);
 * extra_joins (lateral joins, or "") may use org.id, the organization's
 * id (NULL when the caller is not in it). Compile-time constant SQL only.
 */
#define MGMT_AUTH_ORG_SQL(extra_columns, extra_joins)                                              \
    "WITH " AUTH_TOKEN_CTE " SELECT " AUTH_TOKEN_COLUMNS                                           \
    ", org.id, org.slug, org.role, org.actor_name" extra_columns                                   \
    "   FROM token LEFT JOIN LATERAL (" MGMT_ORG_SELECT(                                           \
        "$2", "token.kind = 'organization'", "token.user_id", "token.org_id",                      \
        "token.name") "   ) AS org ON true " extra_joins

/* The first of a MGMT_AUTH_ORG_SQL statement's extra columns. */
#define MGMT_ROW_FIRST (AUTH_TOKEN_NCOLUMNS + 4)

/*
 * mgmt_begin for an organization named in the request body rather than
 * the path (the root API's org_id: the organization's id or slug),
 * for a caller already authenticated (who). Same checks and statuses.
 * cb runs exactly once: with ctx after every check passed, or with ctx
 * NULL after r was answered; so arg may be per-request memory that the
 * callback frees.
 */
void mgmt_begin_org(struct http_request *r, const struct identity *who, const char *org,
                    struct route_need need, mgmt_cb cb, void *arg);

/* The name of a role ("viewer", ...), and back (-1 for an unknown name). */
const char *mgmt_role_name(enum mgmt_role role);
int mgmt_role_from_name(const char *name);

/*
 * Queues a parameterized query on r's worker connection. Returns 0, or -1
 * after answering r (503) when it cannot be queued; cb then never runs.
 */
int mgmt_query(struct http_request *r, const char *sql, int nparams, const char *const *params,
               db_result_cb cb, void *arg);

/*
 * Answers a failed statement by its SQLSTATE: 23505 unique violation 409
 * ("already exists"), 23503 foreign key / 23514 check / 22xxx data
 * exception 422 (errors under field "body" unless the constraint names one
 * of the known columns), unavailable 503, other 500.
 */
void mgmt_send_failure(struct http_request *r, const PGresult *res, const char *error);

/*
 * Answers from the house result shape: exactly one row with the columns
 *   status  integer HTTP status
 *   body    JSON text: the success body; for a 422 the errors object
 *   message text for a 4xx (NULL: a generic message for the status)
 * A failed result goes to mgmt_send_failure; zero rows answer 404 with
 * not_found as message.
 */
void mgmt_answer(struct http_request *r, const PGresult *res, const char *error,
                 const char *not_found);

/* A db_result_cb answering with mgmt_answer; arg is the http_request.
 * The 404 message is "not found". */
void mgmt_answer_cb(PGresult *res, const char *error, void *arg);

/*
 * Parses r's body as a JSON object: returns it (caller owns), or NULL
 * after answering 400 (unparseable, empty) or 422 (not an object).
 */
struct json_object *mgmt_body_object(struct http_request *r);

/*
 * mgmt_body_object, then the body checked against the schema text (a
 * route row's request schema; src/mgmt/jsonschema.h): the body (caller
 * owns), or NULL after answering 400, 422 (every field the schema refuses)
 * or 500 (a schema that does not parse). The dispatcher's check, also used
 * by the rows that are not dispatched (the login, the waitlist).
 */
struct json_object *mgmt_checked_body(struct http_request *r, const char *schema_text);

/*
 * Members of a body the row's request schema checked (so their types are
 * known): the member name of body, or NULL when absent or JSON null; and
 * the text of a string member, or NULL when absent or null.
 */
struct json_object *mgmt_body_member(const struct json_object *body, const char *name);
const char *mgmt_body_text(const struct json_object *body, const char *name);

/*
 * For a row's load, before the caller is known: r's body parsed as a JSON
 * object (caller owns), or NULL when it is not one. Answers nothing: the
 * dispatcher parses the body again, and answers its errors, after the
 * caller's checks (so 401 comes before 400).
 */
struct json_object *mgmt_body_peek(struct http_request *r);

struct validate;

/* Answers 422 with v's errors (taken from v) and message "validation failed". */
void mgmt_send_invalid(struct http_request *r, struct validate *v);

/* The route parameter name, or "" when absent (never NULL). */
const char *mgmt_param(const struct http_request *r, const char *name);

/* The route parameter name when it is a uuid; else NULL after answering
 * 404 with not_found (an id that is not a uuid names nothing). */
const char *mgmt_uuid_param(struct http_request *r, const char *name, const char *not_found);

/* The /v1 timestamp text (ISO 8601, UTC, milliseconds) of a
 * SQL column, through the one SQL function that writes it (sql/0002). */
#define MGMT_SQL_ISO(column) "ensign_iso(" column ")"

#endif
