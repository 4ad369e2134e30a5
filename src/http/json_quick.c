/*
 * json_quick.c - the plain-JSON fast path (see json_quick.h).
 *
 * A recursive descent over the subset; every value is built with the
 * json-c constructor the tokener uses for it (json_object_new_string_len,
 * json_object_new_int64, json_object_new_boolean, NULL for null,
 * json_object_object_add, json_object_array_add). On the first byte
 * outside the subset the partial tree is released and false returned.
 * Recursion is bounded by JSON_QUICK_MAX_DEPTH.
 */
#include "json_quick.h"

#include <json-c/json.h>
#include <stdint.h>
#include <string.h>

#define MAX_INT_DIGITS 18 /* 10^18 - 1 fits in int64 */

struct quick {
    const char *p, *end;
    struct json_quick_keys *keys; /* NULL: json-c copies names */
};

static void skip_ws(struct quick *q)
{
    while (q->p < q->end && (*q->p == ' ' || *q->p == '\t' || *q->p == '\n' || *q->p == '\r'))
        q->p++;
}

/* A string at q->p ('"'): its bytes in *s, *n; false outside the subset. */
static bool quick_string(struct quick *q, const char **s, size_t *n)
{
    const char *start = ++q->p;
    while (q->p < q->end) {
        unsigned char c = (unsigned char)*q->p;
        if (c == '"') {
            *s = start;
            *n = (size_t)(q->p - start);
            q->p++;
            return true;
        }
        if (c == '\\' || c < 0x20)
            return false;
        q->p++;
    }
    return false;
}

static bool quick_literal(struct quick *q, const char *word, size_t n)
{
    if ((size_t)(q->end - q->p) < n || memcmp(q->p, word, n) != 0)
        return false;
    q->p += n;
    return true;
}

static bool quick_integer(struct quick *q, struct json_object **out)
{
    bool negative = *q->p == '-';
    const char *digits = q->p + negative;
    const char *p = digits;
    int64_t value = 0;
    while (p < q->end && *p >= '0' && *p <= '9') {
        if ((size_t)(p - digits) == MAX_INT_DIGITS)
            return false; /* declined before value can overflow */
        value = value * 10 + (*p - '0');
        p++;
    }
    size_t n = (size_t)(p - digits);
    if (n == 0 || n > MAX_INT_DIGITS || (digits[0] == '0' && (n > 1 || negative)))
        return false;
    if (p < q->end && (*p == '.' || *p == 'e' || *p == 'E'))
        return false;
    q->p = p;
    *out = json_object_new_int64(negative ? -value : value);
    return *out != NULL;
}

static bool quick_value(struct quick *q, int depth, struct json_object **out);

/* Steps over an opening bracket; true when close follows at once (an
 * empty container, stepped over too). */
static bool quick_open_empty(struct quick *q, char close)
{
    q->p++;
    skip_ws(q);
    if (q->p < q->end && *q->p == close) {
        q->p++;
        return true;
    }
    return false;
}

/* After a member or an element: 1 on ',' (another follows), 0 on close
 * (the container ends), -1 on anything else. Steps over what it read. */
static int quick_separator(struct quick *q, char close)
{
    skip_ws(q);
    if (q->p >= q->end || (*q->p != close && *q->p != ','))
        return -1;
    bool more = *q->p++ == ',';
    skip_ws(q);
    return more;
}

/* A member's name and the colon after it (and the whitespace around):
 * the name's bytes in *key, *len; false outside the subset. */
static bool quick_member_name(struct quick *q, const char **key, size_t *len)
{
    if (q->p >= q->end || *q->p != '"' || !quick_string(q, key, len))
        return false;
    skip_ws(q);
    if (q->p >= q->end || *q->p != ':')
        return false;
    q->p++;
    skip_ws(q);
    return true;
}

static bool quick_object(struct quick *q, int depth, struct json_object **out)
{
    struct json_object *obj = json_object_new_object();
    *out = obj;
    if (obj == NULL)
        return false;
    if (quick_open_empty(q, '}'))
        return true;
    for (;;) {
        const char *key;
        size_t key_len;
        if (!quick_member_name(q, &key, &key_len))
            return false;
        char stack_key[64];
        if (key_len >= sizeof stack_key)
            return false;
        char *name = stack_key;
        unsigned add_flags = 0;
        if (q->keys != NULL && q->keys->used + key_len < sizeof q->keys->text) {
            name = q->keys->text + q->keys->used;
            q->keys->used += key_len + 1;
            add_flags = JSON_C_OBJECT_KEY_IS_CONSTANT; /* it lives in keys */
        }
        memcpy(name, key, key_len);
        name[key_len] = '\0';
        struct json_object *value = NULL;
        bool ok = quick_value(q, depth, &value);
        if (!ok || json_object_object_add_ex(obj, name, value, add_flags) != 0) {
            json_object_put(value);
            return false;
        }
        int more = quick_separator(q, '}');
        if (more <= 0)
            return more == 0;
    }
}

static bool quick_array(struct quick *q, int depth, struct json_object **out)
{
    struct json_object *arr = json_object_new_array();
    *out = arr;
    if (arr == NULL)
        return false;
    if (quick_open_empty(q, ']'))
        return true;
    for (;;) {
        struct json_object *value = NULL;
        if (!quick_value(q, depth, &value) || json_object_array_add(arr, value) != 0) {
            json_object_put(value);
            return false;
        }
        int more = quick_separator(q, ']');
        if (more <= 0)
            return more == 0;
    }
}

/* One value at q->p (no leading whitespace); depth counts the containers
 * around it. */
static bool quick_value(struct quick *q, int depth, struct json_object **out)
{
    *out = NULL;
    if (q->p >= q->end)
        return false;
    switch (*q->p) {
    case '{':
        return depth < JSON_QUICK_MAX_DEPTH && quick_object(q, depth + 1, out);
    case '[':
        return depth < JSON_QUICK_MAX_DEPTH && quick_array(q, depth + 1, out);
    case '"': {
        const char *s;
        size_t n;
        if (!quick_string(q, &s, &n))
            return false;
        *out = json_object_new_string_len(s, (int)n);
        return *out != NULL;
    }
    case 't':
        return quick_literal(q, "true", 4) && (*out = json_object_new_boolean(1)) != NULL;
    case 'f':
        return quick_literal(q, "false", 5) && (*out = json_object_new_boolean(0)) != NULL;
    case 'n':
        return quick_literal(q, "null", 4);
    default:
        return (*q->p == '-' || (*q->p >= '0' && *q->p <= '9')) && quick_integer(q, out);
    }
}

/* Starts a parse of text: keys emptied, q at the opening brace of the
 * top-level object; false when the text does not start with one. */
static bool quick_begin(struct quick *q, const char *text, size_t len, struct json_quick_keys *keys)
{
    *q = (struct quick){text, text + len, keys};
    if (keys != NULL)
        keys->used = 0;
    skip_ws(q);
    return q->p < q->end && *q->p == '{';
}

bool json_quick_parse(const char *text, size_t len, struct json_quick_keys *keys,
                      struct json_object **out)
{
    struct quick q;
    *out = NULL;
    if (!quick_begin(&q, text, len, keys))
        return false;
    struct json_object *obj = NULL;
    bool ok = quick_object(&q, 1, &obj);
    skip_ws(&q);
    if (!ok || q.p != q.end) {
        json_object_put(obj);
        return false;
    }
    *out = obj;
    return true;
}

bool json_quick_parse_only_member(const char *text, size_t len, const char *name,
                                  struct json_quick_keys *keys, struct json_object **value)
{
    struct quick q;
    *value = NULL;
    if (!quick_begin(&q, text, len, keys))
        return false;
    q.p++;
    skip_ws(&q);
    const char *key;
    size_t key_len;
    if (!quick_member_name(&q, &key, &key_len) || key_len != strlen(name) ||
        memcmp(key, name, key_len) != 0)
        return false;
    struct json_object *member = NULL;
    bool ok = quick_value(&q, 1, &member); /* inside the body: depth 1, as in the whole parse */
    skip_ws(&q);
    if (ok && q.p < q.end && *q.p == '}') {
        q.p++;
        skip_ws(&q);
        if (q.p == q.end) {
            *value = member;
            return true;
        }
    }
    json_object_put(member);
    return false;
}
