/*
 * pgtime.c - PostgreSQL's timestamptz text to the API's ISO 8601 form (see
 * pgtime.h).
 *
 * Owns the shape check and the rewrite: "<date> <time>[.<fraction>]+00"
 * becomes "<date>T<time>.<ms>Z". Invariant: anything that is not exactly
 * that shape (DateStyle other than ISO, a zone other than UTC, BC, the
 * infinities) is refused rather than half rewritten.
 *
 * Called by jsonout.c.
 */
#include "mgmt/pgtime.h"

#include <stdbool.h>
#include <string.h>

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* The longest date: timestamptz ends in the year 294276. */
#define DATE_MAX 12

/* text[0..len) is a date: four to six digits of year, "-MM-DD". */
static bool date_ok(const char *text, size_t len)
{
    if (len < 10 || len > DATE_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        bool dash = i == len - 6 || i == len - 3;
        if (dash ? text[i] != '-' : !is_digit(text[i]))
            return false;
    }
    return true;
}

/* text[0..8) is "HH:MM:SS". */
static bool time_ok(const char *text)
{
    for (size_t i = 0; i < 8; i++) {
        if (i == 2 || i == 5 ? text[i] != ':' : !is_digit(text[i]))
            return false;
    }
    return true;
}

size_t pgtime_iso(const char *text, size_t len, char out[PGTIME_ISO_SIZE])
{
    const char *space = memchr(text, ' ', len);
    if (space == NULL)
        return 0;
    size_t date_len = (size_t)(space - text);
    const char *time = space + 1, *end = text + len;
    if (!date_ok(text, date_len) || end - time < 11 || !time_ok(time))
        return 0;
    const char *fraction = time + 8, *zone = fraction;
    if (*zone == '.') {
        zone++;
        while (zone < end && is_digit(*zone) && zone - fraction <= 6)
            zone++;
        if (zone == fraction + 1)
            return 0;
    }
    if (end - zone != 3 || memcmp(zone, "+00", 3) != 0)
        return 0;
    size_t n = 0;
    memcpy(out, text, date_len);
    n += date_len;
    out[n++] = 'T';
    memcpy(out + n, time, 8);
    n += 8;
    out[n++] = '.';
    for (int i = 1; i <= 3; i++)
        out[n++] = fraction + i < zone ? fraction[i] : '0';
    out[n++] = 'Z';
    out[n] = '\0';
    return n;
}
