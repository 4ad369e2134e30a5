/*
 * agent_tools.c - the agent's tools as REST requests, and the checks a
 * proposal passes before it is shown (see agent_tools.h).
 */
#include "agent/agent_tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/router.h"

enum tool_shape {
    SHAPE_BODY,        /* input is the body */
    SHAPE_ENV_CHANGES, /* {flag, environment, changes} */
    SHAPE_ENV_RULE,    /* {flag, environment, rule} */
    SHAPE_FLAG,        /* {flag} */
    SHAPE_SCHEDULE,    /* {flag, environment, at, changes} */
    SHAPE_REVISION     /* {flag, revision} */
};

struct tool {
    const char *name;
    enum tool_shape shape;
    unsigned method;
    const char *suffix; /* after /v1/orgs/{org} (and the flag and environment) */
    const char *description;
};

static const struct tool tools[] = {
    {"create_flag", SHAPE_BODY, METHOD_POST, "/flags",
     "Create a flag (the POST /v1/orgs/{org}/flags body: slug, type, variants, tags, "
     "description)"},
    {"update_flag_environment", SHAPE_ENV_CHANGES, METHOD_PATCH, "",
     "Configure a flag in an environment: changes is the environment PATCH body (enabled, "
     "defaultVariantKey, offVariantKey, defaultServe)"},
    {"add_rule", SHAPE_ENV_RULE, METHOD_POST, "/rules",
     "Append a targeting rule (serve, conditions, description) to a flag in an environment"},
    {"archive_flag", SHAPE_FLAG, METHOD_POST, "/archive", "Archive a flag"},
    {"restore_flag", SHAPE_FLAG, METHOD_POST, "/restore", "Restore an archived flag"},
    {"create_segment", SHAPE_BODY, METHOD_POST, "/segments",
     "Create a segment (the POST /v1/orgs/{org}/segments body: key, name, description, "
     "conditions)"},
    {"schedule_change", SHAPE_SCHEDULE, METHOD_POST, "/schedules",
     "Schedule an environment change of a flag: at (ISO 8601 UTC, 10 s to 366 days ahead) "
     "applies changes (the environment PATCH body) to the flag in the environment"},
    {"restore_revision", SHAPE_REVISION, METHOD_POST, "/restore",
     "Restore a flag's targeting as it was after one of its revisions (by revision id), as a "
     "new revision"},
};

#define TOOL_COUNT (sizeof tools / sizeof tools[0])

static const struct tool *tool_named(const char *name)
{
    for (size_t i = 0; name != NULL && i < TOOL_COUNT; i++) {
        if (strcmp(tools[i].name, name) == 0)
            return &tools[i];
    }
    return NULL;
}

bool agent_tool_known(const char *name)
{
    return tool_named(name) != NULL;
}

/* The members of input a tool's shape needs; recorded in v when missing. */
struct tool_input {
    const char *flag, *environment, *at, *revision;
    struct json_object *body; /* changes, rule, or the input itself */
};

static void object_member(struct validate *v, const struct json_object *input, const char *name,
                          struct json_object **out)
{
    struct json_object *value;
    if (!json_object_object_get_ex(input, name, &value))
        validate_error(v, name, "is required");
    else if (!json_object_is_type(value, json_type_object))
        validate_error(v, name, "must be an object");
    else
        *out = value;
}

static bool read_input(const struct tool *t, const struct json_object *input, struct validate *v,
                       struct tool_input *in)
{
    memset(in, 0, sizeof *in);
    size_t mark = validate_push_field(v, "input");
    if (!json_object_is_type(input, json_type_object)) {
        validate_error(v, NULL, "must be an object");
        validate_pop(v, mark);
        return false;
    }
    static const char *const env_changes[] = {"flag", "environment", "changes", NULL};
    static const char *const env_rule[] = {"flag", "environment", "rule", NULL};
    static const char *const flag_only[] = {"flag", NULL};
    static const char *const schedule[] = {"flag", "environment", "at", "changes", NULL};
    static const char *const revision[] = {"flag", "revision", NULL};
    switch (t->shape) {
    case SHAPE_BODY:
        in->body = (struct json_object *)input;
        break;
    case SHAPE_ENV_CHANGES:
    case SHAPE_ENV_RULE:
        validate_only_fields(v, input, t->shape == SHAPE_ENV_RULE ? env_rule : env_changes);
        validate_key(v, input, "flag", VALIDATE_REQUIRED, &in->flag);
        validate_key(v, input, "environment", VALIDATE_REQUIRED, &in->environment);
        object_member(v, input, t->shape == SHAPE_ENV_RULE ? "rule" : "changes", &in->body);
        break;
    case SHAPE_FLAG:
        validate_only_fields(v, input, flag_only);
        validate_key(v, input, "flag", VALIDATE_REQUIRED, &in->flag);
        break;
    case SHAPE_SCHEDULE:
        validate_only_fields(v, input, schedule);
        validate_key(v, input, "flag", VALIDATE_REQUIRED, &in->flag);
        validate_key(v, input, "environment", VALIDATE_REQUIRED, &in->environment);
        validate_string(v, input, "at", 1, 64, VALIDATE_REQUIRED, &in->at);
        object_member(v, input, "changes", &in->body);
        break;
    case SHAPE_REVISION:
        validate_only_fields(v, input, revision);
        validate_key(v, input, "flag", VALIDATE_REQUIRED, &in->flag);
        if (validate_string(v, input, "revision", 36, 36, VALIDATE_REQUIRED, &in->revision) ==
                VALIDATE_SET &&
            strspn(in->revision, "0123456789abcdef-") != 36)
            validate_error(v, "revision", "must be a revision id");
        break;
    }
    validate_pop(v, mark);
    return validate_ok(v);
}

int agent_tool_request(const char *tool, const struct json_object *input, const char *org_slug,
                       struct agent_rest_call *out, struct validate *v)
{
    memset(out, 0, sizeof *out);
    const struct tool *t = tool_named(tool);
    if (t == NULL) {
        validate_error(v, "tool",
                       "unknown tool; the tools are create_flag, "
                       "update_flag_environment, add_rule, archive_flag, "
                       "restore_flag, create_segment, schedule_change, restore_revision");
        return -1;
    }
    struct tool_input in;
    if (!read_input(t, input, v, &in))
        return -1;
    out->method = t->method;
    if (t->shape == SHAPE_BODY)
        snprintf(out->path, sizeof out->path, "/v1/orgs/%s%s", org_slug, t->suffix);
    else if (t->shape == SHAPE_FLAG || t->shape == SHAPE_SCHEDULE)
        snprintf(out->path, sizeof out->path, "/v1/orgs/%s/flags/%s%s", org_slug, in.flag,
                 t->suffix);
    else if (t->shape == SHAPE_REVISION)
        snprintf(out->path, sizeof out->path, "/v1/orgs/%s/flags/%s/revisions/%s%s", org_slug,
                 in.flag, in.revision, t->suffix);
    else
        snprintf(out->path, sizeof out->path, "/v1/orgs/%s/flags/%s/environments/%s%s", org_slug,
                 in.flag, in.environment, t->suffix);
    struct json_object *schedule = NULL;
    if (t->shape == SHAPE_SCHEDULE) { /* the schedules route's body */
        schedule = json_object_new_object();
        json_object_object_add(schedule, "at", json_object_new_string(in.at));
        json_object_object_add(schedule, "environment", json_object_new_string(in.environment));
        json_object_object_add(schedule, "changes", json_object_get(in.body));
        in.body = schedule;
    }
    if (in.body != NULL) {
        out->body = strdup(json_object_to_json_string_ext(in.body, JSON_C_TO_STRING_PLAIN));
        json_object_put(schedule);
        if (out->body == NULL) {
            validate_error(v, NULL, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* ---- checks against the catalogue ---- */

static bool refs_variant(void *arg, const char *key)
{
    return agent_flag_has_variant(arg, key);
}

static bool refs_segment(void *arg, const char *key)
{
    return agent_catalog_has_segment(arg, key);
}

static void check_changes(struct validate *v, const struct json_object *flag,
                          const struct json_object *changes)
{
    static const char *const allowed[] = {"enabled", "defaultVariantKey", "offVariantKey",
                                          "defaultServe", NULL};
    struct validate_refs refs = {.arg = (void *)flag, .variant_exists = refs_variant};
    size_t mark = validate_push_field(v, "input.changes");
    validate_only_fields(v, changes, allowed);
    bool enabled;
    validate_bool(v, changes, "enabled", 0, &enabled);
    static const char *const keys[] = {"defaultVariantKey", "offVariantKey"};
    for (size_t i = 0; i < 2; i++) {
        const char *key;
        if (validate_string(v, changes, keys[i], 1, VALIDATE_KEY_MAX, 0, &key) == VALIDATE_SET &&
            !agent_flag_has_variant(flag, key))
            validate_error(v, keys[i], "the flag has no variant %s", key);
    }
    struct json_object *serve;
    validate_serve(v, changes, "defaultServe", 0, &refs, &serve);
    if (json_object_object_length(changes) == 0)
        validate_error(v, NULL, "names no change");
    validate_pop(v, mark);
}

static void check_rule(struct validate *v, const struct agent_catalog *c,
                       const struct json_object *flag, const struct json_object *rule)
{
    static const char *const allowed[] = {"serve", "description", "conditions", "priority", NULL};
    struct validate_refs variant_refs = {.arg = (void *)flag, .variant_exists = refs_variant};
    struct validate_refs segment_refs = {.arg = (void *)c, .segment_exists = refs_segment};
    size_t mark = validate_push_field(v, "input.rule");
    validate_only_fields(v, rule, allowed);
    struct json_object *out;
    validate_serve(v, rule, "serve", VALIDATE_REQUIRED, &variant_refs, &out);
    validate_conditions(v, rule, "conditions", true, &segment_refs, &out);
    const char *description;
    validate_string(v, rule, "description", 0, 500, VALIDATE_NULLABLE, &description);
    int64_t priority;
    validate_int(v, rule, "priority", 0, VALIDATE_PRIORITY_MAX, 0, &priority);
    validate_pop(v, mark);
}

static void check_new_flag(struct validate *v, const struct agent_catalog *c,
                           const struct json_object *body)
{
    static const char *const allowed[] = {"slug", "description", "type", "variants", "tags", NULL};
    size_t mark = validate_push_field(v, "input");
    validate_only_fields(v, body, allowed);
    const char *slug, *type = "boolean";
    if (validate_key(v, body, "slug", VALIDATE_REQUIRED, &slug) == VALIDATE_SET &&
        agent_catalog_flag(c, slug) != NULL)
        validate_error(v, "slug", "a flag %s exists already", slug);
    if (validate_string(v, body, "type", 1, 10, 0, &type) == VALIDATE_SET &&
        validate_flag_type_from_name(type) < 0)
        validate_error(v, "type", "must be boolean, string, number or json");
    struct json_object *variants;
    if (validate_array(v, body, "variants", 0, 64, 0, &variants) == VALIDATE_SET) {
        int flag_type = validate_flag_type_from_name(type);
        size_t list_mark = validate_push_field(v, "variants");
        for (size_t i = 0; flag_type >= 0 && i < json_object_array_length(variants); i++) {
            size_t at = validate_push_index(v, i);
            struct json_object *item = json_object_array_get_idx(variants, i), *value;
            if (!json_object_is_type(item, json_type_object) ||
                !json_object_object_get_ex(item, "value", &value))
                validate_error(v, NULL, "must be an object with a value");
            else if (flag_type == FLAG_TYPE_BOOLEAN)
                validate_error(v, NULL, "boolean flags have the fixed variants on and off");
            else
                validate_variant_value(v, "value", value, (enum validate_flag_type)flag_type);
            validate_pop(v, at);
        }
        validate_pop(v, list_mark);
    }
    validate_pop(v, mark);
}

static void check_new_segment(struct validate *v, const struct agent_catalog *c,
                              const struct json_object *body)
{
    static const char *const allowed[] = {"key", "name", "description", "conditions", NULL};
    size_t mark = validate_push_field(v, "input");
    validate_only_fields(v, body, allowed);
    const char *key, *name;
    if (validate_key(v, body, "key", VALIDATE_REQUIRED, &key) == VALIDATE_SET &&
        agent_catalog_has_segment(c, key))
        validate_error(v, "key", "a segment %s exists already", key);
    validate_string(v, body, "name", 1, 200, VALIDATE_REQUIRED, &name);
    struct json_object *out;
    validate_conditions(v, body, "conditions", false, NULL, &out);
    validate_pop(v, mark);
}

/* The flag a flag tool names, after checking it exists (and the environment). */
static const struct json_object *check_target(struct validate *v, const struct agent_catalog *c,
                                              const struct tool_input *in)
{
    const struct json_object *flag = agent_catalog_flag(c, in->flag);
    if (flag == NULL) {
        const char *closest = agent_closest(c->flags, in->flag);
        validate_error(v, "input.flag", "no flag %s%s%s", in->flag, closest ? "; closest: " : "",
                       closest ? closest : "");
    }
    if (in->environment != NULL && !agent_catalog_has_env(c, in->environment)) {
        const char *closest = agent_closest(c->environments, in->environment);
        validate_error(v, "input.environment", "no environment %s%s%s", in->environment,
                       closest ? "; closest: " : "", closest ? closest : "");
    }
    return validate_ok(v) ? flag : NULL;
}

static void errors_line(struct validate *v, char *why, size_t why_len)
{
    struct json_object *errors = validate_take_errors(v);
    snprintf(why, why_len, "%s",
             errors ? json_object_to_json_string_ext(errors, JSON_C_TO_STRING_PLAIN) : "invalid");
    json_object_put(errors);
}

bool agent_tool_check(const struct agent_catalog *c, const char *tool,
                      const struct json_object *input, char *why, size_t why_len)
{
    struct validate v;
    validate_init(&v);
    const struct tool *t = tool_named(tool);
    struct tool_input in;
    if (t == NULL) {
        validate_error(&v, "tool", "unknown tool %s", tool ? tool : "(none)");
    } else if (read_input(t, input, &v, &in)) {
        const struct json_object *flag = NULL;
        if (t->shape != SHAPE_BODY)
            flag = check_target(&v, c, &in);
        if (strcmp(t->name, "create_flag") == 0)
            check_new_flag(&v, c, in.body);
        else if (strcmp(t->name, "create_segment") == 0)
            check_new_segment(&v, c, in.body);
        else if (flag != NULL && (t->shape == SHAPE_ENV_CHANGES || t->shape == SHAPE_SCHEDULE))
            check_changes(&v, flag, in.body);
        else if (flag != NULL && t->shape == SHAPE_ENV_RULE)
            check_rule(&v, c, flag, in.body);
    }
    if (validate_ok(&v))
        return true;
    errors_line(&v, why, why_len);
    return false;
}

static const char *member_text(const struct json_object *obj, const char *name)
{
    struct json_object *value;
    if (!json_object_object_get_ex(obj, name, &value) || value == NULL)
        return "?";
    return json_object_is_type(value, json_type_string)
               ? json_object_get_string(value)
               : json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN);
}

void agent_tool_summary(const char *tool, const struct json_object *input, char *out,
                        size_t out_len)
{
    if (strcmp(tool, "update_flag_environment") == 0) {
        snprintf(out, out_len, "configure the flag %s in %s: %s", member_text(input, "flag"),
                 member_text(input, "environment"), member_text(input, "changes"));
    } else if (strcmp(tool, "add_rule") == 0) {
        snprintf(out, out_len, "add a rule to the flag %s in %s: %s", member_text(input, "flag"),
                 member_text(input, "environment"), member_text(input, "rule"));
    } else if (strcmp(tool, "archive_flag") == 0 || strcmp(tool, "restore_flag") == 0) {
        snprintf(out, out_len, "%s the flag %s", tool[0] == 'a' ? "archive" : "restore",
                 member_text(input, "flag"));
    } else if (strcmp(tool, "schedule_change") == 0) {
        snprintf(out, out_len, "at %s, configure the flag %s in %s: %s", member_text(input, "at"),
                 member_text(input, "flag"), member_text(input, "environment"),
                 member_text(input, "changes"));
    } else if (strcmp(tool, "restore_revision") == 0) {
        snprintf(out, out_len, "restore the flag %s to revision %s", member_text(input, "flag"),
                 member_text(input, "revision"));
    } else if (strcmp(tool, "create_flag") == 0) {
        snprintf(out, out_len, "create the flag %s", member_text(input, "slug"));
    } else {
        snprintf(out, out_len, "create the segment %s", member_text(input, "key"));
    }
}

/* ---- the model's view of the tools ---- */

static const char *const tool_parameters[] = {
    /* create_flag */
    "{\"type\":\"object\",\"required\":[\"slug\"],\"properties\":{\"slug\":{\"type\":\"string\"},"
    "\"type\":{\"enum\":[\"boolean\",\"string\",\"number\",\"json\"]},\"description\":{\"type\":"
    "\"string\"},\"variants\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":["
    "\"value\"],\"properties\":{\"value\":{},\"label\":{\"type\":\"string\"}}}},\"tags\":{\"type\""
    ":\"array\",\"items\":{\"type\":\"string\"}}}}",
    /* update_flag_environment */
    "{\"type\":\"object\",\"required\":[\"flag\",\"environment\",\"changes\"],\"properties\":{"
    "\"flag\":{\"type\":\"string\"},\"environment\":{\"type\":\"string\"},\"changes\":{\"type\":"
    "\"object\",\"properties\":{\"enabled\":{\"type\":\"boolean\"},\"defaultVariantKey\":{\"type\""
    ":\"string\"},\"offVariantKey\":{\"type\":\"string\"},\"defaultServe\":{\"type\":\"object\"}}}"
    "}}",
    /* add_rule */
    "{\"type\":\"object\",\"required\":[\"flag\",\"environment\",\"rule\"],\"properties\":{\"flag\""
    ":{\"type\":\"string\"},\"environment\":{\"type\":\"string\"},\"rule\":{\"type\":\"object\","
    "\"required\":[\"serve\"],\"properties\":{\"serve\":{\"type\":\"object\"},\"conditions\":{"
    "\"type\":\"array\"},\"description\":{\"type\":\"string\"}}}}}",
    /* archive_flag */
    "{\"type\":\"object\",\"required\":[\"flag\"],\"properties\":{\"flag\":{\"type\":\"string\"}}}",
    /* restore_flag */
    "{\"type\":\"object\",\"required\":[\"flag\"],\"properties\":{\"flag\":{\"type\":\"string\"}}}",
    /* create_segment */
    "{\"type\":\"object\",\"required\":[\"key\",\"name\"],\"properties\":{\"key\":{\"type\":"
    "\"string\"},\"name\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"},"
    "\"conditions\":{\"type\":\"array\"}}}",
    /* schedule_change */
    "{\"type\":\"object\",\"required\":[\"flag\",\"environment\",\"at\",\"changes\"],"
    "\"properties\":{\"flag\":{\"type\":\"string\"},\"environment\":{\"type\":\"string\"},"
    "\"at\":{\"type\":\"string\",\"format\":\"date-time\"},\"changes\":{\"type\":\"object\"}}}",
    /* restore_revision (parenthesized: clang's -Wstring-concatenation takes a
     * two-line literal at the end of a list for a missing comma) */
    ("{\"type\":\"object\",\"required\":[\"flag\",\"revision\"],\"properties\":{\"flag\":{"
     "\"type\":\"string\"},\"revision\":{\"type\":\"string\"}}}"),
};

_Static_assert(sizeof tool_parameters / sizeof tool_parameters[0] == TOOL_COUNT,
               "one parameters schema per tool");

struct json_object *agent_tools_openai(void)
{
    struct json_object *list = json_object_new_array();
    for (size_t i = 0; i < TOOL_COUNT; i++) {
        struct json_object *function = json_object_new_object(), *tool = json_object_new_object();
        json_object_object_add(function, "name", json_object_new_string(tools[i].name));
        json_object_object_add(function, "description",
                               json_object_new_string(tools[i].description));
        json_object_object_add(function, "parameters", json_tokener_parse(tool_parameters[i]));
        json_object_object_add(tool, "type", json_object_new_string("function"));
        json_object_object_add(tool, "function", function);
        json_object_array_add(list, tool);
    }
    return list;
}
