/*
 * meta.h - /openapi.json (/v1/healthz is src/daemon/healthz_route.h).
 */
#ifndef ENSIGN_META_H
#define ENSIGN_META_H

struct http_request;

/* GET /openapi.json: the OpenAPI 3.1 document generated from the route table. */
void meta_openapi(struct http_request *r);

#endif
