/*
 * webhook_deliveries.c - a webhook's deliveries (doc/choices.md
 * "Webhooks"): GET /v1/orgs/{org}/webhooks/{id}/deliveries lists the
 * newest ?limit= (1..200, default 50) deliveries, newest first, each
 * {id, eventId, action, status, responseCode, durationMs, attempts,
 * nextAttemptAt, lastError, createdAt, deliveredAt}; POST
 * .../deliveries/{deliveryId}/redeliver queues the same body again as a
 * new delivery (a new Ensign-Delivery id, attempts from zero, a fresh 24
 * hour window): 201 {delivery}; 409 while the webhook is not active.
 *
 * Invariants: an unknown or malformed id, or one of another organization
 * or another webhook, is 404. The rows are written by the audit trigger
 * and the deliverer (sql/0017_webhooks.sql); here they are only read,
 * and copied by a redelivery. Role admin, scope audit (as webhooks.c).
 *
 * Called by the worker's dispatch from the route table (routes.c).
 */
#include "api/webhook_deliveries.h"

#include <stdio.h>
#include <stdlib.h>

#include "http/http.h"
#include "mgmt/validate.h"

#define LIMIT_DEFAULT 50
#define LIMIT_MAX 200

/* $1 org id, $2 webhook id, $3 limit. No row: no such webhook. */
static const char LIST_SQL[] =
    "SELECT 200 AS status, json_build_object('deliveries', COALESCE((SELECT json_agg(p.form"
    " ORDER BY p.created_at DESC, p.id DESC) FROM (SELECT ensign_webhook_delivery_form(d) AS form,"
    " d.created_at, d.id FROM webhook_deliveries d WHERE d.webhook_id = w.id"
    " ORDER BY d.created_at DESC, d.id DESC LIMIT $3::int) p), '[]'::json))::text AS body,"
    " NULL::text AS message FROM webhooks w WHERE w.org_id = $1 AND w.id = $2";

/* $1 org id, $2 webhook id, $3 delivery id. */
static const char REDELIVER_SQL[] =
    "WITH src AS (SELECT d.webhook_id, d.event_id, d.action, d.body, w.active"
    "               FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
    "              WHERE w.org_id = $1 AND w.id = $2 AND d.id = $3),"
    " n AS (INSERT INTO webhook_deliveries AS x (webhook_id, event_id, action, body)"
    "       SELECT webhook_id, event_id, action, body FROM src WHERE src.active"
    "       RETURNING ensign_webhook_delivery_form(x) AS form)"
    " SELECT CASE WHEN src.active THEN 201 ELSE 409 END AS status,"
    " CASE WHEN src.active THEN json_build_object('delivery', (SELECT form FROM n))::text"
    " ELSE '{}' END AS body,"
    " CASE WHEN src.active THEN NULL ELSE 'the webhook is not active' END AS message FROM src";

static void answer_list(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, "webhook not found");
}

static void answer_redelivery(PGresult *res, const char *error, void *arg)
{
    mgmt_answer(arg, res, error, "delivery not found");
}

/* The ?limit= of the list; false after answering 422. */
static bool read_limit(struct http_request *r, int *limit)
{
    char text[16];
    *limit = LIMIT_DEFAULT;
    if (!http_query_param(r, "limit", text, sizeof text))
        return true;
    char *end;
    long value = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < 1 || value > LIMIT_MAX) {
        struct validate v;
        validate_init(&v);
        validate_error(&v, "limit", "must be an integer from 1 to %d", LIMIT_MAX);
        mgmt_send_invalid(r, &v);
        validate_free(&v);
        return false;
    }
    *limit = (int)value;
    return true;
}

void webhook_deliveries_list(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *id = mgmt_uuid_param(r, "id", "webhook not found");
    if (id == NULL)
        return;
    int limit;
    if (!read_limit(r, &limit))
        return;
    char limit_text[16];
    snprintf(limit_text, sizeof limit_text, "%d", limit);
    const char *params[] = {ctx->org_id, id, limit_text};
    mgmt_query(r, LIST_SQL, 3, params, answer_list, r);
}

void webhook_deliveries_redeliver(struct http_request *r, const struct mgmt_ctx *ctx)
{
    const char *id = mgmt_param(r, "id"), *delivery = mgmt_param(r, "deliveryId");
    if (!validate_uuid_ok(id) || !validate_uuid_ok(delivery)) {
        http_send_error(r, 404, "delivery not found");
        return;
    }
    const char *params[] = {ctx->org_id, id, delivery};
    mgmt_query(r, REDELIVER_SQL, 3, params, answer_redelivery, r);
}

/* ---- schemas ---- */

#define DELIVERY_OBJECT                                                                            \
    "{\"type\":\"object\",\"additionalProperties\":false,"                                         \
    "\"required\":[\"id\",\"eventId\",\"action\",\"status\",\"responseCode\",\"durationMs\","      \
    "\"attempts\",\"nextAttemptAt\",\"lastError\",\"createdAt\",\"deliveredAt\"],"                 \
    "\"properties\":{\"id\":{\"type\":\"string\",\"format\":\"uuid\","                             \
    "\"description\":\"Sent as Ensign-Delivery: receivers dedupe on it.\"},"                       \
    "\"eventId\":{\"type\":\"string\",\"format\":\"uuid\"},\"action\":{\"type\":\"string\"},"      \
    "\"status\":{\"enum\":[\"pending\",\"delivered\",\"failed\"]},"                                \
    "\"responseCode\":{\"type\":[\"integer\",\"null\"]},"                                          \
    "\"durationMs\":{\"type\":[\"integer\",\"null\"]},\"attempts\":{\"type\":\"integer\"},"        \
    "\"nextAttemptAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"},"                 \
    "\"lastError\":{\"type\":[\"string\",\"null\"]},"                                              \
    "\"createdAt\":{\"type\":\"string\",\"format\":\"date-time\"},"                                \
    "\"deliveredAt\":{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"}}}"

const char webhook_deliveries_list_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"deliveries\"],"
    "\"properties\":{\"deliveries\":{\"type\":\"array\",\"items\":" DELIVERY_OBJECT "}}}";

const char webhook_deliveries_one_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"delivery\"],"
    "\"properties\":{\"delivery\":" DELIVERY_OBJECT "}}";
