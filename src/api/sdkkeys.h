/*
 * sdkkeys.h - SDK keys, the credentials of the evaluation API:
 * /v1/orgs/{org}/sdk-keys and /v1/orgs/{org}/sdk-keys/{id}/revoke.
 *
 * Route handlers called by the worker's dispatch from the route table
 * (routes.c); the schema texts describe their bodies in /openapi.json.
 */
#ifndef ENSIGN_SDKKEYS_H
#define ENSIGN_SDKKEYS_H

struct http_request;
struct mgmt_ctx;

/* POST /sdk-keys {name, environment}: 201 {key} with the plaintext token
 * (the only time it is shown); 404 no such environment; 422. */
void sdkkeys_create(struct http_request *r, const struct mgmt_ctx *ctx);

/* GET /sdk-keys: 200 {keys: [...]} masked, oldest first. */
void sdkkeys_list(struct http_request *r, const struct mgmt_ctx *ctx);

/* POST /sdk-keys/{id}/revoke: 200 {ok: true} (again for a revoked key); 404. */
void sdkkeys_revoke(struct http_request *r, const struct mgmt_ctx *ctx);

/* JSON Schema texts for the route table. */
extern const char sdkkeys_create_schema[];
extern const char sdkkeys_created_schema[];
extern const char sdkkeys_list_schema[];

#endif
