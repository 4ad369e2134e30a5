/*
 * rules.h - targeting rules of a flag in one environment:
 * /v1/orgs/{org}/flags/{key}/environments/{envKey}/rules[...] (see rules.c).
 */
#ifndef ENSIGN_RULES_H
#define ENSIGN_RULES_H

struct http_request;
struct mgmt_ctx;

void rules_create(struct http_request *r);                           /* POST /rules (append) */
void rules_list(struct http_request *r, const struct mgmt_ctx *ctx); /* GET /rules */
void rules_replace(struct http_request *r); /* PUT /rules (atomic, one revision) */
void rules_update(struct http_request *r);  /* PATCH /rules/{ruleId} */
void rules_delete(struct http_request *r);  /* DELETE /rules/{ruleId} */
void rules_reorder(struct http_request *r); /* POST /rules/reorder */

#endif
