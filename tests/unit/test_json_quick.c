/*
 * test_json_quick.c - json_quick_parse builds exactly the flat value that
 * json_flat_from_json makes of json-c's own parse (compared node by node)
 * for the plain subset, and declines everything outside it, valid or not;
 * json_flat's lookups, name order, duplicate refusal and room.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "http/json_flat.h"
#include "http/json_guard.h"
#include "http/json_quick.h"
#include "suites.h"

static struct json_flat_doc quick_doc, json_c_doc;

static bool same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Node by node: type, name, value, count and span. */
static bool same_flat(const struct json_flat *a, const struct json_flat *b)
{
    if (a->type != b->type || a->len != b->len || a->span != b->span ||
        (a->key == NULL) != (b->key == NULL) ||
        (a->key != NULL && !same_bytes(a->key, a->key_len, b->key, b->key_len)))
        return false;
    switch (a->type) {
    case JSON_FLAT_BOOLEAN:
        return a->boolean == b->boolean;
    case JSON_FLAT_INT:
        return a->u.integer == b->u.integer;
    case JSON_FLAT_DOUBLE:
        return a->u.number == b->u.number;
    case JSON_FLAT_STRING:
        return same_bytes(a->u.text, a->len, b->u.text, b->len);
    case JSON_FLAT_ARRAY:
    case JSON_FLAT_OBJECT: {
        const struct json_flat *x = json_flat_first(a), *y = json_flat_first(b);
        for (uint32_t i = 0; i < a->len; i++, x = json_flat_next(x), y = json_flat_next(y))
            if (!same_flat(x, y))
                return false;
        return true;
    }
    default:
        return true;
    }
}

/* Parses text both ways; the quick nodes must equal json-c's converted. */
static void assert_same_as_json_c(const char *text)
{
    const struct json_flat *quick =
        json_quick_parse(text, strlen(text), SIZE_MAX, SIZE_MAX, &quick_doc);
    ck_assert_msg(quick != NULL, "declined: %s", text);
    struct json_object *expected = json_tokener_parse(text);
    ck_assert_ptr_nonnull(expected);
    const struct json_flat *converted = json_flat_from_json(&json_c_doc, expected);
    ck_assert_ptr_nonnull(converted);
    ck_assert_msg(same_flat(quick, converted), "differs: %s", text);
    ck_assert_uint_eq(quick_doc.used, quick->span);
    size_t members;
    ck_assert_msg(json_guard_scan(text, strlen(text), 0, &members) == JSON_GUARD_OK,
                  "accepted what the guard refuses: %s", text);
    json_object_put(expected);
}

static void assert_declined(const char *text, size_t len)
{
    ck_assert_msg(json_quick_parse(text, len, SIZE_MAX, SIZE_MAX, &quick_doc) == NULL,
                  "accepted: %.*s", (int)len, text);
}

#define DECLINED(text) assert_declined(text, strlen(text))

START_TEST(builds_what_json_c_builds)
{
    assert_same_as_json_c("{}");
    assert_same_as_json_c(" \t\r\n{ } \n");
    assert_same_as_json_c("{\"context\":{\"targetingKey\":\"user-4711\",\"country\":\"DE\","
                          "\"plan\":\"enterprise\",\"version\":\"2.4.1\","
                          "\"email\":\"jane@example.com\"}}");
    assert_same_as_json_c("{\"a\": 0, \"b\": -17, \"c\": 999999999999999999, "
                          "\"d\": -999999999999999999}");
    assert_same_as_json_c("{\"t\": true, \"f\": false, \"n\": null, \"e\": \"\"}");
    assert_same_as_json_c("{\"list\": [1, \"two\", [], {}, [true, null]], \"o\": {\"p\": {}}}");
    assert_same_as_json_c("{\"caf\xc3\xa9\": \"h\xc3\xa9\", \"x\": \"a/b:c,d}\"}");
    assert_same_as_json_c("{\"\": 1, \"a\": {\"\": []}}"); /* empty names */
    char key[80];
    memset(key, 'k', sizeof key);
    char text[128];
    snprintf(text, sizeof text, "{\"%.*s\": 1}", 70, key); /* a long name */
    assert_same_as_json_c(text);
}
END_TEST

/* Strings and names are read in place: they point into the text, and the
 * byte after each is the closing quote (json_flat.h). */
START_TEST(strings_point_into_the_text)
{
    const char text[] = "{\"context\": {\"targetingKey\": \"u-1\", \"n\": \"42\"}}";
    const struct json_flat *root =
        json_quick_parse(text, strlen(text), SIZE_MAX, SIZE_MAX, &quick_doc);
    ck_assert_ptr_nonnull(root);
    const struct json_flat *ctx = json_flat_member(root, "context", 7);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(ctx->type, JSON_FLAT_OBJECT);
    const struct json_flat *key = json_flat_member(ctx, "targetingKey", 12);
    ck_assert_ptr_nonnull(key);
    ck_assert(key->u.text > text && key->u.text + key->len < text + sizeof text);
    ck_assert(same_bytes(key->u.text, key->len, "u-1", 3));
    ck_assert_int_eq(key->u.text[key->len], '"');
    ck_assert(key->key > text && key->key[key->key_len] == '"');
    ck_assert_ptr_null(json_flat_member(ctx, "targetingkey", 12)); /* bytes, not case */
    ck_assert_ptr_null(json_flat_member(ctx, "n2", 2));
    ck_assert_ptr_null(json_flat_member(root, "con", 3)); /* whole names only */
}
END_TEST

/* text: an object of n members "attribute-NNN": NNN, written in the
 * order i * 7 mod n (n prime to 7), so the name order differs from the
 * text's. */
static void many_members(char *text, size_t size, int n)
{
    size_t used = (size_t)snprintf(text, size, "{");
    for (int i = 0; i < n; i++) {
        int k = (i * 7) % n;
        used += (size_t)snprintf(text + used, size - used, "%s\"attribute-%03d\": %d",
                                 i > 0 ? "," : "", k, k);
    }
    snprintf(text + used, size - used, "}");
}

/* A large object carries its name order: every member is found by
 * bisection, a missing name is not, the order is sorted, and a name twice
 * is refused wherever it sits. */
START_TEST(large_objects_are_ordered)
{
    static char text[16384];
    for (int n = JSON_FLAT_LINEAR_MAX; n <= 400; n += 131) {
        many_members(text, sizeof text, n);
        assert_same_as_json_c(text);
        const struct json_flat *root =
            json_quick_parse(text, strlen(text), SIZE_MAX, SIZE_MAX, &quick_doc);
        ck_assert_ptr_nonnull(root);
        ck_assert_uint_eq(root->len, (unsigned)n);
        for (int k = 0; k < n; k++) {
            char name[32];
            int len = snprintf(name, sizeof name, "attribute-%03d", k);
            const struct json_flat *m = json_flat_member(root, name, (size_t)len);
            ck_assert_msg(m != NULL && m->u.integer == k, "%d of %d", k, n);
        }
        ck_assert_ptr_null(json_flat_member(root, "attribute-", 10));
        ck_assert_ptr_null(json_flat_member(root, "attribute-9999", 14));
        ck_assert_ptr_null(json_flat_member(root, "", 0));
        if (n > JSON_FLAT_LINEAR_MAX)
            for (int i = 1; i < n; i++) {
                const struct json_flat *a = root + root->u.order[i - 1];
                const struct json_flat *b = root + root->u.order[i];
                ck_assert_int_lt(json_flat_compare_names(a->key, a->key_len, b->key, b->key_len),
                                 0);
            }
    }
    many_members(text, sizeof text, 300);
    char *last = strrchr(text, '"');
    memcpy(last - 3, "000", 3); /* the last name becomes the first's */
    DECLINED(text);
}
END_TEST

/* Name order is strcmp's: bytes (unsigned), then the shorter first. */
START_TEST(name_order)
{
    ck_assert_int_lt(json_flat_compare_names("a", 1, "ab", 2), 0);
    ck_assert_int_gt(json_flat_compare_names("b", 1, "ab", 2), 0);
    ck_assert_int_eq(json_flat_compare_names("ab", 2, "ab", 2), 0);
    ck_assert_int_lt(json_flat_compare_names("", 0, "a", 1), 0);
    ck_assert_int_lt(json_flat_compare_names("z", 1, "\xc3\xa9", 2), 0);
}
END_TEST

/* The room grows with a large value and is given back by the next reset
 * (ASan checks nothing leaks or is used after). */
START_TEST(room_is_given_back)
{
    static char text[65536];
    size_t used = (size_t)snprintf(text, sizeof text, "{\"a\": [");
    for (int i = 0; i < 6000; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%d", i > 0 ? "," : "", i % 10);
    snprintf(text + used, sizeof text - used, "]}");
    const struct json_flat *root =
        json_quick_parse(text, strlen(text), SIZE_MAX, SIZE_MAX, &quick_doc);
    ck_assert_ptr_nonnull(root);
    ck_assert_uint_eq(root->span, 6002);
    const struct json_flat *a = json_flat_member(root, "a", 1);
    ck_assert_uint_eq(a->len, 6000);
    ck_assert_uint_gt(quick_doc.cap, 4096);
    json_flat_doc_reset(&quick_doc);
    ck_assert_ptr_null(quick_doc.nodes);
    ck_assert_uint_eq(quick_doc.cap, 0);
    assert_same_as_json_c("{\"a\": [1, 2]}"); /* and grows again */
}
END_TEST

/* What the quick parse accepts keeps the guard's promises without the
 * guard: strings of valid UTF-8 only, and at most max_members members in
 * all objects together (json_guard_scan's count). */
START_TEST(keeps_the_guards_promises)
{
    assert_same_as_json_c("{\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\": \"\xf4\x8f\xbf\xbf\"}");
    DECLINED("{\"a\": \"\xc3\"}");                                 /* cut short */
    DECLINED("{\"a\": \"\xc0\xaf\"}");                             /* overlong */
    DECLINED("{\"a\": \"\xed\xa0\x80\"}");                         /* an encoded surrogate */
    DECLINED("{\"a\": \"\xf4\x90\x80\x80\"}");                     /* above U+10FFFF */
    DECLINED("{\"\xff\": 1}");                                     /* in a name */
    DECLINED("{\"a\": 1, \xc3\xa9}");                              /* outside a string */
    const char *text = "{\"a\": {\"b\": 1, \"c\": [{\"d\": 2}]}}"; /* 4 members */
    size_t members;
    ck_assert_int_eq(json_guard_scan(text, strlen(text), 0, &members), JSON_GUARD_OK);
    ck_assert_uint_eq(members, 4);
    ck_assert_ptr_nonnull(json_quick_parse(text, strlen(text), 4, SIZE_MAX, &quick_doc));
    ck_assert_ptr_null(json_quick_parse(text, strlen(text), 3, SIZE_MAX, &quick_doc));
    ck_assert_int_eq(json_guard_scan(text, strlen(text), 3, &members), JSON_GUARD_TOO_MANY);
    /* array elements, all arrays together: 5 here */
    const char *lists = "{\"a\": [1, [\"x\", {}], []], \"b\": [true, null]}";
    ck_assert_ptr_nonnull(json_quick_parse(lists, strlen(lists), 9, 7, &quick_doc));
    ck_assert_ptr_null(json_quick_parse(lists, strlen(lists), 9, 6, &quick_doc));
    ck_assert_int_eq(json_guard_scan_bounded(lists, strlen(lists), 9, 7, &members), JSON_GUARD_OK);
    ck_assert_int_eq(json_guard_scan_bounded(lists, strlen(lists), 9, 6, &members),
                     JSON_GUARD_TOO_MANY_ELEMENTS);
}
END_TEST

/* What only json-c reads (doubles, escapes) converts as json-c holds it. */
START_TEST(converts_json_c_values)
{
    struct json_object *v = json_tokener_parse("{\"d\": 1.5, \"s\": \"a\\nb\", \"n\": null}");
    const struct json_flat *root = json_flat_from_json(&json_c_doc, v);
    ck_assert_ptr_nonnull(root);
    ck_assert_int_eq(json_flat_member(root, "d", 1)->type, JSON_FLAT_DOUBLE);
    ck_assert(json_flat_member(root, "d", 1)->u.number == 1.5);
    const struct json_flat *s = json_flat_member(root, "s", 1);
    ck_assert(same_bytes(s->u.text, s->len, "a\nb", 3));
    ck_assert_int_eq(s->u.text[s->len], '\0');
    ck_assert_int_eq(json_flat_member(root, "n", 1)->type, JSON_FLAT_NULL);
    json_object_put(v);
    root = json_flat_from_json(&json_c_doc, NULL); /* JSON null itself */
    ck_assert_ptr_nonnull(root);
    ck_assert_int_eq(root->type, JSON_FLAT_NULL);
}
END_TEST

START_TEST(declines_the_rest)
{
    DECLINED("");
    DECLINED("   ");
    DECLINED("[]");           /* not an object */
    DECLINED("\"s\"");        /* not an object */
    DECLINED("{\"a\": 1.5}"); /* doubles: json-c's own rules */
    DECLINED("{\"a\": 1e3}");
    DECLINED("{\"a\": -0}");
    DECLINED("{\"a\": 01}");
    DECLINED("{\"a\": 1234567890123456789}"); /* 19 digits */
    /* 66 digits with leading zeros: declined before the value overflows */
    DECLINED("{\"t\": [000000000000000000000000000000000000000000002000000000000000000000]}");
    DECLINED("{\"a\": -}");
    DECLINED("{\"a\": \"x\\ny\"}"); /* escapes */
    DECLINED("{\"a\": \"x\ty\"}");  /* control characters */
    DECLINED("{\"a\": True}");      /* json-c's lenient literals */
    DECLINED("{\"a\": NaN}");
    DECLINED("{'a': 1}");
    DECLINED("{\"a\": 1,}"); /* trailing comma */
    DECLINED("{\"a\": [1,]}");
    DECLINED("{\"a\" 1}");
    DECLINED("{\"a\": 1} x"); /* trailing text */
    DECLINED("{\"a\": 1}{}");
    DECLINED("{\"a\": 1");
    DECLINED("{\"a\": \"unterminated}");
    DECLINED("{\"a\": truex}");
    DECLINED("{\"a\": 1 /* comment */}");
    DECLINED("{\"a\":\f1}");              /* form feed is not whitespace here */
    DECLINED("{\"dup\": 1, \"dup\": 2}"); /* a name twice: json-c and json_guard decide */
    DECLINED("{\"o\": {\"a\": 1, \"b\": 2, \"a\": 3}}");
    assert_declined("{\"a\": \"x\0y\"}", 12); /* NUL inside a string */
    assert_declined("{\"a\": 1}", 5);         /* cut short by len */
}
END_TEST

/* {"a": followed by containers - 1 nested arrays: containers deep in all. */
static void nested(char *out, int containers)
{
    size_t n = (size_t)sprintf(out, "{\"a\":");
    for (int i = 1; i < containers; i++)
        out[n++] = '[';
    for (int i = 1; i < containers; i++)
        out[n++] = ']';
    out[n++] = '}';
    out[n] = '\0';
}

START_TEST(bounds_the_depth)
{
    char text[2 * JSON_QUICK_MAX_DEPTH + 16];
    nested(text, JSON_QUICK_MAX_DEPTH);
    assert_same_as_json_c(text);
    nested(text, JSON_QUICK_MAX_DEPTH + 1);
    DECLINED(text);
}
END_TEST

Suite *suite_json_quick(void)
{
    Suite *s = suite_create("json_quick");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, builds_what_json_c_builds);
    tcase_add_test(tc, strings_point_into_the_text);
    tcase_add_test(tc, large_objects_are_ordered);
    tcase_add_test(tc, name_order);
    tcase_add_test(tc, room_is_given_back);
    tcase_add_test(tc, converts_json_c_values);
    tcase_add_test(tc, keeps_the_guards_promises);
    tcase_add_test(tc, declines_the_rest);
    tcase_add_test(tc, bounds_the_depth);
    suite_add_tcase(s, tc);
    return s;
}
