/*
 * semver.h - semantic versions: parsing and SemVer 2.0.0 precedence.
 *
 * Owns what the semver_* operators accept (doc/choices.md, "Evaluation"):
 * MAJOR.MINOR.PATCH with optional -prerelease and +build, a leading `v` or
 * `V`, and the short forms `1` and `1.2` (missing parts are 0). Numeric
 * parts may carry leading zeros (compared by value). Build metadata is
 * ignored by precedence. Pure functions, no allocation: a parsed version
 * points into the text it was parsed from.
 *
 * Called by: the evaluator (src/eval/eval.c), the snapshot compiler and
 * the management validator (src/mgmt/validate.c), so a rule value is
 * accepted exactly when it compiles; and the unit tests.
 */
#ifndef ENSIGN_SEMVER_H
#define ENSIGN_SEMVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct semver {
    uint64_t major, minor, patch;
    const char *prerelease; /* NULL when none; not NUL-terminated */
    size_t prerelease_len;
};

/* Parses text (len bytes); false when it is not a version. */
bool semver_parse(const char *text, size_t len, struct semver *out);

/* Precedence: negative, zero or positive as a <, =, > b. */
int semver_compare(const struct semver *a, const struct semver *b);

#endif
