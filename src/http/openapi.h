/*
 * openapi.h - the OpenAPI 3.1 description, generated from the route table.
 *
 * One document covers all three surfaces (/v1, /ofrep, the root API):
 * every route's path, method, summary, path parameters, credential,
 * request and success-response schemas, and the error body of its surface
 * as the default response. Pure: the same table gives the same document.
 * Called by the /openapi.json handler (and by the unit tests).
 */
#ifndef ENSIGN_OPENAPI_H
#define ENSIGN_OPENAPI_H

#include <stddef.h>
#include <json-c/json.h>

#include "http/router.h"

/*
 * Builds the document for routes[0..count) with info.version version. The
 * caller owns the result (serialize it with json_object_to_json_string_ext).
 * HEAD routes are left out (every GET answers HEAD); a second route with
 * the same pattern and method is left out too. Returns NULL when a route's
 * request_schema or response_schema text is not a JSON Schema (a JSON
 * object or boolean): a bug in the table, which its unit test catches.
 */
struct json_object *openapi_document(const struct route *routes, size_t count, const char *version);

#endif
