/*
 * healthz_route.h - GET /v1/healthz (healthz_route.c).
 */
#ifndef ENSIGN_HEALTHZ_ROUTE_H
#define ENSIGN_HEALTHZ_ROUTE_H

struct http_request;

/* GET /v1/healthz: {status, version, time}, 503 with checks when degraded;
 * never touches the database. */
void healthz_answer(struct http_request *r);

/* The answer's schema for the route table. */
extern const char healthz_schema[];

#endif
