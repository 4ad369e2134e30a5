/*
 * notifications.h - the caller's notifications: GET /notifications,
 * GET /notifications/unread-count, POST /notifications/{id}/read,
 * POST /notifications/read-all. Route handlers (routes.c).
 */
#ifndef ENSIGN_NOTIFICATIONS_H
#define ENSIGN_NOTIFICATIONS_H

struct http_request;
struct mgmt_ctx;

void notifications_list(struct http_request *r, const struct mgmt_ctx *ctx);
void notifications_unread_count(struct http_request *r, const struct mgmt_ctx *ctx);
void notifications_read_one(struct http_request *r, const struct mgmt_ctx *ctx);
void notifications_read_all(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
