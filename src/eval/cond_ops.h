/*
 * cond_ops.h - the condition operators of the rule language, defined once.
 *
 * Owns, per operator of an attribute condition: its name as the API spells
 * it, the kind of values it takes, whether it takes exactly one value, the
 * positive operator it negates (its "twin"; itself when it is positive),
 * and how it compiles (its enum snapshot_op, the number stored in a
 * snapshot). doc/choices.md ("Evaluation") describes the rule language;
 * this table is the code's one copy of it.
 *
 * COND_OPS lists the rows in snapshot order; the JSON-schema enum of the
 * request schemas (COND_OPS_SCHEMA_ENUM, a string literal so that schemas
 * built at compile time can splice it in) and the cond_ops[] table are
 * both made from it, so a new operator is one row here plus its meaning
 * in the evaluator.
 *
 * Read by: the management validator (src/mgmt/validate.c), the request
 * schemas (src/api/flagschemas.c, segments.c, through validate.h), the
 * snapshot compiler, the evaluator (src/eval/eval.c) and the agent.
 */
#ifndef ENSIGN_COND_OPS_H
#define ENSIGN_COND_OPS_H

#include <stdbool.h>

#include "eval/snapshot.h"

/* What the values of an operator must be. */
enum cond_value_kind {
    COND_VALUES_SCALAR,    /* strings, numbers or booleans (equality) */
    COND_VALUES_STRING,    /* strings */
    COND_VALUES_PATTERN,   /* strings that are PCRE2 patterns */
    COND_VALUES_NUMBER,    /* finite numbers */
    COND_VALUES_SEMVER,    /* strings semver_parse reads (semver.h) */
    COND_VALUES_TIMESTAMP, /* strings isotime_parse reads (isotime.h) */
    COND_VALUES_NONE       /* no values member */
};

/*
 * The rows: X(ID, name, value kind, one value, positive twin ID). ID names
 * SNAPSHOT_OP_<ID>; the order is the snapshot's (snapshot.h) and a unit
 * test holds them equal. FIRST is the first row (so the schema enum text
 * can be made without a trailing comma); pass the same macro twice for
 * any other use.
 */
#define COND_OPS(FIRST, X)                                                                         \
    FIRST(EQ, "eq", SCALAR, true, EQ)                                                              \
    X(NEQ, "neq", SCALAR, true, EQ)                                                                \
    X(IN, "in", SCALAR, false, IN)                                                                 \
    X(NOT_IN, "not_in", SCALAR, false, IN)                                                         \
    X(CONTAINS, "contains", STRING, false, CONTAINS)                                               \
    X(NOT_CONTAINS, "not_contains", STRING, false, CONTAINS)                                       \
    X(STARTS_WITH, "starts_with", STRING, false, STARTS_WITH)                                      \
    X(ENDS_WITH, "ends_with", STRING, false, ENDS_WITH)                                            \
    X(MATCHES, "matches", PATTERN, false, MATCHES)                                                 \
    X(GT, "gt", NUMBER, true, GT)                                                                  \
    X(GTE, "gte", NUMBER, true, GTE)                                                               \
    X(LT, "lt", NUMBER, true, LT)                                                                  \
    X(LTE, "lte", NUMBER, true, LTE)                                                               \
    X(SEMVER_EQ, "semver_eq", SEMVER, true, SEMVER_EQ)                                             \
    X(SEMVER_GT, "semver_gt", SEMVER, true, SEMVER_GT)                                             \
    X(SEMVER_GTE, "semver_gte", SEMVER, true, SEMVER_GTE)                                          \
    X(SEMVER_LT, "semver_lt", SEMVER, true, SEMVER_LT)                                             \
    X(SEMVER_LTE, "semver_lte", SEMVER, true, SEMVER_LTE)                                          \
    X(BEFORE, "before", TIMESTAMP, true, BEFORE)                                                   \
    X(AFTER, "after", TIMESTAMP, true, AFTER)                                                      \
    X(EXISTS, "exists", NONE, false, EXISTS)                                                       \
    X(NOT_EXISTS, "not_exists", NONE, false, EXISTS)

/* The schema text: the JSON array of the operator names, a literal. */
#define COND_OPS_SCHEMA_FIRST_(id, name, kind, one, twin) "[\"" name "\""
#define COND_OPS_SCHEMA_NEXT_(id, name, kind, one, twin) ",\"" name "\""
#define COND_OPS_SCHEMA_ENUM COND_OPS(COND_OPS_SCHEMA_FIRST_, COND_OPS_SCHEMA_NEXT_) "]"

/*
 * The PCRE2 compile options of a `matches` pattern, caseless when its
 * condition says caseInsensitive: the one constant of the management
 * validator (src/mgmt/validate.c) and the snapshot compiler and loader
 * (snapshot_rules.c, snapshot.c), so a pattern valid for one is valid for
 * the other. Expanded where pcre2.h is included.
 */
#define COND_PATTERN_OPTIONS(caseless)                                                             \
    (PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | ((caseless) ? PCRE2_CASELESS : 0u))

struct cond_op {
    const char *name;          /* as in the API */
    enum cond_value_kind kind; /* what its values must be */
    bool single_value;         /* exactly one value (more is a 422) */
    enum snapshot_op positive; /* the operator it negates; itself when positive */
};

/* Indexed by enum snapshot_op. */
extern const struct cond_op cond_ops[SNAPSHOT_OP_COUNT];

/* The operator named name (NUL-terminated), or SNAPSHOT_OP_COUNT. */
enum snapshot_op cond_op_from_name(const char *name);

/* The API name of op; "?" when op is out of range. */
const char *cond_op_name(enum snapshot_op op);

/* Whether op's result on $currentTime is decided by instants alone (the
 * time operators, exists and not_exists): any other operator compares the
 * clock's text, which changes every second. */
bool cond_op_reads_instants(enum snapshot_op op);

#endif
