/*
 * isotime.c - ISO 8601 parsing and formatting (see isotime.h).
 *
 * Calendar arithmetic is the proleptic Gregorian calendar in whole days
 * from 1970-01-01 (era-based, so no loops over years and no overflow for
 * years 0 to 9999).
 */
#include "eval/isotime.h"

#define US_PER_SECOND INT64_C(1000000)
#define SECONDS_PER_DAY INT64_C(86400)

static bool digits(const char *text, size_t len, size_t pos, size_t n, int *out)
{
    int value = 0;
    if (pos + n > len)
        return false;
    for (size_t i = pos; i < pos + n; i++) {
        if (text[i] < '0' || text[i] > '9')
            return false;
        value = value * 10 + (text[i] - '0');
    }
    *out = value;
    return true;
}

static bool is_leap(int year)
{
    return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

static int days_in_month(int year, int month)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && is_leap(year) ? 29 : days[month - 1];
}

/* Days from 1970-01-01 to year-month-day. */
static int64_t days_from_civil(int year, int month, int day)
{
    int64_t y = year - (month <= 2);
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t year_of_era = y - era * 400;
    int64_t shifted_month = month > 2 ? month - 3 : month + 9;
    int64_t day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + day_of_era - 719468;
}

static void civil_from_days(int64_t days, int *year, int *month, int *day)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t day_of_era = days - era * 146097;
    int64_t year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    int64_t shifted_month = (5 * day_of_year + 2) / 153;
    *day = (int)(day_of_year - (153 * shifted_month + 2) / 5 + 1);
    *month = (int)(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
    *year = (int)(year_of_era + era * 400 + (*month <= 2));
}

static bool parse_date(const char *text, size_t len, int64_t *days)
{
    int year, month, day;
    if (!digits(text, len, 0, 4, &year) || len < 10 || text[4] != '-' || text[7] != '-' ||
        !digits(text, len, 5, 2, &month) || !digits(text, len, 8, 2, &day))
        return false;
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month))
        return false;
    *days = days_from_civil(year, month, day);
    return true;
}

/* Fraction digits after a '.' at *pos, as microseconds. */
static bool parse_fraction(const char *text, size_t len, size_t *pos, int64_t *us)
{
    size_t i = *pos + 1, start = i;
    int64_t value = 0, scale = 100000;
    for (; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
        value += (text[i] - '0') * scale;
        scale /= 10;
    }
    if (i == start)
        return false;
    *pos = i;
    *us = value;
    return true;
}

/* HH:MM[:SS[.f]] at *pos, as microseconds into the day. */
static bool parse_clock(const char *text, size_t len, size_t *pos, int64_t *us)
{
    size_t p = *pos;
    int hour, minute, second = 0;
    int64_t fraction = 0;
    if (!digits(text, len, p, 2, &hour) || p + 2 >= len || text[p + 2] != ':' ||
        !digits(text, len, p + 3, 2, &minute))
        return false;
    p += 5;
    if (p < len && text[p] == ':') {
        if (!digits(text, len, p + 1, 2, &second))
            return false;
        p += 3;
        if (p < len && (text[p] == '.' || text[p] == ',') &&
            !parse_fraction(text, len, &p, &fraction))
            return false;
    }
    if (hour > 23 || minute > 59 || second > 60)
        return false;
    *pos = p;
    *us = ((int64_t)hour * 3600 + minute * 60 + second) * US_PER_SECOND + fraction;
    return true;
}

/* Z, or +HH[:MM], or +HHMM at pos to the end: the offset in seconds. */
static bool parse_offset(const char *text, size_t len, size_t pos, int64_t *seconds)
{
    int hours, minutes = 0;
    *seconds = 0;
    if (pos == len)
        return true;
    if (text[pos] == 'Z' || text[pos] == 'z')
        return pos + 1 == len;
    if (text[pos] != '+' && text[pos] != '-')
        return false;
    int sign = text[pos] == '-' ? -1 : 1;
    if (!digits(text, len, pos + 1, 2, &hours))
        return false;
    size_t p = pos + 3;
    bool colon = p < len && text[p] == ':';
    if (colon || p < len) {
        p += colon;
        if (!digits(text, len, p, 2, &minutes))
            return false;
        p += 2;
    }
    if (p != len || hours > 23 || minutes > 59)
        return false;
    *seconds = sign * ((int64_t)hours * 3600 + minutes * 60);
    return true;
}

bool isotime_parse(const char *text, size_t len, int64_t *us_out)
{
    int64_t days, clock_us = 0, offset_s = 0;
    if (!parse_date(text, len, &days))
        return false;
    size_t pos = 10;
    if (pos < len && (text[pos] == 'T' || text[pos] == 't' || text[pos] == ' ')) {
        pos++;
        if (!parse_clock(text, len, &pos, &clock_us) || !parse_offset(text, len, pos, &offset_s))
            return false;
    } else if (pos != len) {
        return false;
    }
    *us_out = days * SECONDS_PER_DAY * US_PER_SECOND + clock_us - offset_s * US_PER_SECOND;
    return true;
}

static void put2(char *out, int value)
{
    out[0] = (char)('0' + value / 10);
    out[1] = (char)('0' + value % 10);
}

size_t isotime_format(int64_t us, char out[ISOTIME_FORMAT_SIZE])
{
    const int64_t min_s = days_from_civil(0, 1, 1) * SECONDS_PER_DAY;
    const int64_t max_s = days_from_civil(10000, 1, 1) * SECONDS_PER_DAY - 1;
    int64_t s = us / US_PER_SECOND - (us % US_PER_SECOND < 0);
    s = s < min_s ? min_s : (s > max_s ? max_s : s);
    int64_t days = s / SECONDS_PER_DAY - (s % SECONDS_PER_DAY < 0);
    int64_t second_of_day = s - days * SECONDS_PER_DAY;
    int year, month, day;
    civil_from_days(days, &year, &month, &day);
    put2(out, year / 100);
    put2(out + 2, year % 100);
    out[4] = '-';
    put2(out + 5, month);
    out[7] = '-';
    put2(out + 8, day);
    out[10] = 'T';
    put2(out + 11, (int)(second_of_day / 3600));
    out[13] = ':';
    put2(out + 14, (int)(second_of_day / 60 % 60));
    out[16] = ':';
    put2(out + 17, (int)(second_of_day % 60));
    out[19] = 'Z';
    out[20] = '\0';
    return 20;
}
