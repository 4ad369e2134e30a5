/*
 * fuzz_ofrep_body.c - libFuzzer target: an OFREP evaluation request body.
 *
 * The input is the body of POST /ofrep/v1/evaluate/flags[/{key}], read by
 * ofrep_read_body exactly as the worker reads it (NUL-terminated, with its
 * length, parsed by one tokener reused between requests). A body that is
 * not a JSON object must be PARSE_ERROR, a bad context INVALID_CONTEXT,
 * both with a detail; an accepted body must keep json_guard.h's promises
 * (fuzz_check_guarded: clean UTF-8 without NUL, finite numbers) and hold
 * at most 1024 array elements in all, and its
 * context is then evaluated against every flag of a fixed snapshot whose
 * rules use every operator, entity data types, segments, rollouts with
 * bucketBy and $currentTime, and the bulk ETag is computed over it
 * (fuzz_evaluate_all checks the results).
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "fuzz_common.h"
#include "http/json_quick.h"
#include "http/http.h"
#include "eval/ofrep.h"
#include "eval/snapshot.h"

#define NOW_US INT64_C(1717243200000000) /* 2024-06-01T12:00:00Z */

/* Flags reading the context every way the evaluator can. */
static const char spec_text[] =
    "{\"entities\":[{\"key\":\"user\",\"attributes\":[{\"key\":\"age\",\"dataType\":\"number\"},"
    "{\"key\":\"beta\",\"dataType\":\"boolean\"},{\"key\":\"plan\",\"dataType\":\"string\"}]}],"
    "\"segments\":[{\"key\":\"nordic\",\"conditions\":[{\"attribute\":\"country\","
    "\"operator\":\"in\",\"values\":[\"NO\",\"SE\",\"DK\",\"FI\",\"IS\"]}]}],"
    "\"flags\":["
    "{\"key\":\"strings\",\"rules\":["
    "{\"conditions\":[{\"attribute\":\"email\",\"operator\":\"ends_with\",\"values\":[\"@x.io\"],"
    "\"caseInsensitive\":true}],\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"attribute\":\"name\",\"operator\":\"starts_with\",\"values\":[\"a\"]},"
    "{\"attribute\":\"name\",\"operator\":\"contains\",\"values\":[\"b\"],\"negate\":true}],"
    "\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"attribute\":\"name\",\"operator\":\"matches\","
    "\"values\":[\"^(a+)+$\",\"[[:alpha:]]{3,}\\\\d\"]}],\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"attribute\":\"tags\",\"operator\":\"not_contains\",\"values\":[\"x\"]}],"
    "\"serve\":{\"variant\":\"on\"}}]},"
    "{\"key\":\"numbers\",\"rules\":["
    "{\"conditions\":[{\"attribute\":\"user.age\",\"operator\":\"gte\",\"values\":[18]},"
    "{\"attribute\":\"user.age\",\"operator\":\"lt\",\"values\":[65.5]}],"
    "\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"attribute\":\"score\",\"operator\":\"gt\",\"values\":[1e300]},"
    "{\"attribute\":\"score\",\"operator\":\"lte\",\"values\":[-9007199254740993]}],"
    "\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"attribute\":\"user.beta\",\"operator\":\"eq\",\"values\":[true]},"
    "{\"attribute\":\"user.plan\",\"operator\":\"neq\",\"values\":[\"free\",42]}],"
    "\"serve\":{\"variant\":\"on\"}}]},"
    "{\"key\":\"versions\",\"rules\":["
    "{\"conditions\":[{\"attribute\":\"version\",\"operator\":\"semver_gte\",\"values\":[\"1.2\"]},"
    "{\"attribute\":\"version\",\"operator\":\"semver_lt\",\"values\":[\"2.0.0-rc.1\"]}],"
    "\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"attribute\":\"app.version\",\"operator\":\"semver_eq\","
    "\"values\":[\"v3.0.0+build\"]}],\"serve\":{\"variant\":\"on\"}}]},"
    "{\"key\":\"times\",\"rules\":["
    "{\"conditions\":[{\"attribute\":\"$currentTime\",\"operator\":\"after\","
    "\"values\":[\"2024-01-01T00:00:00Z\"]},{\"attribute\":\"signup\",\"operator\":\"before\","
    "\"values\":[\"2023-06-01\"]}],\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"attribute\":\"$currentTime\",\"operator\":\"starts_with\","
    "\"values\":[\"2024\"]}],\"serve\":{\"variant\":\"on\"}}]},"
    "{\"key\":\"presence\",\"rules\":["
    "{\"conditions\":[{\"attribute\":\"a.b.c\",\"operator\":\"exists\",\"values\":[]},"
    "{\"attribute\":\"targetingKey\",\"operator\":\"not_exists\",\"values\":[]}],"
    "\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"segment\":\"nordic\"}],\"serve\":{\"variant\":\"on\"}},"
    "{\"conditions\":[{\"segment\":\"nordic\",\"negate\":true},{\"attribute\":\"country\","
    "\"operator\":\"not_in\",\"values\":[\"US\"]}],\"serve\":{\"variant\":\"off\"}}]},"
    "{\"key\":\"split\",\"type\":\"string\",\"variants\":[{\"key\":\"a\",\"value\":\"A\"},"
    "{\"key\":\"b\",\"value\":\"B\"},{\"key\":\"c\",\"value\":\"C\"}],\"offVariantKey\":\"a\","
    "\"defaultServe\":{\"rollout\":[{\"variant\":\"a\",\"weight\":1},{\"variant\":\"b\","
    "\"weight\":2},{\"variant\":\"c\",\"weight\":0}]},"
    "\"rules\":[{\"conditions\":[{\"attribute\":\"country\",\"operator\":\"eq\","
    "\"values\":[\"NL\"]}],\"serve\":{\"rollout\":[{\"variant\":\"b\",\"weight\":50},"
    "{\"variant\":\"c\",\"weight\":50}],\"bucketBy\":\"user.id\"}}]},"
    "{\"key\":\"config\",\"type\":\"json\",\"variants\":[{\"key\":\"small\","
    "\"value\":{\"a\":[1,2]}},{\"key\":\"big\",\"value\":[{\"x\":\"y\"}]}],"
    "\"offVariantKey\":\"big\",\"defaultServe\":{\"variant\":\"small\"}},"
    "{\"key\":\"disabled\",\"enabled\":false,\"conditions\":[]}]}";

static struct snapshot snap;
static struct eval_scratch *scratch;
static struct json_tokener *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    json_object *spec = json_tokener_parse(spec_text);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/ofrep.snapshot", fuzz_dir());
    if (spec == NULL || fuzz_build_snapshot(spec, 1, path) != 0 ||
        snapshot_open(path, &snap, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_ofrep_body: cannot build the fixed snapshot\n");
        abort();
    }
    json_object_put(spec);
    scratch = eval_scratch_new();
    tok = json_tokener_new_ex(HTTP_JSON_MAX_DEPTH);
    if (scratch == NULL || tok == NULL)
        abort();
    return 0;
}

static struct json_flat_doc doc; /* reused: emptied by each read */

/* The array elements of an accepted body, all arrays together: at most
 * the bound ofrep.c gives json_quick and json_guard (1024). */
static void check_elements_bounded(const struct json_flat_doc *d)
{
    size_t elements = 0;
    for (size_t i = 0; i < d->used; i++)
        if (d->nodes[i].type == JSON_FLAT_ARRAY)
            elements += d->nodes[i].len;
    if (elements > 1024)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct json_object *body;
    struct eval_context ctx;
    const char *detail;
    enum ofrep_body_status st =
        ofrep_read_body(tok, &doc, size > 0 ? text : NULL, size, NOW_US, &body, &ctx, &detail);
    if (st == OFREP_BODY_OK) {
        if (doc.used > 0) /* the body's root, however it was parsed */
            fuzz_check_guarded(&doc.nodes[0]);
        check_elements_bounded(&doc);
        fuzz_evaluate_all(&snap, &ctx, scratch, true);
    } else if (detail == NULL || *detail == '\0')
        abort(); /* every rejection says why */
    json_object_put(body);
    free(text);
    return 0;
}
