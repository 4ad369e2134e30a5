/*
 * entities.h - known entities with typed attributes:
 * /v1/orgs/{org}/entities and /v1/orgs/{org}/entities/{key}.
 *
 * Route handlers called by the worker's dispatch from the route table
 * (routes.c); the schema texts describe their bodies in /openapi.json.
 */
#ifndef ENSIGN_ENTITIES_H
#define ENSIGN_ENTITIES_H

struct http_request;
struct mgmt_ctx;

/* POST /entities: 201 {entity}; 409 key exists; 422. */
void entities_create(struct http_request *r, const struct mgmt_ctx *ctx);

/* GET /entities: 200 {entities: [...]} ordered by key. */
void entities_list(struct http_request *r, const struct mgmt_ctx *ctx);

/* GET /entities/{key}: 200 {entity}; 404. */
void entities_get(struct http_request *r, const struct mgmt_ctx *ctx);

/* PATCH /entities/{key}: any of label, attributes (replaces the set); 200 {entity}. */
void entities_update(struct http_request *r, const struct mgmt_ctx *ctx);

/* DELETE /entities/{key}: 200 {ok: true}; 404. */
void entities_delete(struct http_request *r, const struct mgmt_ctx *ctx);

/* JSON Schema texts for the route table. */
extern const char entities_create_schema[];
extern const char entities_update_schema[];
extern const char entities_one_schema[];
extern const char entities_list_schema[];

#endif
