/*
 * eval_spec.c - a snapshot from an evaluator case file (see eval_spec.h).
 */
#include "eval_spec.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>

#include "eval/snapshot_build.h"

struct json_object *eval_spec_member(struct json_object *obj, const char *name)
{
    struct json_object *v = NULL;
    if (json_object_is_type(obj, json_type_object))
        json_object_object_get_ex(obj, name, &v);
    return v;
}

const char *eval_spec_string(struct json_object *obj, const char *name, const char *fallback)
{
    struct json_object *v = eval_spec_member(obj, name);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : fallback;
}

size_t eval_spec_length(struct json_object *list)
{
    return json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
}

const char *eval_spec_text(struct json_object *obj)
{
    return obj != NULL ? json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN) : NULL;
}

/* Conditions or a serve for the builder: a string as it is, anything else
 * serialized, NULL when absent. */
static const char *builder_text(struct json_object *obj, const char *name)
{
    struct json_object *v = eval_spec_member(obj, name);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : eval_spec_text(v);
}

static size_t items(struct json_object *list)
{
    size_t n = eval_spec_length(list);
    return n < EVAL_SPEC_MAX_ITEMS ? n : EVAL_SPEC_MAX_ITEMS;
}

struct spec_build {
    struct snapshot_builder *b;
    int refused;
};

static void count(struct spec_build *sb, int rc)
{
    if (rc != 0)
        sb->refused++;
}

static void add_entities(struct spec_build *sb, struct json_object *entities)
{
    for (size_t i = 0; i < items(entities); i++) {
        struct json_object *e = json_object_array_get_idx(entities, i);
        struct json_object *attrs = eval_spec_member(e, "attributes");
        for (size_t k = 0; k < items(attrs); k++) {
            struct json_object *a = json_object_array_get_idx(attrs, k);
            count(sb,
                  snapshot_builder_add_entity_attribute(
                      sb->b, EVAL_SPEC_ORG_ID, eval_spec_string(e, "key", ""),
                      eval_spec_string(a, "key", ""), eval_spec_string(a, "dataType", "string")));
        }
    }
}

static void add_segments(struct spec_build *sb, struct json_object *segments)
{
    for (size_t i = 0; i < items(segments); i++) {
        struct json_object *g = json_object_array_get_idx(segments, i);
        count(sb,
              snapshot_builder_add_segment(sb->b, EVAL_SPEC_ORG_ID, eval_spec_string(g, "key", ""),
                                           builder_text(g, "conditions")));
    }
}

static void add_rules(struct spec_build *sb, struct json_object *flag)
{
    const char *key = eval_spec_string(flag, "key", "");
    if (eval_spec_member(flag, "conditions") != NULL)
        count(sb,
              snapshot_builder_add_rule(sb->b, EVAL_SPEC_ENV_ID, key, "r1",
                                        builder_text(flag, "conditions"), "{\"variant\":\"on\"}"));
    struct json_object *rules = eval_spec_member(flag, "rules");
    for (size_t i = 0; i < items(rules); i++) {
        struct json_object *r = json_object_array_get_idx(rules, i);
        char id[32];
        snprintf(id, sizeof id, "r%zu", i + 1);
        count(sb,
              snapshot_builder_add_rule(sb->b, EVAL_SPEC_ENV_ID, key, eval_spec_string(r, "id", id),
                                        builder_text(r, "conditions"), builder_text(r, "serve")));
    }
}

static void add_flag(struct spec_build *sb, struct json_object *flag)
{
    static const struct snapshot_variant_input on_off[] = {{"on", "true"}, {"off", "false"}};
    struct snapshot_variant_input variants[EVAL_SPEC_MAX_ITEMS];
    bool shorthand = eval_spec_member(flag, "type") == NULL;
    struct json_object *list = eval_spec_member(flag, "variants");
    size_t n = shorthand ? 2 : items(list);
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = shorthand ? NULL : json_object_array_get_idx(list, i);
        const char *value = shorthand ? NULL : eval_spec_text(eval_spec_member(v, "value"));
        variants[i] = shorthand ? on_off[i]
                                : (struct snapshot_variant_input){eval_spec_string(v, "key", ""),
                                                                  value ? value : "null"};
    }
    struct json_object *enabled = eval_spec_member(flag, "enabled");
    const char *default_serve = builder_text(flag, "defaultServe");
    struct snapshot_flag_input in = {
        .env_id = EVAL_SPEC_ENV_ID,
        .flag_id = eval_spec_string(flag, "id", eval_spec_string(flag, "key", "")),
        .flag_key = eval_spec_string(flag, "key", ""),
        .type = eval_spec_string(flag, "type", "boolean"),
        .enabled = enabled == NULL || json_object_get_boolean(enabled),
        .off_variant_key = eval_spec_string(flag, "offVariantKey", shorthand ? "off" : NULL),
        .default_serve_json = default_serve ? default_serve : "{\"variant\":\"off\"}",
        .variants = variants,
        .variant_count = n,
    };
    int rc = snapshot_builder_add_flag(sb->b, &in);
    count(sb, rc);
    if (rc == 0)
        add_rules(sb, flag);
}

int eval_spec_write(struct json_object *spec, uint64_t generation, const char *path, char *err,
                    size_t errlen)
{
    struct spec_build sb = {snapshot_builder_new(generation), 0};
    if (sb.b == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    count(&sb, snapshot_builder_add_environment(sb.b, EVAL_SPEC_ENV_ID, EVAL_SPEC_ORG_ID,
                                                EVAL_SPEC_ENV_KEY));
    count(&sb, snapshot_builder_add_sdk_key(sb.b, EVAL_SPEC_SDK_DIGEST, EVAL_SPEC_ENV_ID));
    add_entities(&sb, eval_spec_member(spec, "entities"));
    add_segments(&sb, eval_spec_member(spec, "segments"));
    struct json_object *flags = eval_spec_member(spec, "flags");
    for (size_t i = 0; i < items(flags); i++)
        add_flag(&sb, json_object_array_get_idx(flags, i));
    int rc = snapshot_builder_write(sb.b, path, err, errlen) == 0 ? sb.refused : -1;
    snapshot_builder_free(sb.b);
    return rc;
}
