/*
 * libevent_replacements.h - the inventory of libevent functions that
 * ensignd replaces, and the start-up proof that each replacement is in
 * effect (see libevent_replacements.c for the list: what each replaces,
 * why, and which private libevent detail it relies on).
 *
 * Every replacement calls libevent_replacement_reached() on entry. The
 * proof drives one request through a real evhttp on a loopback socket:
 * each replacement is in effect exactly when libevent's own internal call
 * reached it. A libevent that binds its internal calls to itself (linked
 * with -Bsymbolic or -Bsymbolic-functions, built with hidden visibility or
 * linked statically) reaches none, and ensignd refuses to start.
 *
 * Written against libevent 2.1.12-stable (configure accepts 2.1.12 up to,
 * not including, 2.2).
 */
#ifndef ENSIGN_LIBEVENT_REPLACEMENTS_H
#define ENSIGN_LIBEVENT_REPLACEMENTS_H

#include <stdbool.h>
#include <stddef.h>

enum libevent_replacement {
    REPLACEMENT_EVHTTP_REQUEST_NEW,
    REPLACEMENT_EVHTTP_REQUEST_FREE,
    REPLACEMENT_EVHTTP_PARSE_FIRSTLINE,
    REPLACEMENT_EVHTTP_PARSE_HEADERS,
    REPLACEMENT_EVBUFFER_READLN,
    REPLACEMENT_EVUTIL_STRTOLL,
    REPLACEMENT_EVHTTP_SEND_ERROR,
    REPLACEMENT_EVBUFFER_ADD_PRINTF,
    REPLACEMENT_EVUTIL_DATE_RFC1123,
    REPLACEMENT_EVUTIL_ASCII_STRCASECMP,
    REPLACEMENTS
};

/* One byte per replacement: set when it was called (cheap enough for the
 * hot ones: one store to a line that stays in cache). */
extern unsigned char libevent_replacement_seen[REPLACEMENTS];

static inline void libevent_replacement_reached(enum libevent_replacement r)
{
    libevent_replacement_seen[r] = 1;
}

/* The replaced function's name, e.g. "evhttp_parse_headers_". */
const char *libevent_replacement_name(enum libevent_replacement r);

/* What the replacement does, in a few words (for the refusal's log line). */
const char *libevent_replacement_purpose(enum libevent_replacement r);

/*
 * Drives a request through a fresh event base and evhttp on 127.0.0.1 (a
 * malformed chunked body, answered 413 by libevent through
 * evhttp_send_error) and checks that libevent's internal calls reached
 * every replacement and that the answer is ensignd's JSON. 0 when all are
 * in effect; else -1 and err names the first one that is not (and why it
 * matters). Takes a few milliseconds; call before any worker starts.
 */
int libevent_replacements_prove(char *err, size_t errlen);

#endif
