/*
 * fuzz_validate.c - libFuzzer target: management validation
 * (src/mgmt/validate.c).
 *
 * The input is a management request body, read as http.c reads one
 * (fuzz_json_guarded: json_guard, json-c, the duplicate check, and the
 * guard's promises checked). The target runs the helpers the
 * flag, rule and segment resources run on it: the conditions of a rule
 * ("conditions", segments allowed) and of a segment ("segmentConditions",
 * segments refused), a serve ("serve"), a key, a name, a priority, tags and
 * a variant value of each flag type ("value"), plus the pure checks on the
 * raw text (UTF-8 length, key, uuid, semver, timestamp, slug). Oracles:
 * no crash, leak or UB; a value reported VALIDATE_SET keeps its rule (a key
 * matches the key pattern, an integer is in bounds, a slug is a key or
 * empty); the canonical form of a valid serve validates again; the errors
 * collected form a JSON object whose text json-c reads back.
 *
 * The body is also checked against request schemas of the route table
 * (src/mgmt/jsonschema.c): it answers as its collector does, its errors
 * read back, and a rule body the schema accepts passes validate.c's own
 * field helpers for the members the handler then reads without checking.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounts/schemas.h"
#include "api/flagschemas.h"
#include "fuzz_common.h"
#include "mgmt/jsonschema.h"
#include "mgmt/validate.h"

static bool segment_exists(void *arg, const char *key)
{
    (void)arg;
    return key[0] == 's';
}

static enum validate_attr_ref entity_attribute(void *arg, const char *entity, const char *attribute)
{
    (void)arg;
    if (strcmp(entity, "user") != 0)
        return VALIDATE_ATTR_NOT_ENTITY;
    return strcmp(attribute, "age") == 0 || strcmp(attribute, "plan") == 0
               ? VALIDATE_ATTR_DECLARED
               : VALIDATE_ATTR_UNDECLARED;
}

static bool variant_exists(void *arg, const char *key)
{
    (void)arg;
    return strcmp(key, "on") == 0 || strcmp(key, "off") == 0 || strcmp(key, "a") == 0;
}

static const struct validate_refs refs = {NULL, segment_exists, entity_attribute, variant_exists};

static void require(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_validate: %s\n", what);
        abort();
    }
}

/* A serve that validated: its canonical copy validates too. */
static void check_serve_canonical(struct json_object *serve)
{
    struct json_object *canonical = validate_serve_canonical(serve);
    require(canonical != NULL, "no canonical form of a valid serve");
    struct validate v;
    validate_init(&v);
    validate_serve_value(&v, canonical, &refs);
    require(validate_ok(&v), "the canonical form of a valid serve does not validate");
    validate_free(&v);
    json_object_put(canonical);
}

static void check_serve(struct json_object *body)
{
    struct validate v;
    validate_init(&v);
    struct json_object *serve = NULL;
    if (validate_serve(&v, body, "serve", 0, &refs, &serve) == VALIDATE_SET && validate_ok(&v))
        check_serve_canonical(serve);
    validate_free(&v);
}

static void check_fields(struct validate *v, struct json_object *body)
{
    static const char *const allowed[] = {"key",   "name",       "priority",          "tags",
                                          "serve", "conditions", "segmentConditions", "value",
                                          NULL};
    validate_only_fields(v, body, allowed);
    const char *key = NULL, *name = NULL;
    if (validate_key(v, body, "key", VALIDATE_REQUIRED, &key) == VALIDATE_SET)
        require(validate_key_ok(key), "an accepted key breaks the key pattern");
    if (validate_string(v, body, "name", 1, 100, VALIDATE_NULLABLE, &name) == VALIDATE_SET) {
        long n = validate_utf8_length(name, strlen(name));
        require(n >= 1 && n <= 100, "an accepted name of the wrong length");
    }
    int64_t priority = 0;
    if (validate_int(v, body, "priority", 0, VALIDATE_PRIORITY_MAX, 0, &priority) == VALIDATE_SET)
        require(priority >= 0 && priority <= VALIDATE_PRIORITY_MAX, "a priority out of bounds");
    struct json_object *tags = NULL;
    validate_string_array(v, body, "tags", 20, 1, 50, 0, &tags);
    struct json_object *conditions = NULL;
    validate_conditions(v, body, "conditions", true, &refs, &conditions);
    validate_conditions(v, body, "segmentConditions", false, &refs, &conditions);
    struct json_object *value = NULL;
    if (json_object_object_get_ex(body, "value", &value)) {
        for (int type = FLAG_TYPE_BOOLEAN; type <= FLAG_TYPE_JSON; type++)
            validate_variant_value(v, "value", value, (enum validate_flag_type)type);
        json_object_put(validate_number_canonical(value));
    }
}

static void check_errors(struct validate *v)
{
    struct json_object *errors = validate_take_errors(v);
    if (errors == NULL)
        return;
    require(json_object_is_type(errors, json_type_object), "errors are not an object");
    const char *text = json_object_to_json_string_ext(errors, JSON_C_TO_STRING_PLAIN);
    struct json_object *back = json_tokener_parse(text);
    require(back != NULL, "the errors object does not read back");
    json_object_put(back);
    json_object_put(errors);
}

/* A rule body the schema took: the members rules.c reads unchecked hold. */
static void check_accepted_rule(struct json_object *body)
{
    struct validate v;
    validate_init(&v);
    validate_string(&v, body, "description", 0, 500, VALIDATE_NULLABLE, NULL);
    validate_int(&v, body, "priority", 0, VALIDATE_PRIORITY_MAX, 0, NULL);
    require(validate_ok(&v), "a rule body the schema accepts fails validate.c's field helpers");
    validate_free(&v);
}

static void check_schemas(struct json_object *body)
{
    static const char *const texts[] = {flagschema_rule_create,  flagschema_rule_replace,
                                        flagschema_flag_create,  flagschema_configure,
                                        schema_acc_token_create, schema_acc_profile};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const struct json_object *schema = jsonschema_parsed(texts[i]);
        require(schema != NULL, "a request schema does not parse");
        struct validate v;
        validate_init(&v);
        bool ok = jsonschema_check(&v, schema, body);
        require(ok == validate_ok(&v), "jsonschema_check disagrees with its collector");
        if (ok && texts[i] == flagschema_rule_create)
            check_accepted_rule(body);
        check_errors(&v);
        validate_free(&v);
    }
}

/* The pure checks, on the raw text. */
static void check_text(const char *text, size_t size)
{
    (void)validate_utf8_length(text, size);
    (void)validate_uuid_ok(text);
    (void)validate_semver_ok(text);
    int64_t ms;
    (void)validate_timestamp_parse(text, &ms);
    (void)cond_op_from_name(text);
    (void)validate_flag_type_from_name(text);
    char slug[VALIDATE_KEY_MAX + 1];
    validate_slugify(text, slug);
    require(slug[0] == '\0' || validate_key_ok(slug), "a slug that is not a key");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    check_text(text, size);
    free(text);
    struct json_object *body = fuzz_json_guarded(data, size);
    if (json_object_is_type(body, json_type_object)) {
        struct validate v;
        validate_init(&v);
        check_fields(&v, body);
        check_errors(&v);
        validate_free(&v);
        check_serve(body);
        check_schemas(body);
    }
    json_object_put(body);
    return 0;
}
