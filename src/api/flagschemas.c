/*
 * flagschemas.c - JSON Schemas of the flag management routes (see
 * flagschemas.h): flags, variants, environment configuration, rules.
 *
 * Invariant: the schemas say what the handlers enforce (validate.c and the
 * limits the handlers check), nothing more; shared
 * pieces are macros so a record has one schema. Used by routes.c only.
 */
#include "api/flagschemas.h"

#include "eval/cond_ops.h"

/* clang-format off */

#define S_STRING "{\"type\":\"string\"}"
#define S_NULLABLE_STRING "{\"type\":[\"string\",\"null\"]}"
#define S_TIME "{\"type\":\"string\",\"format\":\"date-time\"}"
#define S_NULLABLE_TIME "{\"type\":[\"string\",\"null\"],\"format\":\"date-time\"}"
#define S_KEY "{\"type\":\"string\",\"minLength\":1,\"maxLength\":63," \
              "\"pattern\":\"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$\"}"
#define S_TAGS "{\"type\":\"array\",\"maxItems\":50," \
               "\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":50}}"
#define S_DESCRIPTION(max) "{\"type\":[\"string\",\"null\"],\"maxLength\":" #max "}"

#define S_SERVE                                                                                    \
    "{\"oneOf\":["                                                                                 \
    "{\"type\":\"object\",\"required\":[\"variant\"],\"additionalProperties\":false,"              \
    "\"properties\":{\"variant\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63}}},"         \
    "{\"type\":\"object\",\"required\":[\"rollout\"],\"additionalProperties\":false,"              \
    "\"properties\":{\"rollout\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":64,"               \
    "\"items\":{\"type\":\"object\",\"required\":[\"variant\",\"weight\"],"                        \
    "\"additionalProperties\":false,\"properties\":{"                                              \
    "\"variant\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63},"                           \
    "\"weight\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000000}}}},"                       \
    "\"bucketBy\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200}}}]}"

#define S_OPERATORS COND_OPS_SCHEMA_ENUM /* src/eval/cond_ops.h */

#define S_CONDITION                                                                                \
    "{\"oneOf\":["                                                                                 \
    "{\"type\":\"object\",\"required\":[\"attribute\",\"operator\"],"                              \
    "\"additionalProperties\":false,\"properties\":{"                                              \
    "\"attribute\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200},"                        \
    "\"operator\":{\"enum\":" S_OPERATORS "},"                                                      \
    "\"values\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":100,"                               \
    "\"items\":{\"type\":[\"string\",\"number\",\"boolean\"]}},"                                   \
    "\"negate\":{\"type\":\"boolean\"},\"caseInsensitive\":{\"type\":\"boolean\"}}},"               \
    "{\"type\":\"object\",\"required\":[\"segment\"],\"additionalProperties\":false,"              \
    "\"properties\":{\"segment\":" S_KEY ",\"negate\":{\"type\":\"boolean\"}}}]}"

#define S_CONDITIONS "{\"type\":\"array\",\"maxItems\":50,\"items\":" S_CONDITION "}"

#define S_PRIORITY "{\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991}"

#define FLAG_PROPERTIES                                                                            \
    "\"id\":" S_STRING ",\"key\":" S_KEY ",\"name\":" S_STRING ","                                 \
    "\"description\":" S_NULLABLE_STRING ","                                                       \
    "\"type\":{\"enum\":[\"boolean\",\"string\",\"number\",\"json\"]},"                           \
    "\"permanent\":{\"type\":\"boolean\"},\"tags\":" S_TAGS ","                                    \
    "\"maintainerUserId\":" S_NULLABLE_STRING ",\"createdByUserId\":" S_NULLABLE_STRING ","        \
    "\"archivedAt\":" S_NULLABLE_TIME ",\"createdAt\":" S_TIME ",\"updatedAt\":" S_TIME

#define FLAG_REQUIRED                                                                              \
    "\"id\",\"key\",\"name\",\"description\",\"type\",\"permanent\",\"tags\","                    \
    "\"maintainerUserId\",\"createdByUserId\",\"archivedAt\",\"createdAt\",\"updatedAt\""

#define NAMES_PROPERTIES                                                                           \
    "\"createdByName\":" S_NULLABLE_STRING ",\"maintainerName\":" S_NULLABLE_STRING

#define S_FLAG_DETAIL                                                                              \
    "{\"type\":\"object\",\"required\":[" FLAG_REQUIRED ",\"createdByName\",\"maintainerName\"],"  \
    "\"properties\":{" FLAG_PROPERTIES "," NAMES_PROPERTIES "}}"

#define S_STALE                                                                                    \
    "{\"type\":[\"object\",\"null\"],\"required\":[\"reason\",\"since\"],"                    \
    "\"description\":\"Why and since when the flag is stale (stale_after_days); null when it "    \
    "is not. A permanent flag never is.\","                                                         \
    "\"properties\":{\"reason\":{\"enum\":[\"never_evaluated\",\"unused\","                     \
    "\"fully_rolled_out\"]},\"since\":" S_TIME "}}"

/* The detail form of GET /flags/{key}: the flag's detail form and stale. */
#define S_FLAG_DETAIL_STALE                                                                        \
    "{\"type\":\"object\",\"required\":[" FLAG_REQUIRED ",\"createdByName\",\"maintainerName\","\
    "\"stale\"],\"properties\":{" FLAG_PROPERTIES "," NAMES_PROPERTIES ",\"stale\":" S_STALE "}}"

#define S_USAGE_SUMMARY                                                                            \
    "{\"type\":[\"object\",\"null\"],\"properties\":{\"total\":{\"type\":\"number\"},"             \
    "\"checksPerHour\":{\"type\":\"number\"},\"lastSeenAt\":" S_NULLABLE_TIME ","                  \
    "\"series\":{\"type\":\"array\",\"items\":{\"type\":\"number\"}}}}"

#define S_FLAG_LIST_ITEM                                                                           \
    "{\"type\":\"object\",\"required\":[" FLAG_REQUIRED ",\"value\",\"createdByName\","           \
    "\"maintainerName\",\"usage\",\"stale\",\"enabledIn\"],"                                                   \
    "\"properties\":{" FLAG_PROPERTIES "," NAMES_PROPERTIES ",\"value\":{},"                       \
    "\"usage\":" S_USAGE_SUMMARY ",\"stale\":" S_STALE ",\"enabledIn\":{\"type\":\"array\",\"items\":" S_KEY "}}}"

#define S_VARIANT                                                                                  \
    "{\"type\":\"object\",\"required\":[\"id\",\"key\",\"value\",\"label\",\"sortOrder\"],"        \
    "\"properties\":{\"id\":" S_STRING ",\"key\":" S_KEY ",\"value\":{},"                           \
    "\"label\":" S_NULLABLE_STRING ",\"sortOrder\":{\"type\":\"integer\"}}}"

#define S_VARIANT_INPUT                                                                            \
    "\"value\":{\"not\":{\"type\":\"null\"}},\"label\":" S_DESCRIPTION(120)

#define S_RULE                                                                                     \
    "{\"type\":\"object\",\"required\":[\"id\",\"priority\",\"description\",\"conditions\","       \
    "\"serve\"],\"properties\":{\"id\":" S_STRING ",\"priority\":" S_PRIORITY ","                  \
    "\"description\":" S_NULLABLE_STRING ",\"conditions\":" S_CONDITIONS ","                       \
    "\"serve\":" S_SERVE ",\"createdAt\":" S_TIME ",\"updatedAt\":" S_TIME "}}"

#define S_REVISION                                                                                 \
    "{\"type\":\"object\",\"required\":[\"id\",\"action\",\"summary\",\"changes\",\"userName\","   \
    "\"createdAt\"],\"properties\":{\"id\":" S_STRING ",\"action\":" S_STRING ","                  \
    "\"summary\":" S_NULLABLE_STRING ",\"changes\":{\"type\":\"array\",\"items\":" S_STRING "},"   \
    "\"userName\":" S_NULLABLE_STRING ",\"createdAt\":" S_TIME "}}"

#define S_FLAG_ENVIRONMENT                                                                         \
    "{\"type\":\"object\",\"required\":[\"key\",\"name\",\"enabled\",\"defaultVariantKey\","       \
    "\"defaultServe\",\"offVariantKey\",\"rules\"],\"properties\":{\"key\":" S_KEY ","             \
    "\"name\":" S_STRING ",\"enabled\":{\"type\":\"boolean\"},"                                    \
    "\"defaultVariantKey\":" S_NULLABLE_STRING ",\"defaultServe\":{\"type\":\"object\"},"         \
    "\"offVariantKey\":" S_NULLABLE_STRING ","                                                     \
    "\"rules\":{\"type\":\"array\",\"items\":" S_RULE "}}}"

/* What the handlers check beyond a schema (they need the flag, or cross fields). */
#define D_RULE                                                                                     \
    "\"description\":\"The handler checks what needs the flag: the variants a serve names"        \
    " exist, a rollout's weights are not all zero, the segments and entity attributes the"       \
    " conditions name exist, each condition's values suit its operator.\","
#define D_REORDER "\"description\":\"The handler checks that every rule is listed exactly once.\","
#define D_VARIANTS                                                                                 \
    "\"description\":\"The handler checks each value against the flag's type (boolean flags"      \
    " have the fixed variants on and off).\","

#define WRAP(name, schema)                                                                         \
    "{\"type\":\"object\",\"required\":[\"" name "\"],\"properties\":{\"" name "\":" schema "}}"

const char flagschema_flag_create[] =
    "{\"type\":\"object\","
    D_VARIANTS "\"required\":[\"slug\"],\"additionalProperties\":false,"
    "\"properties\":{\"slug\":" S_KEY ",\"description\":" S_DESCRIPTION(2000) ","
    "\"type\":{\"enum\":[\"boolean\",\"string\",\"number\",\"json\"],\"default\":\"boolean\"},"
    "\"variants\":{\"type\":\"array\",\"maxItems\":64,\"items\":{\"type\":\"object\","
    "\"required\":[\"value\"],\"additionalProperties\":false,\"properties\":{" S_VARIANT_INPUT "}}},"
    "\"tags\":" S_TAGS "}}";

const char flagschema_flag_update[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200},"
    "\"description\":" S_DESCRIPTION(2000) ","
    "\"maintainerUserId\":{\"type\":[\"string\",\"null\"],\"format\":\"uuid\"},"
    "\"permanent\":{\"type\":\"boolean\"},\"tags\":" S_TAGS "}}";

const char flagschema_flag_answer[] = WRAP("flag", S_FLAG_DETAIL);

const char flagschema_flag_list[] =
    WRAP("flags", "{\"type\":\"array\",\"items\":" S_FLAG_LIST_ITEM "}");

const char flagschema_flag_detail[] =
    "{\"type\":\"object\",\"required\":[\"flag\",\"revisions\",\"variants\",\"environments\"],"
    "\"properties\":{\"flag\":" S_FLAG_DETAIL_STALE ","
    "\"revisions\":{\"type\":\"array\",\"items\":" S_REVISION "},"
    "\"variants\":{\"type\":\"array\",\"items\":" S_VARIANT "},"
    "\"environments\":{\"type\":\"array\",\"items\":" S_FLAG_ENVIRONMENT "}}}";

const char flagschema_revision_list[] =
    WRAP("revisions", "{\"type\":\"array\",\"items\":" S_REVISION "}");

const char flagschema_flag_usage[] = WRAP(
    "usage",
    "{\"type\":\"object\",\"required\":[\"total\",\"lastSeenAt\",\"environments\"],"
    "\"properties\":{\"total\":{\"type\":\"number\"},\"lastSeenAt\":" S_NULLABLE_TIME ","
    "\"environments\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"key\",\"name\",\"total\",\"lastSeenAt\",\"variants\",\"series\"],"
    "\"properties\":{\"key\":" S_KEY ",\"name\":" S_STRING ",\"total\":{\"type\":\"number\"},"
    "\"lastSeenAt\":" S_NULLABLE_TIME ","
    "\"variants\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"key\":" S_STRING ",\"count\":{\"type\":\"number\"}}}},"
    "\"series\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"day\":{\"type\":\"string\",\"format\":\"date\"},\"count\":{\"type\":\"number\"}}}}}}}}}");

const char flagschema_ack[] =
    "{\"type\":\"object\",\"required\":[\"ok\"],\"properties\":{\"ok\":{\"type\":\"boolean\"}}}";

const char flagschema_variant_create[] =
    "{\"type\":\"object\","
    D_VARIANTS "\"required\":[\"value\"],\"additionalProperties\":false,"
    "\"properties\":{" S_VARIANT_INPUT "}}";

const char flagschema_variant_update[] =
    "{\"type\":\"object\","
    D_VARIANTS "\"additionalProperties\":false,\"properties\":{" S_VARIANT_INPUT "}}";

const char flagschema_variant_answer[] = WRAP("variant", S_VARIANT);

const char flagschema_environment_list[] = WRAP(
    "environments",
    "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"id\",\"key\",\"name\","
    "\"createdAt\"],\"properties\":{\"id\":" S_STRING ",\"key\":" S_KEY ",\"name\":" S_STRING ","
    "\"createdAt\":" S_TIME "}}}");

#define S_CONFIGURE                                                                                \
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"                     \
    "\"enabled\":{\"type\":\"boolean\"},"                                                        \
    "\"defaultVariantKey\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63},"             \
    "\"offVariantKey\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63},"                 \
    "\"defaultServe\":" S_SERVE "},\"description\":\"The handler checks that the variants named"   \
    " exist, that defaultVariantKey and defaultServe are not both given, and that a rollout's"   \
    " weights are not all zero.\"}"

const char flagschema_configure[] = S_CONFIGURE;

/* A scheduled change (src/api/schedules.c): changes is the configure body. */
#define S_SCHEDULE                                                                                 \
    "{\"type\":\"object\",\"required\":[\"id\",\"flag\",\"at\",\"environment\",\"changes\","    \
    "\"status\",\"createdByUserId\",\"createdAt\",\"appliedAt\",\"error\"],"                       \
    "\"properties\":{\"id\":" S_STRING ",\"flag\":" S_KEY ",\"at\":" S_TIME ","                   \
    "\"environment\":" S_KEY ",\"changes\":" S_CONFIGURE ","                                       \
    "\"status\":{\"enum\":[\"pending\",\"applied\",\"failed\",\"cancelled\"]},"                   \
    "\"createdByUserId\":" S_NULLABLE_STRING ",\"createdAt\":" S_TIME ","                         \
    "\"appliedAt\":" S_NULLABLE_TIME ",\"error\":" S_NULLABLE_STRING "}}"

const char flagschema_schedule_create[] =
    "{\"type\":\"object\",\"required\":[\"at\",\"environment\",\"changes\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"at\":{\"type\":\"string\",\"format\":\"date-time\","
    "\"description\":\"at least 10 s and at most 366 days ahead\"},"
    "\"environment\":" S_KEY ",\"changes\":" S_CONFIGURE "}}";

const char flagschema_schedule_answer[] = WRAP("schedule", S_SCHEDULE);

const char flagschema_schedule_list[] =
    WRAP("schedules", "{\"type\":\"array\",\"items\":" S_SCHEDULE "}");

const char flagschema_rule_create[] =
    "{\"type\":\"object\","
    D_RULE "\"required\":[\"serve\"],\"additionalProperties\":false,"
    "\"properties\":{\"serve\":" S_SERVE ",\"description\":" S_DESCRIPTION(500) ","
    "\"conditions\":" S_CONDITIONS ",\"priority\":" S_PRIORITY "}}";

const char flagschema_rule_update[] =
    "{\"type\":\"object\","
    D_RULE "\"additionalProperties\":false,"
    "\"properties\":{\"serve\":" S_SERVE ",\"description\":" S_DESCRIPTION(500) ","
    "\"conditions\":" S_CONDITIONS ",\"priority\":" S_PRIORITY "}}";

const char flagschema_rule_replace[] =
    "{\"type\":\"object\","
    D_RULE "\"required\":[\"rules\"],\"additionalProperties\":false,"
    "\"properties\":{\"rules\":{\"type\":\"array\",\"maxItems\":200,\"items\":{"
    "\"type\":\"object\",\"required\":[\"serve\"],\"additionalProperties\":false,"
    "\"properties\":{\"serve\":" S_SERVE ",\"description\":" S_DESCRIPTION(500) ","
    "\"conditions\":" S_CONDITIONS "}}}}}";

const char flagschema_rule_reorder[] =
    "{\"type\":\"object\","
    D_REORDER "\"required\":[\"ruleIds\"],\"additionalProperties\":false,"
    "\"properties\":{\"ruleIds\":{\"type\":\"array\",\"maxItems\":200,"
    "\"items\":{\"type\":\"string\",\"format\":\"uuid\"}}}}";

const char flagschema_rule_answer[] = WRAP("rule", S_RULE);

const char flagschema_rule_list[] = WRAP("rules", "{\"type\":\"array\",\"items\":" S_RULE "}");

/* A revision's state (sql/0013): the targeting after the change; null for
 * revisions written before states were recorded. */
#define S_STATE                                                                                    \
    "{\"type\":[\"object\",\"null\"],\"required\":[\"name\",\"description\",\"tags\","            \
    "\"environments\"],\"properties\":{\"name\":" S_STRING ",\"description\":" S_NULLABLE_STRING  \
    ",\"tags\":" S_TAGS ",\"environments\":{\"type\":\"array\",\"items\":{\"type\":\"object\","    \
    "\"required\":[\"key\",\"enabled\",\"defaultServe\",\"offVariantKey\",\"rules\"],"             \
    "\"properties\":{\"key\":" S_KEY ",\"enabled\":{\"type\":\"boolean\"},"                          \
    "\"defaultServe\":{\"type\":\"object\"},\"offVariantKey\":" S_NULLABLE_STRING ","                \
    "\"rules\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"id\",\"priority\","   \
    "\"description\",\"conditions\",\"serve\"],\"properties\":{\"id\":" S_STRING ","               \
    "\"priority\":" S_PRIORITY ",\"description\":" S_NULLABLE_STRING ","                            \
    "\"conditions\":" S_CONDITIONS ",\"serve\":" S_SERVE "}}}}}}}}"

#define S_REVISION_DETAIL                                                                          \
    "{\"allOf\":[" S_REVISION ",{\"type\":\"object\",\"required\":[\"state\"],"                      \
    "\"properties\":{\"state\":" S_STATE "}}]}"

const char flagschema_revision_answer[] = WRAP("revision", S_REVISION_DETAIL);

const char flagschema_copy[] =
    "{\"type\":\"object\",\"required\":[\"from\"],\"additionalProperties\":false,"
    "\"properties\":{\"from\":" S_KEY "}}";

const char flagschema_environment_answer[] = WRAP("environment", S_FLAG_ENVIRONMENT);

/* clang-format on */
