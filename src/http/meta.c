/*
 * meta.c - the liveness probe and the OpenAPI document.
 *
 * Neither touches the database. The OpenAPI text is generated from the
 * worker's route table on first use and kept for the worker's lifetime.
 */
#include "meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "build_config.h"
#include "http.h"
#include "openapi.h"
#include "server.h"

const char meta_healthz_schema[] =
    "{\"type\":\"object\",\"required\":[\"status\",\"version\",\"time\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"status\":{\"type\":\"string\",\"const\":\"ok\"},"
    "\"version\":{\"type\":\"string\"},"
    "\"time\":{\"type\":\"string\",\"format\":\"date-time\"}}}";

void meta_healthz(struct http_request *r)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char stamp[40];
    size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", now.tv_nsec / 1000000L);

    struct json_object *body = json_object_new_object();
    json_object_object_add(body, "status", json_object_new_string("ok"));
    json_object_object_add(body, "version", json_object_new_string(PACKAGE_VERSION));
    json_object_object_add(body, "time", json_object_new_string(stamp));
    http_send_json(r, 200, body);
}

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
