/*
 * metrics.c - the counter blocks in shared memory and their Prometheus
 * text (see metrics.h).
 *
 * Invariants: the area is sized once from the configuration (the largest
 * worker count the configuration allows, plus one background block), so
 * a reload that adds workers still finds a block per slot; every label
 * value comes from a fixed table in this file; rendering only reads.
 */
#include "http/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "http/envelope.h"

/* Worker slots the configuration allows (config.c bounds "workers" to 64). */
#define METRICS_WORKER_BLOCKS 64

static const int counted_statuses[] = {200, 201, 204, 304, 400, 401, 403, 404, 405, 409, 410,
                                       412, 413, 415, 422, 429, 431, 500, 502, 503, 504};
#define COUNTED_STATUSES (sizeof counted_statuses / sizeof counted_statuses[0])
#define STATUS_OTHER_SLOT COUNTED_STATUSES

_Static_assert(COUNTED_STATUSES + 1 <= METRICS_STATUS_SLOTS, "status slots too few");

static const char *const class_names[METRICS_CLASS_COUNT] = {
    [METRICS_CLASS_EVALUATION] = "evaluation", [METRICS_CLASS_MANAGEMENT] = "management",
    [METRICS_CLASS_ACCOUNTS] = "accounts",     [METRICS_CLASS_META] = "meta",
    [METRICS_CLASS_OTHER] = "other",
};

static const char *const limit_names[METRICS_LIMIT_COUNT] = {
    [METRICS_LIMIT_EVALUATION] = "evaluation",
    [METRICS_LIMIT_MANAGEMENT] = "management",
    [METRICS_LIMIT_WAITLIST] = "waitlist",
    [METRICS_LIMIT_LOGIN] = "login",
};

size_t metrics_area_size(const struct config *cfg)
{
    (void)cfg;
    return sizeof(struct metrics_area) + (METRICS_WORKER_BLOCKS + 1) * sizeof(struct metrics_block);
}

void metrics_area_init(void *area, const struct config *cfg)
{
    struct metrics_area *m = area;
    memset(m, 0, metrics_area_size(cfg));
    m->nblocks = METRICS_WORKER_BLOCKS + 1;
}

struct metrics_block *metrics_worker_block(struct metrics_area *area, int slot)
{
    if (area == NULL)
        return NULL;
    unsigned workers = area->nblocks - 1;
    return &area->blocks[(unsigned)(slot < 0 ? 0 : slot) % workers];
}

static int status_slot(int status)
{
    for (size_t i = 0; i < COUNTED_STATUSES; i++)
        if (counted_statuses[i] == status)
            return (int)i;
    return STATUS_OTHER_SLOT;
}

static int has_prefix(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

enum metrics_class metrics_class_of(const char *path)
{
    while (path[0] == '/' && path[1] == '/')
        path++;
    if (strcmp(path, "/v1/healthz") == 0 || strcmp(path, "/openapi.json") == 0 ||
        strcmp(path, "/docs/api") == 0 || strcmp(path, "/metrics") == 0)
        return METRICS_CLASS_META;
    switch (envelope_surface_for_path(path)) {
    case SURFACE_OFREP:
        return METRICS_CLASS_EVALUATION;
    case SURFACE_V1:
        return has_prefix(path, "/v1/me") || has_prefix(path, "/v1/session")
                   ? METRICS_CLASS_ACCOUNTS
                   : METRICS_CLASS_MANAGEMENT;
    case SURFACE_ROOT:
        break;
    }
    return METRICS_CLASS_ACCOUNTS; /* the root API has no prefix */
}

void metrics_count_request(struct metrics_block *b, enum metrics_class cls, int status,
                           size_t bytes, uint64_t microseconds)
{
    if (b == NULL || (unsigned)cls >= METRICS_CLASS_COUNT)
        return;
    metrics_add(&b->requests[cls][status_slot(status)], 1);
    metrics_add(&b->response_bytes, bytes);
    metrics_add(&b->request_microseconds, microseconds);
}

/* ---- rendering ---- */

static uint64_t sum(const struct metrics_area *m, size_t offset)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < m->nblocks; i++) {
        const _Atomic uint64_t *c = (const void *)((const char *)&m->blocks[i] + offset);
        total += atomic_load_explicit(c, memory_order_relaxed);
    }
    return total;
}

#define SUM(m, field) sum(m, offsetof(struct metrics_block, field))

static void header(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_requests(FILE *out, const struct metrics_area *m)
{
    header(out, "ensign_http_requests_total", "counter",
           "HTTP requests answered, by route class and status code.");
    for (int c = 0; c < METRICS_CLASS_COUNT; c++) {
        for (size_t s = 0; s <= COUNTED_STATUSES; s++) {
            uint64_t n = SUM(m, requests[c][s]);
            if (n == 0 && s == STATUS_OTHER_SLOT)
                continue;
            if (s == STATUS_OTHER_SLOT)
                fprintf(out, "ensign_http_requests_total{class=\"%s\",code=\"other\"} %llu\n",
                        class_names[c], (unsigned long long)n);
            else if (n != 0 || counted_statuses[s] == 200)
                fprintf(out, "ensign_http_requests_total{class=\"%s\",code=\"%d\"} %llu\n",
                        class_names[c], counted_statuses[s], (unsigned long long)n);
        }
    }
    header(out, "ensign_http_response_bytes_total", "counter", "Response body bytes sent.");
    fprintf(out, "ensign_http_response_bytes_total %llu\n",
            (unsigned long long)SUM(m, response_bytes));
    header(out, "ensign_http_request_duration_seconds_total", "counter",
           "Time spent answering requests, from dispatch to answer.");
    fprintf(out, "ensign_http_request_duration_seconds_total %.6f\n",
            (double)SUM(m, request_microseconds) / 1e6);
}

static void render_work(FILE *out, const struct metrics_area *m)
{
    header(out, "ensign_flag_evaluations_total", "counter",
           "Flags evaluated (a bulk request counts each flag).");
    fprintf(out, "ensign_flag_evaluations_total %llu\n",
            (unsigned long long)SUM(m, flag_evaluations));
    header(out, "ensign_ratelimit_rejections_total", "counter",
           "Requests refused with 429, by limit.");
    for (int l = 0; l < METRICS_LIMIT_COUNT; l++)
        fprintf(out, "ensign_ratelimit_rejections_total{limit=\"%s\"} %llu\n", limit_names[l],
                (unsigned long long)SUM(m, ratelimited[l]));
    header(out, "ensign_database_errors_total", "counter",
           "Failed database connections and statements that failed on the server's side.");
    fprintf(out, "ensign_database_errors_total %llu\n",
            (unsigned long long)SUM(m, database_errors));
}

static void render_node(FILE *out, const struct metrics_area *m, const struct metrics_node *node)
{
    uint64_t built = atomic_load_explicit(&m->snapshot_built_unix_ms, memory_order_relaxed);
    uint64_t build_us = atomic_load_explicit(&m->snapshot_build_us, memory_order_relaxed);
    header(out, "ensign_snapshot_generation", "gauge",
           "Configuration generation of the snapshot being served (0: none yet).");
    fprintf(out, "ensign_snapshot_generation %llu\n",
            (unsigned long long)node->snapshot_generation);
    header(out, "ensign_snapshot_age_seconds", "gauge",
           "Seconds since the served snapshot was written (-1: none yet).");
    if (built == 0 || node->now_unix_ms < built)
        fprintf(out, "ensign_snapshot_age_seconds %s\n", built == 0 ? "-1" : "0");
    else
        fprintf(out, "ensign_snapshot_age_seconds %.3f\n",
                (double)(node->now_unix_ms - built) / 1e3);
    header(out, "ensign_snapshot_build_seconds", "gauge",
           "How long the last snapshot build took (read, write, publish).");
    fprintf(out, "ensign_snapshot_build_seconds %.6f\n", (double)build_us / 1e6);
    header(out, "ensign_snapshot_builds_total", "counter", "Snapshot files written.");
    fprintf(out, "ensign_snapshot_builds_total %llu\n",
            (unsigned long long)atomic_load_explicit(&m->snapshot_builds, memory_order_relaxed));
    header(out, "ensign_health_check_failing", "gauge",
           "1 while the check makes GET /v1/healthz answer 503 degraded, else 0.");
    for (int c = 0; c < HEALTH_CHECKS; c++)
        fprintf(out, "ensign_health_check_failing{check=\"%s\"} %d\n",
                health_check_name((enum health_check)c), node->health_failing[c] ? 1 : 0);
    header(out, "ensign_worker_restarts_total", "counter",
           "Child processes restarted by the master after they died.");
    fprintf(out, "ensign_worker_restarts_total %llu\n", (unsigned long long)node->worker_restarts);
}

char *metrics_render(const struct metrics_area *area, const struct metrics_node *node)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (out == NULL)
        return NULL;
    render_requests(out, area);
    render_work(out, area);
    render_node(out, area, node);
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
