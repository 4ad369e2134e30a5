/*
 * meta.h - routes about the service itself: /v1/healthz and /openapi.json.
 */
#ifndef ENSIGN_META_H
#define ENSIGN_META_H

struct http_request;

/* GET /v1/healthz: {status, version, time}; never touches the database. */
void meta_healthz(struct http_request *r);

/* GET /openapi.json: the OpenAPI 3.1 document generated from the route table. */
void meta_openapi(struct http_request *r);

/* Schema texts for the route table. */
extern const char meta_healthz_schema[];

#endif
