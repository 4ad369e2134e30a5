/*
 * check_routes.c - the real route table against the OpenAPI document.
 *
 * Its own runner because the table names every handler, so it links the
 * whole daemon (libpq included), which check_ensign never does. For every
 * row of routes_table(): the operation of /openapi.json carries exactly
 * the security the row's auth names and the row's request schema as its
 * requestBody (or none); a row with an operation (op) is dispatched by
 * mgmt_dispatch, takes the access token or the session cookie, and names
 * a role and one scope; every row under an organization ({org}, {slug})
 * is such an operation, and a load only comes with one; an operation on
 * no organization (the caller's own account, any token) is not under one;
 * x-ensign-caller, x-ensign-role and x-ensign-scope are the row's need. Nothing here is copied from
 * the table: the expectations are derived from each row's fields.
 *
 * Every dispatched row's request schema (the one /openapi.json shows) is
 * in the subset the dispatcher enforces (src/mgmt/jsonschema.h), refuses
 * an unknown member and a member of the wrong type; the e2e tests/e2e/test_dispatch.py sends the
 * same bodies through the dispatcher.
 *
 * Also every MCP tool the real table offers (mcp/mcp_tools.h): called with
 * each required argument filled in, its REST request matches the very row
 * the tool names (method and pattern), with a body exactly when the row
 * takes one.
 *
 * And the route index (http/router.h) answers as router_match does over
 * the whole table, for every method, on a path made from every row and
 * on paths no row has.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/cond_ops.h"
#include "mgmt/jsonschema.h"
#include "mgmt/mgmt.h"
#include "http/openapi.h"
#include "daemon/routes.h"
#include "mcp/mcp_tools.h"

/* The security requirement names of auth, in the order /openapi.json lists them. */
static const char *const *schemes_of(enum route_auth auth)
{
    static const char *const none[] = {NULL};
    static const char *const token[] = {"accessToken", NULL};
    static const char *const token_or_cookie[] = {"accessToken", "sessionCookie", NULL};
    static const char *const sdk[] = {"sdkKey", "apiKeyHeader", NULL};
    switch (auth) {
    case ROUTE_AUTH_ACCESS_TOKEN:
        return token;
    case ROUTE_AUTH_TOKEN_OR_COOKIE:
        return token_or_cookie;
    case ROUTE_AUTH_SDK_KEY:
        return sdk;
    case ROUTE_AUTH_NONE:
        break;
    }
    return none;
}

/* The operation object of route in doc (NULL when not documented). */
static struct json_object *operation_of(struct json_object *doc, const struct route *route)
{
    struct json_object *paths, *item, *op;
    char key[16];
    const char *name = router_method_name(route->method);
    size_t i = 0;
    for (; name[i] != '\0' && i + 1 < sizeof key; i++)
        key[i] = (char)(name[i] | 0x20); /* "get" */
    key[i] = '\0';
    if (!json_object_object_get_ex(doc, "paths", &paths) ||
        !json_object_object_get_ex(paths, route->pattern, &item) ||
        !json_object_object_get_ex(item, key, &op))
        return NULL;
    return op;
}

static void check_security(const struct route *route, struct json_object *op)
{
    struct json_object *security;
    const char *const *want = schemes_of(route->auth);
    size_t n = 0;
    while (want[n] != NULL)
        n++;
    ck_assert_msg(json_object_object_get_ex(op, "security", &security), "%s: no security",
                  route->pattern);
    ck_assert_msg(json_object_array_length(security) == n, "%s %s: %zu requirements, row says %zu",
                  router_method_name(route->method), route->pattern,
                  json_object_array_length(security), n);
    for (size_t i = 0; i < n; i++) {
        struct json_object *requirement = json_object_array_get_idx(security, i);
        ck_assert_msg(json_object_object_get_ex(requirement, want[i], NULL), "%s %s: no %s",
                      router_method_name(route->method), route->pattern, want[i]);
        ck_assert_int_eq(json_object_object_length(requirement), 1);
    }
}

static void check_request_body(const struct route *route, struct json_object *op)
{
    struct json_object *body, *content, *json, *schema;
    bool has = json_object_object_get_ex(op, "requestBody", &body);
    ck_assert_msg(has == (route->request_schema != NULL), "%s %s: requestBody %s, row schema %s",
                  router_method_name(route->method), route->pattern, has ? "present" : "absent",
                  route->request_schema ? "set" : "NULL");
    if (!has)
        return;
    ck_assert(json_object_object_get_ex(body, "content", &content));
    ck_assert(json_object_object_get_ex(content, "application/json", &json));
    ck_assert(json_object_object_get_ex(json, "schema", &schema));
    struct json_object *row = json_tokener_parse(route->request_schema);
    ck_assert_ptr_nonnull(row);
    ck_assert_msg(json_object_equal(row, schema), "%s %s: requestBody is not the row's schema",
                  router_method_name(route->method), route->pattern);
    json_object_put(row);
}

/* A dispatched row: the dispatcher, token or cookie, a role and one scope. */
static void check_dispatched(const struct route *route)
{
    bool in_org = strstr(route->pattern, "{org}") || strstr(route->pattern, "{slug}");
    if (route->op == NULL) {
        ck_assert_msg(route->handler != mgmt_dispatch, "%s: dispatcher without op", route->pattern);
        ck_assert_msg(route->load == NULL, "%s: a load without op", route->pattern);
        /* No organization route checks its caller for itself. */
        ck_assert_msg(!in_org, "%s %s: an organization route that is not an operation",
                      router_method_name(route->method), route->pattern);
        return;
    }
    ck_assert_msg(route->handler == mgmt_dispatch, "%s: op without the dispatcher", route->pattern);
    bool internal = route->need.caller == ROUTE_CALLER_INTERNAL;
    /* An internal operation is never a browser's: the access token alone. */
    ck_assert_int_eq(route->auth, internal ? ROUTE_AUTH_ACCESS_TOKEN : ROUTE_AUTH_TOKEN_OR_COOKIE);
    ck_assert_msg(in_org == (route->need.caller == ROUTE_CALLER_ORG),
                  "%s: an organization operation is one under {org} or {slug}", route->pattern);
    ck_assert_msg(route->load == NULL || route->need.caller == ROUTE_CALLER_ORG,
                  "%s: a load is an organization operation's", route->pattern);
    ck_assert(route->need.role >= MGMT_ROLE_VIEWER && route->need.role <= MGMT_ROLE_OWNER);
    unsigned scope = route->need.scope;
    if (internal) {
        ck_assert_msg(scope == 0 && route->need.write, "%s: internal: no scope, a write",
                      route->pattern);
        return;
    }
    if (route->need.caller == ROUTE_CALLER_IDENTITY) {
        /* who the caller is (a read), or a change of its own credential
         * (a write with a body) */
        bool read = !route->need.write && route->method == METHOD_GET;
        bool own_write =
            route->need.write && route->method != METHOD_GET && route->request_schema != NULL;
        ck_assert_msg(scope == 0 && (read || own_write),
                      "%s: identity: no scope, a read or a write with a body", route->pattern);
        return;
    }
    ck_assert_msg(scope != 0 && (scope & (scope - 1)) == 0 && (scope & ~AUTH_SCOPE_ALL) == 0,
                  "%s: need one scope bit", route->pattern);
}

/* An operation's x-ensign-caller, x-ensign-role and x-ensign-scope are its
 * row's need (a role only in an organization); other rows have none. */
static void check_need(const struct route *route, struct json_object *op)
{
    static const char *const callers[] = {"organization", "account", "any", "internal", "identity"};
    struct json_object *caller = NULL, *role = NULL, *scope = NULL;
    bool has_caller = json_object_object_get_ex(op, "x-ensign-caller", &caller);
    bool has_role = json_object_object_get_ex(op, "x-ensign-role", &role);
    bool has_scope = json_object_object_get_ex(op, "x-ensign-scope", &scope);
    if (route->op == NULL) {
        ck_assert_msg(!has_caller && !has_role && !has_scope, "%s: a need without an operation",
                      route->pattern);
        return;
    }
    bool internal = route->need.caller == ROUTE_CALLER_INTERNAL;
    bool scopeless = internal || route->need.caller == ROUTE_CALLER_IDENTITY;
    ck_assert_msg(has_caller && has_scope == !scopeless, "%s: x-ensign-caller or x-ensign-scope",
                  route->pattern);
    ck_assert_uint_lt(route->need.caller, 5);
    ck_assert_str_eq(json_object_get_string(caller), callers[route->need.caller]);
    ck_assert_msg(has_role == (route->need.caller == ROUTE_CALLER_ORG), "%s: x-ensign-role",
                  route->pattern);
    if (has_role)
        ck_assert_str_eq(json_object_get_string(role),
                         mgmt_role_name((enum mgmt_role)route->need.role));
    if (scopeless)
        return;
    char name[64];
    const char *text = json_object_get_string(scope);
    const char *colon = strchr(text, ':');
    ck_assert_msg(colon != NULL && (size_t)(colon - text) < sizeof name, "%s: scope %s",
                  route->pattern, text);
    snprintf(name, sizeof name, "%.*s", (int)(colon - text), text);
    ck_assert_msg(auth_scope_from_name(name) == route->need.scope, "%s: scope %s is not the row's",
                  route->pattern, text);
    ck_assert_str_eq(colon + 1, route->need.write ? "write" : "read");
}

/* Whether the type keyword of schema (a name or a list) names type. */
static bool names_type(struct json_object *schema, const char *type)
{
    struct json_object *types;
    if (!json_object_object_get_ex(schema, "type", &types))
        return false;
    if (json_object_is_type(types, json_type_string))
        return strcmp(json_object_get_string(types), type) == 0;
    for (size_t i = 0; i < json_object_array_length(types); i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(types, i)), type) == 0)
            return true;
    return false;
}

/* A JSON text of a value of the wrong type for property (null when it has no type). */
static const char *wrong_value(struct json_object *property)
{
    if (!json_object_object_get_ex(property, "type", NULL))
        return json_object_object_get_ex(property, "not", NULL) ? "null" : "7";
    if (!names_type(property, "array"))
        return "[]";
    return names_type(property, "object") ? "\"text\"" : "{}";
}

/* Expects body (text) to be refused by schema with a message at path. */
static void expect_refused(const struct route *route, const struct json_object *schema,
                           const char *body_text, const char *path)
{
    struct json_object *body = json_tokener_parse(body_text);
    struct validate v;
    validate_init(&v);
    bool ok = jsonschema_check(&v, schema, body);
    ck_assert_msg(!ok && v.errors && json_object_object_get_ex(v.errors, path, NULL),
                  "%s %s: %s not refused at %s (%s)", router_method_name(route->method),
                  route->pattern, body_text, path,
                  v.errors ? json_object_to_json_string(v.errors) : "no errors");
    validate_free(&v);
    json_object_put(body);
}

/* The row's request schema is enforced as written: supported keywords,
 * unknown members and wrongly typed ones refused. */
static void check_schema_enforced(const struct route *route)
{
    if (route->request_schema == NULL || route->op == NULL)
        return;
    const struct json_object *schema = jsonschema_parsed(route->request_schema);
    ck_assert_msg(schema != NULL, "%s: the request schema does not parse", route->pattern);
    const char *bad = NULL;
    ck_assert_msg(jsonschema_supported(schema, &bad), "%s %s: keyword %s is not enforced",
                  router_method_name(route->method), route->pattern, bad ? bad : "?");
    struct json_object *extra, *properties;
    ck_assert_msg(json_object_object_get_ex(schema, "additionalProperties", &extra) &&
                      json_object_is_type(extra, json_type_boolean) &&
                      !json_object_get_boolean(extra),
                  "%s %s: a request body names its members (additionalProperties: false)",
                  router_method_name(route->method), route->pattern);
    expect_refused(route, schema, "{\"zz-not-a-member\": 1}", "zz-not-a-member");
    ck_assert(json_object_object_get_ex(schema, "properties", &properties));
    json_object_object_foreach(properties, name, property)
    {
        char text[256];
        snprintf(text, sizeof text, "{\"%s\": %s}", name, wrong_value(property));
        expect_refused(route, schema, text, name);
    }
}

START_TEST(every_request_schema_is_enforced)
{
    size_t count, with_schema = 0;
    const struct route *routes = routes_table(&count);
    for (size_t i = 0; i < count; i++) {
        check_schema_enforced(&routes[i]);
        with_schema += routes[i].request_schema != NULL;
    }
    ck_assert_uint_gt(with_schema, 20);
    ck_assert_uint_lt(with_schema, JSONSCHEMA_PARSED_MAX);
}
END_TEST

/* The operator enum of every condition of schema (the array at
 * conditions.items, its branches included), checked against cond_ops[]. */
static size_t check_operator_enums(const struct json_object *schema)
{
    size_t found = 0;
    if (json_object_is_type(schema, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(schema); i++)
            found += check_operator_enums(json_object_array_get_idx(schema, i));
        return found;
    }
    if (!json_object_is_type(schema, json_type_object))
        return 0;
    json_object_object_foreach((struct json_object *)schema, key, value)
    {
        struct json_object *list;
        if (strcmp(key, "operator") == 0 && json_object_object_get_ex(value, "enum", &list)) {
            ck_assert_uint_eq(json_object_array_length(list), SNAPSHOT_OP_COUNT);
            for (int op = 0; op < SNAPSHOT_OP_COUNT; op++)
                ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(list, op)),
                                 cond_ops[op].name);
            found++;
        } else {
            found += check_operator_enums(value);
        }
    }
    return found;
}

/* The condition schemas' operators are the operator table's, in its order. */
START_TEST(condition_operators_come_from_the_table)
{
    size_t count, found = 0;
    const struct route *routes = routes_table(&count);
    for (size_t i = 0; i < count; i++)
        if (routes[i].request_schema != NULL && routes[i].op != NULL)
            found += check_operator_enums(jsonschema_parsed(routes[i].request_schema));
    ck_assert_uint_ge(found, 5); /* rules (create, update, replace) and segments (create, update) */
}
END_TEST

START_TEST(every_row_is_what_openapi_says)
{
    size_t count;
    const struct route *routes = routes_table(&count);
    struct json_object *doc = openapi_document(routes, count, "test");
    ck_assert_ptr_nonnull(doc);
    size_t checked = 0, dispatched = 0;
    for (size_t i = 0; i < count; i++) {
        const struct route *route = &routes[i];
        check_dispatched(route);
        dispatched += route->op != NULL;
        if (route->method == METHOD_QUERY || route->method == METHOD_HEAD)
            continue; /* not an OpenAPI 3.1 operation key */
        struct json_object *op = operation_of(doc, route);
        ck_assert_msg(op != NULL, "%s %s: not in /openapi.json", router_method_name(route->method),
                      route->pattern);
        check_security(route, op);
        check_request_body(route, op);
        check_need(route, op);
        checked++;
    }
    ck_assert_uint_gt(checked, 60);
    ck_assert_uint_gt(dispatched, 40);
    json_object_put(doc);
}
END_TEST

/* Arguments for schema: "x" for each required string, {} for an object. */
static struct json_object *filled_arguments(struct json_object *schema)
{
    struct json_object *args = json_object_new_object(), *required, *props;
    json_object_object_get_ex(schema, "required", &required);
    json_object_object_get_ex(schema, "properties", &props);
    for (size_t i = 0; i < json_object_array_length(required); i++) {
        const char *name = json_object_get_string(json_object_array_get_idx(required, i));
        struct json_object *type = NULL;
        json_object_object_get_ex(json_object_object_get(props, name), "type", &type);
        bool object = type != NULL && strcmp(json_object_get_string(type), "object") == 0;
        json_object_object_add(args, name,
                               object ? json_object_new_object() : json_object_new_string("x"));
    }
    return args;
}

START_TEST(every_mcp_tool_calls_its_row)
{
    size_t count;
    const struct route *table = routes_table(&count);
    struct json_object *tools = mcp_tools_list(table, count);
    ck_assert_uint_ge(json_object_array_length(tools), 12);
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        struct json_object *tool = json_object_array_get_idx(tools, i);
        const char *name = json_object_get_string(json_object_object_get(tool, "name"));
        const char *description =
            json_object_get_string(json_object_object_get(tool, "description"));
        struct json_object *args = filled_arguments(json_object_object_get(tool, "inputSchema"));
        struct mcp_rest_call call;
        char why[256] = "";
        ck_assert_msg(mcp_tool_request(table, count, name, args, &call, why, sizeof why) == 0,
                      "%s: %s", name, why);
        char path[MCP_PATH_MAX];
        snprintf(path, sizeof path, "%.*s", (int)strcspn(call.path, "?"), call.path);
        struct route_match m;
        ck_assert_msg(router_match(table, count, call.method, path, &m) == ROUTE_FOUND, "%s: %s",
                      name, call.path);
        char runs[512];
        snprintf(runs, sizeof runs, "Runs %s %s ", router_method_name(m.route->method),
                 m.route->pattern);
        ck_assert_msg(strstr(description, runs) != NULL, "%s reached %s", name, runs);
        ck_assert_msg((call.body != NULL) == (m.route->request_schema != NULL), "%s body", name);
        free(call.body);
        json_object_put(args);
    }
    json_object_put(tools);
}
END_TEST

/* path from pattern: each {name} segment becomes `x` + suffix. */
static void path_of(const char *pattern, const char *suffix, char *out, size_t room)
{
    size_t used = 0;
    for (const char *p = pattern; *p != '\0' && used + 1 < room;) {
        if (*p == '{') {
            const char *end = strchr(p, '}');
            used += (size_t)snprintf(out + used, room - used, "x%s", suffix);
            p = end != NULL ? end + 1 : p + strlen(p);
        } else {
            out[used++] = *p++;
        }
    }
    out[used < room ? used : room - 1] = '\0';
}

/* The index's answer for method and path is router_match's. */
static void same_answer(const struct route_index *index, const struct route *routes, size_t count,
                        unsigned method, const char *path)
{
    struct route_match want, got;
    enum route_result w = router_match(routes, count, method, path, &want);
    enum route_result g = route_index_match(index, method, path, &got);
    ck_assert_msg(w == g, "%s %s: result %d, index %d", router_method_name(method), path, w, g);
    ck_assert_msg(want.route == got.route, "%s %s: another row", router_method_name(method), path);
    ck_assert_uint_eq(want.allowed, got.allowed);
    ck_assert_uint_eq(want.nparams, got.nparams);
    for (size_t i = 0; i < want.nparams; i++)
        ck_assert_str_eq(want.params[i].value, got.params[i].value);
}

START_TEST(route_index_answers_as_the_table)
{
    size_t count;
    const struct route *routes = routes_table(&count);
    struct route_index *index = route_index_new(routes, count);
    ck_assert_ptr_nonnull(index);
    static const unsigned methods[] = {METHOD_GET,     METHOD_HEAD,  METHOD_POST,
                                       METHOD_PUT,     METHOD_PATCH, METHOD_DELETE,
                                       METHOD_OPTIONS, METHOD_QUERY, METHOD_OTHER};
    static const char *const others[] = {
        "/",   "//",   "",        "ui",           "/ui",       "//ui/app.js", "/ui/",    "/nope",
        "/v1", "/v1/", "/%75i/x", "/v1/healthz/", "/ofrep/v1", "/x/y/z",      "/orgs//x"};
    char path[512];
    for (size_t i = 0; i < count; i++) {
        for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
            path_of(routes[i].pattern, "", path, sizeof path);
            same_answer(index, routes, count, methods[m], path);
            path_of(routes[i].pattern, "%2F/more", path, sizeof path);
            same_answer(index, routes, count, methods[m], path);
        }
    }
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
        for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++)
            same_answer(index, routes, count, methods[m], others[k]);
    route_index_free(index);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("routes");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, every_row_is_what_openapi_says);
    tcase_add_test(tc, every_request_schema_is_enforced);
    tcase_add_test(tc, condition_operators_come_from_the_table);
    tcase_add_test(tc, every_mcp_tool_calls_its_row);
    tcase_add_test(tc, route_index_answers_as_the_table);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
