/*
 * envelope.h - the three error bodies, as pure functions returning json-c
 * objects (the caller owns the result).
 *
 *  - /v1: {message, status, errors?} (errors only on 422, no other fields)
 *  - /ofrep: {key?, errorCode, errorDetails, message, status} where
 *    message equals errorDetails (doc/api.md "Surfaces and error bodies")
 *  - everything else: RFC 9457 Problem {type, title, status, detail,
 *    instance?, errors?} sent as application/problem+json
 *
 * http.c picks one by the request's surface; nothing else builds errors.
 */
#ifndef ENSIGN_ENVELOPE_H
#define ENSIGN_ENVELOPE_H

#include <json-c/json.h>

enum http_surface { SURFACE_V1, SURFACE_OFREP, SURFACE_ROOT };

/* Which surface a (percent-encoded) path belongs to; leading "//" counts as "/". */
enum http_surface envelope_surface_for_path(const char *path);

/* errors: NULL or an object of field -> array of strings; ownership passes. */
struct json_object *envelope_v1(int status, const char *message, struct json_object *errors);

/* key may be NULL (bulk route, unknown path). */
struct json_object *envelope_ofrep(int status, const char *key, const char *error_code,
                                   const char *details);

/* instance may be NULL; errors as for envelope_v1. */
struct json_object *envelope_problem(int status, const char *detail, const char *instance,
                                     struct json_object *errors);

/* "Not Found" for 404 and so on; "Error" for unknown codes. */
const char *envelope_reason_phrase(int status);

#endif
