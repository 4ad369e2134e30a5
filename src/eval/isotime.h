/*
 * isotime.h - ISO 8601 timestamps <-> microseconds since the Unix epoch.
 *
 * Owns what the before/after operators accept (doc/choices.md,
 * "Evaluation"): `YYYY-MM-DD`, optionally followed by `T` (or `t` or a
 * space) and `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fraction` (digits beyond
 * microseconds are dropped), optionally followed by `Z`, `z`, `+HH:MM`,
 * `+HHMM` or `+HH` (or `-`). Without an offset the time is UTC. Years 0000 to 9999.
 * Pure functions, no allocation, no locale, no time zone database.
 *
 * Called by: the evaluator (src/eval/eval.c), the snapshot compiler, the
 * management validator (src/mgmt/validate.c) and the tests.
 */
#ifndef ENSIGN_ISOTIME_H
#define ENSIGN_ISOTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ISOTIME_FORMAT_SIZE 21 /* "YYYY-MM-DDTHH:MM:SSZ" and a NUL */

/* Parses text (len bytes) into *us_out; false when it is not a timestamp. */
bool isotime_parse(const char *text, size_t len, int64_t *us_out);

/* Formats the whole second of `us` as "YYYY-MM-DDTHH:MM:SSZ" (UTC); returns
 * the length (20). Years outside 0000-9999 are clamped. */
size_t isotime_format(int64_t us, char out[ISOTIME_FORMAT_SIZE]);

#endif
