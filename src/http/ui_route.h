/*
 * ui_route.h - GET / and GET /ui/...: the dashboard's files.
 *
 * Serves the files the master read from ui_dir (ui_files.h) from memory:
 * never a file system call, never the database. Every file carries a
 * strong ETag (304 on If-None-Match), Cache-Control: no-cache, its gzip
 * form when the client accepts gzip (Vary: Accept-Encoding), and the
 * dashboard's security headers: nosniff, no referrer and the
 * Content-Security-Policy of doc/choices.md "The dashboard" (no inline script
 * or style, nothing from another origin, no framing). GET / and GET /ui
 * redirect (302) to /ui/, which serves index.html. A name the set does not
 * hold is a 404: there is no path to a file outside ui_dir. Rows in
 * daemon/routes.c.
 */
#ifndef ENSIGN_UI_ROUTE_H
#define ENSIGN_UI_ROUTE_H

#include <stdbool.h>

struct http_request;

/* GET / and GET /ui: 302 to /ui/. */
void ui_redirect(struct http_request *r);

/* GET /ui/ and every file below it. */
void ui_serve(struct http_request *r);

/* Whether an Accept-Encoding value accepts gzip (a gzip or * token
 * without q=0). Exposed for the unit tests. */
bool ui_accepts_gzip(const char *accept_encoding);

/* Whether an If-None-Match value names etag (weak comparison: W/ is
 * ignored; a list; * matches). Exposed for the unit tests. */
bool ui_etag_matches(const char *if_none_match, const char *etag);

#endif
