/*
 * validate.h - one helper per field rule of the management API, and the
 * validation of conditions (doc/choices.md "Conditions") and serve objects.
 *
 * Owns struct validate: the errors collected while checking one request
 * (a json-c object mapping a field path to an array of messages, the body
 * of a 422) and the current field path ("rules[3].conditions[0].operator",
 * "serve.rollout[2].weight"). Helpers never stop at the first error: they
 * record every message and return what they could read.
 *
 * Lengths count characters (UTF-8 code points), not bytes. References to
 * other objects (segments, entity attributes, variants) are checked through
 * caller-supplied callbacks (struct validate_refs), so this file needs no
 * database: it is in the core library, used by flags, rules, segments and
 * the agent.
 *
 * Field helpers take the parent object and the member name, push the name
 * onto the path for their messages, and report what they found:
 * VALIDATE_ABSENT (no such member; an error when VALIDATE_REQUIRED),
 * VALIDATE_NULL (JSON null; an error unless VALIDATE_NULLABLE),
 * VALIDATE_SET (a valid value, stored in *out) or VALIDATE_INVALID (an
 * error was recorded).
 */
#ifndef ENSIGN_VALIDATE_H
#define ENSIGN_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "eval/cond_ops.h" /* the condition operators: cond_ops[], COND_OPS_SCHEMA_ENUM */

#define VALIDATE_PATH_MAX 256

#define VALIDATE_KEY_MAX 63                      /* flag, segment, entity keys */
#define VALIDATE_PRIORITY_MAX 9007199254740991LL /* 2^53 - 1 */
#define VALIDATE_CONDITIONS_MAX 50               /* per rule or segment */
#define VALIDATE_VALUES_MAX 100                  /* values per condition */
#define VALIDATE_ATTRIBUTE_MAX 200               /* condition attribute path */
#define VALIDATE_ROLLOUT_MAX 64                  /* rollout items */
#define VALIDATE_WEIGHT_MAX 1000000              /* rollout weight */
#define VALIDATE_BUCKET_BY_MAX 200               /* bucketBy characters */

/* The key pattern (validate_key_ok) as the schemas write it, and its message. */
#define VALIDATE_KEY_PATTERN "^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"
#define VALIDATE_KEY_MESSAGE                                                                       \
    "must be lowercase letters, digits and inner hyphens (" VALIDATE_KEY_PATTERN ")"

struct validate {
    struct json_object *errors; /* NULL until the first error; owned */
    size_t count;               /* messages recorded so far */
    char path[VALIDATE_PATH_MAX];
    size_t len;
};

enum validate_found { VALIDATE_ABSENT, VALIDATE_NULL, VALIDATE_SET, VALIDATE_INVALID };

/* Flags of the field helpers. */
#define VALIDATE_REQUIRED 1u
#define VALIDATE_NULLABLE 2u

/* Condition operators: the table in src/eval/cond_ops.h (cond_ops[],
 * cond_op_from_name) is the one list; the validator reads it. */

/* Flag types. */
enum validate_flag_type { FLAG_TYPE_BOOLEAN, FLAG_TYPE_STRING, FLAG_TYPE_NUMBER, FLAG_TYPE_JSON };

/* The type named name, or -1. */
int validate_flag_type_from_name(const char *name);
const char *validate_flag_type_name(enum validate_flag_type type);

/* What an entity attribute reference resolves to. */
enum validate_attr_ref {
    VALIDATE_ATTR_NOT_ENTITY, /* the first path element names no entity */
    VALIDATE_ATTR_DECLARED,   /* the entity declares the attribute */
    VALIDATE_ATTR_UNDECLARED  /* the entity exists but does not declare it: 422 */
};

/*
 * References a condition or serve may make, resolved by the caller. Any
 * callback may be NULL: that kind of reference is then not checked.
 */
struct validate_refs {
    void *arg;
    /* Does segment key exist in the organization? */
    bool (*segment_exists)(void *arg, const char *key);
    /* entity: the first element of an attribute path; attribute: the rest
     * (after the first dot). Only called when the path has a dot. */
    enum validate_attr_ref (*entity_attribute)(void *arg, const char *entity,
                                               const char *attribute);
    /* Does the flag have variant key? */
    bool (*variant_exists)(void *arg, const char *key);
};

/* ---- the collector ---- */

void validate_init(struct validate *v);
void validate_free(struct validate *v);
bool validate_ok(const struct validate *v);

/* Passes the errors object to the caller (NULL when there were none). */
struct json_object *validate_take_errors(struct validate *v);

/* Records a message for the current path extended by field (NULL or ""
 * for the current path itself). */
void validate_error(struct validate *v, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Extends the path by ".name" (or "name" at the root) or "[index]";
 * returns a mark for validate_pop. */
size_t validate_push_field(struct validate *v, const char *name);
size_t validate_push_index(struct validate *v, size_t index);
void validate_pop(struct validate *v, size_t mark);

/* ---- pure checks ---- */

/* Number of UTF-8 characters of s, or -1 when s is not valid UTF-8. */
long validate_utf8_length(const char *s, size_t len);

/* ^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$, 1 to 63 characters. */
bool validate_key_ok(const char *s);

/* 8-4-4-4-12 hexadecimal uuid (either case). */
bool validate_uuid_ok(const char *s);

/* A semantic version as semver_parse (src/eval/semver.h) reads it, the
 * one grammar of the semver_* operators. */
bool validate_semver_ok(const char *s);

/* An ISO 8601 timestamp as isotime_parse (src/eval/isotime.h) reads it;
 * *ms receives milliseconds since the epoch (rounded toward the past) when
 * not NULL. */
bool validate_timestamp_parse(const char *s, int64_t *ms);

/*
 * Derives a key from text (doc/choices.md "Variants and keys"): lowercased, each run of
 * characters outside [a-z0-9] becomes one "-", leading and trailing "-"
 * removed, cut to 63 (and trailing "-" removed again). out must hold 64
 * bytes; it may come out empty.
 */
void validate_slugify(const char *text, char out[VALIDATE_KEY_MAX + 1]);

/* Whether the string value has min_chars to max_chars characters of valid
 * UTF-8; records the message at the current path when not. */
bool validate_length_ok(struct validate *v, const struct json_object *value, size_t min_chars,
                        size_t max_chars);

/* A JSON integer, or a double without a fraction within 2^53, as *out. */
bool validate_integral(const struct json_object *value, int64_t *out);

/* ---- field helpers (see the header comment for the return value) ---- */

/* Records "unknown field" for each member of obj not in allowed (a
 * NULL-terminated list). Returns true when there was none. */
bool validate_only_fields(struct validate *v, const struct json_object *obj,
                          const char *const *allowed);

/* A string of min_chars to max_chars characters. */
enum validate_found validate_string(struct validate *v, const struct json_object *obj,
                                    const char *name, size_t min_chars, size_t max_chars,
                                    unsigned flags, const char **out);

/* Email syntax (the HTML form's rule, with a dot in the domain), checked
 * with PCRE2: a local part of 1-64 of the characters
 * A-Za-z0-9.!#$%&'*+/=?^_`{|}~-, "@", dot-separated labels of 1-63
 * letters, digits and inner hyphens. Length limits are the caller's. */
bool validate_email_ok(const char *s, size_t len);

/* A key (validate_key_ok). */
enum validate_found validate_key(struct validate *v, const struct json_object *obj,
                                 const char *name, unsigned flags, const char **out);

/* A uuid string. */
enum validate_found validate_uuid(struct validate *v, const struct json_object *obj,
                                  const char *name, unsigned flags, const char **out);

/* A JSON boolean. */
enum validate_found validate_bool(struct validate *v, const struct json_object *obj,
                                  const char *name, unsigned flags, bool *out);

/* A JSON integer (a number without a fraction) from min to max. */
enum validate_found validate_int(struct validate *v, const struct json_object *obj,
                                 const char *name, int64_t min, int64_t max, unsigned flags,
                                 int64_t *out);

/* An array of min_items to max_items items (items not checked). */
enum validate_found validate_array(struct validate *v, const struct json_object *obj,
                                   const char *name, size_t min_items, size_t max_items,
                                   unsigned flags, struct json_object **out);

/* An array of at most max_items strings of min_chars to max_chars (tags). */
enum validate_found validate_string_array(struct validate *v, const struct json_object *obj,
                                          const char *name, size_t max_items, size_t min_chars,
                                          size_t max_chars, unsigned flags,
                                          struct json_object **out);

/* ---- conditions and serve objects ---- */

/*
 * The conditions array obj[name] (absent means empty): at most
 * VALIDATE_CONDITIONS_MAX conditions, each as doc/choices.md "Conditions" says.
 * Segment conditions are refused when !allow_segments ("segments cannot
 * reference segments") and otherwise checked with refs->segment_exists;
 * attribute paths whose first element names an entity are checked with
 * refs->entity_attribute; matches patterns are compiled with PCRE2.
 */
enum validate_found validate_conditions(struct validate *v, const struct json_object *obj,
                                        const char *name, bool allow_segments,
                                        const struct validate_refs *refs, struct json_object **out);

/* One condition value at the current path (used by validate_conditions). */
void validate_condition(struct validate *v, const struct json_object *cond, bool allow_segments,
                        const struct validate_refs *refs);

/*
 * The serve object obj[name]: exactly one of {"variant": KEY} or
 * {"rollout": [{variant, weight}, 1 to 64], "bucketBy"?: 1 to 200 chars};
 * weights integers 0 to 1000000, not all zero; variants checked with
 * refs->variant_exists.
 */
enum validate_found validate_serve(struct validate *v, const struct json_object *obj,
                                   const char *name, unsigned flags,
                                   const struct validate_refs *refs, struct json_object **out);

/* One serve value at the current path (used by validate_serve). */
void validate_serve_value(struct validate *v, const struct json_object *serve,
                          const struct validate_refs *refs);

/*
 * A new copy of a valid serve object in canonical form (caller owns):
 * only its known members, weights as JSON integers (so 5.0 is stored as 5).
 */
struct json_object *validate_serve_canonical(const struct json_object *serve);

/*
 * A new reference to value, or for a number without a fraction (1.0, 1e3)
 * a new JSON integer: "integers are written without a fraction"
 * (doc/choices.md "Variants and keys"). Caller owns the result.
 */
struct json_object *validate_number_canonical(const struct json_object *value);

/*
 * A variant value for a flag of type: boolean a JSON boolean, string a
 * string, number a finite number, json an object or an array; never null.
 * Records at the current path extended by field.
 */
bool validate_variant_value(struct validate *v, const char *field, const struct json_object *value,
                            enum validate_flag_type type);

#endif
