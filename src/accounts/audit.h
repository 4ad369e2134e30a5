/*
 * audit.h - the organization's audit log routes (the root API):
 * GET and QUERY /orgs/{slug}/audit, GET and PUT /orgs/{slug}/audit/config.
 * Route handlers, called by the worker's dispatch from the route table
 * (routes.c). Recording events is audit_record.h's.
 */
#ifndef ENSIGN_AUDIT_H
#define ENSIGN_AUDIT_H

struct http_request;
struct mgmt_ctx;

/* GET/QUERY /orgs/{slug}/audit: {events: [...]} newest first, paged. */
void audit_list(struct http_request *r, const struct mgmt_ctx *ctx);

/* GET /orgs/{slug}/audit/config: {ip_disclosure}. */
void audit_config_get(struct http_request *r, const struct mgmt_ctx *ctx);

/* PUT /orgs/{slug}/audit/config {ip_disclosure}: {ip_disclosure} (admin). */
void audit_config_put(struct http_request *r, const struct mgmt_ctx *ctx);

/* OpenAPI schemas of the answers (and of the PUT body). */
extern const char audit_list_schema[];
extern const char audit_config_schema[];

#endif
