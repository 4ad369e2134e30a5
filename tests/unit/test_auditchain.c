/*
 * test_auditchain.c - the audit chain's canonical text and link hash: a
 * fixed vector (computed independently with Python's hashlib over the
 * format of auditchain.h), NULL versus empty fields, and chaining.
 */
#include <string.h>

#include "base/auditchain.h"
#include "suites.h"

static struct auditchain_event sample(void)
{
    return (struct auditchain_event){
        .org_id = "11111111-1111-1111-1111-111111111111",
        .seq = "1",
        .id = "22222222-2222-2222-2222-222222222222",
        .created_at = "2026-11-24T12:00:00.123456Z",
        .actor_id = NULL,
        .actor_token_id = "33333333-3333-3333-3333-333333333333",
        .actor_name = "Deploy bot",
        .action = "flag.created",
        .summary = "Created boolean flag caf\xc3\xa9",
        .ip = "127.0.0.1",
        .location = "flags/cafe",
    };
}

START_TEST(known_vector)
{
    struct auditchain_event e = sample();
    char hash[AUDITCHAIN_HASH_HEX_LEN + 1];
    ck_assert_int_eq(auditchain_link(auditchain_genesis, &e, hash), 0);
    ck_assert_str_eq(hash, "f52fd78757f9d95c7bda377cc1a93a641604d7f8063c2a33480ec9f8bf2362ef");
}
END_TEST

START_TEST(null_differs_from_empty)
{
    struct auditchain_event e = sample();
    char a[AUDITCHAIN_HASH_HEX_LEN + 1], b[AUDITCHAIN_HASH_HEX_LEN + 1];
    auditchain_link(auditchain_genesis, &e, a);
    e.actor_id = "";
    auditchain_link(auditchain_genesis, &e, b);
    ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(field_boundaries_are_unambiguous)
{
    /* Moving bytes from one field into the next changes the hash. */
    struct auditchain_event e = sample();
    char a[AUDITCHAIN_HASH_HEX_LEN + 1], b[AUDITCHAIN_HASH_HEX_LEN + 1];
    e.action = "flag.created,";
    e.summary = "x";
    auditchain_link(auditchain_genesis, &e, a);
    e.action = "flag.created";
    e.summary = ",x";
    auditchain_link(auditchain_genesis, &e, b);
    ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(every_field_and_the_previous_hash_count)
{
    struct auditchain_event e = sample();
    char base[AUDITCHAIN_HASH_HEX_LEN + 1], other[AUDITCHAIN_HASH_HEX_LEN + 1];
    auditchain_link(auditchain_genesis, &e, base);
    auditchain_link(base, &e, other);
    ck_assert_str_ne(base, other);
    const char **fields[] = {
        &e.org_id,     &e.seq,    &e.id,      &e.created_at, &e.actor_id, &e.actor_token_id,
        &e.actor_name, &e.action, &e.summary, &e.ip,         &e.location};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        struct auditchain_event saved = e;
        *fields[i] = "changed";
        auditchain_link(auditchain_genesis, &e, other);
        ck_assert_str_ne(base, other);
        e = saved;
    }
}
END_TEST

Suite *suite_auditchain(void)
{
    Suite *s = suite_create("auditchain");
    TCase *tc = tcase_create("auditchain");
    tcase_add_test(tc, known_vector);
    tcase_add_test(tc, null_differs_from_empty);
    tcase_add_test(tc, field_boundaries_are_unambiguous);
    tcase_add_test(tc, every_field_and_the_previous_hash_count);
    suite_add_tcase(s, tc);
    return s;
}
