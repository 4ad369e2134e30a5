/*
 * json_guard.c - the checks json-c leaves out (see json_guard.h).
 *
 * Invariant: the scan never reads past text + len and never allocates; the
 * text need not be NUL-terminated.
 */
#include "http/json_guard.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the UTF-8 sequence at s (n bytes left), or 0 when invalid:
 * overlong forms, encoded surrogates and code points above U+10FFFF are
 * invalid. */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t want;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        want = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        want = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        want = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (n < want || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < want; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return want;
}

bool json_guard_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_sequence(p + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

size_t json_guard_utf8_cut(const char *s, size_t max)
{
    size_t len = strnlen(s, max);
    if (len < max)
        return len;
    while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
        len--;
    return len;
}

static int hex4(const char *p, size_t n)
{
    if (n < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Checks the \u escape at text[i] (the backslash); returns the bytes it
 * spans or 0 with *verdict set. Malformed escapes are json-c's to refuse. */
static size_t unicode_escape(const char *text, size_t len, size_t i,
                             enum json_guard_verdict *verdict)
{
    int v = hex4(text + i + 2, len - i - 2);
    if (v < 0)
        return 2;
    if (v == 0) {
        *verdict = JSON_GUARD_NUL;
        return 0;
    }
    if (v >= 0xdc00 && v <= 0xdfff) {
        *verdict = JSON_GUARD_LONE_SURROGATE;
        return 0;
    }
    if (v < 0xd800 || v > 0xdbff)
        return 6;
    bool paired = len - i >= 12 && text[i + 6] == '\\' && text[i + 7] == 'u';
    int low = paired ? hex4(text + i + 8, len - i - 8) : -1;
    if (low < 0xdc00 || low > 0xdfff) {
        *verdict = JSON_GUARD_LONE_SURROGATE;
        return 0;
    }
    return 12;
}

/* Whether a number token too long for strtod's buffer stays finite: it is
 * rewritten as 0.DIGITSeEXP with its first 30 significant digits and the
 * decimal exponent they imply (found by fuzz_validate: "5e3222...2" of 90
 * characters was accepted and json-c read it as infinity). */
static bool long_number_finite(const char *t, size_t n)
{
    char buf[64];
    size_t b = 0, k = 0;
    if (t[0] == '-')
        buf[b++] = t[k++];
    buf[b++] = '0';
    buf[b++] = '.';
    long long scale = 0;
    bool point = false, significant = false;
    for (; k < n && ((t[k] >= '0' && t[k] <= '9') || t[k] == '.'); k++) {
        if (t[k] == '.')
            point = true;
        else if (t[k] != '0' || significant) {
            significant = true;
            scale += point ? 0 : 1;
            if (b < 33)
                buf[b++] = t[k];
        } else if (point)
            scale--; /* a leading zero of the fraction */
    }
    long long exponent = 0;
    if (k < n && (t[k] == 'e' || t[k] == 'E')) {
        bool negative = ++k < n && t[k] == '-';
        k += k < n && (t[k] == '-' || t[k] == '+');
        for (; k < n && t[k] >= '0' && t[k] <= '9'; k++)
            if (exponent < 1000000)
                exponent = exponent * 10 + (t[k] - '0');
        exponent = negative ? -exponent : exponent;
    }
    if (!significant)
        return true; /* zero */
    snprintf(buf + b, sizeof buf - b, "e%lld", exponent + scale);
    errno = 0;
    double d = strtod(buf, NULL);
    return !(errno == ERANGE && fabs(d) >= 1.0);
}

/* Checks the number token at text[i]; returns its length or 0 with *verdict. */
static size_t number_token(const char *text, size_t len, size_t i, enum json_guard_verdict *verdict)
{
    size_t end = i;
    bool integer = true;
    while (end < len && strchr("+-0123456789.eE", text[end]) != NULL && text[end] != '\0') {
        if (text[end] == '.' || text[end] == 'e' || text[end] == 'E')
            integer = false;
        end++;
    }
    char buf[64];
    size_t n = end - i;
    if (n >= sizeof buf) {
        /* 64 characters cannot be an in-range integer; a long decimal
         * fraction can still be a double. */
        if (integer || !long_number_finite(text + i, n)) {
            *verdict = JSON_GUARD_NUMBER_RANGE;
            return 0;
        }
        return n;
    }
    memcpy(buf, text + i, n);
    buf[n] = '\0';
    errno = 0;
    char *stop;
    if (integer)
        (void)strtoll(buf, &stop, 10);
    else {
        double d = strtod(buf, &stop);
        if (errno == ERANGE && fabs(d) < 1.0)
            errno = 0; /* underflow to zero is harmless */
    }
    if (errno == ERANGE) {
        *verdict = JSON_GUARD_NUMBER_RANGE;
        return 0;
    }
    return n > 0 ? n : 1;
}

/* The containers around the scan's position: one bit each (1: an array),
 * JSON_GUARD_TRACKED_DEPTH deep; below that, depth is only counted. The
 * elements of the arrays are counted as they start. */
struct containers {
    uint64_t arrays;
    size_t depth;
    bool array_opened; /* an array just opened: its first element, if any, is next */
    size_t elements, max_elements;
};

static bool in_array(const struct containers *c)
{
    return c->depth > 0 && c->depth <= JSON_GUARD_TRACKED_DEPTH &&
           (c->arrays >> (c->depth - 1) & 1) != 0;
}

/* Follows the structure at byte ch outside strings; false when one
 * element too many starts. */
static bool follow(struct containers *c, unsigned char ch)
{
    bool space = ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
    /* in_array is false below the tracked depth: text that deep is the
     * parser's to refuse (too deep), not this count's */
    bool starts =
        (c->array_opened && ch != ']' && !space && in_array(c)) || (ch == ',' && in_array(c));
    if (!space)
        c->array_opened = false;
    if (ch == '[' || ch == '{') {
        if (c->depth < JSON_GUARD_TRACKED_DEPTH) {
            uint64_t bit = (uint64_t)1 << c->depth;
            c->arrays = ch == '[' ? c->arrays | bit : c->arrays & ~bit;
        }
        c->depth++;
        c->array_opened = ch == '[';
    } else if ((ch == ']' || ch == '}') && c->depth > 0) {
        c->depth--;
    }
    return !(starts && ++c->elements > c->max_elements && c->max_elements > 0);
}

enum json_guard_verdict json_guard_scan(const char *text, size_t len, size_t max_members,
                                        size_t *members)
{
    return json_guard_scan_bounded(text, len, max_members, 0, members);
}

enum json_guard_verdict json_guard_scan_bounded(const char *text, size_t len, size_t max_members,
                                                size_t max_elements, size_t *members)
{
    enum json_guard_verdict verdict = JSON_GUARD_OK;
    const unsigned char *u = (const unsigned char *)text;
    bool in_string = false;
    struct containers shape = {.max_elements = max_elements};
    *members = 0;
    for (size_t i = 0; i < len;) {
        if (in_string) { /* the plain run of a string, in one tight loop */
            while (i < len && u[i] >= 0x20 && u[i] < 0x80 && u[i] != '"' && u[i] != '\\')
                i++;
            if (i == len)
                break;
        }
        unsigned char c = u[i];
        if (c == 0)
            return JSON_GUARD_NUL_BYTE;
        if (c >= 0x80) {
            size_t n = utf8_sequence(u + i, len - i);
            if (n == 0)
                return JSON_GUARD_BAD_UTF8;
            i += n;
            continue;
        }
        if (in_string) {
            if (c == '"')
                in_string = false;
            if (c == '\\' && i + 1 < len && text[i + 1] == 'u') {
                size_t n = unicode_escape(text, len, i, &verdict);
                if (n == 0)
                    return verdict;
                i += n;
                continue;
            }
            i += c == '\\' ? 2 : 1;
            continue;
        }
        if (!follow(&shape, c))
            return JSON_GUARD_TOO_MANY_ELEMENTS;
        if (c == '"') {
            in_string = true;
        } else if (c == ':') {
            if (++*members > max_members && max_members > 0)
                return JSON_GUARD_TOO_MANY;
        } else if ((c | 0x20) == 'i' ||
                   ((c | 0x20) == 'n' && i + 1 < len && (text[i + 1] | 0x20) == 'a')) {
            /* NaN and Infinity, any case: json-c reads them, JSON has no
             * such numbers (found by fuzz_ofrep_body) */
            return JSON_GUARD_NUMBER_RANGE;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t n = number_token(text, len, i, &verdict);
            if (n == 0)
                return verdict;
            i += n;
            continue;
        }
        i++;
    }
    return JSON_GUARD_OK;
}

static size_t count_members(struct json_object *o)
{
    size_t n = 0;
    if (json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, key, value)
        {
            (void)key;
            n += 1 + count_members(value);
        }
    } else if (json_object_is_type(o, json_type_array)) {
        size_t len = json_object_array_length(o);
        for (size_t i = 0; i < len; i++)
            n += count_members(json_object_array_get_idx(o, i));
    }
    return n;
}

bool json_guard_members_kept(struct json_object *root, size_t members_in_text)
{
    return count_members(root) == members_in_text;
}

bool json_guard_not_json(enum json_guard_verdict verdict)
{
    return verdict == JSON_GUARD_BAD_UTF8 || verdict == JSON_GUARD_LONE_SURROGATE ||
           verdict == JSON_GUARD_NUL_BYTE;
}

const char *json_guard_message(enum json_guard_verdict verdict)
{
    switch (verdict) {
    case JSON_GUARD_OK:
        return "ok";
    case JSON_GUARD_BAD_UTF8:
        return "the request body is not valid UTF-8";
    case JSON_GUARD_LONE_SURROGATE:
        return "the request body holds an unpaired surrogate escape";
    case JSON_GUARD_NUL:
        return "strings must not contain the NUL character (\\u0000)";
    case JSON_GUARD_NUL_BYTE:
        return "the request body is not valid JSON (a NUL byte)";
    case JSON_GUARD_NUMBER_RANGE:
        return "a number is out of range (integers must fit in 64 bits)";
    case JSON_GUARD_TOO_MANY:
        return "the request body has too many object members";
    case JSON_GUARD_TOO_MANY_ELEMENTS:
        return "the request body has too many array elements";
    case JSON_GUARD_DUPLICATE_KEY:
        return "an object holds the same member name twice";
    }
    return "invalid JSON";
}
