/*
 * healthz_route.c - GET /v1/healthz, the health probe.
 *
 * Never touches the database. Reads the checks that the refresher keeps in
 * shared memory (src/base/health.h, in the shm header) and answers 200 with
 * status ok, or 503 with status degraded, a Retry-After and, under checks,
 * each failing check with how long it has failed and why. In src/eval
 * because it reads the shared-memory region (shm.h), which the HTTP layer
 * below does not know.
 */
#include "daemon/healthz_route.h"

#include <json-c/json.h>
#include <stdio.h>
#include <time.h>

#include "build_config.h"
#include "base/config.h"
#include "base/health.h"
#include "http/http.h"
#include "http/server.h"
#include "eval/shm.h"

const char healthz_schema[] =
    "{\"type\":\"object\",\"required\":[\"status\",\"version\",\"time\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"degraded\"]},"
    "\"version\":{\"type\":\"string\"},"
    "\"time\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"checks\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"name\",\"failing_for_ms\",\"reason\"],\"additionalProperties\":false,"
    "\"properties\":{\"name\":{\"type\":\"string\","
    "\"enum\":[\"snapshot_write\",\"snapshot_stale\",\"database\"]},"
    "\"failing_for_ms\":{\"type\":\"integer\",\"minimum\":0},"
    "\"reason\":{\"type\":\"string\"}}}}}}";

/* The failing checks, judged against this worker's configuration. */
static size_t failing_checks(const struct http_server *w, struct health_failure out[HEALTH_CHECKS])
{
    if (w->shm == NULL || w->shm->header == NULL || w->cfg == NULL)
        return 0;
    struct health_limits limits =
        health_limits_of(w->cfg->refresh_interval_ms, w->cfg->healthz_database_timeout_ms);
    return health_judge(&w->shm->header->health, &limits, health_now_ms(), out);
}

static struct json_object *checks_json(const struct health_failure *failed, size_t n)
{
    struct json_object *list = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        struct json_object *check = json_object_new_object();
        json_object_object_add(check, "name",
                               json_object_new_string(health_check_name(failed[i].check)));
        json_object_object_add(check, "failing_for_ms", json_object_new_int64(failed[i].for_ms));
        json_object_object_add(check, "reason", json_object_new_string(failed[i].reason));
        json_object_array_add(list, check);
    }
    return list;
}

/* Retry-After of a degraded answer: the refresher retries every
 * refresh_interval_ms, so look again then (integer seconds, at least 1). */
static void add_retry_after(struct http_request *r)
{
    int ms = r->server->cfg != NULL ? r->server->cfg->refresh_interval_ms : 1000;
    char seconds[16];
    snprintf(seconds, sizeof seconds, "%d", ms > 1000 ? (ms + 999) / 1000 : 1);
    http_add_header(r, "Retry-After", seconds);
}

void healthz_answer(struct http_request *r)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char stamp[40];
    size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", now.tv_nsec / 1000000L);

    struct health_failure failed[HEALTH_CHECKS];
    size_t failing = failing_checks(r->server, failed);
    struct json_object *body = json_object_new_object();
    json_object_object_add(body, "status", json_object_new_string(failing ? "degraded" : "ok"));
    json_object_object_add(body, "version", json_object_new_string(PACKAGE_VERSION));
    json_object_object_add(body, "time", json_object_new_string(stamp));
    if (failing == 0) {
        http_send_json(r, 200, body);
        return;
    }
    json_object_object_add(body, "checks", checks_json(failed, failing));
    add_retry_after(r);
    http_send_json(r, 503, body);
}
