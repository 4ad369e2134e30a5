/*
 * eval_spec.h - the evaluator's case-file format, built into a snapshot.
 *
 * Owns the reading of a spec (a JSON object, the format of the files in
 * tests/unit/eval_cases and documented in test_eval.c):
 *   {"entities": [{"key", "attributes": [{"key", "dataType"}]}],
 *    "segments": [{"key", "conditions"}],
 *    "flags":    [{"key", "id"?, "type"?, "enabled"?, "variants"?: [{"key",
 *                  "value"}], "offVariantKey"?, "defaultServe"?, "rules"?:
 *                  [{"id"?, "conditions", "serve"}], "conditions"?}]}
 * into one environment EVAL_SPEC_ENV_KEY of organization EVAL_SPEC_ORG_ID
 * with one SDK key (digest EVAL_SPEC_SDK_DIGEST). Shorthands: a flag
 * without "type" is boolean with variants on/off, off variant "off",
 * default serve "off"; "conditions" on a flag adds rule "r1" serving "on"
 * (listed rules are "r1", "r2"... unless they have an "id"). Conditions and
 * serves are passed to the builder as JSON text, serialized, except that a
 * JSON string is passed as it is (so a test or a fuzzer can hand the
 * builder text that is not JSON). Members of the wrong type read as absent;
 * at most EVAL_SPEC_MAX_ITEMS of each list are read.
 *
 * Invariants: a row the builder refuses is skipped and counted, as the
 * refresher would skip it; the rest is still built.
 *
 * Called by the evaluator's unit tests (test_eval.c) and the fuzz targets
 * (tests/fuzz/fuzz_eval.c, fuzz_ofrep_body.c).
 */
#ifndef ENSIGN_EVAL_SPEC_H
#define ENSIGN_EVAL_SPEC_H

#include <stddef.h>
#include <stdint.h>

struct json_object;

#define EVAL_SPEC_ORG_ID "org-1"
#define EVAL_SPEC_ENV_ID "env-1"
#define EVAL_SPEC_ENV_KEY "production"
#define EVAL_SPEC_SDK_DIGEST "aa00000000000000000000000000000000000000000000000000000000000001"
#define EVAL_SPEC_MAX_ITEMS 64

/* obj[name], or NULL when obj is not an object or has no such member. */
struct json_object *eval_spec_member(struct json_object *obj, const char *name);

/* obj[name] when it is a string, else fallback. */
const char *eval_spec_string(struct json_object *obj, const char *name, const char *fallback);

/* The length of list, 0 when it is not an array. */
size_t eval_spec_length(struct json_object *list);

/* obj as compact JSON text (NULL for NULL), valid until obj is put. */
const char *eval_spec_text(struct json_object *obj);

/*
 * Builds spec into a snapshot file at path (configuration generation
 * `generation`). Returns the number of rows the builder refused (0 when
 * all went in), or -1 with a message in err when the file could not be
 * written.
 */
int eval_spec_write(struct json_object *spec, uint64_t generation, const char *path, char *err,
                    size_t errlen);

#endif
