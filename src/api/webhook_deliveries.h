/*
 * webhook_deliveries.h - a webhook's delivery log and redelivery:
 * /v1/orgs/{org}/webhooks/{id}/deliveries (see webhook_deliveries.c).
 */
#ifndef ENSIGN_WEBHOOK_DELIVERIES_H
#define ENSIGN_WEBHOOK_DELIVERIES_H

#include "mgmt/mgmt.h"

void webhook_deliveries_list(struct http_request *r, const struct mgmt_ctx *ctx);
void webhook_deliveries_redeliver(struct http_request *r, const struct mgmt_ctx *ctx);

extern const char webhook_deliveries_list_schema[];
extern const char webhook_deliveries_one_schema[];

#endif
