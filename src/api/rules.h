/*
 * rules.h - targeting rules of a flag in one environment:
 * /v1/orgs/{org}/flags/{key}/environments/{envKey}/rules[...] (see rules.c).
 */
#ifndef ENSIGN_RULES_H
#define ENSIGN_RULES_H

struct http_request;
struct mgmt_ctx;

/* The write rows' load (router.h route_load): the flag and environment
 * context, with the segments and entities the body names. */
void rules_load(struct http_request *r);

void rules_create(struct http_request *r, const struct mgmt_ctx *ctx);  /* POST /rules (append) */
void rules_list(struct http_request *r, const struct mgmt_ctx *ctx);    /* GET /rules */
void rules_replace(struct http_request *r, const struct mgmt_ctx *ctx); /* PUT /rules (one rev.) */
void rules_update(struct http_request *r, const struct mgmt_ctx *ctx);  /* PATCH /rules/{ruleId} */
void rules_delete(struct http_request *r, const struct mgmt_ctx *ctx);  /* DELETE /rules/{ruleId} */
void rules_reorder(struct http_request *r, const struct mgmt_ctx *ctx); /* POST /rules/reorder */

#endif
