/*
 * webhooks.h - an organization's webhooks: /v1/orgs/{org}/webhooks
 * (see webhooks.c). Their deliveries: webhook_deliveries.h.
 */
#ifndef ENSIGN_WEBHOOKS_H
#define ENSIGN_WEBHOOKS_H

#include "mgmt/mgmt.h"

void webhooks_create(struct http_request *r, const struct mgmt_ctx *ctx);
void webhooks_list(struct http_request *r, const struct mgmt_ctx *ctx);
void webhooks_get(struct http_request *r, const struct mgmt_ctx *ctx);
void webhooks_update(struct http_request *r, const struct mgmt_ctx *ctx);
void webhooks_delete(struct http_request *r, const struct mgmt_ctx *ctx);

extern const char webhooks_create_schema[];
extern const char webhooks_update_schema[];
extern const char webhooks_one_schema[];
extern const char webhooks_created_schema[];
extern const char webhooks_list_schema[];
extern const char webhooks_ack_schema[];

#endif
