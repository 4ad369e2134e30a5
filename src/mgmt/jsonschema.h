/*
 * jsonschema.h - the JSON Schema subset of the route table's request
 * schemas, enforced by the dispatcher (mgmt_dispatch) before a row's
 * handler runs.
 *
 * Owns the keywords the request schemas use (type, enum, required,
 * properties, additionalProperties, propertyNames, minLength, maxLength,
 * pattern, format, minimum, maximum, minItems, maxItems, items, oneOf,
 * anyOf, not; default, description, title and examples are annotations)
 * and their messages, which are validate.c's ("is required", "unknown
 * field", "must be a string", "must be at most 200 characters", ...)
 * recorded in a struct validate under the same field paths, so a 422 reads
 * the same whoever found the error. doc/choices.md "Request schemas" says
 * why the row's schema is the one truth.
 *
 * Invariants: checking never allocates but for the messages it records
 * (and one scratch collector per oneOf/anyOf branch tried without a
 * discriminating required member); recursion stops at
 * JSONSCHEMA_DEPTH_MAX (a schema is text of this tree, not a caller's);
 * a keyword outside the subset is refused by jsonschema_supported, which
 * check_routes runs on every row, so no schema can promise what is not
 * enforced.
 *
 * Called by mgmt.c (the dispatcher) and check_routes.
 */
#ifndef ENSIGN_JSONSCHEMA_H
#define ENSIGN_JSONSCHEMA_H

#include <stdbool.h>
#include <json-c/json.h>

#include "mgmt/validate.h"

#define JSONSCHEMA_DEPTH_MAX 32
#define JSONSCHEMA_PARSED_MAX 256 /* distinct schema texts jsonschema_parsed keeps */

/*
 * Checks value against schema, recording every message in v at its
 * current path (the body itself when empty). True when nothing was
 * recorded.
 */
bool jsonschema_check(struct validate *v, const struct json_object *schema,
                      const struct json_object *value);

/*
 * True when schema uses only the keywords and forms jsonschema_check
 * enforces (patterns compile, enums are arrays...); otherwise false with
 * *bad naming the first offending keyword.
 */
bool jsonschema_supported(const struct json_object *schema, const char **bad);

/*
 * The parsed form of a schema text of the route table, parsed once per
 * process and kept for its life (the texts are static). NULL when the text
 * does not parse or JSONSCHEMA_PARSED_MAX texts are kept already
 * (check_routes proves neither happens with the route table).
 */
const struct json_object *jsonschema_parsed(const char *text);

#endif
