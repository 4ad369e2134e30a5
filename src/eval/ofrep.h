/*
 * ofrep.h - the OpenFeature Remote Evaluation Protocol routes:
 *
 *   POST /ofrep/v1/evaluate/flags/{key}   one flag
 *   POST /ofrep/v1/evaluate/flags         every flag of the key's environment
 *
 * Owns the wire contract of evaluation (doc/api.md, the /ofrep operations;
 * doc/choices.md "Environment configuration and evaluation" and "Browsers
 * and the wire"): SDK-key authentication
 * against the digests in the snapshot (Authorization: Bearer, any case of
 * the scheme, or X-API-Key), the per-key rate limit, the body and context
 * rules, reasons, metadata, error codes and bodies, bulk ETag and 304, and
 * counting each successful evaluation (usage_batch.h, then shared memory).
 *
 * Invariants: no database access (this file is in the core library, which
 * does not link libpq); the answer comes only from the worker's mapped
 * snapshot and shared memory. No snapshot yet (never built) is 503 with
 * Retry-After. These routes never answer 412, 415 or 422. CORS headers are
 * added by http.c on every /ofrep answer.
 *
 * Called by the worker's router (routes.c table).
 */
#ifndef ENSIGN_OFREP_H
#define ENSIGN_OFREP_H

#include <stddef.h>
#include <stdint.h>

#include "eval/eval.h"

struct http_request;
struct json_tokener;

struct ofrep_state;

void ofrep_evaluate_flag(struct http_request *r);
void ofrep_evaluate_bulk(struct http_request *r);

enum ofrep_body_status {
    OFREP_BODY_OK,
    OFREP_BODY_PARSE_ERROR,     /* 400 PARSE_ERROR: not JSON, or not an object */
    OFREP_BODY_INVALID_CONTEXT, /* 400 INVALID_CONTEXT */
    OFREP_BODY_NO_MEMORY        /* 500 GENERAL */
};

/*
 * Reads an evaluation request body: text (len bytes; NULL or only
 * whitespace is an empty body) into doc (emptied first) as flat JSON, by
 * json_quick or, outside its plain subset, by json-c with tok (then *body
 * is json-c's tree, which the nodes point into: the caller puts it, also
 * on error; NULL otherwise), then ctx prepared from its `context` member
 * (eval_context_init, clock now_us). ctx points into text, doc and *body:
 * keep all three while it is used. On error *detail is the errorDetails
 * text. Pure: no I/O, no globals (the fuzz target
 * tests/fuzz/fuzz_ofrep_body.c calls it too).
 */
struct json_flat_doc;
struct json_object;
enum ofrep_body_status ofrep_read_body(struct json_tokener *tok, struct json_flat_doc *doc,
                                       const char *text, size_t len, int64_t now_us,
                                       struct json_object **body, struct eval_context *ctx,
                                       const char **detail);

/* Frees a worker's OFREP state (a JSON parser kept between requests and a
 * few recent SDK-key digests), made on the worker's first evaluation.
 * NULL is fine. */
void ofrep_state_free(struct ofrep_state *state);

/* JSON Schemas for /openapi.json. */
extern const char ofrep_request_schema[];
extern const char ofrep_flag_response_schema[];
extern const char ofrep_bulk_response_schema[];

#endif
