/*
 * flagrevision.h - one revision of a flag with the targeting it recorded,
 * and bringing that targeting back: GET
 * /v1/orgs/{org}/flags/{key}/revisions/{id} and POST .../{id}/restore (see
 * flagrevision.c). Operations of the route table.
 */
#ifndef ENSIGN_FLAGREVISION_H
#define ENSIGN_FLAGREVISION_H

struct http_request;
struct mgmt_ctx;

/* GET /flags/{key}/revisions/{id}; its load answers the revision in the
 * dispatcher's round trip. */
void flag_revision_get(struct http_request *r, const struct mgmt_ctx *ctx);
void flag_revision_get_load(struct http_request *r);

/* POST /flags/{key}/revisions/{id}/restore; its load asks the flag's id. */
void flag_revision_restore(struct http_request *r, const struct mgmt_ctx *ctx);
void flag_revision_restore_load(struct http_request *r);

#endif
