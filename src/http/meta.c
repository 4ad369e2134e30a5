/*
 * meta.c - the OpenAPI document (healthz, which reads shared memory, is
 * src/daemon/healthz_route.c).
 *
 * Does not touch the database. The OpenAPI text is generated from the
 * worker's route table on first use and kept for the worker's lifetime.
 */
#include "http/meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_config.h"
#include "http/http.h"
#include "http/openapi.h"
#include "http/server.h"

void meta_openapi(struct http_request *r)
{
    struct http_server *w = r->server;
    if (w->openapi_json == NULL) {
        struct json_object *doc = openapi_document(w->routes, w->route_count, PACKAGE_VERSION);
        w->openapi_json = strdup(json_object_to_json_string_ext(
            doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(doc);
        if (w->openapi_json == NULL) {
            http_send_error(r, 500, "out of memory");
            return;
        }
    }
    http_send_json_text(r, 200, w->openapi_json);
}
