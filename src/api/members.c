/*
 * members.c - who belongs to an organization, as /v1 lists
 * them: GET /v1/orgs/{org}/members.
 *
 * Owns the member list {members: [{userId, name, email, username, role}]}
 * (doc/choices.md "Records"), oldest membership first, deleted users left
 * out. One statement; any role may read (viewer included), and the token
 * needs the members scope at read level.
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/members.h"

#include "http/http.h"
#include "mgmt/mgmt.h"

/* $1 org id. */
static const char LIST_SQL[] =
    "SELECT 200 AS status, json_build_object('members', COALESCE(json_agg("
    "  json_build_object('userId', u.id, 'name', u.name, 'email', u.email,"
    "                    'username', u.username, 'role', m.role)"
    "  ORDER BY m.created_at, u.id), '[]'::json))::text AS body, NULL::text AS message"
    " FROM org_members m JOIN users u ON u.id = m.user_id AND NOT u.deleted"
    " WHERE m.org_id = $1";

void members_v1_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *params[] = {ctx->org_id};
    mgmt_query(r, LIST_SQL, 1, params, mgmt_answer_cb, r);
}

const char members_v1_list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"members\"],"
    "\"properties\":{\"members\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"additionalProperties\":false,"
    "\"required\":[\"userId\",\"name\",\"email\",\"username\",\"role\"],\"properties\":{"
    "\"userId\":{\"type\":\"string\",\"format\":\"uuid\"},\"name\":{\"type\":\"string\"},"
    "\"email\":{\"type\":\"string\"},\"username\":{\"type\":[\"string\",\"null\"]},"
    "\"role\":{\"type\":\"string\",\"enum\":[\"owner\",\"admin\",\"member\",\"viewer\"]}}}}}}";
