/*
 * fuzz_eval.c - libFuzzer target: condition compilation (the snapshot
 * writer) and evaluation.
 *
 * The input is an evaluator case file (the format of tests/unit/test_eval.c
 * and the files of tests/unit/eval_cases, which contrib/fuzz adds to the seeds):
 * entities, segments and flags whose conditions, serves and variant values
 * are whatever the fuzzer wrote, and "cases" whose "context" and "now" are
 * the evaluation contexts. The target builds the snapshot (rows the builder
 * refuses are skipped), which must then open, and evaluates every flag for
 * every context (and for none), checking eval.h's contract
 * (fuzz_evaluate_all). Anything that is not a JSON object is skipped.
 *
 * With ENSIGN_FUZZ_KEEP_SNAPSHOT=FILE in the environment the snapshot is
 * written to FILE and kept: that is how the seeds of fuzz_snapshot are made
 * (tests/fuzz/README in the header of fuzz_snapshot.c).
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/eval.h"
#include "fuzz_common.h"
#include "eval/isotime.h"
#include "http/json_flat.h"
#include "eval/snapshot.h"

#define MAX_CASES 16
#define DEFAULT_NOW_US INT64_C(1717243200000000) /* 2024-06-01T12:00:00Z */

static struct eval_scratch *scratch;
static char snapshot_path[512];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    scratch = eval_scratch_new();
    if (scratch == NULL)
        abort();
    const char *keep = getenv("ENSIGN_FUZZ_KEEP_SNAPSHOT");
    if (keep != NULL && *keep != '\0')
        snprintf(snapshot_path, sizeof snapshot_path, "%s", keep);
    else
        snprintf(snapshot_path, sizeof snapshot_path, "%s/eval.snapshot", fuzz_dir());
    return 0;
}

static int64_t case_now(json_object *c)
{
    json_object *now = NULL;
    int64_t us;
    if (json_object_is_type(c, json_type_object) && json_object_object_get_ex(c, "now", &now) &&
        json_object_is_type(now, json_type_string) &&
        isotime_parse(json_object_get_string(now), (size_t)json_object_get_string_len(now), &us))
        return us;
    return DEFAULT_NOW_US;
}

static void evaluate_case(const struct snapshot *s, json_object *c)
{
    json_object *context = NULL;
    if (json_object_is_type(c, json_type_object))
        json_object_object_get_ex(c, "context", &context);
    static struct json_flat_doc doc; /* reused: emptied by each conversion */
    const struct json_flat *flat = json_flat_from_json(&doc, context);
    if (flat == NULL)
        abort();
    struct eval_context ctx;
    const char *detail;
    if (eval_context_init(&ctx, flat, case_now(c), &detail) != EVAL_CONTEXT_OK) {
        if (detail == NULL)
            abort(); /* an invalid context always says why */
        return;
    }
    fuzz_evaluate_all(s, &ctx, scratch, true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *spec = fuzz_json(data, size);
    if (!json_object_is_type(spec, json_type_object)) {
        json_object_put(spec);
        return 0;
    }
    if (fuzz_build_snapshot(spec, 1, snapshot_path) != 0) {
        fprintf(stderr, "fuzz_eval: cannot write %s\n", snapshot_path);
        abort();
    }
    struct snapshot s;
    char err[256];
    if (snapshot_open(snapshot_path, &s, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_eval: the writer's snapshot does not open: %s\n", err);
        abort();
    }
    evaluate_case(&s, NULL);
    json_object *cases = NULL;
    json_object_object_get_ex(spec, "cases", &cases);
    if (json_object_is_type(cases, json_type_array)) {
        size_t n = json_object_array_length(cases);
        for (size_t i = 0; i < n && i < MAX_CASES; i++)
            evaluate_case(&s, json_object_array_get_idx(cases, i));
    }
    snapshot_close(&s);
    json_object_put(spec);
    return 0;
}
