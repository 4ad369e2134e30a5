/*
 * flags.h - the flag resource: /v1/orgs/{org}/flags and /flags/{key}
 * (see flags.c). Handlers of the route table.
 */
#ifndef ENSIGN_FLAGS_H
#define ENSIGN_FLAGS_H

struct http_request;
struct mgmt_ctx;

void flags_create(struct http_request *r, const struct mgmt_ctx *ctx); /* POST /flags */
void flags_list(struct http_request *r,
                const struct mgmt_ctx *ctx);                        /* GET /flags[?archived=true] */
void flags_get(struct http_request *r, const struct mgmt_ctx *ctx); /* GET /flags/{key} */
void flags_update(struct http_request *r, const struct mgmt_ctx *ctx); /* PATCH /flags/{key} */
void flags_delete(struct http_request *r, const struct mgmt_ctx *ctx); /* DELETE /flags/{key} */
void flags_usage(struct http_request *r, const struct mgmt_ctx *ctx);  /* GET /flags/{key}/usage */
void flags_archive(struct http_request *r,
                   const struct mgmt_ctx *ctx); /* POST /flags/{key}/archive */
void flags_restore(struct http_request *r,
                   const struct mgmt_ctx *ctx); /* POST /flags/{key}/restore */

#endif
