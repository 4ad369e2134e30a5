/*
 * segments.h - reusable audiences: /v1/orgs/{org}/segments and
 * /v1/orgs/{org}/segments/{key} (create, list, read, update, delete).
 *
 * Route handlers called by the worker's dispatch from the route table
 * (routes.c); the schema texts describe their bodies in /openapi.json.
 */
#ifndef ENSIGN_SEGMENTS_H
#define ENSIGN_SEGMENTS_H

struct http_request;
struct mgmt_ctx;

/* POST /segments: 201 {segment}; 409 key exists; 422. */
void segments_create(struct http_request *r, const struct mgmt_ctx *ctx);

/* GET /segments: 200 {segments: [...]} ordered by key. */
void segments_list(struct http_request *r, const struct mgmt_ctx *ctx);

/* GET /segments/{key}: 200 {segment}; 404. */
void segments_get(struct http_request *r, const struct mgmt_ctx *ctx);

/* PATCH /segments/{key}: any of name, description, conditions; 200 {segment}. */
void segments_update(struct http_request *r, const struct mgmt_ctx *ctx);

/* DELETE /segments/{key}: 200 {ok: true}; 404; 409 while a rule references it. */
void segments_delete(struct http_request *r, const struct mgmt_ctx *ctx);

/* JSON Schema texts for the route table. */
extern const char segments_create_schema[];
extern const char segments_update_schema[];
extern const char segments_one_schema[];
extern const char segments_list_schema[];
extern const char segments_ack_schema[];

#endif
