/*
 * validate.c - field rules of the management API (see validate.h).
 *
 * Owns the error collector, the pure checks (UTF-8 length, key pattern,
 * uuid, semantic version, ISO 8601 timestamp, key derivation), the field
 * helpers, and the validation of conditions and serve objects.
 *
 * Invariants: no helper stops at the first error; every message is
 * recorded under the full field path; nothing here touches the database
 * (references are resolved by the caller's struct validate_refs). PCRE2
 * compiles each `matches` pattern once to prove it valid and frees it.
 *
 * Called by the management handlers (flags, variants, rules, environments,
 * segments, entities) and the agent.
 */
#include "mgmt/validate.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "eval/cond_ops.h"
#include "eval/isotime.h"
#include "eval/semver.h"

/* ---- the collector ---- */

void validate_init(struct validate *v)
{
    v->errors = NULL;
    v->count = 0;
    v->path[0] = '\0';
    v->len = 0;
}

void validate_free(struct validate *v)
{
    json_object_put(v->errors);
    v->errors = NULL;
}

bool validate_ok(const struct validate *v)
{
    return v->errors == NULL;
}

struct json_object *validate_take_errors(struct validate *v)
{
    struct json_object *errors = v->errors;
    v->errors = NULL;
    v->count = 0;
    return errors;
}

/* Appends text to the path; a path that would overflow is cut (its
 * messages then land on a shorter path, never out of bounds). */
static void path_append(struct validate *v, const char *text)
{
    int n = snprintf(v->path + v->len, sizeof v->path - v->len, "%s", text);
    if (n > 0)
        v->len += (size_t)n < sizeof v->path - v->len ? (size_t)n : sizeof v->path - v->len - 1;
}

size_t validate_push_field(struct validate *v, const char *name)
{
    size_t mark = v->len;
    if (name == NULL || *name == '\0')
        return mark;
    if (v->len > 0)
        path_append(v, ".");
    path_append(v, name);
    return mark;
}

size_t validate_push_index(struct validate *v, size_t index)
{
    size_t mark = v->len;
    char text[32];
    snprintf(text, sizeof text, "[%zu]", index);
    path_append(v, text);
    return mark;
}

void validate_pop(struct validate *v, size_t mark)
{
    v->len = mark;
    v->path[mark] = '\0';
}

void validate_error(struct validate *v, const char *field, const char *fmt, ...)
{
    size_t mark = validate_push_field(v, field);
    char message[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    if (v->errors == NULL)
        v->errors = json_object_new_object();
    const char *key = v->len > 0 ? v->path : "body";
    struct json_object *list;
    if (!json_object_object_get_ex(v->errors, key, &list)) {
        list = json_object_new_array();
        json_object_object_add(v->errors, key, list);
    }
    json_object_array_add(list, json_object_new_string(message));
    v->count++;
    validate_pop(v, mark);
}

/* ---- pure checks ---- */

/* Length of the UTF-8 sequence starting with byte c, or 0 if c cannot start one. */
static int utf8_sequence_length(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return 2;
    if (c >= 0xe0 && c <= 0xef)
        return 3;
    if (c >= 0xf0 && c <= 0xf4)
        return 4;
    return 0;
}

/* True when the n-byte sequence at s is well formed (no overlong forms,
 * surrogates or code points above U+10FFFF). */
static bool utf8_sequence_ok(const unsigned char *s, int n)
{
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return false;
    }
    if (n == 3 && s[0] == 0xe0 && s[1] < 0xa0)
        return false;
    if (n == 3 && s[0] == 0xed && s[1] >= 0xa0)
        return false;
    if (n == 4 && s[0] == 0xf0 && s[1] < 0x90)
        return false;
    if (n == 4 && s[0] == 0xf4 && s[1] >= 0x90)
        return false;
    return true;
}

long validate_utf8_length(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    long count = 0;
    size_t i = 0;
    while (i < len) {
        int n = utf8_sequence_length(p[i]);
        if (n == 0 || (size_t)n > len - i || !utf8_sequence_ok(p + i, n))
            return -1;
        i += (size_t)n;
        count++;
    }
    return count;
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool validate_key_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > VALIDATE_KEY_MAX)
        return false;
    if (!is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++) {
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return false;
    }
    return true;
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool validate_uuid_ok(const char *s)
{
    if (strlen(s) != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return false;
    }
    return true;
}

/* Semantic versions and timestamps are read by the evaluator's parsers
 * (src/eval/semver.c, src/eval/isotime.c), so a value is accepted here
 * exactly when the snapshot compiler can compile it. */
bool validate_semver_ok(const char *s)
{
    struct semver version;
    return semver_parse(s, strlen(s), &version);
}

/* Milliseconds, rounded down (toward the past) from microseconds. */
static int64_t floor_ms(int64_t us)
{
    return us / 1000 - (us % 1000 < 0);
}

bool validate_timestamp_parse(const char *s, int64_t *ms)
{
    int64_t us;
    if (!isotime_parse(s, strlen(s), &us))
        return false;
    if (ms)
        *ms = floor_ms(us);
    return true;
}

void validate_slugify(const char *text, char out[VALIDATE_KEY_MAX + 1])
{
    size_t n = 0;
    bool pending_dash = false;
    for (const char *p = text; *p && n < VALIDATE_KEY_MAX; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        if (!is_lower_alnum(c)) {
            pending_dash = n > 0;
            continue;
        }
        if (pending_dash && n + 1 < VALIDATE_KEY_MAX)
            out[n++] = '-';
        else if (pending_dash)
            break;
        pending_dash = false;
        out[n++] = c;
    }
    out[n] = '\0';
}

/* ---- field helpers ---- */

bool validate_only_fields(struct validate *v, const struct json_object *obj,
                          const char *const *allowed)
{
    bool ok = true;
    json_object_object_foreach((struct json_object *)obj, key, value)
    {
        (void)value;
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, key) == 0;
        if (!known) {
            validate_error(v, key, "unknown field");
            ok = false;
        }
    }
    return ok;
}

/* Finds obj[name] and handles absence and null for the helpers. Returns
 * VALIDATE_SET with *value when there is a non-null member to check. */
static enum validate_found member(struct validate *v, const struct json_object *obj,
                                  const char *name, unsigned flags, struct json_object **value)
{
    *value = NULL;
    if (obj == NULL || !json_object_object_get_ex(obj, name, value)) {
        if (!(flags & VALIDATE_REQUIRED))
            return VALIDATE_ABSENT;
        validate_error(v, name, "is required");
        return VALIDATE_INVALID;
    }
    if (*value != NULL)
        return VALIDATE_SET;
    if (flags & VALIDATE_NULLABLE)
        return VALIDATE_NULL;
    validate_error(v, name, "must not be null");
    return VALIDATE_INVALID;
}

/* Checks the character count of a string value; records at name. */
static bool string_length_ok(struct validate *v, const char *name, struct json_object *value,
                             size_t min_chars, size_t max_chars)
{
    long n = validate_utf8_length(json_object_get_string(value),
                                  (size_t)json_object_get_string_len(value));
    if (n < 0) {
        validate_error(v, name, "must be valid UTF-8");
        return false;
    }
    if ((size_t)n < min_chars) {
        validate_error(v, name,
                       min_chars == 1 ? "must not be empty" : "must be at least %zu characters",
                       min_chars);
        return false;
    }
    if ((size_t)n > max_chars) {
        validate_error(v, name, "must be at most %zu characters", max_chars);
        return false;
    }
    return true;
}

bool validate_length_ok(struct validate *v, const struct json_object *value, size_t min_chars,
                        size_t max_chars)
{
    return string_length_ok(v, NULL, (struct json_object *)value, min_chars, max_chars);
}

enum validate_found validate_string(struct validate *v, const struct json_object *obj,
                                    const char *name, size_t min_chars, size_t max_chars,
                                    unsigned flags, const char **out)
{
    struct json_object *value;
    enum validate_found found = member(v, obj, name, flags, &value);
    if (found != VALIDATE_SET)
        return found;
    if (!json_object_is_type(value, json_type_string)) {
        validate_error(v, name, "must be a string");
        return VALIDATE_INVALID;
    }
    if (!string_length_ok(v, name, value, min_chars, max_chars))
        return VALIDATE_INVALID;
    if (out)
        *out = json_object_get_string(value);
    return VALIDATE_SET;
}

enum validate_found validate_key(struct validate *v, const struct json_object *obj,
                                 const char *name, unsigned flags, const char **out)
{
    const char *s = NULL;
    enum validate_found found = validate_string(v, obj, name, 1, VALIDATE_KEY_MAX, flags, &s);
    if (found != VALIDATE_SET)
        return found;
    if (!validate_key_ok(s)) {
        validate_error(v, name, VALIDATE_KEY_MESSAGE);
        return VALIDATE_INVALID;
    }
    if (out)
        *out = s;
    return VALIDATE_SET;
}

enum validate_found validate_uuid(struct validate *v, const struct json_object *obj,
                                  const char *name, unsigned flags, const char **out)
{
    struct json_object *value;
    enum validate_found found = member(v, obj, name, flags, &value);
    if (found != VALIDATE_SET)
        return found;
    if (!json_object_is_type(value, json_type_string) ||
        !validate_uuid_ok(json_object_get_string(value))) {
        validate_error(v, name, "must be a uuid");
        return VALIDATE_INVALID;
    }
    if (out)
        *out = json_object_get_string(value);
    return VALIDATE_SET;
}

enum validate_found validate_bool(struct validate *v, const struct json_object *obj,
                                  const char *name, unsigned flags, bool *out)
{
    struct json_object *value;
    enum validate_found found = member(v, obj, name, flags, &value);
    if (found != VALIDATE_SET)
        return found;
    if (!json_object_is_type(value, json_type_boolean)) {
        validate_error(v, name, "must be a boolean");
        return VALIDATE_INVALID;
    }
    if (out)
        *out = json_object_get_boolean(value);
    return VALIDATE_SET;
}

/* An integral JSON number as int64 (a double without a fraction counts). */
static bool integral_value(struct json_object *value, int64_t *out)
{
    if (json_object_is_type(value, json_type_int)) {
        *out = json_object_get_int64(value);
        return true;
    }
    if (!json_object_is_type(value, json_type_double))
        return false;
    double d = json_object_get_double(value);
    if (!isfinite(d) || d != floor(d) || fabs(d) > 9007199254740992.0)
        return false;
    *out = (int64_t)d;
    return true;
}

bool validate_integral(const struct json_object *value, int64_t *out)
{
    return integral_value((struct json_object *)value, out);
}

enum validate_found validate_int(struct validate *v, const struct json_object *obj,
                                 const char *name, int64_t min, int64_t max, unsigned flags,
                                 int64_t *out)
{
    struct json_object *value;
    enum validate_found found = member(v, obj, name, flags, &value);
    if (found != VALIDATE_SET)
        return found;
    int64_t n;
    if (!integral_value(value, &n)) {
        validate_error(v, name, "must be an integer");
        return VALIDATE_INVALID;
    }
    if (n < min || n > max) {
        validate_error(v, name, "must be from %lld to %lld", (long long)min, (long long)max);
        return VALIDATE_INVALID;
    }
    if (out)
        *out = n;
    return VALIDATE_SET;
}

enum validate_found validate_array(struct validate *v, const struct json_object *obj,
                                   const char *name, size_t min_items, size_t max_items,
                                   unsigned flags, struct json_object **out)
{
    struct json_object *value;
    enum validate_found found = member(v, obj, name, flags, &value);
    if (found != VALIDATE_SET)
        return found;
    if (!json_object_is_type(value, json_type_array)) {
        validate_error(v, name, "must be an array");
        return VALIDATE_INVALID;
    }
    size_t n = json_object_array_length(value);
    if (n < min_items) {
        validate_error(v, name, "must have at least %zu item%s", min_items,
                       min_items == 1 ? "" : "s");
        return VALIDATE_INVALID;
    }
    if (n > max_items) {
        validate_error(v, name, "must have at most %zu items", max_items);
        return VALIDATE_INVALID;
    }
    if (out)
        *out = value;
    return VALIDATE_SET;
}

enum validate_found validate_string_array(struct validate *v, const struct json_object *obj,
                                          const char *name, size_t max_items, size_t min_chars,
                                          size_t max_chars, unsigned flags,
                                          struct json_object **out)
{
    struct json_object *items;
    enum validate_found found = validate_array(v, obj, name, 0, max_items, flags, &items);
    if (found != VALIDATE_SET)
        return found;
    size_t mark = validate_push_field(v, name);
    bool ok = true;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *item = json_object_array_get_idx(items, i);
        size_t item_mark = validate_push_index(v, i);
        if (!json_object_is_type(item, json_type_string)) {
            validate_error(v, NULL, "must be a string");
            ok = false;
        } else if (!string_length_ok(v, NULL, item, min_chars, max_chars)) {
            ok = false;
        }
        validate_pop(v, item_mark);
    }
    validate_pop(v, mark);
    if (!ok)
        return VALIDATE_INVALID;
    if (out)
        *out = items;
    return VALIDATE_SET;
}

/* ---- names ---- */

static const char *const type_names[] = {"boolean", "string", "number", "json"};

int validate_flag_type_from_name(const char *name)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(type_names[i], name) == 0)
            return i;
    }
    return -1;
}

const char *validate_flag_type_name(enum validate_flag_type type)
{
    return (unsigned)type < 4 ? type_names[type] : "?";
}

/* ---- conditions ---- */

static bool is_finite_number(struct json_object *value)
{
    if (json_object_is_type(value, json_type_int))
        return true;
    return json_object_is_type(value, json_type_double) && isfinite(json_object_get_double(value));
}

#define EMAIL_PATTERN                                                                              \
    "^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"         \
    "(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"

bool validate_email_ok(const char *s, size_t len)
{
    static pcre2_code *re; /* compiled once per process, kept for its life */
    if (re == NULL) {
        int code;
        PCRE2_SIZE offset;
        re = pcre2_compile((PCRE2_SPTR)EMAIL_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_DOLLAR_ENDONLY,
                           &code, &offset, NULL);
        if (re == NULL)
            return false;
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (md == NULL)
        return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static void check_pattern(struct validate *v, const char *pattern, size_t len, bool caseless)
{
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, COND_PATTERN_OPTIONS(caseless), &code,
                                   &offset, NULL);
    if (re != NULL) {
        pcre2_code_free(re);
        return;
    }
    PCRE2_UCHAR why[128];
    pcre2_get_error_message(code, why, sizeof why);
    validate_error(v, NULL, "invalid regular expression at offset %zu: %s", (size_t)offset,
                   (const char *)why);
}

/* Checks one item of values at the current path for kind. */
static void check_value(struct validate *v, struct json_object *value, enum cond_value_kind kind,
                        bool caseless)
{
    bool is_string = json_object_is_type(value, json_type_string);
    const char *s = is_string ? json_object_get_string(value) : "";
    size_t len = is_string ? (size_t)json_object_get_string_len(value) : 0;
    struct semver version;
    int64_t us;
    switch (kind) {
    case COND_VALUES_SCALAR:
        if (!is_string && !is_finite_number(value) &&
            !json_object_is_type(value, json_type_boolean))
            validate_error(v, NULL, "must be a string, number or boolean");
        break;
    case COND_VALUES_STRING:
    case COND_VALUES_PATTERN:
        if (!is_string)
            validate_error(v, NULL, "must be a string");
        else if (kind == COND_VALUES_PATTERN)
            check_pattern(v, s, len, caseless);
        break;
    case COND_VALUES_NUMBER:
        if (!is_finite_number(value))
            validate_error(v, NULL, "must be a number");
        break;
    case COND_VALUES_SEMVER:
        if (!is_string || !semver_parse(s, len, &version))
            validate_error(v, NULL, "must be a semantic version string");
        break;
    case COND_VALUES_TIMESTAMP:
        if (!is_string || !isotime_parse(s, len, &us))
            validate_error(v, NULL, "must be an ISO 8601 timestamp string");
        break;
    case COND_VALUES_NONE:
        break;
    }
}

static void check_values(struct validate *v, const struct json_object *cond, enum snapshot_op op)
{
    enum cond_value_kind kind = cond_ops[op].kind;
    struct json_object *values = NULL;
    bool present = json_object_object_get_ex(cond, "values", &values);
    if (kind == COND_VALUES_NONE) {
        if (present)
            validate_error(v, "values", "must be absent for %s", cond_op_name(op));
        return;
    }
    size_t max = cond_ops[op].single_value ? 1 : VALIDATE_VALUES_MAX;
    if (validate_array(v, cond, "values", 1, max, VALIDATE_REQUIRED, &values) != VALIDATE_SET)
        return;
    struct json_object *caseless = NULL;
    json_object_object_get_ex(cond, "caseInsensitive", &caseless);
    bool fold =
        json_object_is_type(caseless, json_type_boolean) && json_object_get_boolean(caseless);
    size_t mark = validate_push_field(v, "values");
    for (size_t i = 0; i < json_object_array_length(values); i++) {
        size_t item = validate_push_index(v, i);
        check_value(v, json_object_array_get_idx(values, i), kind, fold);
        validate_pop(v, item);
    }
    validate_pop(v, mark);
}

/* The entity reference of an attribute path with a dot. */
static void check_attribute_ref(struct validate *v, const char *path,
                                const struct validate_refs *refs)
{
    const char *dot = strchr(path, '.');
    if (refs == NULL || refs->entity_attribute == NULL || dot == NULL || dot == path)
        return;
    char entity[VALIDATE_ATTRIBUTE_MAX * 4 + 1];
    snprintf(entity, sizeof entity, "%.*s", (int)(dot - path), path);
    if (refs->entity_attribute(refs->arg, entity, dot + 1) == VALIDATE_ATTR_UNDECLARED)
        validate_error(v, "attribute", "entity %s declares no attribute %s", entity, dot + 1);
}

static void check_attribute_condition(struct validate *v, const struct json_object *cond,
                                      const struct validate_refs *refs)
{
    static const char *const fields[] = {"attribute", "operator",        "values",
                                         "negate",    "caseInsensitive", NULL};
    validate_only_fields(v, cond, fields);
    const char *path = NULL;
    if (validate_string(v, cond, "attribute", 1, VALIDATE_ATTRIBUTE_MAX, VALIDATE_REQUIRED,
                        &path) == VALIDATE_SET)
        check_attribute_ref(v, path, refs);
    validate_bool(v, cond, "caseInsensitive", 0, NULL);
    const char *op_name = NULL;
    if (validate_string(v, cond, "operator", 1, 32, VALIDATE_REQUIRED, &op_name) != VALIDATE_SET)
        return;
    enum snapshot_op op = cond_op_from_name(op_name);
    if (op == SNAPSHOT_OP_COUNT) {
        validate_error(v, "operator", "unknown operator %s", op_name);
        return;
    }
    check_values(v, cond, op);
}

static void check_segment_condition(struct validate *v, const struct json_object *cond,
                                    bool allow_segments, const struct validate_refs *refs)
{
    static const char *const fields[] = {"segment", "negate", NULL};
    if (!allow_segments) {
        validate_error(v, "segment", "segments cannot reference segments");
        return;
    }
    validate_only_fields(v, cond, fields);
    const char *key = NULL;
    if (validate_key(v, cond, "segment", VALIDATE_REQUIRED, &key) != VALIDATE_SET)
        return;
    if (refs && refs->segment_exists && !refs->segment_exists(refs->arg, key))
        validate_error(v, "segment", "no segment %s", key);
}

void validate_condition(struct validate *v, const struct json_object *cond, bool allow_segments,
                        const struct validate_refs *refs)
{
    if (!json_object_is_type(cond, json_type_object)) {
        validate_error(v, NULL, "must be an object");
        return;
    }
    validate_bool(v, cond, "negate", 0, NULL);
    bool has_attribute = json_object_object_get_ex(cond, "attribute", NULL);
    bool has_segment = json_object_object_get_ex(cond, "segment", NULL);
    if (has_attribute && has_segment)
        validate_error(v, NULL, "must have either attribute or segment, not both");
    else if (has_segment)
        check_segment_condition(v, cond, allow_segments, refs);
    else
        check_attribute_condition(v, cond, refs);
}

enum validate_found validate_conditions(struct validate *v, const struct json_object *obj,
                                        const char *name, bool allow_segments,
                                        const struct validate_refs *refs, struct json_object **out)
{
    struct json_object *list;
    enum validate_found found = validate_array(v, obj, name, 0, VALIDATE_CONDITIONS_MAX, 0, &list);
    if (found != VALIDATE_SET)
        return found;
    size_t mark = validate_push_field(v, name);
    size_t errors_before = v->count;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        size_t item = validate_push_index(v, i);
        validate_condition(v, json_object_array_get_idx(list, i), allow_segments, refs);
        validate_pop(v, item);
    }
    validate_pop(v, mark);
    if (v->count != errors_before)
        return VALIDATE_INVALID;
    if (out)
        *out = list;
    return VALIDATE_SET;
}

/* ---- serve objects ---- */

static void check_variant_ref(struct validate *v, const struct json_object *obj,
                              const struct validate_refs *refs)
{
    const char *key = NULL;
    if (validate_string(v, obj, "variant", 1, VALIDATE_KEY_MAX, VALIDATE_REQUIRED, &key) !=
        VALIDATE_SET)
        return;
    if (refs && refs->variant_exists && !refs->variant_exists(refs->arg, key))
        validate_error(v, "variant", "the flag has no variant %s", key);
}

/* Checks the items of a rollout; returns the sum of the valid weights. */
static int64_t check_rollout_items(struct validate *v, struct json_object *items,
                                   const struct validate_refs *refs)
{
    static const char *const fields[] = {"variant", "weight", NULL};
    int64_t total = 0;
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *item = json_object_array_get_idx(items, i);
        size_t mark = validate_push_index(v, i);
        if (!json_object_is_type(item, json_type_object)) {
            validate_error(v, NULL, "must be an object");
        } else {
            validate_only_fields(v, item, fields);
            check_variant_ref(v, item, refs);
            int64_t weight = 0;
            if (validate_int(v, item, "weight", 0, VALIDATE_WEIGHT_MAX, VALIDATE_REQUIRED,
                             &weight) == VALIDATE_SET)
                total += weight;
        }
        validate_pop(v, mark);
    }
    return total;
}

static void check_rollout(struct validate *v, const struct json_object *serve,
                          const struct validate_refs *refs)
{
    static const char *const fields[] = {"rollout", "bucketBy", NULL};
    validate_only_fields(v, serve, fields);
    validate_string(v, serve, "bucketBy", 1, VALIDATE_BUCKET_BY_MAX, 0, NULL);
    struct json_object *items;
    if (validate_array(v, serve, "rollout", 1, VALIDATE_ROLLOUT_MAX, VALIDATE_REQUIRED, &items) !=
        VALIDATE_SET)
        return;
    size_t mark = validate_push_field(v, "rollout");
    size_t errors_before = v->count;
    int64_t total = check_rollout_items(v, items, refs);
    if (total == 0 && v->count == errors_before)
        validate_error(v, NULL, "the weights must not all be zero");
    validate_pop(v, mark);
}

void validate_serve_value(struct validate *v, const struct json_object *serve,
                          const struct validate_refs *refs)
{
    static const char *const fields[] = {"variant", NULL};
    if (!json_object_is_type(serve, json_type_object)) {
        validate_error(v, NULL, "must be an object");
        return;
    }
    bool has_variant = json_object_object_get_ex(serve, "variant", NULL);
    bool has_rollout = json_object_object_get_ex(serve, "rollout", NULL);
    if (has_variant && has_rollout) {
        validate_error(v, NULL, "must have either variant or rollout, not both");
    } else if (has_rollout) {
        check_rollout(v, serve, refs);
    } else if (has_variant) {
        validate_only_fields(v, serve, fields);
        check_variant_ref(v, serve, refs);
    } else {
        validate_error(v, NULL, "must have variant or rollout");
    }
}

enum validate_found validate_serve(struct validate *v, const struct json_object *obj,
                                   const char *name, unsigned flags,
                                   const struct validate_refs *refs, struct json_object **out)
{
    struct json_object *serve;
    enum validate_found found = member(v, obj, name, flags, &serve);
    if (found != VALIDATE_SET)
        return found;
    size_t errors_before = v->count;
    size_t mark = validate_push_field(v, name);
    validate_serve_value(v, serve, refs);
    validate_pop(v, mark);
    if (v->count != errors_before)
        return VALIDATE_INVALID;
    if (out)
        *out = serve;
    return VALIDATE_SET;
}

/* ---- canonical forms ---- */

struct json_object *validate_number_canonical(const struct json_object *value)
{
    struct json_object *val = (struct json_object *)value;
    int64_t n;
    if (json_object_is_type(val, json_type_double) && integral_value(val, &n))
        return json_object_new_int64(n);
    return json_object_get(val);
}

static void copy_member(struct json_object *to, const struct json_object *from, const char *name)
{
    struct json_object *member;
    if (json_object_object_get_ex(from, name, &member))
        json_object_object_add(to, name, validate_number_canonical(member));
}

struct json_object *validate_serve_canonical(const struct json_object *serve)
{
    struct json_object *out = json_object_new_object();
    struct json_object *items;
    if (!json_object_object_get_ex(serve, "rollout", &items)) {
        copy_member(out, serve, "variant");
        return out;
    }
    struct json_object *rollout = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(items); i++) {
        struct json_object *item = json_object_array_get_idx(items, i);
        struct json_object *copy = json_object_new_object();
        copy_member(copy, item, "variant");
        copy_member(copy, item, "weight");
        json_object_array_add(rollout, copy);
    }
    json_object_object_add(out, "rollout", rollout);
    copy_member(out, serve, "bucketBy");
    return out;
}

/* ---- variant values ---- */

bool validate_variant_value(struct validate *v, const char *field, const struct json_object *value,
                            enum validate_flag_type type)
{
    struct json_object *val = (struct json_object *)value;
    bool ok = false;
    switch (type) {
    case FLAG_TYPE_BOOLEAN:
        ok = json_object_is_type(val, json_type_boolean);
        break;
    case FLAG_TYPE_STRING:
        ok = json_object_is_type(val, json_type_string);
        break;
    case FLAG_TYPE_NUMBER:
        ok = is_finite_number(val);
        break;
    case FLAG_TYPE_JSON:
        ok =
            json_object_is_type(val, json_type_object) || json_object_is_type(val, json_type_array);
        break;
    }
    if (!ok)
        validate_error(v, field, "must be %s for a %s flag",
                       type == FLAG_TYPE_JSON     ? "an object or an array"
                       : type == FLAG_TYPE_NUMBER ? "a finite number"
                       : type == FLAG_TYPE_STRING ? "a string"
                                                  : "a boolean",
                       validate_flag_type_name(type));
    return ok;
}
