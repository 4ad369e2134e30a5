/*
 * fuzz_pagination.c - libFuzzer target: the pagination request readers of
 * the root API's lists (src/mgmt/pagination.c).
 *
 * The first byte picks the form: even, the rest is a GET query string
 * (page_parse_query); odd, the rest is a QUERY body, read as the server
 * reads a body (fuzz_json_guarded), then page_parse_json. Its second bit
 * picks the bounds: the root API's (clamped to 1..PAGE_LIMIT_MAX) or the
 * flag list's (page_request_init_bounded: 1..1,000, refused outside). Cursors are checked for their
 * HMAC in PostgreSQL; what C reads (limit, q, the cursor's shape) must, whenever the readers accept
 * it, hold a limit from 1 to the request's limit_max, a q of at most PAGE_Q_MAX_CHARS characters of
 * UTF-8, and a cursor of the cursor alphabet within PAGE_CURSOR_MAX bytes, since those reach SQL
 * and the Link header. Never a crash, leak or overflow.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "mgmt/pagination.h"
#include "mgmt/validate.h"

#define FLAG_LIST_LIMIT 1000 /* the flag list's bounds (api/flaglist.h) */
#define CURSOR_ALPHABET "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."

static void fail(const char *what, const struct page_request *p)
{
    fprintf(stderr, "fuzz_pagination: %s (limit %d, q %zu bytes, cursor %zu bytes)\n", what,
            p->limit, strlen(p->q), strlen(p->cursor));
    abort();
}

/* What an accepted request must hold. */
static void check_accepted(const struct page_request *p)
{
    if (p->limit < 1 || p->limit > p->limit_max)
        fail("limit out of range", p);
    long chars = validate_utf8_length(p->q, strlen(p->q));
    if (chars < 0 || chars > PAGE_Q_MAX_CHARS)
        fail("q is not short UTF-8", p);
    size_t len = strlen(p->cursor);
    if (len > PAGE_CURSOR_MAX || strspn(p->cursor, CURSOR_ALPHABET) != len)
        fail("cursor of the wrong shape", p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    struct page_request p;
    struct validate v;
    if (data[0] & 2)
        page_request_init_bounded(&p, FLAG_LIST_LIMIT, FLAG_LIST_LIMIT);
    else
        page_request_init(&p);
    validate_init(&v);
    if (data[0] % 2 == 0) {
        char *text = fuzz_text(data + 1, size - 1);
        page_parse_query(text, &v, &p);
        free(text);
    } else {
        /* read as the server reads a body: the guard, then json-c */
        struct json_object *body = fuzz_json_guarded(data + 1, size - 1);
        page_parse_json(body, &v, &p);
        json_object_put(body);
    }
    if (validate_ok(&v))
        check_accepted(&p);
    validate_free(&v);
    return 0;
}
