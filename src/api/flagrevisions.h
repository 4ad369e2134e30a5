/*
 * flagrevisions.h - a flag's whole history: GET
 * /v1/orgs/{org}/flags/{key}/revisions (see flagrevisions.c). Handler of
 * the route table.
 */
#ifndef ENSIGN_FLAGREVISIONS_H
#define ENSIGN_FLAGREVISIONS_H

struct http_request;

void flags_revisions(struct http_request *r); /* GET /flags/{key}/revisions */

#endif
