/*
 * variants.h - the variant resource (/flags/{key}/variants) and the
 * variant rules flag creation shares: key derivation and value checks
 * (doc/choices.md "Variants and keys"). See variants.c.
 */
#ifndef ENSIGN_VARIANTS_H
#define ENSIGN_VARIANTS_H

#include <stddef.h>
#include <json-c/json.h>

#include "mgmt/validate.h"

struct http_request;
struct mgmt_ctx;

/* The write rows' load (router.h route_load): the flag's context. */
void variants_load(struct http_request *r);

void variants_create(struct http_request *r, const struct mgmt_ctx *ctx); /* POST /variants */
void variants_update(struct http_request *r, const struct mgmt_ctx *ctx); /* PATCH /variants/{k} */
void variants_delete(struct http_request *r, const struct mgmt_ctx *ctx); /* DELETE /variants/{k} */

/*
 * A key for a new variant: the label derived as doc/choices.md "Variants and keys"
 * says, else a string value derived the same way, else "variant-N"; when
 * the key is in used (a JSON array of keys) "-2", "-3", ... is appended
 * (the base cut to keep 63 characters). out holds 64 bytes.
 */
void variants_new_key(const char *label, const struct json_object *value, long long n,
                      const struct json_object *used, char out[VALIDATE_KEY_MAX + 1]);

/*
 * The variants of a creation request, body[name] (its shape checked by the
 * row's schema: at most 64 {value, label}), as a new array of {key, value,
 * label} with generated keys; each value is checked against type; boolean
 * flags get on (true) and off (false) and refuse any given variant. Errors
 * go to v; the result is owned by the caller even then.
 */
struct json_object *variants_for_new_flag(struct validate *v, const struct json_object *body,
                                          const char *name, enum validate_flag_type type);

/* The key of item i of such an array. */
const char *variants_key_at(const struct json_object *variants, size_t i);

#endif
