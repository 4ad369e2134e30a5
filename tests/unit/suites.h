/*
 * suites.h - one Check suite per module; check_main.c runs them all.
 */
#ifndef ENSIGN_TEST_SUITES_H
#define ENSIGN_TEST_SUITES_H

#include <check.h>

Suite *suite_config(void);
Suite *suite_router(void);
Suite *suite_envelope(void);
Suite *suite_token(void);
Suite *suite_murmur3(void);
Suite *suite_snapshot(void);
Suite *suite_snapshot_parts(void);
Suite *suite_snapshot_index_files(void);
Suite *suite_snapshot_chunks(void);
Suite *suite_served_chunks(void);
Suite *suite_snapshot_kept_index(void);
Suite *suite_snapshot_packs(void);
Suite *suite_chunk_packs(void);
Suite *suite_env_evaluate(void);
Suite *suite_eval(void);
Suite *suite_openapi(void);
Suite *suite_validate(void);
Suite *suite_jsonschema(void);
Suite *suite_usage(void);
Suite *suite_unknown_flags(void);
Suite *suite_ratelimit(void);
Suite *suite_metrics(void);
Suite *suite_heartbeat(void);
Suite *suite_health(void);
Suite *suite_accept_balance(void);
Suite *suite_json_guard(void);
Suite *suite_json_quick(void);
Suite *suite_log(void);
Suite *suite_access_log(void);
Suite *suite_http_internal(void);
Suite *suite_agent_parse(void);
Suite *suite_agent_sentences(void);
Suite *suite_mcp(void);
Suite *suite_stream_slots(void);
Suite *suite_auditchain(void);
Suite *suite_query_method(void);
Suite *suite_answer(void);
Suite *suite_event_memory(void);
Suite *suite_head_format(void);
Suite *suite_early_write(void);
Suite *suite_pgtime(void);
Suite *suite_work_pool(void);
Suite *suite_login_limit(void);
Suite *suite_intake(void);
Suite *suite_ui_files(void);
Suite *suite_webhook_target(void);
Suite *suite_rowindex(void);

#endif
