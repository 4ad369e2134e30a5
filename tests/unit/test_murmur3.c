/*
 * test_murmur3.c - MurmurHash3_x86_32 (src/eval/murmur3.c): published vectors,
 * the vector of doc/choices.md "Environment configuration and evaluation"
 * ("hello" hashes to 0x248bfa47), and incremental hashing over
 * every split. The flagd rollout vectors run end to end in test_eval.c.
 * Also semantic versions (src/eval/semver.c) and ISO 8601 times
 * (src/eval/isotime.c), the evaluator's other pure helpers.
 */
#include <string.h>

#include "eval/isotime.h"
#include "eval/murmur3.h"
#include "eval/semver.h"
#include "suites.h"

START_TEST(murmur3_known_vectors)
{
    ck_assert_uint_eq(murmur3_x86_32("hello", 5, 0), 0x248bfa47u);
    ck_assert_uint_eq(murmur3_x86_32("", 0, 0), 0u);
    ck_assert_uint_eq(murmur3_x86_32("", 0, 1), 0x514e28b7u);
    ck_assert_uint_eq(murmur3_x86_32("", 0, 0xffffffffu), 0x81f16f39u);
    ck_assert_uint_eq(murmur3_x86_32("\xff\xff\xff\xff", 4, 0), 0x76293b50u);
    ck_assert_uint_eq(murmur3_x86_32("!Ce\x87", 4, 0), 0xf55b516bu);
    ck_assert_uint_eq(murmur3_x86_32("!Ce", 3, 0), 0x7e4a8634u);
    ck_assert_uint_eq(murmur3_x86_32("!C", 2, 0), 0xa0f7b07au);
    ck_assert_uint_eq(murmur3_x86_32("!", 1, 0), 0x72661cf4u);
    ck_assert_uint_eq(murmur3_x86_32("Hello, world!", 13, 1234), 0xfaf6cdb3u);
    const char *fox = "The quick brown fox jumps over the lazy dog";
    ck_assert_uint_eq(murmur3_x86_32(fox, strlen(fox), 0), 0x2e4ff723u);
}
END_TEST

START_TEST(murmur3_incremental_matches_whole)
{
    const char *text = "header-colorrachel@faas.com";
    size_t len = strlen(text);
    uint32_t whole = murmur3_x86_32(text, len, 0);
    for (size_t a = 0; a <= len; a++) {
        for (size_t b = a; b <= len; b++) {
            struct murmur3_state st;
            murmur3_init(&st, 0);
            murmur3_update(&st, text, a);
            murmur3_update(&st, text + a, b - a);
            murmur3_update(&st, text + b, len - b);
            ck_assert_uint_eq(murmur3_final(&st), whole);
        }
    }
}
END_TEST

/* ---- semver ---- */

static int semver_cmp_text(const char *a, const char *b)
{
    struct semver x, y;
    ck_assert_msg(semver_parse(a, strlen(a), &x), "parse %s", a);
    ck_assert_msg(semver_parse(b, strlen(b), &y), "parse %s", b);
    int c = semver_compare(&x, &y);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

START_TEST(semver_precedence)
{
    /* SemVer 2.0.0 section 11's chain, each lower than the next. */
    const char *chain[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                           "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                           "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                           "1.1.0",       "2.0.0",         "10.0.0"};
    size_t n = sizeof chain / sizeof chain[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            ck_assert_int_eq(semver_cmp_text(chain[i], chain[j]), i < j ? -1 : (i > j ? 1 : 0));
    ck_assert_int_eq(semver_cmp_text("v1.2.3", "1.2.3"), 0);
    ck_assert_int_eq(semver_cmp_text("V1.2.3", "1.2.3"), 0);
    ck_assert_int_eq(semver_cmp_text("1", "1.0.0"), 0);
    ck_assert_int_eq(semver_cmp_text("1.2", "1.2.0"), 0);
    ck_assert_int_eq(semver_cmp_text("1.2", "1.10"), -1);
    ck_assert_int_eq(semver_cmp_text("1.0.0+build.5", "1.0.0+other"), 0);
    ck_assert_int_eq(semver_cmp_text("1.0.0-rc.1+b", "1.0.0"), -1);
    ck_assert_int_eq(semver_cmp_text("1.0.0-1", "1.0.0-a"), -1);
    ck_assert_int_eq(semver_cmp_text("1.0.0-alpha.01", "1.0.0-alpha.1"), 0);
    ck_assert_int_eq(semver_cmp_text("1.2-beta", "1.2.0-beta"), 0);
    ck_assert_int_eq(semver_cmp_text("18446744073709551615.0.0", "1.0.0"), 1);
}
END_TEST

START_TEST(semver_rejects)
{
    const char *bad[] = {"",           "v",      "1.",     "1..2",       "1.2.3.4",
                         "a.b.c",      "1.2.x",  "1.2.3-", "1.2.3-a..b", "1.2.3+",
                         "1.2.3 ",     " 1.2.3", "-1.0",   "1.0.0-é",    "18446744073709551616.0.0",
                         "1.2.3-a+b+c"};
    struct semver v;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!semver_parse(bad[i], strlen(bad[i]), &v), "accepted %s", bad[i]);
}
END_TEST

/* ---- ISO 8601 ---- */

static int64_t iso(const char *text)
{
    int64_t us;
    ck_assert_msg(isotime_parse(text, strlen(text), &us), "parse %s", text);
    return us;
}

START_TEST(isotime_forms)
{
    ck_assert_int_eq(iso("1970-01-01T00:00:00Z"), 0);
    ck_assert_int_eq(iso("1970-01-01"), 0);
    ck_assert_int_eq(iso("2024-06-01T12:00:00Z"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01T12:00Z"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01T12:00:00"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01t12:00:00z"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01 12:00:00Z"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01T14:00:00+02:00"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01T14:00:00+0200"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01T14:00:00+02"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01T06:30:00-05:30"), INT64_C(1717243200000000));
    ck_assert_int_eq(iso("2024-06-01T12:00:00.5Z"), INT64_C(1717243200500000));
    ck_assert_int_eq(iso("2024-06-01T12:00:00.1234567Z"), INT64_C(1717243200123456));
    ck_assert_int_eq(iso("1969-12-31T23:59:59Z"), -1000000);
    ck_assert_int_eq(iso("2000-02-29T00:00:00Z"), INT64_C(951782400000000));
    ck_assert_int_eq(iso("0000-01-01T00:00:00Z"), INT64_C(-62167219200000000));
    ck_assert_int_eq(iso("9999-12-31T23:59:59Z"), INT64_C(253402300799000000));
}
END_TEST

START_TEST(isotime_rejects)
{
    const char *bad[] = {"",
                         "2024",
                         "2024-06",
                         "2024-13-01",
                         "2024-00-10",
                         "2023-02-29",
                         "2024-06-31",
                         "2024-06-01T",
                         "2024-06-01T25:00:00Z",
                         "2024-06-01T12:60:00Z",
                         "2024-06-01T12:00:00ZZ",
                         "2024-06-01T12:00:00+",
                         "2024-06-01T12:00:00+02:",
                         "2024-06-01T12:00:00+2",
                         "2024-06-01T12:00:00.Z",
                         "2024-06-01X12:00:00Z",
                         "1717243200",
                         "June 1, 2024"};
    int64_t us;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!isotime_parse(bad[i], strlen(bad[i]), &us), "accepted %s", bad[i]);
}
END_TEST

START_TEST(isotime_format_round_trip)
{
    char out[ISOTIME_FORMAT_SIZE];
    ck_assert_uint_eq(isotime_format(0, out), 20);
    ck_assert_str_eq(out, "1970-01-01T00:00:00Z");
    isotime_format(INT64_C(1717243200999999), out);
    ck_assert_str_eq(out, "2024-06-01T12:00:00Z");
    isotime_format(-1, out);
    ck_assert_str_eq(out, "1969-12-31T23:59:59Z");
    for (int64_t s = -86400LL * 800; s < 86400LL * 40000; s += 86400LL * 13 + 3607) {
        isotime_format(s * 1000000, out);
        ck_assert_int_eq(iso(out), s * 1000000);
    }
}
END_TEST

Suite *suite_murmur3(void)
{
    Suite *s = suite_create("murmur3");
    TCase *tc = tcase_create("hashing");
    tcase_add_test(tc, murmur3_known_vectors);
    tcase_add_test(tc, murmur3_incremental_matches_whole);
    tcase_add_test(tc, semver_precedence);
    tcase_add_test(tc, semver_rejects);
    tcase_add_test(tc, isotime_forms);
    tcase_add_test(tc, isotime_rejects);
    tcase_add_test(tc, isotime_format_round_trip);
    suite_add_tcase(s, tc);
    return s;
}
