/*
 * test_metrics.c - unit tests of the /metrics counters (src/http/metrics.c)
 * and of the logfmt value quoting of the logger (src/base/log.c).
 *
 * The counters live in a heap copy of the shared-memory area here; the
 * tests count into several blocks and check that the rendered Prometheus
 * text carries the sums. Run by check_main.c through suite_metrics().
 */
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "http/metrics.h"
#include "suites.h"

static struct metrics_area *new_area(struct config *cfg)
{
    config_set_defaults(cfg);
    size_t size = metrics_area_size(cfg);
    struct metrics_area *m = aligned_alloc(64, (size + 63) / 64 * 64);
    ck_assert_ptr_nonnull(m);
    metrics_area_init(m, cfg);
    return m;
}

START_TEST(test_route_classes)
{
    ck_assert_int_eq(metrics_class_of("/ofrep/v1/evaluate/flags/x"), METRICS_CLASS_EVALUATION);
    ck_assert_int_eq(metrics_class_of("//ofrep/v1/evaluate/flags"), METRICS_CLASS_EVALUATION);
    ck_assert_int_eq(metrics_class_of("/ofrepx"), METRICS_CLASS_ACCOUNTS);
    ck_assert_int_eq(metrics_class_of("/v1/orgs/acme/flags"), METRICS_CLASS_MANAGEMENT);
    ck_assert_int_eq(metrics_class_of("/v1/me"), METRICS_CLASS_ACCOUNTS);
    ck_assert_int_eq(metrics_class_of("/v1/session"), METRICS_CLASS_ACCOUNTS);
    ck_assert_int_eq(metrics_class_of("/me/tokens"), METRICS_CLASS_ACCOUNTS);
    ck_assert_int_eq(metrics_class_of("/orgs/acme/members"), METRICS_CLASS_ACCOUNTS);
    ck_assert_int_eq(metrics_class_of("/v1/healthz"), METRICS_CLASS_META);
    ck_assert_int_eq(metrics_class_of("/openapi.json"), METRICS_CLASS_META);
    ck_assert_int_eq(metrics_class_of("/docs/api"), METRICS_CLASS_META);
    ck_assert_int_eq(metrics_class_of("/metrics"), METRICS_CLASS_META);
}
END_TEST

START_TEST(test_worker_blocks_wrap)
{
    struct config cfg;
    struct metrics_area *m = new_area(&cfg);
    ck_assert_ptr_eq(metrics_worker_block(m, 0), &m->blocks[0]);
    ck_assert_ptr_eq(metrics_worker_block(m, 63), &m->blocks[63]);
    ck_assert_ptr_eq(metrics_worker_block(m, 64), &m->blocks[0]);
    ck_assert_ptr_eq(METRICS_BACKGROUND_BLOCK(m), &m->blocks[64]);
    ck_assert_ptr_null(metrics_worker_block(NULL, 0));
    ck_assert_uint_eq((uintptr_t)&m->blocks[1] % 64, 0);
    free(m);
    config_free(&cfg);
}
END_TEST

START_TEST(test_render_sums_every_block)
{
    struct config cfg;
    struct metrics_area *m = new_area(&cfg);
    struct metrics_block *a = metrics_worker_block(m, 0), *b = metrics_worker_block(m, 1);
    metrics_count_request(a, METRICS_CLASS_EVALUATION, 200, 100, 1500);
    metrics_count_request(b, METRICS_CLASS_EVALUATION, 200, 50, 500);
    metrics_count_request(b, METRICS_CLASS_EVALUATION, 429, 10, 0);
    metrics_count_request(a, METRICS_CLASS_MANAGEMENT, 599, 1, 0);
    metrics_count_request(NULL, METRICS_CLASS_META, 200, 1, 0);
    metrics_add(&a->flag_evaluations, 3);
    metrics_add(&b->flag_evaluations, 4);
    metrics_add(&b->ratelimited[METRICS_LIMIT_EVALUATION], 1);
    metrics_add(&METRICS_BACKGROUND_BLOCK(m)->database_errors, 2);
    metrics_add(&a->database_errors, 1);
    atomic_store(&m->snapshot_built_unix_ms, 10000);
    atomic_store(&m->snapshot_build_us, 250000);
    atomic_store(&m->snapshot_builds, 5);
    struct metrics_node node = {
        .snapshot_generation = 42, .worker_restarts = 3, .now_unix_ms = 12500};
    char *text = metrics_render(m, &node);
    ck_assert_ptr_nonnull(text);
    static const char *const expected[] = {
        "# TYPE ensign_http_requests_total counter\n",
        "\nensign_http_requests_total{class=\"evaluation\",code=\"200\"} 2\n",
        "\nensign_http_requests_total{class=\"evaluation\",code=\"429\"} 1\n",
        "\nensign_http_requests_total{class=\"management\",code=\"other\"} 1\n",
        "\nensign_http_requests_total{class=\"meta\",code=\"200\"} 0\n",
        "\nensign_http_response_bytes_total 161\n",
        "\nensign_http_request_duration_seconds_total 0.002000\n",
        "\nensign_flag_evaluations_total 7\n",
        "\nensign_ratelimit_rejections_total{limit=\"evaluation\"} 1\n",
        "\nensign_ratelimit_rejections_total{limit=\"login\"} 0\n",
        "\nensign_database_errors_total 3\n",
        "\nensign_snapshot_generation 42\n",
        "\nensign_snapshot_age_seconds 2.500\n",
        "\nensign_snapshot_build_seconds 0.250000\n",
        "\nensign_snapshot_builds_total 5\n",
        "\nensign_worker_restarts_total 3\n",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        ck_assert_msg(strstr(text, expected[i]) != NULL, "missing %s in:\n%s", expected[i], text);
    ck_assert_ptr_null(strstr(text, "code=\"599\""));
    ck_assert_int_eq(text[strlen(text) - 1], '\n');
    free(text);
    free(m);
    config_free(&cfg);
}
END_TEST

START_TEST(test_snapshot_age_before_any_build)
{
    struct config cfg;
    struct metrics_area *m = new_area(&cfg);
    struct metrics_node node = {.now_unix_ms = 1000};
    char *text = metrics_render(m, &node);
    ck_assert_ptr_nonnull(strstr(text, "\nensign_snapshot_age_seconds -1\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nensign_snapshot_generation 0\n"));
    free(text);
    free(m);
    config_free(&cfg);
}
END_TEST

START_TEST(test_health_check_gauges)
{
    struct config cfg;
    struct metrics_area *m = new_area(&cfg);
    struct metrics_node node = {.now_unix_ms = 1000};
    node.health_failing[HEALTH_DATABASE] = true;
    char *text = metrics_render(m, &node);
    ck_assert_ptr_nonnull(strstr(text, "\nensign_health_check_failing{check=\"database\"} 1\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "\nensign_health_check_failing{check=\"snapshot_write\"} 0\n"));
    ck_assert_ptr_nonnull(
        strstr(text, "\nensign_health_check_failing{check=\"snapshot_stale\"} 0\n"));
    free(text);
    free(m);
    config_free(&cfg);
}
END_TEST

START_TEST(test_log_values)
{
    char out[32];
    ck_assert_str_eq(log_value(out, sizeof out, "/v1/healthz"), "/v1/healthz");
    ck_assert_str_eq(log_value(out, sizeof out, ""), "\"\"");
    ck_assert_str_eq(log_value(out, sizeof out, "worker 2"), "\"worker 2\"");
    ck_assert_str_eq(log_value(out, sizeof out, "a\"b\\c"), "\"a\\\"b\\\\c\"");
    ck_assert_str_eq(log_value(out, sizeof out, "x=1"), "\"x=1\"");
    ck_assert_str_eq(log_value(out, sizeof out, "l1\nl2\t"), "\"l1\\nl2\\x09\"");
    /* Truncated values stay quoted and never split an escape. */
    ck_assert_str_eq(log_value(out, 8, "aaaa bbbb"), "\"aaaa \"");
    ck_assert_str_eq(log_value(out, 6, "\"\"\"\""), "\"\\\"\"");
    ck_assert_str_eq(log_value(out, 2, "abc"), "");
}
END_TEST

Suite *suite_metrics(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("counters");
    tcase_add_test(tc, test_route_classes);
    tcase_add_test(tc, test_worker_blocks_wrap);
    tcase_add_test(tc, test_render_sums_every_block);
    tcase_add_test(tc, test_snapshot_age_before_any_build);
    tcase_add_test(tc, test_health_check_gauges);
    suite_add_tcase(s, tc);
    tc = tcase_create("log");
    tcase_add_test(tc, test_log_values);
    suite_add_tcase(s, tc);
    return s;
}
