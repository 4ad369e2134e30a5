/*
 * ui_route.c - serving the dashboard's files from memory (see ui_route.h).
 *
 * Per request: find the name (the path after /ui/, compared as sent, so a
 * percent-encoded or dotted path matches nothing), pick the gzip or the
 * identity form, compare If-None-Match, attach that form's header lines
 * (written once per file at load, ui_files.h: one header's cost instead of
 * seven) and hand the bytes to libevent by reference (http_send_static):
 * no copy, no allocation but libevent's own for the headers. Called by the
 * router.
 */
#include "http/ui_route.h"

#include <string.h>
#include <strings.h>

#include "http/http.h"
#include "http/server.h"
#include "http/ui_files.h"

static void add_security_headers(struct http_request *r)
{
    http_add_header(r, "Content-Security-Policy", ui_content_security_policy);
    http_add_header(r, "X-Content-Type-Options", "nosniff");
    http_add_header(r, "Referrer-Policy", "no-referrer");
}

void ui_redirect(struct http_request *r)
{
    http_add_header(r, "Location", "/ui/");
    add_security_headers(r);
    http_send_empty(r, 302);
}

/* True when the q parameter of one list item (from ';' to its end) is 0. */
static bool quality_zero(const char *params, size_t len)
{
    for (const char *p = params; p < params + len;) {
        p += strspn(p, " \t;");
        if (p + 2 <= params + len && strncasecmp(p, "q=", 2) == 0) {
            p += 2;
            while (p < params + len && (*p == '0' || *p == '.'))
                p++;
            return p >= params + len || *p == ' ' || *p == '\t' || *p == ';';
        }
        p += strcspn(p, ";");
        if (p > params + len)
            break;
    }
    return false;
}

bool ui_accepts_gzip(const char *accept_encoding)
{
    for (const char *p = accept_encoding; p != NULL && *p != '\0';) {
        p += strspn(p, " \t,");
        size_t item = strcspn(p, ",");
        size_t token = strcspn(p, " \t;,");
        bool named = (token == 4 && strncasecmp(p, "gzip", 4) == 0) || (token == 1 && p[0] == '*');
        if (named && !quality_zero(p + token, item - token))
            return true;
        p += item;
    }
    return false;
}

bool ui_etag_matches(const char *if_none_match, const char *etag)
{
    size_t etag_len = strlen(etag);
    for (const char *p = if_none_match; p != NULL && *p != '\0';) {
        p += strspn(p, " \t,");
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        size_t n = strcspn(p, " \t,");
        if ((n == 1 && p[0] == '*') || (n == etag_len && strncmp(p, etag, n) == 0))
            return true;
        p += n;
    }
    return false;
}

/* The file name of r's path: after "/ui/" (leading slashes folded). */
static const char *requested_name(const struct http_request *r, size_t *len)
{
    const char *path = r->path;
    while (*path == '/')
        path++;
    path += strlen("ui/"); /* the route's pattern matched "ui/..." */
    *len = strlen(path);
    if (*len == 0) {
        *len = strlen("index.html");
        return "index.html";
    }
    return path;
}

void ui_serve(struct http_request *r)
{
    size_t len;
    const char *name = requested_name(r, &len);
    const struct ui_file *f = ui_files_find(r->server->ui, name, len);
    if (f == NULL) {
        http_send_error(r, 404,
                        r->server->ui != NULL ? "no such dashboard file"
                                              : "the dashboard is not installed (ui_dir)");
        return;
    }
    bool gz = f->gz != NULL && ui_accepts_gzip(http_header(r, "Accept-Encoding"));
    const char *if_none_match = http_header(r, "If-None-Match");
    bool not_modified = if_none_match != NULL && (ui_etag_matches(if_none_match, f->etag) ||
                                                  ui_etag_matches(if_none_match, f->etag_gz));
    enum ui_head_form form = !gz            ? UI_HEAD_IDENTITY
                             : not_modified ? UI_HEAD_GZIP_NOT_MOD
                                            : UI_HEAD_GZIP;
    http_add_header_block(r, f->head[form], f->head_len[form]);
    if (not_modified) {
        http_send_not_modified(r);
        return;
    }
    http_send_static(r, 200, f->content_type, gz ? f->gz : f->body, gz ? f->gz_len : f->len);
}
