/*
 * semver.c - semantic-version parsing and precedence (see semver.h).
 */
#include "eval/semver.h"

#include <string.h>

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_ident_char(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

/* Reads a decimal number at *pos; false when none or it overflows. */
static bool parse_number(const char *text, size_t len, size_t *pos, uint64_t *out)
{
    size_t i = *pos;
    uint64_t value = 0;
    if (i >= len || !is_digit(text[i]))
        return false;
    for (; i < len && is_digit(text[i]); i++) {
        uint64_t digit = (uint64_t)(text[i] - '0');
        if (value > (UINT64_MAX - digit) / 10)
            return false;
        value = value * 10 + digit;
    }
    *pos = i;
    *out = value;
    return true;
}

/* Dot-separated non-empty identifiers from pos up to end (exclusive). */
static bool identifiers_ok(const char *text, size_t pos, size_t end)
{
    if (pos >= end)
        return false;
    size_t run = 0;
    for (size_t i = pos; i < end; i++) {
        if (text[i] == '.') {
            if (run == 0)
                return false;
            run = 0;
        } else if (is_ident_char(text[i])) {
            run++;
        } else {
            return false;
        }
    }
    return run > 0;
}

static bool parse_suffix(const char *text, size_t len, size_t pos, struct semver *out)
{
    const char *plus = memchr(text + pos, '+', len - pos);
    size_t end = plus ? (size_t)(plus - text) : len;
    if (pos < end) {
        if (text[pos] != '-' || !identifiers_ok(text, pos + 1, end))
            return false;
        out->prerelease = text + pos + 1;
        out->prerelease_len = end - pos - 1;
    }
    if (plus != NULL && !identifiers_ok(text, end + 1, len))
        return false;
    return true;
}

bool semver_parse(const char *text, size_t len, struct semver *out)
{
    size_t pos = 0;
    memset(out, 0, sizeof *out);
    if (len > 0 && (text[0] == 'v' || text[0] == 'V'))
        pos = 1;
    uint64_t *parts[3] = {&out->major, &out->minor, &out->patch};
    for (int i = 0; i < 3; i++) {
        if (i > 0) {
            if (pos >= len || text[pos] != '.')
                break;
            pos++;
        }
        if (!parse_number(text, len, &pos, parts[i]))
            return false;
    }
    return parse_suffix(text, len, pos, out);
}

static bool all_digits(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!is_digit(s[i]))
            return false;
    return true;
}

static int compare_numeric_text(const char *a, size_t alen, const char *b, size_t blen)
{
    while (alen > 1 && *a == '0')
        a++, alen--;
    while (blen > 1 && *b == '0')
        b++, blen--;
    if (alen != blen)
        return alen < blen ? -1 : 1;
    return memcmp(a, b, alen);
}

static int compare_identifier(const char *a, size_t alen, const char *b, size_t blen)
{
    bool anum = all_digits(a, alen), bnum = all_digits(b, blen);
    if (anum && bnum)
        return compare_numeric_text(a, alen, b, blen);
    if (anum != bnum)
        return anum ? -1 : 1;
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen == blen ? 0 : (alen < blen ? -1 : 1);
}

static size_t identifier_len(const char *s, size_t len)
{
    const char *dot = memchr(s, '.', len);
    return dot ? (size_t)(dot - s) : len;
}

static int compare_prerelease(const char *a, size_t alen, const char *b, size_t blen)
{
    while (alen > 0 && blen > 0) {
        size_t ai = identifier_len(a, alen), bi = identifier_len(b, blen);
        int c = compare_identifier(a, ai, b, bi);
        if (c != 0)
            return c;
        a += ai, alen -= ai;
        b += bi, blen -= bi;
        if (alen > 0)
            a++, alen--;
        if (blen > 0)
            b++, blen--;
    }
    return alen == blen ? 0 : (alen == 0 ? -1 : 1);
}

static int compare_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : (a > b ? 1 : 0);
}

int semver_compare(const struct semver *a, const struct semver *b)
{
    int c = compare_u64(a->major, b->major);
    if (c == 0)
        c = compare_u64(a->minor, b->minor);
    if (c == 0)
        c = compare_u64(a->patch, b->patch);
    if (c != 0)
        return c;
    if (a->prerelease == NULL || b->prerelease == NULL) {
        if (a->prerelease == b->prerelease)
            return 0;
        return a->prerelease == NULL ? 1 : -1;
    }
    return compare_prerelease(a->prerelease, a->prerelease_len, b->prerelease, b->prerelease_len);
}
