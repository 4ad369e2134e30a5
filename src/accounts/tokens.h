/*
 * tokens.h - personal access tokens: POST/GET /me/tokens, DELETE
 * /me/tokens/{id}. Route handlers (routes.c).
 */
#ifndef ENSIGN_TOKENS_H
#define ENSIGN_TOKENS_H

struct http_request;
struct mgmt_ctx;

void tokens_create(struct http_request *r, const struct mgmt_ctx *ctx);
void tokens_list(struct http_request *r, const struct mgmt_ctx *ctx);
void tokens_revoke(struct http_request *r, const struct mgmt_ctx *ctx);

#endif
