/*
 * check_main.c - the unit-test runner: every module's suite in one binary,
 * listed in TESTS. Suites link the core library, never libpq.
 */
#include <stdlib.h>

#include "suites.h"

int main(void)
{
    SRunner *runner = srunner_create(suite_config());
    srunner_add_suite(runner, suite_router());
    srunner_add_suite(runner, suite_envelope());
    srunner_add_suite(runner, suite_token());
    srunner_add_suite(runner, suite_murmur3());
    srunner_add_suite(runner, suite_snapshot());
    srunner_add_suite(runner, suite_snapshot_parts());
    srunner_add_suite(runner, suite_snapshot_index_files());
    srunner_add_suite(runner, suite_snapshot_chunks());
    srunner_add_suite(runner, suite_served_chunks());
    srunner_add_suite(runner, suite_snapshot_kept_index());
    srunner_add_suite(runner, suite_snapshot_packs());
    srunner_add_suite(runner, suite_chunk_packs());
    srunner_add_suite(runner, suite_env_evaluate());
    srunner_add_suite(runner, suite_eval());
    srunner_add_suite(runner, suite_openapi());
    srunner_add_suite(runner, suite_validate());
    srunner_add_suite(runner, suite_jsonschema());
    srunner_add_suite(runner, suite_usage());
    srunner_add_suite(runner, suite_unknown_flags());
    srunner_add_suite(runner, suite_ratelimit());
    srunner_add_suite(runner, suite_metrics());
    srunner_add_suite(runner, suite_heartbeat());
    srunner_add_suite(runner, suite_health());
    srunner_add_suite(runner, suite_accept_balance());
    srunner_add_suite(runner, suite_json_guard());
    srunner_add_suite(runner, suite_json_quick());
    srunner_add_suite(runner, suite_log());
    srunner_add_suite(runner, suite_access_log());
    srunner_add_suite(runner, suite_http_internal());
    srunner_add_suite(runner, suite_agent_parse());
    srunner_add_suite(runner, suite_agent_sentences());
    srunner_add_suite(runner, suite_mcp());
    srunner_add_suite(runner, suite_stream_slots());
    srunner_add_suite(runner, suite_auditchain());
    srunner_add_suite(runner, suite_query_method());
    srunner_add_suite(runner, suite_answer());
    srunner_add_suite(runner, suite_event_memory());
    srunner_add_suite(runner, suite_head_format());
    srunner_add_suite(runner, suite_early_write());
    srunner_add_suite(runner, suite_pgtime());
    srunner_add_suite(runner, suite_work_pool());
    srunner_add_suite(runner, suite_login_limit());
    srunner_add_suite(runner, suite_intake());
    srunner_add_suite(runner, suite_ui_files());
    srunner_add_suite(runner, suite_webhook_target());
    srunner_add_suite(runner, suite_rowindex());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
