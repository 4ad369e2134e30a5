/*
 * apidoc.h - the API reference in Markdown, generated from the route table.
 *
 * The human-readable companion of /openapi.json: the rules every operation
 * shares (surfaces and their error bodies, credentials, roles and scopes),
 * then each row of the table: method, path, summary, credential, the role
 * and scope the dispatcher enforces, success status, request and response
 * schemas. doc/api.md is this text (`make api-doc` writes it, `make check`
 * compares), and ensignd serves it at GET /docs/api. Pure: the same table
 * gives the same text; nothing here touches the database.
 */
#ifndef ENSIGN_APIDOC_H
#define ENSIGN_APIDOC_H

#include <stddef.h>

#include "http/router.h"

struct http_request;

/*
 * The reference of routes[0..count), NUL-terminated; the caller frees it.
 * HEAD rows and a second row with the same method and pattern are left
 * out, as in /openapi.json. NULL when memory runs out.
 */
char *apidoc_markdown(const struct route *routes, size_t count);

/* GET /docs/api: the worker's copy of apidoc_markdown (made at its start),
 * as text/markdown. */
void apidoc_get(struct http_request *r);

#endif
