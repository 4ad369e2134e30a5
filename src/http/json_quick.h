/*
 * json_quick.h - a fast parser for the plain JSON an SDK sends, building
 * the same json-c tree json-c's tokener would.
 *
 * json-c's tokener walks a body one character at a time through its state
 * machine and switches the thread's locale on every call; on an
 * evaluation request that was the largest cost the server controls (15%
 * of a worker under the varying-body load). Most bodies are objects of
 * short strings and small integers: json_quick_parse builds those
 * directly. It accepts only a subset of JSON whose meaning under json-c
 * is certain: objects, arrays, strings without escapes or control
 * characters, integers of at most 18 digits without a leading zero,
 * true, false and null (lower case), whitespace of space, tab, CR and LF,
 * nesting at most JSON_QUICK_MAX_DEPTH deep. Anything else, valid or not,
 * answers false and the caller parses with json-c as before, so what is
 * accepted, refused and built never differs from json-c's.
 *
 * The text must have passed json_guard_scan (UTF-8 is not checked here).
 * Pure; called by eval/ofrep.c.
 */
#ifndef ENSIGN_JSON_QUICK_H
#define ENSIGN_JSON_QUICK_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

#define JSON_QUICK_MAX_DEPTH 32

/*
 * Room for the member names of one tree, so that json-c need not copy
 * each into a malloc of its own (json-c's JSON_C_OBJECT_KEY_IS_CONSTANT):
 * names are copied here, NUL-terminated, until it is full, then json-c
 * copies the rest. The caller keeps it unchanged while the tree lives and
 * gives each parse its own (or reuses one after freeing the former tree).
 */
#define JSON_QUICK_KEY_ROOM 2048
struct json_quick_keys {
    size_t used;
    char text[JSON_QUICK_KEY_ROOM];
};

/*
 * Parses len bytes of text that must be one JSON object (surrounding
 * whitespace allowed). True with *out set (caller owns) when the text is
 * within the subset; false with *out NULL otherwise (json-c decides).
 * keys (may be NULL: json-c copies every name) is emptied first.
 */
bool json_quick_parse(const char *text, size_t len, struct json_quick_keys *keys,
                      struct json_object **out);

/*
 * The shape every SDK sends, an object with the one member name and
 * nothing else ({"context": {...}}): its value alone is built, the tree
 * json_quick_parse would hang under that member, into *value (caller owns;
 * NULL for null). False, with *value NULL, for any other text or shape
 * (then json_quick_parse or json-c decides): so the body's own object,
 * which only held the member, is never made.
 */
bool json_quick_parse_only_member(const char *text, size_t len, const char *name,
                                  struct json_quick_keys *keys, struct json_object **value);

#endif
