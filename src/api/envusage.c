/*
 * envusage.c - GET /v1/orgs/{org}/environments/{envKey}/usage: how often
 * each flag of one environment was evaluated on each of the last seven
 * days (UTC), in one statement.
 *
 * The dashboard's flag list draws a seven-day sparkline per row from it:
 * one request for the whole list, never one per flag (the list item's own
 * usage carries only the last 24 hours). Read from the hourly
 * usage_counters of that environment since the first of the seven days
 * (its environment index), summed per flag and day; a flag with no count
 * in those days is left out (the client draws nothing for it), so the
 * answer grows with the flags in use, not with the organization. Role
 * viewer, the flags scope at read level; the counts reach the table
 * within usage_flush_interval_ms of the evaluations.
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/envusage.h"

#include "http/http.h"
#include "mgmt/mgmt.h"

/* $1 org id, $2 environment key. */
static const char WEEK_SQL[] =
    "WITH env AS (SELECT id FROM environments WHERE org_id = $1::uuid AND key = $2),"
    " days AS (SELECT d::date AS day FROM generate_series("
    "            (now() AT TIME ZONE 'UTC')::date - 6, (now() AT TIME ZONE 'UTC')::date,"
    "            interval '1 day') AS d),"
    " counted AS (SELECT u.flag_id, (u.hour AT TIME ZONE 'UTC')::date AS day,"
    "                    sum(u.count) AS n"
    "               FROM usage_counters u JOIN env ON u.environment_id = env.id"
    "              WHERE u.hour >= ((now() AT TIME ZONE 'UTC')::date - 6) AT TIME ZONE 'UTC'"
    "              GROUP BY 1, 2),"
    " series AS (SELECT c.flag_id, json_agg(COALESCE(x.n, 0) ORDER BY d.day) AS counts"
    "              FROM (SELECT DISTINCT flag_id FROM counted) c CROSS JOIN days d"
    "              LEFT JOIN counted x ON x.flag_id = c.flag_id AND x.day = d.day"
    "             GROUP BY c.flag_id)"
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM env) THEN 200 ELSE 404 END AS status,"
    " json_build_object('environment', $2::text,"
    "   'days', (SELECT json_agg(to_char(day, 'YYYY-MM-DD') ORDER BY day) FROM days),"
    "   'flags', COALESCE((SELECT json_agg(json_build_object('key', f.key, 'series', s.counts)"
    "                       ORDER BY f.key)"
    "                       FROM series s JOIN flags f ON f.id = s.flag_id), '[]'::json))::text"
    "   AS body,"
    " 'environment not found' AS message";

void envusage_week(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *env = mgmt_param(r, "envKey");
    const char *params[] = {ctx->org_id, env != NULL ? env : ""};
    mgmt_query(r, WEEK_SQL, 2, params, mgmt_answer_cb, r);
}

const char envusage_week_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[\"environment\",\"days\",\"flags\"],\"properties\":{"
    "\"environment\":{\"type\":\"string\"},"
    "\"days\":{\"type\":\"array\",\"minItems\":7,\"maxItems\":7,\"items\":{\"type\":\"string\","
    "\"description\":\"a UTC date, YYYY-MM-DD, oldest first\"}},"
    "\"flags\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"additionalProperties\":false,"
    "\"required\":[\"key\",\"series\"],\"properties\":{\"key\":{\"type\":\"string\"},"
    "\"series\":{\"type\":\"array\",\"minItems\":7,\"maxItems\":7,\"items\":{\"type\":"
    "\"integer\",\"minimum\":0}}}}}}}";
