/*
 * pagination.c - reading a list request and answering a page (see
 * pagination.h).
 *
 * Owns the parsing of q, limit and cursor from the query string or the
 * QUERY body, the page answer ({member: [...]}, built from the rows' JSON
 * text without re-parsing it) and the Link header. The HMAC and the keyset
 * itself live in SQL (sql/0003_accounts.sql), so this file holds no secret.
 *
 * Invariants: limit is clamped to 1..limit_max (or refused outside it for a
 * bounded request); every answer to a list of the root API is sent here; the Link URL repeats the
 * request path as received, so it is relative and already percent-encoded.
 */
#include "mgmt/pagination.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/auth.h"
#include "mgmt/request_auth.h"
#include "db/db.h"
#include "http/event_memory.h"
#include "http/http.h"
#include "mgmt/validate.h"
#include "http/server.h"

struct page_run {
    struct http_request *r;
    struct page_request page;
    const char *member;
};

static int clamp_limit(long long value, int max)
{
    if (value < 1)
        return 1;
    return value > max ? max : (int)value;
}

/* A limit read as value into out: clamped, or refused outside 1..limit_max
 * when the request is bounded. */
static void take_limit(struct validate *v, long long value, struct page_request *out)
{
    if (out->limit_strict && (value < 1 || value > out->limit_max))
        validate_error(v, "limit", "an integer from 1 to %d", out->limit_max);
    else
        out->limit = clamp_limit(value, out->limit_max);
}

static bool cursor_shape_ok(const char *cursor)
{
    size_t len = strlen(cursor);
    if (len > PAGE_CURSOR_MAX)
        return false;
    return strspn(cursor, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") ==
           len;
}

static bool q_ok(struct validate *v, const char *q)
{
    long chars = validate_utf8_length(q, strlen(q));
    if (chars < 0 || chars > PAGE_Q_MAX_CHARS) {
        validate_error(v, "q", "at most %d characters of UTF-8 text", PAGE_Q_MAX_CHARS);
        return false;
    }
    return true;
}

static void check_cursor(struct validate *v, const char *cursor)
{
    if (!cursor_shape_ok(cursor))
        validate_error(v, "cursor", "malformed cursor");
}

void page_parse_query(const char *query, struct validate *v, struct page_request *out)
{
    struct evkeyvalq params;
    TAILQ_INIT(&params);
    if (query != NULL && evhttp_parse_query_str(query, &params) != 0) {
        validate_error(v, NULL, "malformed query string");
        evhttp_clear_headers(&params);
        return;
    }
    const char *limit = evhttp_find_header(&params, "limit");
    const char *q = evhttp_find_header(&params, "q");
    const char *cursor = evhttp_find_header(&params, "cursor");
    if (limit != NULL) {
        char *end;
        errno = 0;
        long long value = strtoll(limit, &end, 10);
        if (end == limit || *end != '\0' || errno != 0)
            validate_error(v, "limit", "an integer from 1 to %d", out->limit_max);
        else
            take_limit(v, value, out);
    }
    if (q != NULL && q_ok(v, q))
        snprintf(out->q, sizeof out->q, "%s", q);
    if (cursor != NULL) {
        check_cursor(v, cursor);
        if (strlen(cursor) < sizeof out->cursor)
            snprintf(out->cursor, sizeof out->cursor, "%s", cursor);
    }
    evhttp_clear_headers(&params);
}

void page_parse_json(struct json_object *body, struct validate *v, struct page_request *out)
{
    if (body == NULL)
        return;
    if (!json_object_is_type(body, json_type_object)) {
        validate_error(v, NULL, "the request body must be a JSON object");
        return;
    }
    const char *q = NULL, *cursor = NULL;
    int64_t limit;
    if (validate_string(v, body, "q", 0, PAGE_Q_MAX_CHARS, VALIDATE_NULLABLE, &q) == VALIDATE_SET)
        snprintf(out->q, sizeof out->q, "%s", q);
    if (validate_int(v, body, "limit", INT64_MIN, INT64_MAX, VALIDATE_NULLABLE, &limit) ==
        VALIDATE_SET)
        take_limit(v, limit, out);
    if (validate_string(v, body, "cursor", 0, PAGE_CURSOR_MAX, VALIDATE_NULLABLE, &cursor) ==
        VALIDATE_SET) {
        snprintf(out->cursor, sizeof out->cursor, "%s", cursor);
        check_cursor(v, out->cursor);
    }
}

/* QUERY: the members from the JSON body (all optional); false once answered. */
static bool read_body(struct http_request *r, struct validate *v, struct page_request *out)
{
    struct json_object *body = NULL;
    if (!http_parse_json_body(r, true, &body))
        return false;
    page_parse_json(body, v, out);
    json_object_put(body);
    return true;
}

void page_request_init(struct page_request *out)
{
    memset(out, 0, sizeof *out);
    out->limit = PAGE_LIMIT_DEFAULT;
    out->limit_max = PAGE_LIMIT_MAX;
}

void page_request_init_bounded(struct page_request *out, int def, int max)
{
    page_request_init(out);
    out->limit = def;
    out->limit_max = max;
    out->limit_strict = true;
}

/* q, limit and cursor of r into out (initialized by the caller). */
static bool read_into(struct http_request *r, struct page_request *out)
{
    struct validate v;
    validate_init(&v);
    bool parsed = r->method == METHOD_QUERY ? read_body(r, &v, out)
                                            : (page_parse_query(r->query, &v, out), true);
    if (!parsed) {
        validate_free(&v);
        return false;
    }
    if (!validate_ok(&v)) {
        http_send_validation_error(r, "validation failed", validate_take_errors(&v));
        return false;
    }
    validate_free(&v);
    return true;
}

bool page_read(struct http_request *r, struct page_request *out)
{
    page_request_init(out);
    return read_into(r, out);
}

bool page_read_bounded(struct http_request *r, struct page_request *out, int def, int max)
{
    page_request_init_bounded(out, def, max);
    return read_into(r, out);
}

/* ---- the answer ---- */

void page_add_next_link(struct http_request *r, const struct page_request *p, const char *cursor)
{
    struct evbuffer *link = evbuffer_new();
    if (link == NULL)
        return;
    evbuffer_add_printf(link, "<%s?", r->path);
    if (p->q[0] != '\0') {
        char *q = evhttp_uriencode(p->q, -1, 0);
        if (q != NULL)
            evbuffer_add_printf(link, "q=%s&", q);
        event_memory_release(q); /* libevent's block (event_memory.h) */
    }
    evbuffer_add_printf(link, "%slimit=%d&cursor=%s>; rel=\"next\"", p->link_extra, p->limit,
                        cursor);
    evbuffer_add(link, "", 1);
    http_add_header(r, "Link", (const char *)evbuffer_pullup(link, -1));
    evbuffer_free(link);
}

static void send_cursor_rejected(struct http_request *r)
{
    struct validate v;
    validate_init(&v);
    validate_error(&v, "cursor",
                   "malformed, tampered or foreign cursor: it belongs to another "
                   "route, organization or q");
    http_send_validation_error(r, "invalid cursor", validate_take_errors(&v));
}

static void send_page(struct http_request *r, const PGresult *res, const struct page_run *run)
{
    int rows = PQntuples(res);
    int shown = rows > run->page.limit ? run->page.limit : rows;
    struct evbuffer *body = evbuffer_new();
    if (body == NULL) {
        auth_send_db_failure(r, NULL, "out of memory");
        return;
    }
    evbuffer_add_printf(body, "{\"%s\":[", run->member);
    for (int i = 0; i < shown; i++)
        evbuffer_add_printf(body, "%s%s", i ? "," : "", PQgetvalue(res, i, 0));
    evbuffer_add(body, "]}", 3);
    if (rows > run->page.limit && !PQgetisnull(res, shown - 1, 1))
        page_add_next_link(r, &run->page, PQgetvalue(res, shown - 1, 1));
    http_send_json_text(r, 200, (const char *)evbuffer_pullup(body, -1));
    evbuffer_free(body);
}

bool page_send_rejected(struct http_request *r, const PGresult *res)
{
    if (res != NULL && strcmp(db_sqlstate(res), PAGE_CURSOR_SQLSTATE) == 0)
        send_cursor_rejected(r);
    else if (res != NULL && strncmp(db_sqlstate(res), "22", 2) == 0)
        http_send_error(r, 422, "invalid search text");
    else
        return false;
    return true;
}

static void on_page(PGresult *res, const char *error, void *arg)
{
    struct page_run *run = arg;
    struct http_request *r = run->r;
    if (!db_result_ok(res)) {
        if (!page_send_rejected(r, res))
            auth_send_db_failure(r, res, error);
    } else if (PQnfields(res) != 2) {
        auth_send_db_failure(r, res, "a page needs the columns item and cursor");
    } else {
        send_page(r, res, run);
    }
    free(run);
}

void page_run(struct http_request *r, const char *sql, const char *scope,
              const struct page_request *p, int nextra, const char *const *extra,
              const char *member)
{
    enum { FIXED = 5, EXTRA_MAX = 8 };
    if (nextra < 0 || nextra > EXTRA_MAX) {
        auth_send_db_failure(r, NULL, "too many list parameters");
        return;
    }
    struct page_run *run = malloc(sizeof *run);
    if (run == NULL) {
        auth_send_db_failure(r, NULL, "out of memory");
        return;
    }
    *run = (struct page_run){.r = r, .page = *p, .member = member};
    char fetch[16];
    snprintf(fetch, sizeof fetch, "%d", p->limit + 1);
    const char *params[FIXED + EXTRA_MAX] = {r->match.route->pattern, scope, run->page.q,
                                             run->page.cursor, fetch};
    for (int i = 0; i < nextra; i++)
        params[FIXED + i] = extra[i];
    if (db_query(r->server->db, sql, FIXED + nextra, params, on_page, run) != 0) {
        free(run);
        auth_send_db_failure(r, NULL, "no database connection");
    }
}
