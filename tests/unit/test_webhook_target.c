/*
 * test_webhook_target.c - the webhook URL parser and the address
 * classifier (base/webhook_target.h), and the delivery signature
 * (base/webhook_signature.h). These addresses are only parsed and
 * classified here: nothing connects to them.
 */
#include <check.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "base/webhook_signature.h"
#include "base/webhook_target.h"
#include "suites.h"

static const char *literal(const char *text)
{
    bool is_literal = false;
    const char *why = webhook_literal_class(text, &is_literal);
    ck_assert_msg(is_literal, "%s should be an address", text);
    return why;
}

START_TEST(refused_ipv4_addresses)
{
    static const char *const refused[] = {
        "0.0.0.0",         "0.1.2.3",         "127.0.0.1",      "127.0.0.2",
        "127.255.255.255", "10.0.0.1",        "10.255.255.255", "172.16.0.1",
        "172.20.10.5",     "172.31.255.255",  "192.168.0.1",    "192.168.255.254",
        "169.254.0.1",     "169.254.169.254", "100.64.0.1",     "100.127.255.255",
        "224.0.0.1",       "239.255.255.250", "240.0.0.1",      "255.255.255.255",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        ck_assert_msg(literal(refused[i]) != NULL, "%s should be refused", refused[i]);
}
END_TEST

START_TEST(public_ipv4_addresses)
{
    static const char *const allowed[] = {
        "1.1.1.1",         "8.8.8.8",     "9.255.255.255",   "11.0.0.1",
        "100.63.255.255",  "100.128.0.0", "126.255.255.255", "128.0.0.1",
        "169.253.255.255", "169.255.0.1", "172.15.255.255",  "172.32.0.1",
        "192.167.255.255", "192.169.0.1", "203.0.113.9",     "223.255.255.255",
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        ck_assert_msg(literal(allowed[i]) == NULL, "%s should be allowed", allowed[i]);
}
END_TEST

START_TEST(classes_are_named)
{
    ck_assert_str_eq(literal("127.0.0.1"), "loopback");
    ck_assert_str_eq(literal("10.1.2.3"), "private");
    ck_assert_str_eq(literal("169.254.1.1"), "link-local");
    ck_assert_str_eq(literal("100.100.100.100"), "CGNAT");
    ck_assert_str_eq(literal("0.0.0.0"), "unspecified");
    ck_assert_str_eq(literal("::"), "unspecified");
    ck_assert_str_eq(literal("::1"), "loopback");
    ck_assert_str_eq(literal("fe80::1"), "link-local");
    ck_assert_str_eq(literal("fd00::1"), "unique-local");
}
END_TEST

START_TEST(refused_ipv6_addresses)
{
    static const char *const refused[] = {
        "::",
        "::1",
        "fe80::1",
        "fe80::abcd:1234",
        "febf:ffff::1",
        "fc00::1",
        "fd12:3456:789a::1",
        "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:192.168.1.1",
        "::ffff:169.254.169.254",
        "::ffff:100.64.0.1",
        "::ffff:0.0.0.0",
        "::ffff:7f00:1",
        "::127.0.0.1",
        "::10.0.0.1",
        "64:ff9b::10.0.0.1",
        "64:ff9b::7f00:1",
        "::2", /* IPv4-compatible 0.0.0.2 */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        ck_assert_msg(literal(refused[i]) != NULL, "%s should be refused", refused[i]);
}
END_TEST

START_TEST(public_ipv6_addresses)
{
    static const char *const allowed[] = {
        "2001:db8::1", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "fec0::1",
        "fbff::1",     "::ffff:8.8.8.8",       "64:ff9b::8.8.8.8",         "1::",
    };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        ck_assert_msg(literal(allowed[i]) == NULL, "%s should be allowed", allowed[i]);
}
END_TEST

START_TEST(names_are_not_literals)
{
    bool is_literal = true;
    ck_assert_ptr_null(webhook_literal_class("example.com", &is_literal));
    ck_assert(!is_literal);
    ck_assert_ptr_null(webhook_literal_class("localhost", &is_literal));
    ck_assert(!is_literal);
    ck_assert_ptr_null(webhook_literal_class("127.1", &is_literal)); /* not dotted-quad */
    ck_assert(!is_literal);
}
END_TEST

START_TEST(socket_addresses_are_classified)
{
    struct sockaddr_in in = {.sin_family = AF_INET};
    inet_pton(AF_INET, "192.168.7.7", &in.sin_addr);
    ck_assert_str_eq(webhook_address_class((struct sockaddr *)&in, sizeof in), "private");
    inet_pton(AF_INET, "93.184.216.34", &in.sin_addr);
    ck_assert_ptr_null(webhook_address_class((struct sockaddr *)&in, sizeof in));
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "::ffff:172.16.5.4", &in6.sin6_addr);
    ck_assert_str_eq(webhook_address_class((struct sockaddr *)&in6, sizeof in6), "private");
    inet_pton(AF_INET6, "2001:db8::5", &in6.sin6_addr);
    ck_assert_ptr_null(webhook_address_class((struct sockaddr *)&in6, sizeof in6));
    /* a short length or another family is refused */
    ck_assert_ptr_nonnull(webhook_address_class((struct sockaddr *)&in6, 8));
    struct sockaddr un = {.sa_family = AF_UNIX};
    ck_assert_ptr_nonnull(webhook_address_class(&un, sizeof un));
    ck_assert_ptr_nonnull(webhook_address_class(NULL, 0));
}
END_TEST

START_TEST(urls_parse)
{
    struct webhook_url u;
    ck_assert_ptr_null(webhook_url_parse("https://Hooks.Example.com/x?y=1", &u));
    ck_assert(u.https);
    ck_assert_str_eq(u.host, "hooks.example.com");
    ck_assert_uint_eq(u.port, 443);
    ck_assert_ptr_null(webhook_url_parse("http://example.com:8080", &u));
    ck_assert(!u.https);
    ck_assert_uint_eq(u.port, 8080);
    ck_assert_ptr_null(webhook_url_parse("HTTP://[2001:db8::1]:9/p", &u));
    ck_assert_str_eq(u.host, "2001:db8::1");
    ck_assert_uint_eq(u.port, 9);
    ck_assert_ptr_null(webhook_url_parse("http://127.0.0.2/", &u));
    ck_assert_str_eq(u.host, "127.0.0.2");
    ck_assert_uint_eq(u.port, 80);
}
END_TEST

START_TEST(bad_urls_are_refused)
{
    static const char *const bad[] = {
        "ftp://example.com/",
        "example.com",
        "https://",
        "https:///path",
        "https://user:pw@example.com/",
        "https://example.com:0/",
        "https://example.com:65536/",
        "https://example.com:/",
        "https://example.com:80x/",
        "https://exa mple.com/",
        "https://example.com/a b",
        "https://example.com/#frag",
        "https://[::1/",
        "https://[nothost]/",
        "https://.example.com/",
        "https://a..b/",
        "https://example.com\\@evil/",
    };
    struct webhook_url u;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(webhook_url_parse(bad[i], &u) != NULL, "%s should be refused", bad[i]);
    char longer[WEBHOOK_URL_MAX + 20] = "https://example.com/";
    memset(longer + 20, 'a', WEBHOOK_URL_MAX - 10);
    longer[WEBHOOK_URL_MAX + 10] = '\0';
    ck_assert_ptr_nonnull(webhook_url_parse(longer, &u));
}
END_TEST

/* The value a receiver computes: HMAC-SHA256(secret, "t.body"), checked
 * against a digest computed independently (Python's hmac module). */
START_TEST(signature_is_hmac_sha256_of_t_dot_body)
{
    char out[WEBHOOK_SIGNATURE_MAX];
    const char body[] = "{\"id\":1}";
    ck_assert_int_eq(webhook_signature("svc_whk_secret", 1700000000, body, strlen(body), out), 0);
    ck_assert_str_eq(out, "t=1700000000,v1="
                          "3c264a39705b54d8b967ed5ce41562be75ec755c1c3ea659b6129e74e040e011");
    /* another time, another signature */
    char other[WEBHOOK_SIGNATURE_MAX];
    webhook_signature("svc_whk_secret", 1700000001, body, strlen(body), other);
    ck_assert_str_ne(out, other);
}
END_TEST

Suite *suite_webhook_target(void)
{
    Suite *s = suite_create("webhook_target");
    TCase *tc = tcase_create("classify");
    tcase_add_test(tc, refused_ipv4_addresses);
    tcase_add_test(tc, public_ipv4_addresses);
    tcase_add_test(tc, classes_are_named);
    tcase_add_test(tc, refused_ipv6_addresses);
    tcase_add_test(tc, public_ipv6_addresses);
    tcase_add_test(tc, names_are_not_literals);
    tcase_add_test(tc, socket_addresses_are_classified);
    tcase_add_test(tc, urls_parse);
    tcase_add_test(tc, bad_urls_are_refused);
    tcase_add_test(tc, signature_is_hmac_sha256_of_t_dot_body);
    suite_add_tcase(s, tc);
    return s;
}
