/*
 * router.h - the route table and path matching.
 *
 * A route is one operation: method, pattern, handler, summary, the
 * credential it takes, its request and response schemas, its success
 * status and, for an organization operation, the role and scope it needs
 * and the operation the dispatcher runs. Patterns are absolute
 * paths whose segments are literals or {name} parameters; a parameter
 * matches one non-empty segment, percent-decoded. The table (routes.c) is
 * the single source of truth: the worker dispatches from it, the
 * management dispatcher (api/mgmt.c) enforces its credential and need,
 * and /openapi.json is generated from it (tests/unit/check_routes.c).
 * Matching is a pure function, no allocation: parameter values are
 * copied into the caller's route_match.
 */
#ifndef ENSIGN_ROUTER_H
#define ENSIGN_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

struct http_request;
struct mgmt_ctx;
typedef void (*route_handler)(struct http_request *r);

/* An organization operation: runs once the dispatcher (api/mgmt.c
 * mgmt_dispatch) authenticated the caller, found the organization and
 * checked the row's need; ctx is valid during the call. */
typedef void (*route_op)(struct http_request *r, const struct mgmt_ctx *ctx);

/* An organization operation's extra statement: asks it, through
 * api/mgmt.h mgmt_dispatch_row, in the dispatcher's one round trip (the
 * caller, the organization and the operation's context together). */
typedef void (*route_load)(struct http_request *r);

/* Methods as a bit set, independent of libevent's numbering. */
enum http_method {
    METHOD_GET = 1 << 0,
    METHOD_HEAD = 1 << 1,
    METHOD_POST = 1 << 2,
    METHOD_PUT = 1 << 3,
    METHOD_PATCH = 1 << 4,
    METHOD_DELETE = 1 << 5,
    METHOD_OPTIONS = 1 << 6,
    METHOD_OTHER = 1 << 7,
    METHOD_QUERY = 1 << 8 /* RFC draft QUERY: a safe GET with a body (list routes) */
};

/* Which credential a route takes: enforced by the dispatcher for
 * organization operations (op set), documented in the OpenAPI output. */
enum route_auth {
    ROUTE_AUTH_NONE,
    ROUTE_AUTH_ACCESS_TOKEN, /* Authorization: Bearer svc_oat_... */
    ROUTE_AUTH_TOKEN_OR_COOKIE,
    ROUTE_AUTH_SDK_KEY /* Authorization: Bearer svc_sdk_... or X-API-Key */
};

/*
 * What an operation needs, enforced by the dispatcher before the
 * operation runs: who the caller is (an organization's member, a user
 * acting on the own account, any token), for an organization a minimum role (api/mgmt.h enum
 * mgmt_role), one token scope bit (db/auth.h enum auth_scope) at read or write level (writes are
 * also rate limited). Plain numbers here: the router only carries them, with their names as the row
 * spells them for the OpenAPI document (x-ensign-role, x-ensign-scope).
 */
/* Who may call an operation (route_need.caller). */
enum route_caller {
    ROUTE_CALLER_ORG,      /* a member of the {org} or {slug} organization with the role */
    ROUTE_CALLER_ACCOUNT,  /* a user (personal token or session): the caller's own account */
    ROUTE_CALLER_ANY,      /* any access token, organization tokens too; no organization */
    ROUTE_CALLER_INTERNAL, /* a user's token with the Ensign-Internal-Key; no scope */
    ROUTE_CALLER_IDENTITY  /* any credential (token or session cookie); no scope: who it is */
};

struct route_need {
    int role;
    unsigned scope;
    bool write;
    const char *role_name;  /* the role's name as the row spells it ("MEMBER") */
    const char *scope_name; /* the scope's ("FLAGS"); /openapi.json shows both */
    enum route_caller caller;
};

/*
 * One operation. handler runs for the request; for an organization
 * operation it is the dispatcher, which enforces auth and need and then
 * calls op.
 */
struct route {
    unsigned method; /* one enum http_method bit */
    const char *pattern;
    route_handler handler;
    const char *summary;
    enum route_auth auth;
    const char *request_schema;  /* JSON Schema text of the body, or NULL */
    const char *response_schema; /* JSON Schema text of the success body, or NULL */
    int success_status;          /* 200 or 201; 0 means 200 */
    struct route_need need;      /* organization operations: what the caller needs */
    route_op op;                 /* organization operations: the operation, else NULL */
    route_load load;             /* an operation with an extra statement, else NULL */
};

#define ROUTE_MAX_PARAMS 8
#define ROUTE_PARAM_BYTES 1024

struct route_param {
    const char *name; /* points into the pattern, not NUL-terminated */
    size_t name_len;
    const char *value; /* NUL-terminated, in route_match.buf */
};

enum route_result { ROUTE_FOUND, ROUTE_NOT_FOUND, ROUTE_METHOD_NOT_ALLOWED };

struct route_match {
    const struct route *route;
    size_t nparams;
    struct route_param params[ROUTE_MAX_PARAMS];
    unsigned allowed; /* on ROUTE_METHOD_NOT_ALLOWED: bit set of methods the path has */
    char buf[ROUTE_PARAM_BYTES];
};

/*
 * Matches method and path (the path part of the URI, no query, still
 * percent-encoded) against the table. HEAD matches GET routes. A run of
 * leading slashes counts as one ("//ofrep/..." is "/ofrep/...").
 */
enum route_result router_match(const struct route *routes, size_t count, unsigned method,
                               const char *path, struct route_match *out);

/*
 * The table indexed by the first path segment (router.c): the same answer
 * as router_match over the table it was made from, trying only the rows
 * whose pattern can match. The table must outlive the index.
 * route_index_new returns NULL when out of memory.
 */
struct route_index;
struct route_index *route_index_new(const struct route *routes, size_t count);
enum route_result route_index_match(const struct route_index *index, unsigned method,
                                    const char *path, struct route_match *out);
void route_index_free(struct route_index *index);

/* The decoded value of parameter name, or NULL. */
const char *route_param(const struct route_match *m, const char *name);

/* Writes "GET, HEAD, POST" style text for a method bit set. */
void router_allow_header(unsigned methods, char *out, size_t outlen);

/* "GET" for METHOD_GET and so on; "OTHER" for unknown. */
const char *router_method_name(unsigned method);

#endif
