/*
 * json_quick.h - a fast parser for the plain JSON an SDK sends, building
 * the flat value of json_flat.h straight from the text.
 *
 * json-c's tokener walks a body one character at a time through its state
 * machine and switches the thread's locale on every call, and its tree
 * costs a malloc per value; on an evaluation request that was the largest
 * cost the server controls. Most bodies are objects of short strings and
 * small integers: json_quick_parse reads those into flat nodes whose
 * strings point into the text. It accepts only a subset of JSON whose
 * meaning under json-c is certain: objects, arrays, strings without
 * escapes or control characters, integers of at most 18 digits without a
 * leading zero, true, false and null (lower case), whitespace of space,
 * tab, CR and LF, nesting at most JSON_QUICK_MAX_DEPTH deep, no member
 * name twice in one object. Anything else, valid or not, answers NULL and
 * the caller parses with json-c as before (json_flat_from_json), so what
 * is accepted, refused and built never differs from json-c's.
 *
 * What it accepts also keeps json_guard.h's promises (strings of valid
 * UTF-8 without NUL, integers in range, at most max_members object
 * members and max_elements array elements), so json_guard_scan need only run on what it declines:
 * the subset has no escapes, and a string with a byte beyond ASCII is checked with
 * json_guard_utf8_valid. Pure; called by eval/ofrep.c.
 */
#ifndef ENSIGN_JSON_QUICK_H
#define ENSIGN_JSON_QUICK_H

#include <stdbool.h>
#include <stddef.h>

#include "http/json_flat.h"

#define JSON_QUICK_MAX_DEPTH 32

/*
 * Parses len bytes of text that must be one JSON object (surrounding
 * whitespace allowed) into doc (reset first): the root object, whose
 * strings and names point into text (keep it unchanged while the nodes
 * are used), or NULL when the text is outside the subset, holds more than
 * max_members object members or max_elements array elements in all
 * (json_guard_scan_bounded's counts), or memory ran out (json-c decides).
 */
const struct json_flat *json_quick_parse(const char *text, size_t len, size_t max_members,
                                         size_t max_elements, struct json_flat_doc *doc);

#endif
