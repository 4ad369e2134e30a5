/*
 * openapi.c - builds the OpenAPI 3.1.0 document from the route table.
 *
 * Owns the shape of /openapi.json: info, one path item per pattern with an
 * operation per method, operationIds (lowercase method + the pattern's
 * words in camelCase, made unique with a number), path parameters,
 * security requirements by route->auth, an operation's caller, role and
 * scope (x-ensign-caller, x-ensign-role, x-ensign-scope), request and success schemas from
 * the table's JSON Schema texts, and a default response with the surface's
 * error body (Error for /v1, EvaluationError for /ofrep, Problem for the
 * rest), whose schemas, with the security schemes, live in components.
 * Invariant: nothing here knows a route by name; the table is the truth.
 * Called by the /openapi.json handler.
 */
#include "http/openapi.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "http/envelope.h"

#define OPERATION_ID_BYTES 256

static const char error_schema[] =
    "{\"type\":\"object\","
    "\"description\":\"The error envelope of /v1: errors only on a 422.\","
    "\"properties\":{"
    "\"message\":{\"type\":\"string\"},"
    "\"status\":{\"type\":\"integer\"},"
    "\"errors\":{\"type\":\"object\","
    "\"additionalProperties\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"
    "\"required\":[\"message\",\"status\"],"
    "\"additionalProperties\":false}";

static const char evaluation_error_schema[] =
    "{\"type\":\"object\","
    "\"description\":\"The evaluation error body of /ofrep: message equals errorDetails; "
    "key on the single-flag route.\","
    "\"properties\":{"
    "\"key\":{\"type\":\"string\"},"
    "\"errorCode\":{\"type\":\"string\"},"
    "\"errorDetails\":{\"type\":\"string\"},"
    "\"message\":{\"type\":\"string\"},"
    "\"status\":{\"type\":\"integer\"}},"
    "\"required\":[\"errorCode\",\"errorDetails\",\"message\",\"status\"],"
    "\"additionalProperties\":false}";

static const char problem_schema[] =
    "{\"type\":\"object\","
    "\"description\":\"An RFC 9457 problem detail.\","
    "\"properties\":{"
    "\"type\":{\"type\":\"string\",\"format\":\"uri-reference\",\"default\":\"about:blank\"},"
    "\"title\":{\"type\":\"string\"},"
    "\"status\":{\"type\":\"integer\",\"format\":\"int64\"},"
    "\"detail\":{\"type\":\"string\"},"
    "\"instance\":{\"type\":\"string\",\"format\":\"uri-reference\"},"
    "\"errors\":{\"type\":\"object\","
    "\"additionalProperties\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"
    "\"required\":[\"type\",\"title\",\"status\",\"detail\"]}";

static const char security_schemes[] =
    "{\"accessToken\":{\"type\":\"http\",\"scheme\":\"bearer\","
    "\"description\":\"An access token (svc_oat_...).\"},"
    "\"sdkKey\":{\"type\":\"http\",\"scheme\":\"bearer\","
    "\"description\":\"An SDK key (svc_sdk_...).\"},"
    "\"apiKeyHeader\":{\"type\":\"apiKey\",\"in\":\"header\",\"name\":\"X-API-Key\","
    "\"description\":\"An SDK key in the X-API-Key header.\"},"
    "\"sessionCookie\":{\"type\":\"apiKey\",\"in\":\"cookie\",\"name\":\"ensign_session\"}}";

static void add_string(struct json_object *obj, const char *key, const char *value)
{
    json_object_object_add(obj, key, json_object_new_string(value));
}

/* Parses schema text; NULL unless it is a JSON object or boolean. */
static struct json_object *parse_schema(const char *text)
{
    struct json_object *schema = json_tokener_parse(text);
    if (schema != NULL && !json_object_is_type(schema, json_type_object) &&
        !json_object_is_type(schema, json_type_boolean)) {
        json_object_put(schema);
        return NULL;
    }
    return schema;
}

/* {"<media type>": {"schema": schema}}; takes ownership of schema. */
static struct json_object *content_of(const char *media_type, struct json_object *schema)
{
    struct json_object *media = json_object_new_object();
    struct json_object *content = json_object_new_object();
    json_object_object_add(media, "schema", schema);
    json_object_object_add(content, media_type, media);
    return content;
}

static struct json_object *schema_ref(const char *name)
{
    char ref[128];
    struct json_object *schema = json_object_new_object();
    snprintf(ref, sizeof ref, "#/components/schemas/%s", name);
    add_string(schema, "$ref", ref);
    return schema;
}

/* Appends a character to out if there is room (NUL kept). */
static void append_char(char *out, size_t *len, char c)
{
    if (*len + 1 < OPERATION_ID_BYTES) {
        out[(*len)++] = c;
        out[*len] = '\0';
    }
}

/* "get" + "/v1/orgs/{org}" -> "getV1OrgsOrg"; "Root" when there are no words. */
static void base_operation_id(const struct route *route, char *out)
{
    size_t len = 0;
    bool word_start = true;
    out[0] = '\0';
    for (const char *m = router_method_name(route->method); *m != '\0'; m++)
        append_char(out, &len, (char)tolower((unsigned char)*m));
    size_t method_len = len;
    for (const char *p = route->pattern; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        if (!isalnum(c)) {
            word_start = true;
            continue;
        }
        append_char(out, &len, (char)(word_start ? toupper(c) : c));
        word_start = false;
    }
    if (len == method_len)
        for (const char *r = "Root"; *r != '\0'; r++)
            append_char(out, &len, *r);
}

/* A unique operationId for route, recorded in used (an object used as a set). */
static struct json_object *operation_id(const struct route *route, struct json_object *used)
{
    char base[OPERATION_ID_BYTES];
    char id[OPERATION_ID_BYTES + 16];
    base_operation_id(route, base);
    snprintf(id, sizeof id, "%s", base);
    for (unsigned n = 2; json_object_object_get_ex(used, id, NULL); n++)
        snprintf(id, sizeof id, "%s%u", base, n);
    json_object_object_add(used, id, NULL);
    return json_object_new_string(id);
}

static struct json_object *path_parameter(const char *name, size_t name_len)
{
    struct json_object *param = json_object_new_object();
    struct json_object *schema = json_object_new_object();
    json_object_object_add(param, "name", json_object_new_string_len(name, (int)name_len));
    add_string(param, "in", "path");
    json_object_object_add(param, "required", json_object_new_boolean(1));
    add_string(schema, "type", "string");
    json_object_object_add(param, "schema", schema);
    return param;
}

/* One path parameter per {name} segment of pattern, in order; NULL if none. */
static struct json_object *path_parameters(const char *pattern)
{
    struct json_object *params = NULL;
    for (const char *p = strchr(pattern, '{'); p != NULL; p = strchr(p + 1, '{')) {
        const char *end = strchr(p, '}');
        if (end == NULL)
            break;
        if (params == NULL)
            params = json_object_new_array();
        json_object_array_add(params, path_parameter(p + 1, (size_t)(end - p - 1)));
    }
    return params;
}

/* [{scheme: []}, ...] for each name in names (NULL-terminated). */
static struct json_object *requirements(const char *const *names)
{
    struct json_object *list = json_object_new_array();
    for (; *names != NULL; names++) {
        struct json_object *requirement = json_object_new_object();
        json_object_object_add(requirement, *names, json_object_new_array());
        json_object_array_add(list, requirement);
    }
    return list;
}

static struct json_object *security_for(enum route_auth auth)
{
    static const char *const none[] = {NULL};
    static const char *const access_token[] = {"accessToken", NULL};
    static const char *const token_or_cookie[] = {"accessToken", "sessionCookie", NULL};
    static const char *const sdk_key[] = {"sdkKey", "apiKeyHeader", NULL};
    switch (auth) {
    case ROUTE_AUTH_ACCESS_TOKEN:
        return requirements(access_token);
    case ROUTE_AUTH_TOKEN_OR_COOKIE:
        return requirements(token_or_cookie);
    case ROUTE_AUTH_SDK_KEY:
        return requirements(sdk_key);
    case ROUTE_AUTH_NONE:
        break;
    }
    return requirements(none);
}

/* The default response: the error body of the pattern's surface. */
static struct json_object *error_response(const char *pattern)
{
    struct json_object *response = json_object_new_object();
    struct json_object *content;
    switch (envelope_surface_for_path(pattern)) {
    case SURFACE_V1:
        content = content_of("application/json", schema_ref("Error"));
        break;
    case SURFACE_OFREP:
        content = content_of("application/json", schema_ref("EvaluationError"));
        break;
    default:
        content = content_of("application/problem+json", schema_ref("Problem"));
        break;
    }
    add_string(response, "description", "Error");
    json_object_object_add(response, "content", content);
    return response;
}

/* {"<status>": success, "default": error}; NULL if the response schema is bad. */
static struct json_object *responses_for(const struct route *route)
{
    int status = route->success_status != 0 ? route->success_status : 200;
    struct json_object *success = json_object_new_object();
    struct json_object *responses = json_object_new_object();
    char key[16];
    add_string(success, "description", envelope_reason_phrase(status));
    snprintf(key, sizeof key, "%d", status);
    json_object_object_add(responses, key, success);
    json_object_object_add(responses, "default", error_response(route->pattern));
    if (route->response_schema != NULL) {
        struct json_object *schema = parse_schema(route->response_schema);
        if (schema == NULL) {
            json_object_put(responses);
            return NULL;
        }
        json_object_object_add(success, "content", content_of("application/json", schema));
    }
    return responses;
}

/* Adds requestBody when the route has a request schema; false if it is bad. */
static bool add_request_body(struct json_object *op, const struct route *route)
{
    if (route->request_schema == NULL)
        return true;
    struct json_object *schema = parse_schema(route->request_schema);
    if (schema == NULL)
        return false;
    struct json_object *body = json_object_new_object();
    json_object_object_add(body, "content", content_of("application/json", schema));
    json_object_object_add(op, "requestBody", body);
    return true;
}

/* name in lower case, then suffix (NULL for none): "MEMBER" gives "member". */
static struct json_object *lower_name(const char *name, const char *suffix)
{
    char out[64];
    size_t len = 0;
    for (; name[len] != '\0' && len + 1 < sizeof out; len++)
        out[len] = (char)tolower((unsigned char)name[len]);
    snprintf(out + len, sizeof out - len, "%s", suffix ? suffix : "");
    return json_object_new_string(out);
}

/* What the dispatcher enforces beyond the credential: who the caller is
 * (x-ensign-caller), an organization operation's role ("member") and the
 * scope ("flags:write"). */
static void add_need(struct json_object *op, const struct route *route)
{
    static const char *const callers[] = {"organization", "account", "any", "internal", "identity"};
    if (route->op == NULL || (unsigned)route->need.caller >= sizeof callers / sizeof callers[0])
        return;
    add_string(op, "x-ensign-caller", callers[route->need.caller]);
    if (route->need.role_name != NULL)
        json_object_object_add(op, "x-ensign-role", lower_name(route->need.role_name, NULL));
    if (route->need.scope_name != NULL)
        json_object_object_add(
            op, "x-ensign-scope",
            lower_name(route->need.scope_name, route->need.write ? ":write" : ":read"));
}

static struct json_object *operation(const struct route *route, struct json_object *used_ids)
{
    struct json_object *op = json_object_new_object();
    struct json_object *params = path_parameters(route->pattern);
    if (route->summary != NULL)
        add_string(op, "summary", route->summary);
    json_object_object_add(op, "operationId", operation_id(route, used_ids));
    if (params != NULL)
        json_object_object_add(op, "parameters", params);
    json_object_object_add(op, "security", security_for(route->auth));
    add_need(op, route);
    struct json_object *responses = responses_for(route);
    if (responses == NULL || !add_request_body(op, route)) {
        json_object_put(responses);
        json_object_put(op);
        return NULL;
    }
    json_object_object_add(op, "responses", responses);
    return op;
}

/* The path item for pattern in paths, created on first use. */
static struct json_object *path_item(struct json_object *paths, const char *pattern)
{
    struct json_object *item;
    if (json_object_object_get_ex(paths, pattern, &item))
        return item;
    item = json_object_new_object();
    json_object_object_add(paths, pattern, item);
    return item;
}

/* The path-item key of a documented method ("get"), or NULL to leave it out. */
static const char *operation_key(unsigned method)
{
    static const struct {
        unsigned method;
        const char *key;
    } keys[] = {
        {METHOD_GET, "get"},     {METHOD_POST, "post"},     {METHOD_PUT, "put"},
        {METHOD_PATCH, "patch"}, {METHOD_DELETE, "delete"}, {METHOD_OPTIONS, "options"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].method == method)
            return keys[i].key;
    return NULL; /* HEAD (every GET answers it) and unknown methods */
}

/* Adds route's operation to paths; false if its schema texts are bad. */
static bool add_route(struct json_object *paths, const struct route *route,
                      struct json_object *used_ids)
{
    const char *key = operation_key(route->method);
    if (key == NULL || route->pattern == NULL)
        return true;
    struct json_object *item = path_item(paths, route->pattern);
    if (json_object_object_get_ex(item, key, NULL))
        return true;
    struct json_object *op = operation(route, used_ids);
    if (op == NULL)
        return false;
    json_object_object_add(item, key, op);
    return true;
}

static struct json_object *paths_for(const struct route *routes, size_t count)
{
    struct json_object *paths = json_object_new_object();
    struct json_object *used_ids = json_object_new_object();
    bool ok = true;
    for (size_t i = 0; ok && i < count; i++)
        ok = add_route(paths, &routes[i], used_ids);
    json_object_put(used_ids);
    if (!ok) {
        json_object_put(paths);
        return NULL;
    }
    return paths;
}

static struct json_object *components(void)
{
    struct json_object *schemas = json_object_new_object();
    struct json_object *result = json_object_new_object();
    json_object_object_add(schemas, "Error", json_tokener_parse(error_schema));
    json_object_object_add(schemas, "EvaluationError", json_tokener_parse(evaluation_error_schema));
    json_object_object_add(schemas, "Problem", json_tokener_parse(problem_schema));
    json_object_object_add(result, "schemas", schemas);
    json_object_object_add(result, "securitySchemes", json_tokener_parse(security_schemes));
    return result;
}

struct json_object *openapi_document(const struct route *routes, size_t count, const char *version)
{
    struct json_object *paths = paths_for(routes, count);
    if (paths == NULL)
        return NULL;
    struct json_object *doc = json_object_new_object();
    struct json_object *info = json_object_new_object();
    add_string(doc, "openapi", "3.1.0");
    add_string(info, "title", "Ensign API");
    add_string(info, "version", version != NULL ? version : "0.0.0");
    json_object_object_add(doc, "info", info);
    json_object_object_add(doc, "paths", paths);
    json_object_object_add(doc, "components", components());
    return doc;
}
