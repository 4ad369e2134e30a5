/*
 * mcp_tools.c - the MCP tools as REST requests, and their input schemas
 * built from the route table's rows (see mcp_tools.h).
 */
#include "mcp/mcp_tools.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MCP_PATH_ARGS_MAX 4

struct mcp_tool {
    const char *name;
    const char *description;
    unsigned method;
    const char *pattern; /* the row's pattern, exactly as the route table spells it */
    /* the arguments that fill the pattern's {parameters}, in their order */
    const char *path_args[MCP_PATH_ARGS_MAX];
    /* NULL: the body's members are the tool's other arguments (when the
     * row takes a body); else the one argument that is the whole body */
    const char *body_member;
    const char *query;       /* JSON object: query parameter name -> schema, or NULL */
    const char *fixed_query; /* added to every call, or NULL */
    bool read_only;
};

#define FLAG_PATH "/v1/orgs/{org}/flags/{key}"
#define ENV_PATH FLAG_PATH "/environments/{envKey}"
#define ORG_ARGS                                                                                   \
    {                                                                                              \
        "org"                                                                                      \
    }
#define FLAG_ARGS                                                                                  \
    {                                                                                              \
        "org", "flag"                                                                              \
    }
#define ENV_ARGS                                                                                   \
    {                                                                                              \
        "org", "flag", "environment"                                                               \
    }

/* The page arguments of the flag list (doc/api.md: limit 1 to 1,000; the
 * cursor a previous result's nextCursor). */
#define PAGE_ARGS                                                                                  \
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":"              \
    "\"flags per page (default 1000)\"},"                                                          \
    "\"cursor\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" MCP_CURSOR_MAX_TEXT ","       \
    "\"description\":\"the nextCursor of the previous page\"}"

/* clang-format off */
static const struct mcp_tool tools[] = {
    /* the agent's tools (agent/agent_tools.h), with org */
    {"create_flag", "Create a flag, disabled in every environment (slug, type, variants, tags, "
     "description).", METHOD_POST, "/v1/orgs/{org}/flags", ORG_ARGS, NULL, NULL, NULL, false},
    {"update_flag_environment", "Configure a flag in one environment: changes is the environment "
     "configuration's PATCH body (enabled, defaultServe, offVariantKey, ...).", METHOD_PATCH,
     ENV_PATH, ENV_ARGS, "changes", NULL, NULL, false},
    {"add_rule", "Append a targeting rule (conditions and serve) to a flag in one environment.",
     METHOD_POST, ENV_PATH "/rules", ENV_ARGS, "rule", NULL, NULL, false},
    {"archive_flag", "Archive a flag (it keeps evaluating as configured).", METHOD_POST,
     FLAG_PATH "/archive", FLAG_ARGS, NULL, NULL, NULL, false},
    {"restore_flag", "Restore an archived flag.", METHOD_POST, FLAG_PATH "/restore", FLAG_ARGS,
     NULL, NULL, NULL, false},
    {"create_segment", "Create a segment (key, name, description, conditions).", METHOD_POST,
     "/v1/orgs/{org}/segments", ORG_ARGS, NULL, NULL, NULL, false},
    /* read tools, and the writes of revisions and schedules */
    {"list_flags", "List the organization's flags by key with their value in each environment, "
     "usage and staleness (q searches key, name and tags; stale=true only the stale ones; "
     "archived=true the archived ones), a page of limit flags at a time: when more remain the "
     "result has nextCursor, to pass as cursor with the same q.", METHOD_GET,
     "/v1/orgs/{org}/flags", ORG_ARGS, NULL,
     "{\"q\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200,\"description\":"
     "\"search the flags' key, name and tags\"},"
     "\"stale\":{\"type\":\"boolean\",\"description\":\"only the stale flags\"},"
     "\"archived\":{\"type\":\"boolean\",\"description\":\"the archived flags instead of the "
     "active ones\"}," PAGE_ARGS "}", NULL, true},
    {"get_flag", "Read a flag: variants, each environment's configuration and rules, the newest "
     "revisions.", METHOD_GET, FLAG_PATH, FLAG_ARGS, NULL, NULL, NULL, true},
    {"evaluate_flag", "Evaluate flags for a context in an environment, as an SDK would (flags "
     "limits it to those keys); each result names the matched rule. Not counted as usage.",
     METHOD_POST, "/v1/orgs/{org}/environments/{envKey}/evaluate", {"org", "environment"}, NULL,
     NULL, NULL, true},
    {"flag_usage", "Evaluation counts of a flag per environment, variant and day.", METHOD_GET,
     FLAG_PATH "/usage", FLAG_ARGS, NULL, NULL, NULL, true},
    {"list_stale_flags", "List the stale flags: never evaluated, unused, or fully rolled out for "
     "stale_after_days (a page at a time, as list_flags).", METHOD_GET, "/v1/orgs/{org}/flags",
     ORG_ARGS, NULL, "{" PAGE_ARGS "}", "stale=true", true},
    {"list_segments", "List the organization's segments.", METHOD_GET, "/v1/orgs/{org}/segments",
     ORG_ARGS, NULL, NULL, NULL, true},
    {"list_environments", "List the organization's environments.", METHOD_GET,
     "/v1/orgs/{org}/environments", ORG_ARGS, NULL, NULL, NULL, true},
    {"restore_revision", "Bring back a revision's targeting of a flag as one new revision.",
     METHOD_POST, FLAG_PATH "/revisions/{id}/restore", {"org", "flag", "revision"}, NULL, NULL,
     NULL, false},
    {"schedule_change", "Schedule a change of a flag's configuration in one environment at a time "
     "(at: ISO 8601, 10 s to 366 days ahead; changes: the environment PATCH body).", METHOD_POST,
     FLAG_PATH "/schedules", FLAG_ARGS, NULL, NULL, NULL, false},
};
/* clang-format on */

#define TOOL_COUNT (sizeof tools / sizeof tools[0])

/* What each path argument is, for the schema. */
static const char *path_arg_description(const char *name)
{
    static const struct {
        const char *name, *text;
    } known[] = {{"org", "the organization's slug"},
                 {"flag", "the flag's key"},
                 {"environment", "the environment's key"},
                 {"revision", "the revision's id (get_flag lists the newest)"}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(known[i].name, name) == 0)
            return known[i].text;
    }
    return name;
}

static const struct mcp_tool *tool_named(const char *name)
{
    for (size_t i = 0; name != NULL && i < TOOL_COUNT; i++) {
        if (strcmp(tools[i].name, name) == 0)
            return &tools[i];
    }
    return NULL;
}

static const struct route *row_of(const struct mcp_tool *t, const struct route *routes,
                                  size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (routes[i].method == t->method && strcmp(routes[i].pattern, t->pattern) == 0)
            return &routes[i];
    }
    return NULL;
}

/* Whether the tool sends a body: its row takes one (or names a body member). */
static bool takes_body(const struct mcp_tool *t, const struct route *row)
{
    return t->body_member != NULL || row->request_schema != NULL;
}

static bool is_path_arg(const struct mcp_tool *t, const char *name)
{
    for (size_t i = 0; i < MCP_PATH_ARGS_MAX && t->path_args[i] != NULL; i++) {
        if (strcmp(t->path_args[i], name) == 0)
            return true;
    }
    return false;
}

/* ---- input schemas ---- */

static void add_body_schema(const struct mcp_tool *t, const struct route *row,
                            struct json_object *props, struct json_object *required,
                            struct json_object *schema)
{
    struct json_object *body = row->request_schema ? json_tokener_parse(row->request_schema) : NULL;
    if (t->body_member != NULL) {
        json_object_object_add(props, t->body_member,
                               body ? body : json_tokener_parse("{\"type\":\"object\"}"));
        json_object_array_add(required, json_object_new_string(t->body_member));
        return;
    }
    struct json_object *members, *needed, *extra;
    if (json_object_object_get_ex(body, "properties", &members)) {
        json_object_object_foreach(members, name, value)
        {
            if (!is_path_arg(t, name))
                json_object_object_add(props, name, json_object_get(value));
        }
    }
    if (json_object_object_get_ex(body, "required", &needed)) {
        for (size_t i = 0; i < json_object_array_length(needed); i++)
            json_object_array_add(required, json_object_get(json_object_array_get_idx(needed, i)));
    }
    if (json_object_object_get_ex(body, "additionalProperties", &extra))
        json_object_object_add(schema, "additionalProperties", json_object_get(extra));
    json_object_put(body);
}

static struct json_object *input_schema(const struct mcp_tool *t, const struct route *row)
{
    struct json_object *schema = json_object_new_object();
    struct json_object *props = json_object_new_object(), *required = json_object_new_array();
    json_object_object_add(schema, "type", json_object_new_string("object"));
    for (size_t i = 0; i < MCP_PATH_ARGS_MAX && t->path_args[i] != NULL; i++) {
        struct json_object *p = json_object_new_object();
        json_object_object_add(p, "type", json_object_new_string("string"));
        json_object_object_add(p, "minLength", json_object_new_int(1));
        json_object_object_add(p, "maxLength", json_object_new_int(MCP_ARGUMENT_MAX));
        json_object_object_add(p, "description",
                               json_object_new_string(path_arg_description(t->path_args[i])));
        json_object_object_add(props, t->path_args[i], p);
        json_object_array_add(required, json_object_new_string(t->path_args[i]));
    }
    struct json_object *query = t->query ? json_tokener_parse(t->query) : NULL;
    if (query != NULL) {
        json_object_object_foreach(query, name, value)
        {
            json_object_object_add(props, name, json_object_get(value));
        }
        json_object_put(query);
    }
    if (takes_body(t, row))
        add_body_schema(t, row, props, required, schema);
    if (!takes_body(t, row) || t->body_member != NULL)
        json_object_object_add(schema, "additionalProperties", json_object_new_boolean(false));
    json_object_object_add(schema, "properties", props);
    json_object_object_add(schema, "required", required);
    return schema;
}

struct json_object *mcp_tools_list(const struct route *routes, size_t count)
{
    struct json_object *list = json_object_new_array();
    for (size_t i = 0; i < TOOL_COUNT; i++) {
        const struct mcp_tool *t = &tools[i];
        const struct route *row = row_of(t, routes, count);
        if (row == NULL)
            continue;
        char description[1024];
        snprintf(description, sizeof description, "%s Runs %s %s as the caller.", t->description,
                 router_method_name(t->method), t->pattern);
        struct json_object *tool = json_object_new_object(), *hints = json_object_new_object();
        json_object_object_add(tool, "name", json_object_new_string(t->name));
        json_object_object_add(tool, "description", json_object_new_string(description));
        json_object_object_add(tool, "inputSchema", input_schema(t, row));
        json_object_object_add(hints, "readOnlyHint", json_object_new_boolean(t->read_only));
        json_object_object_add(hints, "openWorldHint", json_object_new_boolean(false));
        json_object_object_add(tool, "annotations", hints);
        json_object_array_add(list, tool);
    }
    return list;
}

/* ---- REST requests ---- */

static int fail(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return -1;
}

/* Appends text to out (len bytes used of MCP_PATH_MAX), percent-encoding
 * when encode every byte but letters, digits, '-', '_' and '~' ('.' too,
 * so no argument is a "." or ".." segment whatever reads the path). */
static bool append(struct mcp_rest_call *out, size_t *len, const char *text, bool encode)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        bool plain = !encode || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || strchr("-_~", *p) != NULL;
        if (*len + (plain ? 1 : 3) >= MCP_PATH_MAX)
            return false;
        if (plain) {
            out->path[(*len)++] = (char)*p;
        } else {
            out->path[(*len)++] = '%';
            out->path[(*len)++] = hex[*p >> 4];
            out->path[(*len)++] = hex[*p & 15];
        }
    }
    out->path[*len] = '\0';
    return true;
}

static int build_path(const struct mcp_tool *t, const struct json_object *args,
                      struct mcp_rest_call *out, size_t *len, char *why, size_t why_len)
{
    size_t arg = 0;
    for (const char *p = t->pattern; *p != '\0';) {
        const char *open = strchr(p, '{');
        size_t literal = open ? (size_t)(open - p) : strlen(p);
        char chunk[MCP_PATH_MAX];
        snprintf(chunk, sizeof chunk, "%.*s", (int)literal, p);
        if (!append(out, len, chunk, false))
            return fail(why, why_len, "the path is too long");
        if (open == NULL)
            break;
        p = strchr(open, '}') + 1;
        const char *name = arg < MCP_PATH_ARGS_MAX ? t->path_args[arg++] : NULL;
        struct json_object *value;
        if (name == NULL)
            return fail(why, why_len, "the tool %s does not match its route", t->name);
        if (!json_object_object_get_ex(args, name, &value) ||
            !json_object_is_type(value, json_type_string) ||
            json_object_get_string_len(value) == 0 ||
            json_object_get_string_len(value) > MCP_ARGUMENT_MAX)
            return fail(why, why_len, "%s is required: a string of 1 to %d bytes (%s)", name,
                        MCP_ARGUMENT_MAX, path_arg_description(name));
        if (!append(out, len, json_object_get_string(value), true))
            return fail(why, why_len, "the path is too long");
    }
    return 0;
}

/* One query argument as text, checked against its declared type. */
static bool query_value(const struct json_object *decl, struct json_object *value, char *text,
                        size_t text_len)
{
    struct json_object *type;
    const char *want =
        json_object_object_get_ex(decl, "type", &type) ? json_object_get_string(type) : "string";
    if (strcmp(want, "boolean") == 0 && json_object_is_type(value, json_type_boolean)) {
        snprintf(text, text_len, "%s", json_object_get_boolean(value) ? "true" : "false");
        return true;
    }
    struct json_object *max;
    int max_len = json_object_object_get_ex(decl, "maxLength", &max) ? json_object_get_int(max)
                                                                     : MCP_ARGUMENT_MAX;
    if (strcmp(want, "string") == 0 && json_object_is_type(value, json_type_string) &&
        json_object_get_string_len(value) > 0 && json_object_get_string_len(value) <= max_len) {
        snprintf(text, text_len, "%s", json_object_get_string(value));
        return true;
    }
    if (strcmp(want, "integer") == 0 && json_object_is_type(value, json_type_int)) {
        snprintf(text, text_len, "%lld", (long long)json_object_get_int64(value));
        return true;
    }
    return false;
}

static int build_query(const struct mcp_tool *t, const struct json_object *args,
                       struct mcp_rest_call *out, size_t *len, char *why, size_t why_len)
{
    struct json_object *query = t->query ? json_tokener_parse(t->query) : NULL;
    int rc = 0;
    char sep = '?';
    if (query != NULL) {
        json_object_object_foreach(query, name, decl)
        {
            struct json_object *value;
            char text[MCP_CURSOR_MAX + 1], head[2] = {sep, '\0'};
            if (!json_object_object_get_ex(args, name, &value))
                continue;
            if (!query_value(decl, value, text, sizeof text)) {
                rc = fail(why, why_len, "%s must be a %s", name,
                          json_object_get_string(json_object_object_get(decl, "type")));
                break;
            }
            if (!append(out, len, head, false) || !append(out, len, name, true) ||
                !append(out, len, "=", false) || !append(out, len, text, true)) {
                rc = fail(why, why_len, "the query is too long");
                break;
            }
            sep = '&';
        }
        json_object_put(query);
    }
    if (rc == 0 && t->fixed_query != NULL) {
        char head[2] = {sep, '\0'};
        if (!append(out, len, head, false) || !append(out, len, t->fixed_query, false))
            rc = fail(why, why_len, "the query is too long");
    }
    return rc;
}

static bool is_query_arg(const struct mcp_tool *t, const char *name)
{
    struct json_object *query = t->query ? json_tokener_parse(t->query) : NULL;
    bool found = json_object_object_get_ex(query, name, NULL);
    json_object_put(query);
    return found;
}

/* The body (a new object, or NULL for none), or -1 with why. */
static int build_body(const struct mcp_tool *t, const struct route *row,
                      const struct json_object *args, struct json_object **body, char *why,
                      size_t why_len)
{
    *body = NULL;
    struct json_object *members =
        takes_body(t, row) && t->body_member == NULL ? json_object_new_object() : NULL;
    json_object_object_foreach((struct json_object *)args, name, value)
    {
        if (is_path_arg(t, name) || is_query_arg(t, name))
            continue;
        if (t->body_member != NULL && strcmp(name, t->body_member) == 0) {
            if (!json_object_is_type(value, json_type_object)) {
                json_object_put(members);
                return fail(why, why_len, "%s must be an object", name);
            }
            *body = json_object_get(value);
        } else if (members != NULL) {
            json_object_object_add(members, name, json_object_get(value));
        } else {
            json_object_put(*body);
            *body = NULL;
            return fail(why, why_len, "the tool %s takes no argument %.64s", t->name, name);
        }
    }
    if (t->body_member != NULL && *body == NULL)
        return fail(why, why_len, "%s is required: an object", t->body_member);
    if (members != NULL)
        *body = members;
    return 0;
}

int mcp_tool_request(const struct route *routes, size_t count, const char *name,
                     const struct json_object *arguments, struct mcp_rest_call *out, char *why,
                     size_t why_len)
{
    memset(out, 0, sizeof *out);
    const struct mcp_tool *t = tool_named(name);
    const struct route *row = t ? row_of(t, routes, count) : NULL;
    if (row == NULL)
        return fail(why, why_len, "unknown tool %.64s (tools/list names the tools)",
                    name ? name : "");
    struct json_object *empty = arguments == NULL ? json_object_new_object() : NULL;
    const struct json_object *args = arguments ? arguments : empty;
    size_t len = 0;
    struct json_object *body = NULL;
    int rc = build_path(t, args, out, &len, why, why_len);
    if (rc == 0)
        rc = build_query(t, args, out, &len, why, why_len);
    if (rc == 0)
        rc = build_body(t, row, args, &body, why, why_len);
    if (rc == 0 && body != NULL) {
        out->body = strdup(json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
        if (out->body == NULL)
            rc = fail(why, why_len, "out of memory");
    }
    json_object_put(body);
    json_object_put(empty);
    out->method = t->method;
    return rc;
}
