/*
 * evaluate.c - POST /v1/orgs/{org}/environments/{envKey}/evaluate
 * {context, flags?}: what the OFREP bulk answer gives an SDK of that
 * environment for that context, plus each flag's matched rule (ruleId),
 * for a person at the dashboard (doc/choices.md, "Revision state").
 *
 * The dispatcher authenticates the caller (access token or session
 * cookie; any role, scope flags:read) and finds the organization: one
 * round trip. The evaluation itself reads only the worker's served
 * snapshot (src/eval/env_evaluate.c): no further query, no usage count,
 * no ETag. This file checks flags (an array of at most
 * ENV_EVALUATE_KEYS_MAX strings: 422 otherwise) and hands over.
 *
 * Called by the dispatcher (mgmt_dispatch) from the route table (routes.c).
 */
#include "api/evaluate.h"

#include <stdlib.h>

#include "eval/env_evaluate.h"
#include "http/http.h"
#include "mgmt/mgmt.h"
#include "mgmt/validate.h"

/* clang-format off */

/* The context's content is the evaluator's to check (as OFREP reads it: a
 * targetingKey that is not a string is a 422 at "context"), and the keys of
 * flags the handler's (a non-string item is named at "flags"): the
 * schema's descriptions say so, so the dispatcher enforces only the rest. */
const char evaluate_request_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    "\"context\":{\"type\":[\"object\",\"null\"],\"description\":\"an OFREP evaluation"
    " context; the evaluator checks it as OFREP does (targetingKey a string)\"},"
    "\"flags\":{\"type\":\"array\",\"maxItems\":1000,\"description\":\"flag keys (strings,"
    " checked by the handler)\"}}}";

#define EVALUATE_ITEM                                                                              \
    "{\"oneOf\":[{\"type\":\"object\",\"required\":[\"key\",\"value\",\"reason\",\"metadata\","    \
    "\"ruleId\"],\"properties\":{\"key\":{\"type\":\"string\"},\"value\":{},"                      \
    "\"reason\":{\"type\":\"string\",\"enum\":[\"STATIC\",\"DEFAULT\",\"TARGETING_MATCH\","        \
    "\"SPLIT\",\"DISABLED\"]},\"variant\":{\"type\":\"string\"},"                                  \
    "\"metadata\":{\"type\":\"object\",\"properties\":{\"environment\":{\"type\":\"string\"},"     \
    "\"ruleId\":{\"type\":\"string\"}}},\"ruleId\":{\"type\":[\"string\",\"null\"]}}},"            \
    "{\"type\":\"object\",\"required\":[\"key\",\"errorCode\",\"ruleId\"],\"properties\":{"        \
    "\"key\":{\"type\":\"string\"},\"errorCode\":{\"type\":\"string\"},"                           \
    "\"errorDetails\":{\"type\":\"string\"},\"ruleId\":{\"type\":\"null\"}}}]}"

const char evaluate_response_schema[] =
    "{\"type\":\"object\",\"required\":[\"flags\",\"metadata\"],\"properties\":{"
    "\"flags\":{\"type\":\"array\",\"items\":" EVALUATE_ITEM "},"
    "\"metadata\":{\"type\":\"object\",\"properties\":{\"environment\":{\"type\":\"string\"}}}}}";

/* clang-format on */

/* The flags member as keys borrowed from body (*keys NULL: every flag);
 * false with v's errors. *keys is the caller's to free. */
static bool read_keys(struct validate *v, const struct json_object *body, const char ***keys,
                      size_t *nkeys)
{
    static const char *const fields[] = {"context", "flags", NULL};
    validate_only_fields(v, body, fields);
    *keys = NULL;
    *nkeys = 0;
    struct json_object *flags = NULL;
    if (validate_array(v, body, "flags", 0, ENV_EVALUATE_KEYS_MAX, 0, &flags) != VALIDATE_SET)
        return validate_ok(v);
    size_t n = json_object_array_length(flags);
    *keys = calloc(n + 1, sizeof **keys);
    if (*keys == NULL) {
        validate_error(v, "flags", "too many keys");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(flags, i);
        if (!json_object_is_type(item, json_type_string)) {
            validate_error(v, "flags", "item %zu is not a string", i);
            continue;
        }
        (*keys)[(*nkeys)++] = json_object_get_string(item);
    }
    return validate_ok(v);
}

void evaluate_environment(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct validate v;
    validate_init(&v);
    const char **keys = NULL;
    size_t nkeys = 0;
    if (read_keys(&v, ctx->body, &keys, &nkeys))
        env_evaluate_answer(r, ctx->org_id, mgmt_param(r, "envKey"), keys, nkeys);
    else
        mgmt_send_invalid(r, &v);
    free(keys);
    validate_free(&v);
    json_object_put(ctx->body);
}
