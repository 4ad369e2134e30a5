/*
 * json_quick.c - the plain-JSON fast path (see json_quick.h).
 *
 * A recursive descent over the subset, appending each value to the flat
 * document as it is read (json_flat.h): a container first, then its
 * children, then its count and span when it closes. On the first byte
 * outside the subset (or a member name met twice) the parse answers NULL
 * and the caller lets json-c decide. Recursion is bounded by
 * JSON_QUICK_MAX_DEPTH.
 */
#include "http/json_quick.h"

#include <stdint.h>
#include <string.h>

#include "http/json_guard.h"

#define MAX_INT_DIGITS 18 /* 10^18 - 1 fits in int64 */

struct quick {
    const char *p, *end;
    struct json_flat_doc *doc;
    size_t members, max_members;   /* object members so far, and the bound */
    size_t elements, max_elements; /* array elements so far, and the bound */
};

static void skip_ws(struct quick *q)
{
    while (q->p < q->end && (*q->p == ' ' || *q->p == '\t' || *q->p == '\n' || *q->p == '\r'))
        q->p++;
}

/* A string at q->p ('"'): its bytes in *s, *n; false outside the subset
 * or when its bytes are not UTF-8 (checked only when one is not ASCII). */
static bool quick_string(struct quick *q, const char **s, size_t *n)
{
    const char *start = ++q->p;
    unsigned char seen = 0; /* the bits of every byte: 0x80 when one is not ASCII */
    while (q->p < q->end) {
        unsigned char c = (unsigned char)*q->p;
        if (c == '"') {
            *s = start;
            *n = (size_t)(q->p - start);
            q->p++;
            return seen < 0x80 || json_guard_utf8_valid(start, *n);
        }
        if (c == '\\' || c < 0x20)
            return false;
        seen |= c;
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

static bool quick_integer(struct quick *q, const char *key, size_t key_len)
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
    size_t at = json_flat_add(q->doc, JSON_FLAT_INT, key, key_len);
    if (at == SIZE_MAX)
        return false;
    q->doc->nodes[at].u.integer = negative ? -value : value;
    return true;
}

static bool quick_value(struct quick *q, int depth, const char *key, size_t key_len);

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

static bool quick_object(struct quick *q, int depth, const char *key, size_t key_len)
{
    size_t at = json_flat_add(q->doc, JSON_FLAT_OBJECT, key, key_len);
    if (at == SIZE_MAX)
        return false;
    if (quick_open_empty(q, '}'))
        return true;
    for (uint32_t members = 1;; members++) {
        const char *name;
        size_t name_len;
        if (++q->members > q->max_members || !quick_member_name(q, &name, &name_len) ||
            !quick_value(q, depth, name, name_len))
            return false;
        int more = quick_separator(q, '}');
        if (more <= 0)
            return more == 0 && json_flat_close_object(q->doc, at, members);
    }
}

static bool quick_array(struct quick *q, int depth, const char *key, size_t key_len)
{
    size_t at = json_flat_add(q->doc, JSON_FLAT_ARRAY, key, key_len);
    if (at == SIZE_MAX)
        return false;
    if (quick_open_empty(q, ']'))
        return true;
    for (uint32_t items = 1;; items++) {
        if (++q->elements > q->max_elements || !quick_value(q, depth, NULL, 0))
            return false;
        int more = quick_separator(q, ']');
        if (more < 0)
            return false;
        if (more == 0) {
            json_flat_close_array(q->doc, at, items);
            return true;
        }
    }
}

static bool quick_scalar(struct quick *q, enum json_flat_type type, bool boolean, const char *key,
                         size_t key_len)
{
    size_t at = json_flat_add(q->doc, type, key, key_len);
    if (at == SIZE_MAX)
        return false;
    q->doc->nodes[at].boolean = boolean;
    return true;
}

static bool quick_text(struct quick *q, const char *key, size_t key_len)
{
    const char *s;
    size_t n;
    if (!quick_string(q, &s, &n) || n > UINT32_MAX)
        return false;
    size_t at = json_flat_add(q->doc, JSON_FLAT_STRING, key, key_len);
    if (at == SIZE_MAX)
        return false;
    q->doc->nodes[at].u.text = s;
    q->doc->nodes[at].len = (uint32_t)n;
    return true;
}

/* One value at q->p (no leading whitespace), the member key (NULL in an
 * array); depth counts the containers around it. */
static bool quick_value(struct quick *q, int depth, const char *key, size_t key_len)
{
    if (q->p >= q->end)
        return false;
    switch (*q->p) {
    case '{':
        return depth < JSON_QUICK_MAX_DEPTH && quick_object(q, depth + 1, key, key_len);
    case '[':
        return depth < JSON_QUICK_MAX_DEPTH && quick_array(q, depth + 1, key, key_len);
    case '"':
        return quick_text(q, key, key_len);
    case 't':
        return quick_literal(q, "true", 4) &&
               quick_scalar(q, JSON_FLAT_BOOLEAN, true, key, key_len);
    case 'f':
        return quick_literal(q, "false", 5) &&
               quick_scalar(q, JSON_FLAT_BOOLEAN, false, key, key_len);
    case 'n':
        return quick_literal(q, "null", 4) && quick_scalar(q, JSON_FLAT_NULL, false, key, key_len);
    default:
        return (*q->p == '-' || (*q->p >= '0' && *q->p <= '9')) && quick_integer(q, key, key_len);
    }
}

const struct json_flat *json_quick_parse(const char *text, size_t len, size_t max_members,
                                         size_t max_elements, struct json_flat_doc *doc)
{
    struct quick q = {text, text + len, doc, 0, max_members, 0, max_elements};
    json_flat_doc_reset(doc);
    skip_ws(&q);
    if (q.p >= q.end || *q.p != '{' || !quick_object(&q, 1, NULL, 0))
        return NULL;
    skip_ws(&q);
    return q.p == q.end ? json_flat_doc_finish(doc) : NULL;
}
