/*
 * unknownflags.c - the keys SDKs asked for (single OFREP evaluation,
 * FLAG_NOT_FOUND) that name no flag of the organization:
 * GET /v1/orgs/{org}/unknown-flags.
 *
 * Owns the list {flags: [{key, environment, count, lastSeenAt}]} read from
 * unknown_flags (sql/0015; the flusher writes it from the shared-memory
 * counters of src/eval/unknown_flags.c, so a request shows up within
 * usage_flush_interval_ms): most recently seen first (then by key and
 * environment), at most 1,000 keys per environment. A key that names a
 * flag is not listed, even for the moment between the flag's creation
 * (which deletes its rows) and the last count of it being written.
 * ?environment=KEY keeps one environment (404 when the organization has
 * none of that key; a value that is not a key is none). One statement;
 * role viewer, the flags scope at read level.
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/unknownflags.h"

#include "eval/unknown_flags.h"
#include "http/http.h"
#include "mgmt/mgmt.h"

#include <string.h>

/* $1 org id, $2 environment key or ''. */
static const char LIST_SQL[] =
    "SELECT CASE WHEN $2 = '' OR EXISTS (SELECT 1 FROM environments e"
    "                                     WHERE e.org_id = $1::uuid AND e.key = $2)"
    "            THEN 200 ELSE 404 END AS status,"
    " json_build_object('flags', COALESCE((SELECT json_agg(json_build_object("
    "     'key', u.key, 'environment', e.key, 'count', u.count,"
    "     'lastSeenAt', ensign_iso(u.last_seen_at))"
    "     ORDER BY u.last_seen_at DESC, u.key, e.key)"
    "   FROM unknown_flags u JOIN environments e ON e.id = u.environment_id"
    "  WHERE e.org_id = $1::uuid AND ($2 = '' OR e.key = $2)"
    "    AND NOT EXISTS (SELECT 1 FROM flags f WHERE f.org_id = e.org_id AND f.key = u.key)),"
    "   '[]'::json))::text AS body,"
    " 'environment not found' AS message";

#define ENV_PARAM_MAX 256

/* Whether the query names environment at all: http_query_param says
 * false for a value too long for its buffer too, and such a value must
 * not mean "every environment". */
static bool environment_named(const char *query)
{
    static const char name[] = "environment";
    for (const char *p = query; p != NULL && *p != '\0'; p = strchr(p, '&')) {
        if (*p == '&')
            p++;
        if (strncmp(p, name, sizeof name - 1) == 0 &&
            (p[sizeof name - 1] == '=' || p[sizeof name - 1] == '&' || p[sizeof name - 1] == '\0'))
            return true;
    }
    return false;
}

void unknownflags_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    char env[ENV_PARAM_MAX] = "";
    bool given = http_query_param(r, "environment", env, sizeof env) || environment_named(r->query);
    if (given && !unknown_flags_key_ok(env, strlen(env))) {
        http_send_error(r, 404, "environment not found");
        return;
    }
    const char *params[] = {ctx->org_id, env};
    mgmt_query(r, LIST_SQL, 2, params, mgmt_answer_cb, r);
}

const char unknownflags_list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"flags\"],"
    "\"properties\":{\"flags\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"additionalProperties\":false,"
    "\"required\":[\"key\",\"environment\",\"count\",\"lastSeenAt\"],\"properties\":{"
    "\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63},"
    "\"environment\":{\"type\":\"string\"},\"count\":{\"type\":\"integer\",\"minimum\":1},"
    "\"lastSeenAt\":{\"type\":\"string\",\"format\":\"date-time\"}}}}}}";
