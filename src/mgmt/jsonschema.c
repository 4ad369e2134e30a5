/*
 * jsonschema.c - the JSON Schema subset of the request schemas (see
 * jsonschema.h).
 *
 * Owns the checking of one value against one schema, keyword by keyword,
 * with validate.c's messages; the list of the keywords and forms it
 * enforces (jsonschema_supported); the per-process cache of parsed schema
 * texts.
 *
 * Invariants: a value whose type is wrong gets one message and no deeper
 * check (as validate.c's helpers do); every other keyword records its own
 * message, so a body's errors are all reported at once. A oneOf or anyOf
 * of objects is decided by the first required member of each branch (its
 * discriminator: "variant" or "rollout", "attribute" or "segment"), giving
 * validate.c's "must have variant or rollout" and "must have either
 * variant or rollout, not both"; without one, by the one branch declaring
 * a member the object has; others by the one branch whose type admits the
 * value; failing both, each is tried in a scratch collector. The only
 * pattern is the key pattern (validate_key_ok), the only formats uuid,
 * date-time and email: jsonschema_supported refuses any other, so a schema
 * never promises a check that is not made.
 */
#include "mgmt/jsonschema.h"

#include <stdio.h>
#include <string.h>

/* ---- reading a schema ---- */

static struct json_object *keyword(const struct json_object *schema, const char *name)
{
    struct json_object *value = NULL;
    if (!json_object_is_type(schema, json_type_object) ||
        !json_object_object_get_ex(schema, name, &value))
        return NULL;
    return value;
}

/* ---- types ---- */

static bool is_type(const struct json_object *value, const char *type)
{
    struct json_object *val = (struct json_object *)value;
    int64_t n;
    if (strcmp(type, "null") == 0)
        return value == NULL;
    if (strcmp(type, "boolean") == 0)
        return json_object_is_type(val, json_type_boolean);
    if (strcmp(type, "string") == 0)
        return json_object_is_type(val, json_type_string);
    if (strcmp(type, "object") == 0)
        return json_object_is_type(val, json_type_object);
    if (strcmp(type, "array") == 0)
        return json_object_is_type(val, json_type_array);
    if (strcmp(type, "number") == 0)
        return json_object_is_type(val, json_type_int) ||
               json_object_is_type(val, json_type_double);
    if (strcmp(type, "integer") == 0)
        return validate_integral(val, &n);
    return false;
}

static const char *article(const char *type)
{
    return type[0] == 'a' || type[0] == 'i' || type[0] == 'o' ? "an " : "a ";
}

/* "must be a string", "must be a string, number or boolean", "must not be null". */
static void type_error(struct validate *v, const struct json_object *types,
                       const struct json_object *value)
{
    if (value == NULL) {
        validate_error(v, NULL, "must not be null");
        return;
    }
    const char *names[8];
    size_t n = 0;
    if (json_object_is_type(types, json_type_string)) {
        names[n++] = json_object_get_string((struct json_object *)types);
    } else {
        for (size_t i = 0; i < json_object_array_length(types) && n < 8; i++) {
            const char *name = json_object_get_string(json_object_array_get_idx(types, i));
            if (strcmp(name, "null") != 0)
                names[n++] = name;
        }
    }
    char text[128] = "must be ";
    size_t len = strlen(text);
    for (size_t i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int k = snprintf(text + len, sizeof text - len, "%s%s%s", sep,
                         i == 0 ? article(names[i]) : "", names[i]);
        if (k < 0 || (size_t)k >= sizeof text - len)
            break;
        len += (size_t)k;
    }
    validate_error(v, NULL, "%s", text);
}

/* True when value has one of the types of the type keyword (a name or a list). */
static bool type_ok(const struct json_object *types, const struct json_object *value)
{
    if (json_object_is_type(types, json_type_string))
        return is_type(value, json_object_get_string((struct json_object *)types));
    for (size_t i = 0; i < json_object_array_length(types); i++)
        if (is_type(value, json_object_get_string(json_object_array_get_idx(types, i))))
            return true;
    return false;
}

/* ---- enum ---- */

#define ENUM_LISTED_MAX 8 /* longer enums name the value instead of listing them */

static bool enum_has(const struct json_object *list, const struct json_object *value)
{
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        struct json_object *item = json_object_array_get_idx(list, i);
        if (json_object_equal(item, (struct json_object *)value))
            return true;
    }
    return false;
}

/* "must be one of a, b, c", or for a long list "unknown operator x". */
static void enum_error(struct validate *v, const struct json_object *list,
                       const struct json_object *value, const char *name)
{
    size_t n = json_object_array_length(list);
    if (n > ENUM_LISTED_MAX && name != NULL && json_object_is_type(value, json_type_string)) {
        validate_error(v, NULL, "unknown %s %s", name,
                       json_object_get_string((struct json_object *)value));
        return;
    }
    char text[200] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *item = json_object_array_get_idx(list, i);
        const char *word = json_object_is_type(item, json_type_string)
                               ? json_object_get_string(item)
                               : json_object_to_json_string_ext(item, JSON_C_TO_STRING_PLAIN);
        int k = snprintf(text + len, sizeof text - len, "%s%s", i ? ", " : "", word);
        if (k < 0 || (size_t)k >= sizeof text - len)
            break;
        len += (size_t)k;
    }
    validate_error(v, NULL, "must be one of %s", text);
}

/* ---- the keywords of each type ---- */

static void check_value(struct validate *v, const struct json_object *schema,
                        const struct json_object *value, const char *name, int depth);

static void check_string(struct validate *v, const struct json_object *schema,
                         const struct json_object *value)
{
    struct json_object *min = keyword(schema, "minLength"), *max = keyword(schema, "maxLength");
    if ((min || max) && !validate_length_ok(v, value, min ? (size_t)json_object_get_int64(min) : 0,
                                            max ? (size_t)json_object_get_int64(max) : SIZE_MAX))
        return;
    const char *s = json_object_get_string((struct json_object *)value);
    struct json_object *pattern = keyword(schema, "pattern");
    if (pattern != NULL && !validate_key_ok(s)) {
        validate_error(v, NULL, VALIDATE_KEY_MESSAGE);
        return;
    }
    const char *format = json_object_get_string(keyword(schema, "format"));
    if (format == NULL)
        return;
    if (strcmp(format, "uuid") == 0 && !validate_uuid_ok(s))
        validate_error(v, NULL, "must be a uuid");
    else if (strcmp(format, "date-time") == 0 && !validate_timestamp_parse(s, NULL))
        validate_error(v, NULL, "must be an ISO 8601 timestamp string");
    else if (strcmp(format, "email") == 0 &&
             !validate_email_ok(s, (size_t)json_object_get_string_len(value)))
        validate_error(v, NULL, "must be an email address");
}

static void check_number(struct validate *v, const struct json_object *schema,
                         const struct json_object *value)
{
    struct json_object *min = keyword(schema, "minimum"), *max = keyword(schema, "maximum");
    if (min == NULL && max == NULL)
        return;
    int64_t n;
    if (validate_integral(value, &n) && (min == NULL || json_object_is_type(min, json_type_int)) &&
        (max == NULL || json_object_is_type(max, json_type_int))) {
        long long lo = min ? (long long)json_object_get_int64(min) : 0;
        long long hi = max ? (long long)json_object_get_int64(max) : 0;
        if ((min && n < lo) || (max && n > hi)) {
            if (min && max)
                validate_error(v, NULL, "must be from %lld to %lld", lo, hi);
            else if (min)
                validate_error(v, NULL, "must be at least %lld", lo);
            else
                validate_error(v, NULL, "must be at most %lld", hi);
        }
        return;
    }
    double d = json_object_get_double((struct json_object *)value);
    if (min && d < json_object_get_double(min))
        validate_error(v, NULL, "must be at least %g", json_object_get_double(min));
    else if (max && d > json_object_get_double(max))
        validate_error(v, NULL, "must be at most %g", json_object_get_double(max));
}

static void check_array(struct validate *v, const struct json_object *schema,
                        const struct json_object *value, int depth)
{
    struct json_object *array = (struct json_object *)value;
    size_t n = json_object_array_length(array);
    struct json_object *min = keyword(schema, "minItems"), *max = keyword(schema, "maxItems");
    if (min && n < (size_t)json_object_get_int64(min)) {
        size_t m = (size_t)json_object_get_int64(min);
        validate_error(v, NULL, "must have at least %zu item%s", m, m == 1 ? "" : "s");
        return;
    }
    if (max && n > (size_t)json_object_get_int64(max)) {
        validate_error(v, NULL, "must have at most %zu items", (size_t)json_object_get_int64(max));
        return;
    }
    struct json_object *unique = keyword(schema, "uniqueItems");
    if (unique != NULL && json_object_get_boolean(unique)) {
        /* bounded: a schema with uniqueItems has maxItems <= UNIQUE_ITEMS_MAX */
        for (size_t i = 1; i < n; i++) {
            for (size_t j = 0; j < i; j++) {
                if (json_object_equal(json_object_array_get_idx(array, i),
                                      json_object_array_get_idx(array, j))) {
                    size_t mark = validate_push_index(v, i);
                    validate_error(v, NULL, "repeats item %zu", j);
                    validate_pop(v, mark);
                    return;
                }
            }
        }
    }
    struct json_object *items = keyword(schema, "items");
    for (size_t i = 0; items != NULL && i < n; i++) {
        size_t mark = validate_push_index(v, i);
        check_value(v, items, json_object_array_get_idx(array, i), NULL, depth + 1);
        validate_pop(v, mark);
    }
}

/* A member name the propertyNames enum does not list is an unknown field. */
static bool name_allowed(const struct json_object *names, const char *key)
{
    struct json_object *list = keyword(names, "enum");
    if (!json_object_is_type(list, json_type_array))
        return true;
    for (size_t i = 0; i < json_object_array_length(list); i++)
        if (strcmp(json_object_get_string(json_object_array_get_idx(list, i)), key) == 0)
            return true;
    return false;
}

static void check_member(struct validate *v, const struct json_object *schema, const char *key,
                         const struct json_object *member, int depth)
{
    struct json_object *properties = keyword(schema, "properties"), *sub = NULL;
    struct json_object *extra = keyword(schema, "additionalProperties");
    size_t mark = validate_push_field(v, key);
    if (properties != NULL && json_object_object_get_ex(properties, key, &sub))
        check_value(v, sub, member, key, depth + 1);
    else if (json_object_is_type(extra, json_type_boolean) && !json_object_get_boolean(extra))
        validate_error(v, NULL, "unknown field");
    else if (!name_allowed(keyword(schema, "propertyNames"), key))
        validate_error(v, NULL, "unknown field");
    else if (json_object_is_type(extra, json_type_object))
        check_value(v, extra, member, key, depth + 1);
    validate_pop(v, mark);
}

static void check_object(struct validate *v, const struct json_object *schema,
                         const struct json_object *value, int depth)
{
    struct json_object *required = keyword(schema, "required");
    bool listed = json_object_is_type(required, json_type_array);
    for (size_t i = 0; listed && i < json_object_array_length(required); i++) {
        const char *name = json_object_get_string(json_object_array_get_idx(required, i));
        if (!json_object_object_get_ex(value, name, NULL))
            validate_error(v, name, "is required");
    }
    json_object_object_foreach((struct json_object *)value, key, member)
        check_member(v, schema, key, member, depth);
}

/* ---- alternatives ---- */

/* The discriminator of a branch: its first required member, or NULL. */
static const char *discriminator(const struct json_object *branch)
{
    struct json_object *required = keyword(branch, "required");
    if (!json_object_is_type(required, json_type_array) || json_object_array_length(required) == 0)
        return NULL;
    return json_object_get_string(json_object_array_get_idx(required, 0));
}

static bool discriminated(const struct json_object *branches)
{
    for (size_t i = 0; i < json_object_array_length(branches); i++)
        if (discriminator(json_object_array_get_idx(branches, i)) == NULL)
            return false;
    return json_object_array_length(branches) > 0;
}

/* "variant or rollout" of the branches' discriminators. */
static void discriminator_list(const struct json_object *branches, char *text, size_t size)
{
    size_t len = 0, n = json_object_array_length(branches);
    text[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int k = snprintf(text + len, size - len, "%s%s", sep,
                         discriminator(json_object_array_get_idx(branches, i)));
        if (k < 0 || (size_t)k >= size - len)
            return;
        len += (size_t)k;
    }
}

/* Whether the properties of branch declare a member of value. */
static bool declares_a_member(const struct json_object *branch, const struct json_object *value)
{
    struct json_object *properties = keyword(branch, "properties");
    json_object_object_foreach((struct json_object *)value, key, member)
    {
        (void)member;
        if (json_object_object_get_ex(properties, key, NULL))
            return true;
    }
    return false;
}

/* Without its discriminator, the one branch declaring a member of value
 * ({"operator": "exists"} is an attribute condition missing its
 * attribute), or NULL. */
static const struct json_object *declaring_branch(const struct json_object *branches,
                                                  const struct json_object *value)
{
    const struct json_object *chosen = NULL;
    for (size_t i = 0; i < json_object_array_length(branches); i++) {
        struct json_object *branch = json_object_array_get_idx(branches, i);
        if (!declares_a_member(branch, value))
            continue;
        if (chosen != NULL)
            return NULL;
        chosen = branch;
    }
    return chosen;
}

/* An object chooses its branch by the member it has. */
static void check_by_discriminator(struct validate *v, const struct json_object *branches,
                                   const struct json_object *value, const char *name, int depth)
{
    if (!json_object_is_type(value, json_type_object)) {
        validate_error(v, NULL, "must be an object");
        return;
    }
    const struct json_object *chosen = NULL;
    size_t found = 0;
    for (size_t i = 0; i < json_object_array_length(branches); i++) {
        struct json_object *branch = json_object_array_get_idx(branches, i);
        if (json_object_object_get_ex(value, discriminator(branch), NULL)) {
            chosen = branch;
            found++;
        }
    }
    if (found == 0 && (chosen = declaring_branch(branches, value)) != NULL) {
        check_value(v, chosen, value, name, depth + 1);
        return;
    }
    char names[128];
    discriminator_list(branches, names, sizeof names);
    if (found == 0)
        validate_error(v, NULL, "must have %s", names);
    else if (found > 1)
        validate_error(v, NULL, "must have either %s, not both", names);
    else
        check_value(v, chosen, value, name, depth + 1);
}

/* The one branch whose type keyword admits value (a conversation given as
 * an array or as one message object), or NULL. */
static const struct json_object *branch_of_type(const struct json_object *branches,
                                                const struct json_object *value)
{
    const struct json_object *chosen = NULL;
    for (size_t i = 0; i < json_object_array_length(branches); i++) {
        struct json_object *branch = json_object_array_get_idx(branches, i);
        struct json_object *types = keyword(branch, "type");
        if (types == NULL || !type_ok(types, value))
            continue;
        if (chosen != NULL)
            return NULL;
        chosen = branch;
    }
    return chosen;
}

/* Whether value passes schema, checked in a scratch collector. */
static bool passes(const struct json_object *schema, const struct json_object *value, int depth)
{
    struct validate scratch;
    validate_init(&scratch);
    check_value(&scratch, schema, value, NULL, depth + 1);
    bool ok = validate_ok(&scratch);
    validate_free(&scratch);
    return ok;
}

static void check_alternatives(struct validate *v, const struct json_object *branches,
                               bool exactly_one, const struct json_object *value, const char *name,
                               int depth)
{
    if (discriminated(branches)) {
        check_by_discriminator(v, branches, value, name, depth);
        return;
    }
    const struct json_object *typed = branch_of_type(branches, value);
    if (typed != NULL) {
        check_value(v, typed, value, name, depth + 1);
        return;
    }
    size_t passed = 0;
    for (size_t i = 0; i < json_object_array_length(branches); i++)
        passed += passes(json_object_array_get_idx(branches, i), value, depth);
    if (passed == 0 || (exactly_one && passed > 1))
        validate_error(v, NULL,
                       exactly_one ? "must match exactly one of the alternatives"
                                   : "must match one of the alternatives");
}

/* ---- one value ---- */

static void check_value(struct validate *v, const struct json_object *schema,
                        const struct json_object *value, const char *name, int depth)
{
    if (depth > JSONSCHEMA_DEPTH_MAX) {
        validate_error(v, NULL, "is nested too deeply");
        return;
    }
    struct json_object *types = keyword(schema, "type"), *list, *not ;
    if (types != NULL && !type_ok(types, value)) {
        type_error(v, types, value);
        return;
    }
    if ((not = keyword(schema, "not")) != NULL && passes(not, value, depth)) {
        const char *type = json_object_get_string(keyword(not, "type"));
        validate_error(v, NULL,
                       type && strcmp(type, "null") == 0 ? "must not be null" : "is not allowed");
        return;
    }
    if (json_object_is_type(list = keyword(schema, "enum"), json_type_array) &&
        !enum_has(list, value)) {
        enum_error(v, list, value, name);
        return;
    }
    if (json_object_is_type(list = keyword(schema, "oneOf"), json_type_array))
        check_alternatives(v, list, true, value, name, depth);
    if (json_object_is_type(list = keyword(schema, "anyOf"), json_type_array))
        check_alternatives(v, list, false, value, name, depth);
    struct json_object *val = (struct json_object *)value;
    if (json_object_is_type(val, json_type_string))
        check_string(v, schema, value);
    else if (json_object_is_type(val, json_type_int) || json_object_is_type(val, json_type_double))
        check_number(v, schema, value);
    else if (json_object_is_type(val, json_type_array))
        check_array(v, schema, value, depth);
    else if (json_object_is_type(val, json_type_object))
        check_object(v, schema, value, depth);
}

bool jsonschema_check(struct validate *v, const struct json_object *schema,
                      const struct json_object *value)
{
    size_t before = v->count;
    check_value(v, schema, value, NULL, 0);
    return v->count == before;
}

/* ---- the subset ---- */

static bool supported_at(const struct json_object *schema, const char **bad, int depth);

static bool is_count(const struct json_object *value)
{
    return json_object_is_type((struct json_object *)value, json_type_int) &&
           json_object_get_int64((struct json_object *)value) >= 0;
}

static bool known_type_name(const struct json_object *name)
{
    static const char *const names[] = {"null",  "boolean", "string",  "object",
                                        "array", "number",  "integer", NULL};
    if (!json_object_is_type((struct json_object *)name, json_type_string))
        return false;
    for (const char *const *n = names; *n; n++)
        if (strcmp(*n, json_object_get_string((struct json_object *)name)) == 0)
            return true;
    return false;
}

static bool type_supported(const struct json_object *types)
{
    if (json_object_is_type((struct json_object *)types, json_type_string))
        return known_type_name(types);
    if (!json_object_is_type((struct json_object *)types, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(types); i++)
        if (!known_type_name(json_object_array_get_idx(types, i)))
            return false;
    return json_object_array_length(types) > 0;
}

static bool strings_array(const struct json_object *list)
{
    if (!json_object_is_type((struct json_object *)list, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(list); i++)
        if (!json_object_is_type(json_object_array_get_idx(list, i), json_type_string))
            return false;
    return true;
}

static bool schemas_array(const struct json_object *list, const char **bad, int depth)
{
    if (!json_object_is_type((struct json_object *)list, json_type_array) ||
        json_object_array_length(list) == 0)
        return false;
    for (size_t i = 0; i < json_object_array_length(list); i++)
        if (!supported_at(json_object_array_get_idx(list, i), bad, depth + 1))
            return false;
    return true;
}

static bool format_supported(const struct json_object *format)
{
    const char *name = json_object_get_string((struct json_object *)format);
    return name && (strcmp(name, "uuid") == 0 || strcmp(name, "date-time") == 0 ||
                    strcmp(name, "email") == 0);
}

/* Whether the member (name, value) of a schema is in the subset. */
static bool keyword_supported(const char *name, const struct json_object *value, const char **bad,
                              int depth)
{
    static const char *const annotations[] = {"default", "description", "title", "examples", NULL};
    static const char *const counts[] = {"minLength", "maxLength", "minItems", "maxItems", NULL};
    if (strcmp(name, "uniqueItems") == 0)
        return true; /* its bound: unique_items_bounded */
    for (const char *const *a = annotations; *a; a++)
        if (strcmp(*a, name) == 0)
            return true;
    for (const char *const *c = counts; *c; c++)
        if (strcmp(*c, name) == 0)
            return is_count(value);
    struct json_object *val = (struct json_object *)value;
    if (strcmp(name, "type") == 0)
        return type_supported(value);
    if (strcmp(name, "enum") == 0)
        return json_object_is_type(val, json_type_array) && json_object_array_length(val) > 0;
    if (strcmp(name, "required") == 0)
        return strings_array(value);
    if (strcmp(name, "pattern") == 0)
        return json_object_is_type(val, json_type_string) &&
               strcmp(json_object_get_string(val), VALIDATE_KEY_PATTERN) == 0;
    if (strcmp(name, "format") == 0)
        return format_supported(value);
    if (strcmp(name, "minimum") == 0 || strcmp(name, "maximum") == 0)
        return json_object_is_type(val, json_type_int) ||
               json_object_is_type(val, json_type_double);
    if (strcmp(name, "items") == 0 || strcmp(name, "not") == 0)
        return supported_at(value, bad, depth + 1);
    if (strcmp(name, "oneOf") == 0 || strcmp(name, "anyOf") == 0)
        return schemas_array(value, bad, depth);
    if (strcmp(name, "additionalProperties") == 0)
        return json_object_is_type(val, json_type_boolean) || supported_at(value, bad, depth + 1);
    if (strcmp(name, "propertyNames") == 0)
        return json_object_object_length(val) == 1 && strings_array(keyword(value, "enum"));
    if (strcmp(name, "properties") == 0) {
        if (!json_object_is_type(val, json_type_object))
            return false;
        json_object_object_foreach(val, key, sub)
        {
            (void)key;
            if (!supported_at(sub, bad, depth + 1))
                return false;
        }
        return true;
    }
    return false;
}

/* uniqueItems compares every pair: only with a maxItems that bounds it. */
#define UNIQUE_ITEMS_MAX 1000

static bool unique_items_bounded(const struct json_object *schema)
{
    struct json_object *unique = keyword(schema, "uniqueItems"), *max = keyword(schema, "maxItems");
    if (unique == NULL)
        return true;
    return json_object_is_type(unique, json_type_boolean) && max != NULL &&
           json_object_get_int64(max) <= UNIQUE_ITEMS_MAX;
}

static bool supported_at(const struct json_object *schema, const char **bad, int depth)
{
    if (depth > JSONSCHEMA_DEPTH_MAX || !json_object_is_type(schema, json_type_object)) {
        *bad = depth > JSONSCHEMA_DEPTH_MAX ? "(depth)" : "(a schema that is not an object)";
        return false;
    }
    if (!unique_items_bounded(schema)) {
        *bad = "uniqueItems";
        return false;
    }
    json_object_object_foreach((struct json_object *)schema, name, value)
    {
        if (!keyword_supported(name, value, bad, depth)) {
            if (*bad == NULL)
                *bad = name;
            return false;
        }
    }
    return true;
}

bool jsonschema_supported(const struct json_object *schema, const char **bad)
{
    const char *first = NULL;
    bool ok = supported_at(schema, &first, 0);
    *bad = ok ? NULL : first;
    return ok;
}

/* ---- parsed texts ---- */

#define PARSED_MAX JSONSCHEMA_PARSED_MAX

const struct json_object *jsonschema_parsed(const char *text)
{
    static struct {
        const char *text;
        struct json_object *schema;
    } parsed[PARSED_MAX]; /* kept for the process's life */
    static size_t count;
    for (size_t i = 0; i < count; i++)
        if (parsed[i].text == text)
            return parsed[i].schema;
    if (count == PARSED_MAX)
        return NULL; /* never with the route table: check_routes counts its texts */
    struct json_object *schema = json_tokener_parse(text);
    if (schema == NULL)
        return NULL;
    parsed[count].text = text;
    parsed[count].schema = schema;
    count++;
    return schema;
}
