/*
 * metrics_route.c - GET /metrics (see metrics_route.h).
 *
 * Whichever worker answers sums every process's block (metrics.c) and
 * adds the node values kept in the shared-memory header: the published
 * snapshot generation, the master's count of restarted children and the
 * healthz checks that fail (health.h). It
 * reads shared memory only; it never writes a counter but its own
 * request's, which http.c counts when the answer leaves.
 */
#include "daemon/metrics_route.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "base/health.h"
#include "http/http.h"
#include "http/metrics.h"
#include "http/server.h"
#include "eval/shm.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static uint64_t now_unix_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
}

void metrics_route_get(struct http_request *r)
{
    const struct http_server *w = r->server;
    const char *own_address = w->cfg->metrics_listen;
    if (own_address != NULL && own_address[0] != '\0' && !r->on_metrics_listener) {
        http_send_error(r, 404, "no such path: /metrics");
        return;
    }
    if (w->shm == NULL || w->shm->metrics == NULL || w->shm->header == NULL) {
        http_send_error(r, 503, "metrics are not available in this process");
        return;
    }
    struct metrics_node node = {
        .snapshot_generation =
            atomic_load_explicit(&w->shm->header->snapshot_generation, memory_order_acquire),
        .worker_restarts =
            atomic_load_explicit(&w->shm->header->worker_restarts, memory_order_relaxed),
        .now_unix_ms = now_unix_ms(),
    };
    struct health_limits limits =
        health_limits_of(w->cfg->refresh_interval_ms, w->cfg->healthz_database_timeout_ms);
    struct health_failure failed[HEALTH_CHECKS];
    size_t failing = health_judge(&w->shm->header->health, &limits, health_now_ms(), failed);
    for (size_t i = 0; i < failing; i++)
        node.health_failing[failed[i].check] = true;
    char *text = metrics_render(w->shm->metrics, &node);
    if (text == NULL) {
        http_send_error(r, 500, "out of memory");
        return;
    }
    http_send_text(r, 200, METRICS_CONTENT_TYPE, text, strlen(text));
    free(text);
}
