/*
 * metrics_route.h - GET /metrics: the node's counters in the Prometheus
 * text format 0.0.4 (doc/choices.md "Metrics"). No authentication. When
 * metrics_listen is set the route answers only on that address (404 on
 * listen). Called from the route table.
 */
#ifndef ENSIGN_METRICS_ROUTE_H
#define ENSIGN_METRICS_ROUTE_H

struct http_request;

void metrics_route_get(struct http_request *r);

#endif
