/*
 * header_index.h - the request headers handlers ask for, found in one pass.
 *
 * evhttp keeps a request's headers in a list and evhttp_find_header walks
 * it with a case-insensitive compare per entry: an evaluation asks for
 * five or six headers (Authorization, Host, X-Forwarded-Proto,
 * If-None-Match, Origin, the method override), which was some forty
 * compares per request. The index walks the list once at dispatch, telling
 * names apart by length first, and answers those names from its slots.
 *
 * Invariants: a slot holds the first header of its name (what
 * evhttp_find_header answers), or NULL; the pointers are the list's own
 * values, valid while the request's input headers are not changed (they
 * are not after dispatch). Pure: no allocation.
 */
#ifndef ENSIGN_HTTP_HEADER_INDEX_H
#define ENSIGN_HTTP_HEADER_INDEX_H

#include <stdbool.h>

struct evkeyvalq;

enum header_slot {
    HEADER_AUTHORIZATION,
    HEADER_HOST,
    HEADER_ORIGIN,
    HEADER_IF_NONE_MATCH,
    HEADER_X_FORWARDED_PROTO,
    HEADER_X_API_KEY,
    HEADER_COOKIE,
    HEADER_LAST_EVENT_ID,
    HEADER_ENSIGN_INTERNAL_KEY,
    HEADER_METHOD_OVERRIDE,
    HEADER_SLOTS
};

struct header_index {
    const char *value[HEADER_SLOTS];
    bool built; /* false: not built, ask the list */
};

/* Fills ix from headers (NULL: every slot empty). */
void header_index_build(struct header_index *ix, const struct evkeyvalq *headers);

/* The slot of a header name (any case), or -1 when the index does not
 * keep that name. */
int header_index_slot(const char *name);

#endif
