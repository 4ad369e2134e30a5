/*
 * test_http_internal.c - Check suite for http.c's internal dispatch: a
 * request built in-process goes through the router and the route's handler
 * (synchronous and asynchronous answers alike), carries the origin's
 * Authorization header and body, a query after the path reaches the
 * handler as its query, and its answer (status, body, headers,
 * error envelopes of the path's surface) reaches the callback from the
 * event loop, never inside http_internal_request.
 */
#include <event2/event.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "http/server.h"
#include "suites.h"

struct captured {
    int calls;
    int status;
    char body[512];
    char ratelimit[32];
    bool inside; /* the callback ran inside http_internal_request */
};

static bool dispatching;

/* Echoes the Authorization header, the body and the {key} parameter. */
static void echo_handler(struct http_request *r)
{
    size_t len;
    const char *body = http_body(r, &len);
    struct json_object *out = json_object_new_object();
    const char *auth = http_header(r, "Authorization");
    json_object_object_add(out, "auth", auth ? json_object_new_string(auth) : NULL);
    json_object_object_add(out, "body", body ? json_object_new_string(body) : NULL);
    json_object_object_add(out, "key", json_object_new_string(http_param(r, "key")));
    char stale[16];
    if (http_query_param(r, "stale", stale, sizeof stale))
        json_object_object_add(out, "stale", json_object_new_string(stale));
    http_add_header(r, "RateLimit-Remaining", "7");
    http_send_json(r, 201, out);
}

static void answer_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    http_send_json_text(arg, 200, "{\"later\":true}");
}

/* Answers from the event loop, as handlers waiting on libpq do. */
static void async_handler(struct http_request *r)
{
    event_base_once(r->server->base, -1, EV_TIMEOUT, answer_later, r, NULL);
}

static void invalid_handler(struct http_request *r)
{
    struct json_object *errors = json_object_new_object();
    json_object_object_add(errors, "slug", json_object_new_array());
    http_send_validation_error(r, "validation failed", errors);
}

static const struct route table[] = {
    {METHOD_POST,
     "/v1/orgs/{org}/flags/{key}",
     echo_handler,
     "echo",
     ROUTE_AUTH_NONE,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_GET,
     "/v1/later",
     async_handler,
     "later",
     ROUTE_AUTH_NONE,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
    {METHOD_POST,
     "/v1/invalid",
     invalid_handler,
     "invalid",
     ROUTE_AUTH_NONE,
     NULL,
     NULL,
     0,
     {0},
     NULL,
     NULL},
};

static void on_answer(void *arg, int status, const char *body, const struct evkeyvalq *headers)
{
    struct captured *c = arg;
    c->calls++;
    c->status = status;
    c->inside = dispatching;
    snprintf(c->body, sizeof c->body, "%s", body ? body : "");
    const char *remaining = evhttp_find_header(headers, "RateLimit-Remaining");
    snprintf(c->ratelimit, sizeof c->ratelimit, "%s", remaining ? remaining : "");
}

struct fixture {
    struct event_base *base;
    struct http_server server;
    struct http_request origin;
    struct evhttp_request *origin_req;
};

static void fixture_init(struct fixture *f, const char *authorization)
{
    memset(f, 0, sizeof *f);
    f->base = event_base_new();
    f->server.base = f->base;
    f->server.routes = table;
    f->server.route_count = sizeof table / sizeof table[0];
    f->origin_req = evhttp_request_new(NULL, NULL);
    if (authorization != NULL)
        evhttp_add_header(evhttp_request_get_input_headers(f->origin_req), "Authorization",
                          authorization);
    f->origin.req = f->origin_req;
    f->origin.server = &f->server;
    f->origin.path = "/ai/actions/execute";
    f->origin.surface = SURFACE_ROOT;
}

static void fixture_free(struct fixture *f)
{
    evhttp_request_free(f->origin_req);
    event_base_free(f->base);
}

static void run(struct fixture *f, unsigned method, const char *path, const char *body,
                struct captured *c)
{
    memset(c, 0, sizeof *c);
    dispatching = true;
    ck_assert_int_eq(http_internal_request(&f->origin, method, path, body, on_answer, c), 0);
    dispatching = false;
    ck_assert_int_eq(c->calls, 0); /* never inside the call */
    event_base_dispatch(f->base);
    ck_assert_int_eq(c->calls, 1);
    ck_assert(!c->inside);
    ck_assert_uint_eq(f->server.in_flight, 0);
}

START_TEST(test_routes_through_the_handler)
{
    struct fixture f;
    struct captured c;
    fixture_init(&f, "Bearer svc_oat_abc");
    run(&f, METHOD_POST, "/v1/orgs/acme/flags/new-checkout", "{\"a\":1}", &c);
    ck_assert_int_eq(c.status, 201);
    struct json_object *got = json_tokener_parse(c.body);
    ck_assert_ptr_nonnull(got);
    struct json_object *member;
    ck_assert(json_object_object_get_ex(got, "auth", &member));
    ck_assert_str_eq(json_object_get_string(member), "Bearer svc_oat_abc");
    ck_assert(json_object_object_get_ex(got, "body", &member));
    ck_assert_str_eq(json_object_get_string(member), "{\"a\":1}");
    ck_assert(json_object_object_get_ex(got, "key", &member));
    ck_assert_str_eq(json_object_get_string(member), "new-checkout");
    ck_assert_str_eq(c.ratelimit, "7");
    json_object_put(got);
    fixture_free(&f);
}
END_TEST

/* A query after the path reaches the handler's query, not its path. */
START_TEST(test_query_string)
{
    struct fixture f;
    struct captured c;
    fixture_init(&f, NULL);
    run(&f, METHOD_POST, "/v1/orgs/acme/flags/f%20g?stale=true&q=x", "{}", &c);
    ck_assert_int_eq(c.status, 201);
    struct json_object *got = json_tokener_parse(c.body), *member;
    ck_assert(json_object_object_get_ex(got, "key", &member));
    ck_assert_str_eq(json_object_get_string(member), "f g");
    ck_assert(json_object_object_get_ex(got, "stale", &member));
    ck_assert_str_eq(json_object_get_string(member), "true");
    json_object_put(got);
    run(&f, METHOD_POST, "/v1/orgs/acme/flags/plain", "{}", &c);
    got = json_tokener_parse(c.body);
    ck_assert(!json_object_object_get_ex(got, "stale", NULL));
    json_object_put(got);
    fixture_free(&f);
}
END_TEST

START_TEST(test_asynchronous_answer)
{
    struct fixture f;
    struct captured c;
    fixture_init(&f, NULL);
    run(&f, METHOD_GET, "/v1/later", NULL, &c);
    ck_assert_int_eq(c.status, 200);
    ck_assert_str_eq(c.body, "{\"later\":true}");
    fixture_free(&f);
}
END_TEST

START_TEST(test_errors_use_the_path_surface)
{
    struct fixture f;
    struct captured c;
    fixture_init(&f, NULL);
    run(&f, METHOD_GET, "/v1/nowhere", NULL, &c);
    ck_assert_int_eq(c.status, 404);
    ck_assert_ptr_nonnull(strstr(c.body, "\"message\""));
    run(&f, METHOD_DELETE, "/v1/later", NULL, &c);
    ck_assert_int_eq(c.status, 405);
    run(&f, METHOD_POST, "/v1/invalid", "{}", &c);
    ck_assert_int_eq(c.status, 422);
    ck_assert_ptr_nonnull(strstr(c.body, "\"errors\":{\"slug\":[]}"));
    fixture_free(&f);
}
END_TEST

Suite *suite_http_internal(void)
{
    Suite *s = suite_create("http_internal");
    TCase *tc = tcase_create("internal");
    tcase_add_test(tc, test_routes_through_the_handler);
    tcase_add_test(tc, test_query_string);
    tcase_add_test(tc, test_asynchronous_answer);
    tcase_add_test(tc, test_errors_use_the_path_surface);
    suite_add_tcase(s, tc);
    return s;
}
