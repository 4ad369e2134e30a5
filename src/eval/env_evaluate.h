/*
 * env_evaluate.h - evaluation for a person at the dashboard: every flag
 * (or some) of one environment for a context, answered as the OFREP bulk
 * answer is, plus each flag's matched rule (see env_evaluate.c).
 *
 * Called by the handler of POST /v1/orgs/{org}/environments/{env}/evaluate
 * (src/api/evaluate.c) once the dispatcher authenticated the caller.
 */
#ifndef ENSIGN_ENV_EVALUATE_H
#define ENSIGN_ENV_EVALUATE_H

#include <stddef.h>

struct http_request;

/* The most flag keys a request may name. */
#define ENV_EVALUATE_KEYS_MAX 1000

/*
 * Answers r: the flags of environment env_key of organization org_id (the
 * organization's id) in the worker's served snapshot, evaluated for the
 * context of r's body. keys (nkeys of them, NUL-terminated) limit the
 * answer to those flags; NULL for every flag.
 */
void env_evaluate_answer(struct http_request *r, const char *org_id, const char *env_key,
                         const char *const *keys, size_t nkeys);

#endif
