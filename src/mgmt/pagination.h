/*
 * pagination.h - keyset pagination and search of every list of the root
 * API (doc/api.md "Surfaces and error bodies"; a cursor is bound by an
 * HMAC to its route, organization and q, any other use a 422).
 *
 * A list request carries q (search text, case-insensitive, matched in SQL),
 * limit (1 to 100, default 30, clamped) and cursor (opaque). They come from
 * the query string (GET) or, for the QUERY method, from a JSON body
 * {q, limit, cursor}; both give the same struct page_request and the same
 * answer, Link header included.
 *
 * Cursors are made and checked in PostgreSQL (sql/0003_accounts.sql:
 * ensign_cursor_make, ensign_cursor_keys) with an HMAC under a secret that
 * never leaves the database, bound to the route pattern, a scope (the
 * organization id, plus the project id where the list belongs to one) and
 * q. Every list statement run through page_run takes the parameters
 *
 *     $1 route pattern   $2 scope   $3 q ("" none)   $4 cursor ("" none)
 *     $5 limit + 1       $6... the caller's own
 *
 * and returns at most limit + 1 rows of two columns, in page order:
 *
 *     item    the row's JSON form (text)
 *     cursor  on the limit-th row, ensign_cursor_make($1, $2, $3, keys of
 *             that row); NULL on the others
 *
 * A row limit + 1 means there is a next page: the answer carries
 * Link: <PATH?q=..&limit=N&cursor=..>; rel="next" (relative, q only when
 * set). A cursor rejected by ensign_cursor_keys (SQLSTATE 22EC1) answers 422
 * with the error on "cursor".
 *
 * The flag list of /v1 (src/api/flags.c) pages the same way with bounds
 * of its own (1 to 1,000, default 1,000: doc/api.md) that refuse a limit
 * outside them with 422 instead of clamping it (page_read_bounded), and
 * writes its own body: it takes the Link (page_add_next_link) and the
 * cursor's 422 (page_send_rejected) from here.
 *
 * Called by the list handlers of src/accounts/ (and the audit list), the
 * flag revisions and the flag list of src/api/.
 */
#ifndef ENSIGN_PAGINATION_H
#define ENSIGN_PAGINATION_H

#include <stdbool.h>
#include <libpq-fe.h>

struct http_request;

#define PAGE_LIMIT_DEFAULT 30
#define PAGE_LIMIT_MAX 100
#define PAGE_Q_MAX_CHARS 200
#define PAGE_Q_BYTES (PAGE_Q_MAX_CHARS * 4 + 1)
#define PAGE_CURSOR_MAX 1100
#define PAGE_CURSOR_SQLSTATE "22EC1"
#define PAGE_LINK_EXTRA_BYTES 2560

struct page_request {
    char q[PAGE_Q_BYTES];             /* "" when absent */
    char cursor[PAGE_CURSOR_MAX + 1]; /* "" for the first page */
    int limit;                        /* 1 to limit_max */
    int limit_max;                    /* PAGE_LIMIT_MAX, or a list's own bound */
    bool limit_strict;                /* a limit outside 1..limit_max is a 422, not clamped */
    /* A list's own filters for the Link URL, already encoded, each ending
     * in "&" ("action=flag.created&actor=ID&"); "" for none. page_read
     * leaves it empty; the list handler fills it. */
    char link_extra[PAGE_LINK_EXTRA_BYTES];
};

/*
 * Building blocks of list statements. PAGE_WITH_CURSOR(defaults) opens the
 * statement with CTE c holding k, the cursor's keys (text[]) or the given
 * defaults on the first page (SQL array items, e.g. "'-infinity', '0...'").
 * PAGE_SELECT(order, keys) ends it, reading CTE p (columns item and those
 * of order) in order, with the next cursor on the limit-th row made from
 * keys (SQL text expressions over p's columns).
 */
#define PAGE_ZERO_UUID "'00000000-0000-0000-0000-000000000000'"
#define PAGE_WITH_CURSOR(defaults)                                                                 \
    "WITH c AS MATERIALIZED (SELECT ensign_cursor_keys($1, $2, $3, $4, ARRAY[" defaults "]) AS k)"
#define PAGE_KEY(i) "(SELECT k[" #i "] FROM c)"
#define PAGE_SELECT(order, keys)                                                                   \
    " SELECT item::text, CASE WHEN row_number() OVER (ORDER BY " order ") = $5::int - 1"           \
    " THEN ensign_cursor_make($1, $2, $3, ARRAY[" keys "]) END FROM p ORDER BY " order

struct json_object;
struct validate;

/* A first page of the default size: no q, no cursor. */
void page_request_init(struct page_request *out);

/* A first page of limit def, with limits 1..max and no clamping. */
void page_request_init_bounded(struct page_request *out, int def, int max);

/*
 * The pure readers behind page_read (also the fuzz target's entry points):
 * q, limit and cursor from a query string (NULL: none) or a QUERY body
 * (NULL: none) into out, which page_request_init prepared; every problem
 * is recorded in v, field by field.
 */
void page_parse_query(const char *query, struct validate *v, struct page_request *out);
void page_parse_json(struct json_object *body, struct validate *v, struct page_request *out);

/*
 * Reads q, limit and cursor of r: the query string for GET, the JSON body
 * for QUERY. Returns true, or false after answering r itself: 400 for a
 * body that is not JSON, 422 for a limit that is not an integer, a q longer
 * than PAGE_Q_MAX_CHARS characters, a cursor of the wrong shape, or a
 * member of the wrong type.
 */
bool page_read(struct http_request *r, struct page_request *out);

/* page_read with the bounds of page_request_init_bounded: a limit that is
 * not an integer from 1 to max answers 422 on "limit". */
bool page_read_bounded(struct http_request *r, struct page_request *out, int def, int max);

/* Adds Link: <PATH?[q=..&]EXTRA limit=N&cursor=..>; rel="next" to r. */
void page_add_next_link(struct http_request *r, const struct page_request *p, const char *cursor);

/* Answers r for a list statement's error that is the caller's: 422 for a
 * cursor ensign_cursor_keys rejected or a q PostgreSQL refused; true when
 * it answered, false for any other error (the caller answers). */
bool page_send_rejected(struct http_request *r, const PGresult *res);

/*
 * Queues the list statement sql (parameters as above; extra[0..nextra) are
 * $6 onwards) for the page p of r, bound to scope, and answers r from its
 * result with {member: [items]} and the Link header. Answers r itself in
 * every case (503/500 when the query fails).
 */
void page_run(struct http_request *r, const char *sql, const char *scope,
              const struct page_request *p, int nextra, const char *const *extra,
              const char *member);

#endif
