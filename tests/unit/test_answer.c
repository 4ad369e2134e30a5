/*
 * test_answer.c - answer bodies and the small pieces of the evaluation
 * answer path: the answer block pool (src/http/answer.c: reuse, a body
 * going on in pooled blocks, a piece larger than a block, the body joined
 * in one piece, hand-over to an evbuffer and the return when libevent lets
 * go, the pool outliving its blocks, at most 256 lent, full blocks lent as
 * their own past that), JSON strings, the header index
 * (src/http/header_index.c: first occurrence, any case, names it does not
 * keep; the name compare that replaces libevent's) and hex_u64
 * (src/base/hex.c, the ETag digits).
 */
#include <check.h>
#include <json-c/json.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "http/answer.h"
#include "http/header_index.h"
#include "base/hex.h"
#include "http/server.h"
#include "suites.h"

/* ---- hex_u64 ---- */

static const char *hex_text(uint64_t value, int min_digits, char out[32])
{
    size_t n = hex_u64(value, min_digits, out);
    out[n] = '\0';
    return out;
}

START_TEST(hex_u64_digits)
{
    char out[32];
    ck_assert_str_eq(hex_text(0, 1, out), "0");
    ck_assert_str_eq(hex_text(0, 8, out), "00000000");
    ck_assert_str_eq(hex_text(0xabc, 1, out), "abc");
    ck_assert_str_eq(hex_text(0xabc, 2, out), "abc");
    ck_assert_str_eq(hex_text(0x1f, 8, out), "0000001f");
    ck_assert_str_eq(hex_text(UINT64_MAX, 1, out), "ffffffffffffffff");
    ck_assert_str_eq(hex_text(UINT64_C(0x8000000000000000), 16, out), "8000000000000000");
    ck_assert_str_eq(hex_text(1, 40, out), "0000000000000001"); /* at most 16 */
}
END_TEST

/* ---- header index ---- */

START_TEST(header_index_first_of_any_case)
{
    struct evkeyvalq headers;
    TAILQ_INIT(&headers);
    evhttp_add_header(&headers, "content-type", "application/json");
    evhttp_add_header(&headers, "AUTHORIZATION", "Bearer one");
    evhttp_add_header(&headers, "Authorization", "Bearer two");
    evhttp_add_header(&headers, "if-none-match", "\"tag\"");
    evhttp_add_header(&headers, "X-Forwarded-Protocol", "https"); /* longer: not the slot */
    struct header_index ix;
    header_index_build(&ix, &headers);
    ck_assert(ix.built);
    ck_assert_str_eq(ix.value[HEADER_AUTHORIZATION], "Bearer one");
    ck_assert_str_eq(ix.value[HEADER_IF_NONE_MATCH], "\"tag\"");
    ck_assert_ptr_null(ix.value[HEADER_X_FORWARDED_PROTO]);
    ck_assert_ptr_null(ix.value[HEADER_HOST]);
    ck_assert_int_eq(header_index_slot("authorization"), HEADER_AUTHORIZATION);
    ck_assert_int_eq(header_index_slot("X-HTTP-Method-Override"), HEADER_METHOD_OVERRIDE);
    ck_assert_int_eq(header_index_slot("Content-Type"), -1);
    ck_assert_int_eq(header_index_slot("Hos"), -1);
    header_index_build(&ix, NULL);
    ck_assert_ptr_null(ix.value[HEADER_AUTHORIZATION]);
    evhttp_clear_headers(&headers);
}
END_TEST

/* libevent's definition of the compare (header_index.c replaces it) */
static int reference_strcasecmp(const char *s1, const char *s2)
{
    for (;;) {
        char c1 = *s1++, c2 = *s2++;
        c1 = (char)(c1 >= 'A' && c1 <= 'Z' ? c1 + 32 : c1);
        c2 = (char)(c2 >= 'A' && c2 <= 'Z' ? c2 + 32 : c2);
        if (c1 < c2)
            return -1;
        if (c1 > c2)
            return 1;
        if (c1 == 0)
            return 0;
    }
}

START_TEST(header_compare_as_libevent_defines_it)
{
    static const char *const names[] = {"",
                                        "a",
                                        "A",
                                        "Host",
                                        "host",
                                        "HOST",
                                        "Hos",
                                        "Hosts",
                                        "Content-Length",
                                        "content-length",
                                        "Content-Type",
                                        "X-API-Key",
                                        "x-api-key",
                                        "[",
                                        "@",
                                        "`",
                                        "{",
                                        "Z",
                                        "z",
                                        "\xc3\xa9",
                                        "\xc3\x89",
                                        "caf\xc3\xa9",
                                        "CAF\xc3\xa9",
                                        "\x7f",
                                        "~"};
    size_t n = sizeof names / sizeof names[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            ck_assert_msg(evutil_ascii_strcasecmp(names[i], names[j]) ==
                              reference_strcasecmp(names[i], names[j]),
                          "\"%s\" vs \"%s\"", names[i], names[j]);
    /* and what evhttp's lookup answers through it */
    struct evkeyvalq headers;
    TAILQ_INIT(&headers);
    evhttp_add_header(&headers, "content-LENGTH", "12");
    ck_assert_str_eq(evhttp_find_header(&headers, "Content-Length"), "12");
    ck_assert_ptr_null(evhttp_find_header(&headers, "Content-Lengt"));
    evhttp_clear_headers(&headers);
}
END_TEST

/* ---- answer blocks ---- */

START_TEST(answer_blocks_are_reused)
{
    struct http_server server = {0};
    struct http_answer a;
    http_answer_open(&server, &a);
    ck_assert(!a.failed);
    ck_assert_uint_eq(a.cap, HTTP_ANSWER_BLOCK_SIZE);
    char *first = a.data;
    http_answer_lit(&a, "{}");
    http_answer_close(&a);
    http_answer_open(&server, &a);
    ck_assert_ptr_eq(a.data, first); /* from the free list */
    ck_assert_uint_eq(a.len, 0);
    http_answer_close(&a);
    http_answer_pool_free(server.answers);
}
END_TEST

/* The bytes of out, copied out (the caller frees them). */
static char *buffer_text(struct evbuffer *out)
{
    size_t len = evbuffer_get_length(out);
    char *text = malloc(len + 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(evbuffer_copyout(out, text, len), (ev_ssize_t)len);
    text[len] = '\0';
    return text;
}

/* Pieces "0,1,2,...,N-1," across many blocks: what comes out is what went
 * in, in order, and the blocks came from the pool and go back to it. */
START_TEST(answer_goes_on_in_pooled_blocks)
{
    struct http_server server = {0};
    struct http_answer a;
    http_answer_open(&server, &a);
    char *first = a.data;
    size_t expected_len = 0;
    for (int i = 0; i < 20000; i++) {
        char piece[16];
        int n = snprintf(piece, sizeof piece, "%d,", i);
        http_answer_put(&a, piece, (size_t)n);
        expected_len += (size_t)n;
    }
    ck_assert(!a.failed);
    ck_assert_uint_eq(http_answer_length(&a), expected_len); /* 108,890 bytes */
    ck_assert_uint_eq(a.cap, HTTP_ANSWER_BLOCK_SIZE);        /* never a bigger block */
    ck_assert_ptr_nonnull(a.filled);
    struct evbuffer *out = evbuffer_new();
    ck_assert(http_answer_attach(&a, out));
    ck_assert_ptr_null(a.data);
    ck_assert_uint_eq(evbuffer_get_length(out), expected_len);
    char *text = buffer_text(out);
    const char *p = text;
    for (int i = 0; i < 20000; i++) {
        char piece[16];
        int n = snprintf(piece, sizeof piece, "%d,", i);
        ck_assert_msg(strncmp(p, piece, (size_t)n) == 0, "piece %d", i);
        p += n;
    }
    free(text);
    /* lent by reference: the first block is the first bytes of out */
    struct evbuffer_iovec first_extent;
    int extents = evbuffer_peek(out, (ev_ssize_t)expected_len, NULL, &first_extent, 1);
    ck_assert_int_eq(extents, 7);
    ck_assert_ptr_eq(first_extent.iov_base, first);
    evbuffer_free(out); /* every block home (ASan checks the rest) */
    http_answer_open(&server, &a);
    ck_assert_ptr_nonnull(a.data);
    http_answer_close(&a);
    http_answer_pool_free(server.answers);
}
END_TEST

/* A single piece larger than a block gets a block of its own, after the
 * bytes before it. */
START_TEST(answer_piece_larger_than_a_block)
{
    struct http_server server = {0};
    struct http_answer a;
    http_answer_open(&server, &a);
    http_answer_lit(&a, "[");
    char big[40000];
    memset(big, 'x', sizeof big);
    http_answer_put(&a, big, sizeof big);
    ck_assert_uint_eq(a.cap, 40000); /* exactly the piece */
    http_answer_lit(&a, "]");
    ck_assert(!a.failed);
    ck_assert_uint_eq(http_answer_length(&a), 40002);
    struct evbuffer *out = evbuffer_new();
    ck_assert(http_answer_attach(&a, out));
    char *text = buffer_text(out);
    ck_assert_uint_eq(strlen(text), 40002);
    ck_assert_int_eq(text[0], '[');
    ck_assert_int_eq(text[40001], ']');
    for (size_t i = 1; i <= 40000; i++)
        ck_assert_int_eq(text[i], 'x');
    free(text);
    evbuffer_free(out); /* the block of its own is freed, not pooled */
    http_answer_pool_free(server.answers);
}
END_TEST

/* An internal request's capture takes the body in one piece. */
START_TEST(answer_joined_in_one_piece)
{
    struct http_server server = {0};
    struct http_answer a;
    http_answer_open(&server, &a);
    char chunk[1000];
    memset(chunk, 'y', sizeof chunk);
    for (int i = 0; i < 40; i++)
        http_answer_put(&a, chunk, sizeof chunk);
    http_answer_lit(&a, "z");
    size_t len;
    char *text = http_answer_join(&a, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(len, 40001);
    ck_assert_uint_eq(strlen(text), 40001);
    ck_assert_int_eq(text[39999], 'y');
    ck_assert_int_eq(text[40000], 'z');
    ck_assert_ptr_null(a.block);
    ck_assert_ptr_null(a.filled);
    free(text);
    http_answer_pool_free(server.answers); /* nothing outstanding: freed now */
}
END_TEST

START_TEST(answer_returns_when_libevent_lets_go)
{
    struct http_server server = {0};
    struct http_answer a;
    http_answer_open(&server, &a);
    char *block = a.data;
    http_answer_lit(&a, "{\"flags\":[]}");
    struct evbuffer *out = evbuffer_new();
    ck_assert(http_answer_attach(&a, out));
    /* still referenced: a new answer gets another block */
    struct http_answer b;
    http_answer_open(&server, &b);
    ck_assert_ptr_ne(b.data, block);
    http_answer_close(&b);
    char text[32] = {0};
    ck_assert_int_eq(evbuffer_remove(out, text, sizeof text - 1), 12);
    ck_assert_str_eq(text, "{\"flags\":[]}");
    evbuffer_free(out);
    /* both blocks are idle now; the pool frees them */
    http_answer_pool_free(server.answers);
}
END_TEST

/* Clients that stop reading hold lent blocks: past 256 the answers are
 * copied, and the blocks stay home. */
START_TEST(answer_lends_a_bounded_number)
{
    struct http_server server = {0};
    struct evbuffer *outs[300];
    for (int i = 0; i < 300; i++) {
        struct http_answer a;
        http_answer_open(&server, &a);
        http_answer_lit(&a, "{\"value\":true}");
        const char *written = a.data;
        outs[i] = evbuffer_new();
        ck_assert(http_answer_attach(&a, outs[i]));
        ck_assert_uint_eq(evbuffer_get_length(outs[i]), 14);
        /* lent: libevent holds our block; copied: its own memory */
        bool lent = (const char *)evbuffer_pullup(outs[i], -1) == written;
        ck_assert_msg(lent == (i < 256), "answer %d lent %d", i, lent);
    }
    for (int i = 0; i < 300; i++)
        evbuffer_free(outs[i]);
    http_answer_pool_free(server.answers);
}
END_TEST

/* Past 256 lent, a block at least half full is not copied: it is lent as
 * a block of its own (a large answer's blocks are full). */
START_TEST(answer_full_blocks_lent_past_the_bound)
{
    struct http_server server = {0};
    struct evbuffer *outs[300];
    char full[HTTP_ANSWER_BLOCK_SIZE];
    memset(full, 'f', sizeof full);
    for (int i = 0; i < 300; i++) {
        struct http_answer a;
        http_answer_open(&server, &a);
        http_answer_put(&a, full, sizeof full);
        const char *written = a.data;
        outs[i] = evbuffer_new();
        ck_assert(http_answer_attach(&a, outs[i]));
        ck_assert_uint_eq(evbuffer_get_length(outs[i]), sizeof full);
        struct evbuffer_iovec extent;
        ck_assert_int_eq(evbuffer_peek(outs[i], -1, NULL, &extent, 1), 1);
        ck_assert_msg(extent.iov_base == written, "answer %d copied", i);
    }
    http_answer_pool_free(server.answers); /* the pool goes with its last block */
    for (int i = 0; i < 300; i++)
        evbuffer_free(outs[i]);
}
END_TEST

START_TEST(answer_pool_outlived_by_a_block)
{
    struct http_server server = {0};
    struct http_answer a;
    http_answer_open(&server, &a);
    http_answer_lit(&a, "late");
    struct evbuffer *out = evbuffer_new();
    ck_assert(http_answer_attach(&a, out));
    http_answer_pool_free(server.answers); /* the block is still out */
    evbuffer_free(out);                    /* its return frees it and the pool */
}
END_TEST

START_TEST(answer_without_server)
{
    struct http_answer a;
    http_answer_open(NULL, &a);
    ck_assert(!a.failed);
    http_answer_lit(&a, "{}");
    struct evbuffer *out = evbuffer_new();
    ck_assert(http_answer_attach(&a, out));
    evbuffer_free(out);
}
END_TEST

/* ---- JSON strings ---- */

/* s written by http_answer_string must read back (json-c) as s, and be
 * written exactly as expected. */
static void assert_string_written(const char *s, size_t n, const char *expected)
{
    struct http_answer a;
    http_answer_open(NULL, &a);
    http_answer_string(&a, s, n);
    ck_assert(!a.failed);
    ck_assert_uint_eq(a.len, strlen(expected));
    ck_assert_mem_eq(a.data, expected, a.len);
    char text[512];
    memcpy(text, a.data, a.len);
    text[a.len] = '\0';
    struct json_object *back = json_tokener_parse(text);
    ck_assert_ptr_nonnull(back);
    ck_assert_int_eq(json_object_get_string_len(back), (int)n);
    ck_assert_mem_eq(json_object_get_string(back), s, n);
    json_object_put(back);
    http_answer_close(&a);
}

START_TEST(json_strings_escaped_where_due)
{
    assert_string_written("", 0, "\"\"");
    assert_string_written("production", 10, "\"production\"");
    assert_string_written("0f8fad5b-d9cb-469f-a165-70867728950e", 36,
                          "\"0f8fad5b-d9cb-469f-a165-70867728950e\"");
    /* a quote, a backslash and a control character at each place of an
     * 8-byte word and in the tail */
    const char specials[] = {'"', '\\', '\n', 0x01, 0x1f};
    for (size_t k = 0; k < sizeof specials; k++) {
        for (size_t at = 0; at < 19; at++) {
            char s[19], expected[64];
            memset(s, 'a', sizeof s);
            s[at] = specials[k];
            char esc[8];
            if (specials[k] == '"' || specials[k] == '\\')
                snprintf(esc, sizeof esc, "\\%c", specials[k]);
            else
                snprintf(esc, sizeof esc, "\\u%04x", (unsigned)specials[k]);
            snprintf(expected, sizeof expected, "\"%.*s%s%.*s\"", (int)at, s, esc,
                     (int)(sizeof s - at - 1), s + at + 1);
            assert_string_written(s, sizeof s, expected);
        }
    }
    /* UTF-8 and DEL stand as they are */
    assert_string_written("caf\xc3\xa9 \x7f x", 9, "\"caf\xc3\xa9 \x7f x\"");
}
END_TEST

Suite *suite_answer(void)
{
    Suite *s = suite_create("answer");
    TCase *tc = tcase_create("answer");
    tcase_add_test(tc, hex_u64_digits);
    tcase_add_test(tc, header_index_first_of_any_case);
    tcase_add_test(tc, header_compare_as_libevent_defines_it);
    tcase_add_test(tc, answer_blocks_are_reused);
    tcase_add_test(tc, answer_goes_on_in_pooled_blocks);
    tcase_add_test(tc, answer_piece_larger_than_a_block);
    tcase_add_test(tc, answer_joined_in_one_piece);
    tcase_add_test(tc, answer_returns_when_libevent_lets_go);
    tcase_add_test(tc, answer_lends_a_bounded_number);
    tcase_add_test(tc, answer_full_blocks_lent_past_the_bound);
    tcase_add_test(tc, answer_pool_outlived_by_a_block);
    tcase_add_test(tc, answer_without_server);
    tcase_add_test(tc, json_strings_escaped_where_due);
    suite_add_tcase(s, tc);
    return s;
}
