/*
 * test_token.c - base62 encoding, token shape, SHA-256 digests, display forms.
 */
#include <string.h>

#include "suites.h"
#include "base/token.h"

START_TEST(base62_small_numbers)
{
    unsigned char bytes[4] = {0, 0, 0, 61};
    char out[8];
    ck_assert_int_eq(token_base62_encode(bytes, sizeof bytes, out, 3), 0);
    ck_assert_str_eq(out, "00z");
    bytes[3] = 62;
    ck_assert_int_eq(token_base62_encode(bytes, sizeof bytes, out, 3), 0);
    ck_assert_str_eq(out, "010");
    unsigned char big[2] = {0xff, 0xff}; /* 65535 = 17*62^2 + 3*62 + 1 */
    ck_assert_int_eq(token_base62_encode(big, sizeof big, out, 3), 0);
    ck_assert_str_eq(out, "H31");
}
END_TEST

START_TEST(base62_overflow_is_refused)
{
    unsigned char big[2] = {0xff, 0xff};
    char out[8];
    ck_assert_int_eq(token_base62_encode(big, sizeof big, out, 2), -1);
}
END_TEST

START_TEST(max_256_bit_value_fits_43_digits)
{
    unsigned char ones[32];
    memset(ones, 0xff, sizeof ones);
    char out[TOKEN_BODY_LEN + 1];
    ck_assert_int_eq(token_base62_encode(ones, sizeof ones, out, TOKEN_BODY_LEN), 0);
    ck_assert_uint_eq(strlen(out), TOKEN_BODY_LEN);
}
END_TEST

START_TEST(generated_tokens_are_well_formed_and_distinct)
{
    char a[TOKEN_MAX_LEN], b[TOKEN_MAX_LEN];
    ck_assert_int_eq(token_generate(TOKEN_PREFIX_ACCESS, a, sizeof a), 0);
    ck_assert_int_eq(token_generate(TOKEN_PREFIX_ACCESS, b, sizeof b), 0);
    ck_assert(token_well_formed(a, TOKEN_PREFIX_ACCESS));
    ck_assert(!token_well_formed(a, TOKEN_PREFIX_SDK));
    ck_assert_str_ne(a, b);
    ck_assert_uint_eq(strlen(a), strlen(TOKEN_PREFIX_ACCESS) + TOKEN_BODY_LEN);
}
END_TEST

START_TEST(malformed_tokens_are_rejected)
{
    ck_assert(!token_well_formed(NULL, TOKEN_PREFIX_ACCESS));
    ck_assert(!token_well_formed("", TOKEN_PREFIX_ACCESS));
    ck_assert(!token_well_formed("svc_oat_short", TOKEN_PREFIX_ACCESS));
    ck_assert(!token_well_formed("svc_oat_0123456789012345678901234567890123456789-12",
                                 TOKEN_PREFIX_ACCESS));
    ck_assert(token_well_formed("svc_oat_0123456789012345678901234567890123456789abc",
                                TOKEN_PREFIX_ACCESS));
}
END_TEST

START_TEST(digest_is_sha256_hex)
{
    char hex[TOKEN_DIGEST_HEX_LEN + 1];
    token_digest_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    token_digest_hex("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(display_forms)
{
    const char *t = "svc_sdk_0123456789012345678901234567890123456789abc";
    char prefix[TOKEN_DISPLAY_PREFIX_LEN + 1], last[5], masked[64];
    token_display_prefix(t, prefix);
    token_last_four(t, last);
    token_masked(t, masked, sizeof masked);
    ck_assert_str_eq(prefix, "svc_sdk_0123");
    ck_assert_str_eq(last, "9abc");
    ck_assert_str_eq(masked, "svc_sdk_0123\u20269abc");
}
END_TEST

START_TEST(constant_time_equality)
{
    ck_assert(token_equal_ct("abcd", "abcd"));
    ck_assert(!token_equal_ct("abcd", "abce"));
    ck_assert(!token_equal_ct("abcd", "abc"));
}
END_TEST

Suite *suite_token(void)
{
    Suite *s = suite_create("token");
    TCase *tc = tcase_create("token");
    tcase_add_test(tc, base62_small_numbers);
    tcase_add_test(tc, base62_overflow_is_refused);
    tcase_add_test(tc, max_256_bit_value_fits_43_digits);
    tcase_add_test(tc, generated_tokens_are_well_formed_and_distinct);
    tcase_add_test(tc, malformed_tokens_are_rejected);
    tcase_add_test(tc, digest_is_sha256_hex);
    tcase_add_test(tc, display_forms);
    tcase_add_test(tc, constant_time_equality);
    suite_add_tcase(s, tc);
    return s;
}
