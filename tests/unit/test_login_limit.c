/*
 * test_login_limit.c - the login budget's address keys: IPv4 by address,
 * IPv6 by /64, IPv4-mapped as IPv4, anything else as given.
 */
#include <string.h>

#include "accounts/login_limit.h"
#include "suites.h"

static const char *key_of(const char *address)
{
    static char key[LOGIN_LIMIT_KEY_MAX];
    login_limit_address_key(address, key, sizeof key);
    return key;
}

static void assert_same_key(const char *a, const char *b)
{
    char first[LOGIN_LIMIT_KEY_MAX];
    login_limit_address_key(a, first, sizeof first);
    ck_assert_str_eq(first, key_of(b));
}

static void assert_other_key(const char *a, const char *b)
{
    char first[LOGIN_LIMIT_KEY_MAX];
    login_limit_address_key(a, first, sizeof first);
    ck_assert_str_ne(first, key_of(b));
}

START_TEST(ipv4_counts_per_address)
{
    ck_assert_str_eq(key_of("192.0.2.7"), "192.0.2.7");
    assert_other_key("192.0.2.7", "192.0.2.8");
}
END_TEST

START_TEST(ipv6_counts_per_64)
{
    ck_assert_str_eq(key_of("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
    assert_same_key("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff");
    assert_same_key("2001:DB8:1:2::1", "2001:0db8:0001:0002::9");
    assert_other_key("2001:db8:1:2::1", "2001:db8:1:3::1");
    assert_other_key("2001:db8:1:2::1", "2001:db8:2:2::1");
    ck_assert_str_eq(key_of("::1"), "::/64");
}
END_TEST

START_TEST(mapped_ipv4_is_ipv4)
{
    ck_assert_str_eq(key_of("::ffff:192.0.2.7"), "192.0.2.7");
    assert_other_key("::ffff:192.0.2.7", "::ffff:192.0.2.8");
}
END_TEST

START_TEST(other_text_is_kept)
{
    ck_assert_str_eq(key_of(""), "");
    ck_assert_str_eq(key_of("fe80::1%eth0"), "fe80::1%eth0");
    ck_assert_str_eq(key_of("not an address"), "not an address");
    char small[4];
    login_limit_address_key("2001:db8::1", small, sizeof small);
    ck_assert_uint_eq(strlen(small), 3); /* truncated, terminated */
}
END_TEST

Suite *suite_login_limit(void)
{
    Suite *s = suite_create("login_limit");
    TCase *tc = tcase_create("address keys");
    tcase_add_test(tc, ipv4_counts_per_address);
    tcase_add_test(tc, ipv6_counts_per_64);
    tcase_add_test(tc, mapped_ipv4_is_ipv4);
    tcase_add_test(tc, other_text_is_kept);
    suite_add_tcase(s, tc);
    return s;
}
