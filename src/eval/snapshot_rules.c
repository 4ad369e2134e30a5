/*
 * snapshot_rules.c - the rule compiler of the snapshot builder: the rule
 * language's JSON text into the snapshot's compiled records (see
 * snapshot_builder.h).
 *
 * Owns: the checking and compacting of JSON values, serves (single
 * variant, rollout, off variant), condition values (typed, coerced to an
 * entity attribute's dataType, `matches` patterns proved to compile,
 * timestamps and their `$currentTime` instants), conditions and condition
 * lists, and segments. What each operator takes comes from the operator
 * table (cond_ops.h); a condition that cannot compile makes its list
 * broken rather than failing the build.
 *
 * Invariants: identical input compiles to the same index (serves and
 * condition lists are cached by their text); a failed allocation sets the
 * builder's sticky error.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <json-c/json.h>
#include <limits.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "eval/cond_ops.h"
#include "eval/eval.h"
#include "eval/isotime.h"
#include "eval/semver.h"
#include "eval/snapshot.h"
#include "eval/snapshot_builder.h"

#define MAX_ROLLOUT_ITEMS 64
#define MAX_ROLLOUT_WEIGHT 1000000

/* ------------------------------------------------------------------ */
/* JSON */

/* Parses text completely (trailing white space allowed); NULL when it is
 * not JSON or is JSON null. The caller puts the object. */
static json_object *parse_json(struct snapshot_builder *b, const char *text)
{
    if (text == NULL)
        return NULL;
    size_t len = strlen(text);
    if (len >= INT_MAX)
        return NULL;
    json_tokener_reset(b->tok);
    /* The NUL is passed too: it ends a top-level number or literal. */
    json_object *obj = json_tokener_parse_ex(b->tok, text, (int)len + 1);
    if (json_tokener_get_error(b->tok) != json_tokener_success) {
        json_object_put(obj);
        return NULL;
    }
    for (size_t i = json_tokener_get_parse_end(b->tok); i < len; i++) {
        if (strchr(" \t\r\n", text[i]) == NULL) {
            json_object_put(obj);
            return NULL;
        }
    }
    return obj;
}

static const char *json_member_string(json_object *obj, const char *name)
{
    json_object *v;
    if (!json_object_object_get_ex(obj, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static bool json_member_true(json_object *obj, const char *name)
{
    json_object *v;
    return json_object_object_get_ex(obj, name, &v) && json_object_is_type(v, json_type_boolean) &&
           json_object_get_boolean(v);
}

/* A strict RFC 8259 check of variant values, writing the text without the
 * white space between tokens: the exact bytes a response copies (json-c
 * alone would accept NaN, single quotes and raw control characters). */

#define JSON_MAX_DEPTH 64

struct json_scan {
    const char *p;
    struct vec *out;
    bool ok;
};

static void scan_emit(struct json_scan *sc, const char *from, size_t len)
{
    if (sc->ok && !vec_append(sc->out, from, len))
        sc->ok = false;
}

static void scan_space(struct json_scan *sc)
{
    while (*sc->p == ' ' || *sc->p == '\t' || *sc->p == '\n' || *sc->p == '\r')
        sc->p++;
}

static bool scan_literal(struct json_scan *sc, const char *word)
{
    size_t len = strlen(word);
    if (strncmp(sc->p, word, len) != 0)
        return false;
    scan_emit(sc, sc->p, len);
    sc->p += len;
    return true;
}

static const char *skip_digits_at(const char *p)
{
    while (*p >= '0' && *p <= '9')
        p++;
    return p;
}

static bool scan_number(struct json_scan *sc)
{
    const char *p = sc->p + (*sc->p == '-');
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        p = skip_digits_at(p);
    else
        return false;
    if (*p == '.') {
        const char *q = skip_digits_at(p + 1);
        if (q == p + 1)
            return false;
        p = q;
    }
    if (*p == 'e' || *p == 'E') {
        p += (p[1] == '+' || p[1] == '-') ? 2 : 1;
        const char *q = skip_digits_at(p);
        if (q == p)
            return false;
        p = q;
    }
    scan_emit(sc, sc->p, (size_t)(p - sc->p));
    sc->p = p;
    return true;
}

/* One UTF-8 character at p (not '"', '\\' or a control); its length or 0. */
static size_t utf8_char_len(const unsigned char *p)
{
    size_t n = p[0] < 0x80             ? 1
               : (p[0] & 0xe0) == 0xc0 ? 2
               : (p[0] & 0xf0) == 0xe0 ? 3
               : (p[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 0 || (n == 2 && p[0] < 0xc2) || (n == 4 && p[0] > 0xf4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

static bool scan_escape(const char *p, size_t *len)
{
    if (strchr("\"\\/bfnrt", p[1]) != NULL && p[1] != '\0') {
        *len = 2;
        return true;
    }
    for (int i = 2; i < 6; i++)
        if (p[1] != 'u' || strchr("0123456789abcdefABCDEF", p[i]) == NULL || p[i] == '\0')
            return false;
    *len = 6;
    return true;
}

static bool scan_string(struct json_scan *sc)
{
    const char *start = sc->p++;
    for (;;) {
        size_t len;
        unsigned char c = (unsigned char)*sc->p;
        if (c == '"')
            break;
        if (c < 0x20)
            return false;
        if (c == '\\' ? !scan_escape(sc->p, &len)
                      : (len = utf8_char_len((const unsigned char *)sc->p)) == 0)
            return false;
        sc->p += len;
    }
    sc->p++;
    scan_emit(sc, start, (size_t)(sc->p - start));
    return true;
}

static bool scan_value(struct json_scan *sc, int depth);

/* The members of an object or the items of an array, after the opener. */
static bool scan_container(struct json_scan *sc, char close, int depth)
{
    scan_space(sc);
    if (*sc->p == close) {
        scan_emit(sc, sc->p++, 1);
        return true;
    }
    for (;;) {
        if (close == '}') {
            if (*sc->p != '"' || !scan_string(sc))
                return false;
            scan_space(sc);
            if (*sc->p != ':')
                return false;
            scan_emit(sc, sc->p++, 1);
        }
        if (!scan_value(sc, depth + 1))
            return false;
        scan_space(sc);
        if (*sc->p == close) {
            scan_emit(sc, sc->p++, 1);
            return true;
        }
        if (*sc->p != ',')
            return false;
        scan_emit(sc, sc->p++, 1);
        scan_space(sc);
    }
}

static bool scan_value(struct json_scan *sc, int depth)
{
    scan_space(sc);
    switch (*sc->p) {
    case '{':
    case '[':
        if (depth >= JSON_MAX_DEPTH)
            return false;
        scan_emit(sc, sc->p, 1);
        return scan_container(sc, *sc->p++ == '{' ? '}' : ']', depth);
    case '"':
        return scan_string(sc);
    case 't':
        return scan_literal(sc, "true");
    case 'f':
        return scan_literal(sc, "false");
    case 'n':
        return scan_literal(sc, "null");
    default:
        return scan_number(sc);
    }
}

/* The JSON type of valid text (json_type_null when invalid or null), its
 * compact form left in b->keybuf. */
static json_type scan_json(struct snapshot_builder *b, const char *text)
{
    struct json_scan sc = {text, &b->keybuf, true};
    b->keybuf.len = 0;
    scan_space(&sc);
    char first = *sc.p;
    if (!scan_value(&sc, 0))
        return json_type_null;
    scan_space(&sc);
    if (*sc.p != '\0' || !sc.ok)
        return json_type_null;
    switch (first) {
    case '{':
        return json_type_object;
    case '[':
        return json_type_array;
    case '"':
        return json_type_string;
    case 't':
    case 'f':
        return json_type_boolean;
    case 'n':
        return json_type_null;
    default:
        return json_type_double; /* any number */
    }
}

/* A variant value: validated and compacted once per distinct text. */
const struct json_value_entry *json_value(struct snapshot_builder *b, const char *text)
{
    uint32_t index;
    if (text == NULL)
        text = "";
    if (lookup_text(&b->json_cache, text, &index))
        return vec_at(&b->json_values, index);
    struct json_value_entry entry = {{0, 0}, scan_json(b, text)};
    if (entry.type != json_type_null)
        entry.compact = intern_bytes(b, (const char *)b->keybuf.data, b->keybuf.len);
    index = (uint32_t)b->json_values.len;
    if (!vec_append(&b->json_values, &entry, 1) ||
        map_add(&b->json_cache, text, strlen(text), index) == NULL) {
        out_of_memory(b);
        return NULL;
    }
    return vec_at(&b->json_values, index);
}

/* ------------------------------------------------------------------ */
/* Serves */

uint32_t flag_type_from_text(const char *type)
{
    static const char *const names[] = {"boolean", "string", "number", "json"};
    for (uint32_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (type != NULL && strcmp(type, names[i]) == 0)
            return i;
    return SNAPSHOT_TYPE_UNKNOWN;
}

bool value_fits_type(json_type value, uint32_t flag_type)
{
    switch (flag_type) {
    case SNAPSHOT_TYPE_BOOLEAN:
        return value == json_type_boolean;
    case SNAPSHOT_TYPE_STRING:
        return value == json_type_string;
    case SNAPSHOT_TYPE_NUMBER:
        return value == json_type_int || value == json_type_double;
    case SNAPSHOT_TYPE_JSON:
        return value == json_type_object || value == json_type_array;
    default:
        return false;
    }
}

/* The index among f's variants of the one named key; SNAPSHOT_NONE when
 * there is none. */
static uint32_t find_variant(const struct snapshot_builder *b, const struct snapshot_flag *f,
                             const char *key)
{
    for (uint32_t i = 0; key != NULL && i < f->variant_count; i++) {
        const struct snapshot_variant *v = table_at(&b->variants, f->variant_first + i);
        if (strcmp(builder_string(b, v->key), key) == 0)
            return i;
    }
    return SNAPSHOT_NONE;
}

/* Whether f's variant (relative index) can be served. */
static uint32_t check_variant(const struct snapshot_builder *b, const struct snapshot_flag *f,
                              uint32_t variant)
{
    if (variant == SNAPSHOT_NONE)
        return SNAPSHOT_SERVE_MISSING_VARIANT;
    const struct snapshot_variant *v = table_at(&b->variants, f->variant_first + variant);
    return v->value_json.len == 0 ? SNAPSHOT_SERVE_BAD_VALUE : SNAPSHOT_SERVE_OK;
}

/* Splits a dotted key into path parts, stored once; returns the first. */
static uint32_t add_path(struct snapshot_builder *b, const char *key, uint32_t *count)
{
    b->tmp_paths.len = 0;
    for (const char *part = key;;) {
        const char *dot = strchr(part, '.');
        size_t len = dot ? (size_t)(dot - part) : strlen(part);
        struct snapshot_str ref = intern_bytes(b, part, len);
        if (!vec_append(&b->tmp_paths, &ref, 1)) {
            out_of_memory(b);
            break;
        }
        if (dot == NULL)
            break;
        part = dot + 1;
    }
    *count = (uint32_t)b->tmp_paths.len;
    return intern_records(b, &b->paths, b->tmp_paths.data, b->tmp_paths.len);
}

static bool rollout_item(struct snapshot_builder *b, const struct snapshot_flag *f,
                         json_object *item, uint64_t *total, uint32_t *error)
{
    json_object *weight;
    const char *key = json_member_string(item, "variant");
    if (key == NULL || !json_object_object_get_ex(item, "weight", &weight) ||
        !json_object_is_type(weight, json_type_int) || json_object_get_int64(weight) < 0 ||
        json_object_get_int64(weight) > MAX_ROLLOUT_WEIGHT) {
        *error = SNAPSHOT_SERVE_MALFORMED;
        return false;
    }
    struct snapshot_item out = {find_variant(b, f, key), (uint32_t)json_object_get_int64(weight)};
    *error = check_variant(b, f, out.variant);
    if (*error != SNAPSHOT_SERVE_OK)
        return false;
    if (!vec_append(&b->tmp_items, &out, 1)) {
        out_of_memory(b);
        return false;
    }
    *total += out.weight;
    return true;
}

static void set_bucket_by(struct snapshot_builder *b, json_object *obj, struct snapshot_serve *v)
{
    const char *bucket_by = json_member_string(obj, "bucketBy");
    if (bucket_by == NULL || *bucket_by == '\0' || strcmp(bucket_by, "targetingKey") == 0)
        return;
    v->bucket_by = intern(b, bucket_by);
    v->bucket_path_first = add_path(b, bucket_by, &v->bucket_path_count);
}

static void compile_rollout(struct snapshot_builder *b, const struct snapshot_flag *f,
                            json_object *obj, json_object *rollout, struct snapshot_serve *v)
{
    size_t n = json_object_array_length(rollout);
    uint64_t total = 0;
    v->error = SNAPSHOT_SERVE_MALFORMED;
    if (n == 0 || n > MAX_ROLLOUT_ITEMS)
        return;
    b->tmp_items.len = 0;
    for (size_t i = 0; i < n; i++)
        if (!rollout_item(b, f, json_object_array_get_idx(rollout, i), &total, &v->error))
            return;
    if (total == 0) {
        v->error = SNAPSHOT_SERVE_MALFORMED;
        return;
    }
    v->kind = SNAPSHOT_SERVE_ROLLOUT;
    v->error = SNAPSHOT_SERVE_OK;
    v->item_first = intern_records(b, &b->items, b->tmp_items.data, n);
    v->item_count = (uint32_t)n;
    v->total_weight = total;
    set_bucket_by(b, obj, v);
}

static void compile_serve_object(struct snapshot_builder *b, const struct snapshot_flag *f,
                                 json_object *obj, struct snapshot_serve *v)
{
    json_object *rollout;
    const char *key = json_member_string(obj, "variant");
    if (f->type == SNAPSHOT_TYPE_UNKNOWN) {
        v->error = SNAPSHOT_SERVE_UNKNOWN_TYPE;
    } else if (f->variant_count == 0) {
        v->error = SNAPSHOT_SERVE_NO_VARIANTS;
    } else if (key != NULL) {
        v->variant = find_variant(b, f, key);
        v->error = check_variant(b, f, v->variant);
        v->kind = v->error == SNAPSHOT_SERVE_OK ? SNAPSHOT_SERVE_VARIANT : SNAPSHOT_SERVE_INVALID;
    } else if (json_object_object_get_ex(obj, "rollout", &rollout) &&
               json_object_is_type(rollout, json_type_array)) {
        compile_rollout(b, f, obj, rollout, v);
    } else {
        v->error = SNAPSHOT_SERVE_MALFORMED;
    }
}

/* Stores a serve record once; returns its index. */
static uint32_t store_serve(struct snapshot_builder *b, struct snapshot_serve *v)
{
    if (v->kind != SNAPSHOT_SERVE_VARIANT)
        v->variant = 0;
    return intern_records(b, &b->serves, v, 1);
}

/* The cache key of a serve for f: f's variant list, its type, the text. */
static const char *serve_cache_key(struct snapshot_builder *b, const struct snapshot_flag *f,
                                   uint32_t signature, const char *serve_json, size_t *len)
{
    uint32_t head[3] = {signature, f->variant_count, f->type};
    return compose_key(b, head, sizeof head, serve_json, NULL, len);
}

static void note_serve_clock(struct snapshot_builder *b, uint32_t serve)
{
    const struct snapshot_serve *v = table_at(&b->serves, serve);
    if (v->bucket_by.len > 0 && strcmp(builder_string(b, v->bucket_by), "$currentTime") == 0)
        b->pending_opaque = true;
}

/* Compiles a serve object given as JSON text for flag f; returns its serve
 * index. The result depends only on the text, the flag's type and its
 * variant keys (when every value is usable), so it is cached by those:
 * signature names f's key list, SNAPSHOT_NONE disables the cache. */
uint32_t compile_serve(struct snapshot_builder *b, const struct snapshot_flag *f,
                       uint32_t signature, const char *serve_json)
{
    size_t len = 0;
    uint32_t index;
    if (serve_json == NULL)
        serve_json = "";
    const char *key = NULL;
    if (signature != SNAPSHOT_NONE)
        key = serve_cache_key(b, f, signature, serve_json, &len);
    if (key == NULL || !lookup_index(&b->serve_cache, key, len, &index)) {
        struct snapshot_serve v = {.kind = SNAPSHOT_SERVE_INVALID,
                                   .error = SNAPSHOT_SERVE_MALFORMED};
        json_object *obj = parse_json(b, serve_json);
        if (json_object_is_type(obj, json_type_object))
            compile_serve_object(b, f, obj, &v);
        json_object_put(obj);
        index = store_serve(b, &v);
        if (signature != SNAPSHOT_NONE) {
            key = serve_cache_key(b, f, signature, serve_json, &len);
            cache_put(b, &b->serve_cache, key, len, index);
        }
    }
    note_serve_clock(b, index);
    return index;
}

uint32_t compile_off_serve(struct snapshot_builder *b, const struct snapshot_flag *f,
                           const char *off_variant_key)
{
    struct snapshot_serve v = {.kind = SNAPSHOT_SERVE_INVALID};
    if (f->type == SNAPSHOT_TYPE_UNKNOWN)
        v.error = SNAPSHOT_SERVE_UNKNOWN_TYPE;
    else if (f->variant_count == 0)
        v.error = SNAPSHOT_SERVE_NO_VARIANTS;
    else if (off_variant_key == NULL)
        v.error = SNAPSHOT_SERVE_NO_OFF_VARIANT;
    else {
        v.variant = find_variant(b, f, off_variant_key);
        v.error = check_variant(b, f, v.variant);
        if (v.error == SNAPSHOT_SERVE_OK)
            v.kind = SNAPSHOT_SERVE_VARIANT;
    }
    return store_serve(b, &v);
}

/* ------------------------------------------------------------------ */
/* Condition values */

static bool scalar_value(struct snapshot_builder *b, json_object *j, struct snapshot_value *v)
{
    switch (json_object_get_type(j)) {
    case json_type_string:
        v->type = SNAPSHOT_VALUE_STRING;
        v->text = intern_bytes(b, json_object_get_string(j), (size_t)json_object_get_string_len(j));
        return true;
    case json_type_int:
        v->type = SNAPSHOT_VALUE_NUMBER;
        v->integer = json_object_get_int64(j);
        v->number = (double)v->integer;
        v->is_integer = 1;
        return true;
    case json_type_double:
        v->type = SNAPSHOT_VALUE_NUMBER;
        v->number = json_object_get_double(j);
        return true;
    case json_type_boolean:
        v->type = SNAPSHOT_VALUE_BOOLEAN;
        v->boolean = json_object_get_boolean(j) ? 1 : 0;
        return true;
    default:
        return false;
    }
}

/* Coerces a value to an entity attribute's dataType, as the evaluator
 * coerces context values. */
static bool coerce_value(struct snapshot_builder *b, uint32_t data_type, struct snapshot_value *v)
{
    const char *text = builder_string(b, v->text);
    if (data_type == SNAPSHOT_DATA_STRING && v->type == SNAPSHOT_VALUE_NUMBER) {
        char buf[EVAL_NUMBER_TEXT_SIZE];
        size_t n = eval_number_text(v->number, v->is_integer, v->integer, buf);
        v->text = intern_bytes(b, buf, n);
        v->type = SNAPSHOT_VALUE_STRING;
    } else if (data_type == SNAPSHOT_DATA_STRING && v->type == SNAPSHOT_VALUE_BOOLEAN) {
        v->text = intern(b, v->boolean ? "true" : "false");
        v->type = SNAPSHOT_VALUE_STRING;
    } else if (data_type == SNAPSHOT_DATA_NUMBER && v->type != SNAPSHOT_VALUE_NUMBER) {
        bool is_integer = false;
        if (v->type != SNAPSHOT_VALUE_STRING ||
            !eval_text_to_number(text, v->text.len, &v->number, &is_integer, &v->integer))
            return false;
        v->is_integer = is_integer;
        v->type = SNAPSHOT_VALUE_NUMBER;
    } else if (data_type == SNAPSHOT_DATA_BOOLEAN && v->type != SNAPSHOT_VALUE_BOOLEAN) {
        bool value;
        if (v->type != SNAPSHOT_VALUE_STRING || !eval_text_to_boolean(text, v->text.len, &value))
            return false;
        v->boolean = value;
        v->type = SNAPSHOT_VALUE_BOOLEAN;
    }
    return true;
}

static bool pattern_compiles(const char *text, size_t len, bool caseless)
{
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)text, len, COND_PATTERN_OPTIONS(caseless), &code, &offset, NULL);
    pcre2_code_free(re);
    return re != NULL;
}

static bool add_pattern(struct snapshot_builder *b, const struct snapshot_cond *c,
                        struct snapshot_value *v)
{
    struct snapshot_pattern p = {v->text, (c->flags & SNAPSHOT_COND_CASELESS) != 0, 0};
    const struct map_slot *known = map_find(&b->patterns.index, &p, sizeof p);
    if (known == NULL && !pattern_compiles(builder_string(b, v->text), v->text.len, p.caseless))
        return false;
    v->pattern = known ? known->value : intern_records(b, &b->patterns, &p, 1);
    return true;
}

static bool add_time(struct snapshot_builder *b, const struct snapshot_cond *c,
                     struct snapshot_value *v)
{
    if (v->type != SNAPSHOT_VALUE_STRING ||
        !isotime_parse(builder_string(b, v->text), v->text.len, &v->time_us))
        return false;
    if ((c->flags & SNAPSHOT_COND_CURRENT_TIME) && !vec_append(&b->pending_times, &v->time_us, 1))
        out_of_memory(b);
    return true;
}

/* Checks (and completes) one value for the condition's operator. */
static bool typed_value(struct snapshot_builder *b, const struct snapshot_cond *c,
                        struct snapshot_value *v)
{
    struct semver version;
    switch (cond_ops[c->op].kind) {
    case COND_VALUES_SCALAR:
        return coerce_value(b, c->data_type, v);
    case COND_VALUES_STRING:
        return v->type == SNAPSHOT_VALUE_STRING;
    case COND_VALUES_PATTERN:
        return v->type == SNAPSHOT_VALUE_STRING && add_pattern(b, c, v);
    case COND_VALUES_NUMBER:
        return v->type == SNAPSHOT_VALUE_NUMBER;
    case COND_VALUES_SEMVER:
        return v->type == SNAPSHOT_VALUE_STRING &&
               semver_parse(builder_string(b, v->text), v->text.len, &version);
    case COND_VALUES_TIMESTAMP:
        return add_time(b, c, v);
    default:
        return false;
    }
}

static bool compile_values(struct snapshot_builder *b, struct snapshot_cond *c, json_object *cond)
{
    json_object *values = NULL;
    json_object_object_get_ex(cond, "values", &values);
    size_t n = json_object_is_type(values, json_type_array) ? json_object_array_length(values) : 0;
    if (cond_ops[c->op].kind == COND_VALUES_NONE)
        return values == NULL || (json_object_is_type(values, json_type_array) && n == 0);
    if (n == 0 || (cond_ops[c->op].single_value && n != 1))
        return false;
    b->tmp_values.len = 0;
    for (size_t i = 0; i < n; i++) {
        struct snapshot_value v = {.pattern = SNAPSHOT_NONE};
        if (!scalar_value(b, json_object_array_get_idx(values, i), &v) || !typed_value(b, c, &v))
            return false;
        if (!vec_append(&b->tmp_values, &v, 1)) {
            out_of_memory(b);
            return false;
        }
    }
    c->value_first = intern_records(b, &b->values, b->tmp_values.data, n);
    c->value_count = (uint32_t)n;
    return true;
}

/* ------------------------------------------------------------------ */
/* Conditions */

/* The entity dataType of a dotted attribute "entity.attr..." in org. */
static uint32_t attribute_data_type(struct snapshot_builder *b, uint32_t org, const char *attribute)
{
    const char *dot = strchr(attribute, '.');
    uint32_t type;
    size_t len;
    if (dot == NULL || b->attr_map.count == 0)
        return SNAPSHOT_DATA_ANY;
    char entity[128];
    size_t entity_len = (size_t)(dot - attribute);
    if (entity_len >= sizeof entity)
        return SNAPSHOT_DATA_ANY;
    memcpy(entity, attribute, entity_len);
    entity[entity_len] = '\0';
    const char *key = indexed_key(b, org, entity, dot + 1, &len);
    return lookup_index(&b->attr_map, key, len, &type) ? type : SNAPSHOT_DATA_ANY;
}

static bool compile_attribute(struct snapshot_builder *b, uint32_t org, json_object *cond,
                              const char *attribute, struct snapshot_cond *c)
{
    uint32_t op = cond_op_from_name(json_member_string(cond, "operator"));
    if (*attribute == '\0' || op == SNAPSHOT_OP_COUNT)
        return false;
    c->kind = SNAPSHOT_COND_ATTRIBUTE;
    c->op = op;
    if (json_member_true(cond, "caseInsensitive"))
        c->flags |= SNAPSHOT_COND_CASELESS;
    c->attribute = intern(b, attribute);
    if (strcmp(attribute, "$currentTime") == 0) {
        c->flags |= SNAPSHOT_COND_CURRENT_TIME;
        if (!cond_op_reads_instants(c->op))
            b->pending_opaque = true;
    } else {
        c->data_type = attribute_data_type(b, org, attribute);
        if (strchr(attribute, '.') == NULL) { /* one part: the attribute itself */
            c->path_first = intern_records(b, &b->paths, &c->attribute, 1);
            c->path_count = 1;
        } else {
            c->path_first = add_path(b, attribute, &c->path_count);
        }
    }
    return compile_values(b, c, cond);
}

/* A segment reference: records the segment's clock use for the rule's
 * environment; false when the segment cannot resolve. */
static bool compile_segment_ref(struct snapshot_builder *b, uint32_t org, const char *key,
                                struct snapshot_cond *c)
{
    size_t len;
    uint32_t index;
    const char *map_key = indexed_key(b, org, key, NULL, &len);
    if (!lookup_index(&b->segment_map, map_key, len, &index)) {
        c->kind = SNAPSHOT_COND_MISSING_SEGMENT;
        return true;
    }
    c->kind = SNAPSHOT_COND_SEGMENT;
    c->segment = index;
    const struct cond_result *result = vec_at(&b->segment_results, index);
    if (!vec_append(&b->pending_times, vec_at(&b->result_times, result->time_first),
                    result->time_count))
        out_of_memory(b);
    b->pending_opaque |= result->opaque;
    return !result->broken;
}

/* Compiles one condition and pushes it; false when it cannot resolve. */
static bool compile_condition(struct snapshot_builder *b, uint32_t org, json_object *cond,
                              bool in_segment)
{
    struct snapshot_cond c = {.kind = SNAPSHOT_COND_BROKEN, .segment = SNAPSHOT_NONE};
    const char *attribute = json_member_string(cond, "attribute");
    const char *segment = json_member_string(cond, "segment");
    bool ok = false;
    if (json_object_is_type(cond, json_type_object)) {
        if (json_member_true(cond, "negate"))
            c.flags |= SNAPSHOT_COND_NEGATE;
        if (attribute != NULL && segment == NULL)
            ok = compile_attribute(b, org, cond, attribute, &c);
        else if (segment != NULL && attribute == NULL && !in_segment)
            ok = compile_segment_ref(b, org, segment, &c);
    }
    if (!ok && c.kind != SNAPSHOT_COND_SEGMENT)
        c = (struct snapshot_cond){.kind = SNAPSHOT_COND_BROKEN, .segment = SNAPSHOT_NONE};
    if (!vec_append(&b->tmp_conds, &c, 1))
        out_of_memory(b);
    return ok;
}

/* Compiles a conditions array into r (conditions stored once). */
static void compile_condition_list(struct snapshot_builder *b, uint32_t org, const char *json,
                                   bool in_segment, struct cond_result *r)
{
    json_object *list = parse_json(b, json);
    bool ok = json_object_is_type(list, json_type_array);
    size_t n = ok ? json_object_array_length(list) : 0;
    size_t times_before = b->pending_times.len;
    bool opaque_before = b->pending_opaque;
    b->pending_opaque = false;
    b->tmp_conds.len = 0;
    for (size_t i = 0; i < n; i++)
        ok &= compile_condition(b, org, json_object_array_get_idx(list, i), in_segment);
    json_object_put(list);
    r->first = intern_records(b, &b->conds, b->tmp_conds.data, b->tmp_conds.len);
    r->count = (uint32_t)b->tmp_conds.len;
    r->broken = !ok;
    r->opaque = b->pending_opaque;
    b->pending_opaque |= opaque_before;
    r->time_first = (uint32_t)b->result_times.len;
    r->time_count = (uint32_t)(b->pending_times.len - times_before);
    if (!vec_append(&b->result_times, vec_at(&b->pending_times, times_before), r->time_count))
        out_of_memory(b);
}

/* The cache key of a conditions list: organization, context, text. */
static const char *cond_cache_key(struct snapshot_builder *b, uint32_t org, bool in_segment,
                                  const char *json, size_t *len)
{
    uint32_t head[2] = {org, in_segment};
    return compose_key(b, head, sizeof head, json, NULL, len);
}

/* Compiles a conditions array (once per distinct text in an organization)
 * and notes its clock use as pending; returns the result. */
struct cond_result compile_conditions(struct snapshot_builder *b, uint32_t org, const char *json,
                                      bool in_segment)
{
    size_t len;
    uint32_t index;
    struct cond_result r = {0};
    if (json == NULL)
        json = "";
    const char *key = cond_cache_key(b, org, in_segment, json, &len);
    if (lookup_index(&b->cond_cache, key, len, &index)) {
        r = *(struct cond_result *)vec_at(&b->cond_results, index);
        if (!vec_append(&b->pending_times, vec_at(&b->result_times, r.time_first), r.time_count))
            out_of_memory(b);
        b->pending_opaque |= r.opaque;
        return r;
    }
    compile_condition_list(b, org, json, in_segment, &r);
    index = (uint32_t)b->cond_results.len;
    if (!vec_append(&b->cond_results, &r, 1))
        out_of_memory(b);
    key = cond_cache_key(b, org, in_segment, json, &len);
    cache_put(b, &b->cond_cache, key, len, index);
    return r;
}

void reset_pending_clock(struct snapshot_builder *b)
{
    b->pending_times.len = 0;
    b->pending_opaque = false;
}

void flush_pending_clock(struct snapshot_builder *b, uint32_t env_index)
{
    struct snapshot_env *env = vec_at(&b->envs, env_index);
    if (b->pending_opaque)
        env->clock_opaque = 1;
    for (size_t i = 0; i < b->pending_times.len; i++) {
        struct env_time *t = vec_push(&b->env_times);
        if (t == NULL) {
            out_of_memory(b);
            return;
        }
        t->env = env_index;
        t->t = *(int64_t *)vec_at(&b->pending_times, i);
    }
    reset_pending_clock(b);
}

int snapshot_builder_add_segment(struct snapshot_builder *b, const char *org_id,
                                 const char *segment_key, const char *conditions_json)
{
    uint32_t org, index;
    size_t len;
    if (b->failed || org_index(b, org_id, &org) != 0)
        return -1;
    if (org_sealed(b, org))
        return builder_fail(b, "segment %s added after flags of organization %s", segment_key,
                            org_id);
    const char *key = indexed_key(b, org, segment_key, NULL, &len);
    if (key == NULL || lookup_index(&b->segment_map, key, len, &index))
        return key ? builder_fail(b, "segment %s added twice", segment_key) : -1;
    index = (uint32_t)b->segments.len;
    if (map_add(&b->segment_map, key, len, index) == NULL)
        return out_of_memory(b);
    reset_pending_clock(b);
    struct cond_result r = compile_conditions(b, org, conditions_json, true);
    reset_pending_clock(b);
    struct snapshot_segment segment = {.org = intern(b, org_id),
                                       .key = intern(b, segment_key),
                                       .cond_first = r.first,
                                       .cond_count = r.count,
                                       .broken = r.broken};
    if (!vec_append(&b->segments, &segment, 1) || !vec_append(&b->segment_results, &r, 1))
        return out_of_memory(b);
    return b->failed ? -1 : 0;
}
