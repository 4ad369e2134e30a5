/*
 * test_pgtime.c - PostgreSQL timestamptz text to the API's ISO 8601 form
 * (src/mgmt/pgtime.c): the same text as ensign_iso() (to_char ... MS), and
 * refusal of every other shape.
 */
#include <string.h>

#include "mgmt/pgtime.h"
#include "suites.h"

static const char *iso(const char *text)
{
    static char out[PGTIME_ISO_SIZE];
    size_t n = pgtime_iso(text, strlen(text), out);
    if (n == 0)
        return NULL;
    ck_assert_uint_eq(n, strlen(out));
    return out;
}

START_TEST(fractions_become_milliseconds)
{
    ck_assert_str_eq(iso("2026-11-24 15:19:28.619273+00"), "2026-11-24T15:19:28.619Z");
    ck_assert_str_eq(iso("2026-11-24 15:19:28.6+00"), "2026-11-24T15:19:28.600Z");
    ck_assert_str_eq(iso("2026-11-24 15:19:28.61+00"), "2026-11-24T15:19:28.610Z");
    ck_assert_str_eq(iso("2026-11-24 15:19:28.619+00"), "2026-11-24T15:19:28.619Z");
    /* to_char's MS truncates: 0.0005 s is still 000 */
    ck_assert_str_eq(iso("2026-01-01 00:00:00.0005+00"), "2026-01-01T00:00:00.000Z");
    ck_assert_str_eq(iso("2026-01-01 00:00:00.999999+00"), "2026-01-01T00:00:00.999Z");
}
END_TEST

START_TEST(whole_seconds_get_zero_milliseconds)
{
    ck_assert_str_eq(iso("2026-01-01 00:00:00+00"), "2026-01-01T00:00:00.000Z");
    ck_assert_str_eq(iso("1970-01-01 00:00:00+00"), "1970-01-01T00:00:00.000Z");
}
END_TEST

START_TEST(far_future_years_stay_whole)
{
    ck_assert_str_eq(iso("12026-03-04 05:06:07.89+00"), "12026-03-04T05:06:07.890Z");
    ck_assert_str_eq(iso("294276-12-31 23:59:59.999999+00"), "294276-12-31T23:59:59.999Z");
}
END_TEST

START_TEST(other_shapes_are_refused)
{
    static const char *const bad[] = {
        "",
        "infinity",
        "-infinity",
        "2026-01-01",
        "2026-01-01 00:00:00",            /* no zone */
        "2026-01-01 00:00:00+01",         /* not UTC */
        "2026-01-01 00:00:00+00 BC",      /* BC */
        "2026-01-01 00:00:00+00:30",      /* offset with minutes */
        "2026-01-01T00:00:00+00",         /* not PostgreSQL's separator */
        "2026-01-01 00:00:00.+00",        /* empty fraction */
        "2026-01-01 00:00:00.1234567+00", /* more than microseconds */
        "2026-01-01 0:00:00+00",
        "26-01-01 00:00:00+00",
        "2026/01/01 00:00:00+00",
        "01/01/2026 00:00:00 UTC",   /* DateStyle SQL */
        "1234567-01-01 00:00:00+00", /* longer year than timestamptz has */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(iso(bad[i]) == NULL, "accepted \"%s\"", bad[i]);
}
END_TEST

START_TEST(length_bounds_the_text)
{
    /* the text is not NUL-terminated where len ends */
    const char text[] = "2026-01-01 00:00:00.123+00garbage";
    char out[PGTIME_ISO_SIZE];
    ck_assert_uint_eq(pgtime_iso(text, strlen(text) - 7, out), 24);
    ck_assert_str_eq(out, "2026-01-01T00:00:00.123Z");
    ck_assert_uint_eq(pgtime_iso(text, 20, out), 0);
}
END_TEST

Suite *suite_pgtime(void)
{
    Suite *s = suite_create("pgtime");
    TCase *tc = tcase_create("iso");
    tcase_add_test(tc, fractions_become_milliseconds);
    tcase_add_test(tc, whole_seconds_get_zero_milliseconds);
    tcase_add_test(tc, far_future_years_stay_whole);
    tcase_add_test(tc, other_shapes_are_refused);
    tcase_add_test(tc, length_bounds_the_text);
    suite_add_tcase(s, tc);
    return s;
}
