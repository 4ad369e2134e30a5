/*
 * json_guard.h - what json-c does not check in a request body.
 *
 * json-c (0.16) accepts, or silently changes, text that Ensign must
 * refuse: bytes that are not UTF-8, unpaired surrogate escapes ("\ud800"),
 * NUL characters (raw or "\u0000", which cut keys and values short; a raw
 * NUL byte is no JSON at all and is told apart as a parse error),
 * integers that do not fit in 64 bits (clamped), numbers that overflow a
 * double, and duplicate member names (the last one wins). json_guard_scan
 * is one linear pass over the raw text before json-c parses it: no
 * allocation, no recursion. json_guard_members_kept then compares the
 * member count of the text with that of the parsed tree: a difference
 * means a name occurred twice in one object.
 *
 * Pure functions; called by http.c (management bodies) and eval/ofrep.c
 * (evaluation bodies).
 */
#ifndef ENSIGN_JSON_GUARD_H
#define ENSIGN_JSON_GUARD_H

#include <json-c/json_tokener.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The tokener flags for a body the scan passed: strict JSON. The scan
 * knows strings only by their double quotes; json-c's lenient mode also
 * reads single-quoted strings, comments, trailing commas and "TRUE",
 * which would carry a "\u0000" or a ':' past the scan (found by
 * fuzz_validate). None of them is JSON.
 */
#define JSON_GUARD_TOKENER_FLAGS (JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8)

struct json_object;

enum json_guard_verdict {
    JSON_GUARD_OK,
    JSON_GUARD_BAD_UTF8,          /* bytes that are not UTF-8 */
    JSON_GUARD_LONE_SURROGATE,    /* \ud800-\udfff escape without its pair */
    JSON_GUARD_NUL,               /* \u0000 escape: JSON, but no field may hold it */
    JSON_GUARD_NUL_BYTE,          /* a raw NUL byte: not JSON at all (a parse error) */
    JSON_GUARD_NUMBER_RANGE,      /* integer beyond int64, or a double overflow */
    JSON_GUARD_TOO_MANY,          /* more object members than the caller allows */
    JSON_GUARD_TOO_MANY_ELEMENTS, /* more array elements than the caller allows */
    JSON_GUARD_DUPLICATE_KEY,     /* from json_guard_members_kept */
};

/*
 * Scans len bytes of text. *members receives the number of object members
 * in the text (its ':' outside strings); more than max_members (0: no
 * bound) stops the scan with JSON_GUARD_TOO_MANY. Syntax errors are left to
 * json-c: the scan only reports what json-c would accept.
 */
enum json_guard_verdict json_guard_scan(const char *text, size_t len, size_t max_members,
                                        size_t *members);

/*
 * json_guard_scan, also bounding the array elements of the text, all
 * arrays together: more than max_elements (0: no bound) stops the scan
 * with JSON_GUARD_TOO_MANY_ELEMENTS. Elements are told from members by the
 * container they are in, tracked JSON_GUARD_TRACKED_DEPTH levels deep
 * (deeper text is refused by the parser's own depth bound).
 */
#define JSON_GUARD_TRACKED_DEPTH 64
enum json_guard_verdict json_guard_scan_bounded(const char *text, size_t len, size_t max_members,
                                                size_t max_elements, size_t *members);

/* True when the parsed tree holds as many object members as the text had
 * (no duplicate names). Recursion is bounded by the parser's depth. */
bool json_guard_members_kept(struct json_object *root, size_t members_in_text);

/* True for the verdicts that say the text is not JSON at all (not UTF-8, an
 * unpaired surrogate, a NUL byte): a parse error on every surface (400,
 * PARSE_ERROR on /ofrep), where the others are content no field may hold. */
bool json_guard_not_json(enum json_guard_verdict verdict);

/* A sentence for a verdict other than JSON_GUARD_OK. */
const char *json_guard_message(enum json_guard_verdict verdict);

/* Length of the longest prefix of s (at most max bytes) that ends on a
 * UTF-8 character boundary, for cutting echoed text. */
size_t json_guard_utf8_cut(const char *s, size_t max);

/* True when len bytes of s are valid UTF-8. */
bool json_guard_utf8_valid(const char *s, size_t len);

#endif
