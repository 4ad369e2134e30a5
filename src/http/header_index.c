/*
 * header_index.c - one pass over a request's headers (see header_index.h),
 * and libevent's case-insensitive name compare replaced by a faster one of
 * the same meaning.
 *
 * The compare: evhttp looks headers up by name many times per request in
 * its own code (Connection, Content-Length, Transfer-Encoding, Expect,
 * Date, Content-Type, on the request and on the answer):
 * evhttp_find_header walks the list and compares every name with
 * evutil_ascii_strcasecmp, which calls a function per character to fold
 * it. libevent calls the compare through its PLT (15 call sites in
 * Debian's 2.1.12), so the definition here takes its place for libevent
 * too, as http.c and intake.c do for other functions (see intake.c's
 * header); it lives in this file because this file is always linked
 * (a member of a static library that nothing references would not be).
 * Same result as libevent's: characters folded A-Z to a-z, compared as
 * (signed) char, -1, 0 or 1. What is faster: bytes that are equal as they
 * are need no folding, and the fold is inline. tests/unit/test_answer.c
 * checks it against libevent's definition. Listed in
 * libevent_replacements.c and proven in effect at start-up.
 */
#include "http/header_index.h"

#include <event2/http.h>
#include <sys/queue.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <string.h>
#include <strings.h>

#include "http/query_method.h"
#include "http/libevent_replacements.h"

static const struct {
    const char *name;
    size_t len;
} slot_names[HEADER_SLOTS] = {
#define NAME(text)                                                                                 \
    {                                                                                              \
        text, sizeof(text) - 1                                                                     \
    }
    [HEADER_AUTHORIZATION] = NAME("Authorization"),
    [HEADER_HOST] = NAME("Host"),
    [HEADER_ORIGIN] = NAME("Origin"),
    [HEADER_IF_NONE_MATCH] = NAME("If-None-Match"),
    [HEADER_X_FORWARDED_PROTO] = NAME("X-Forwarded-Proto"),
    [HEADER_X_API_KEY] = NAME("X-API-Key"),
    [HEADER_COOKIE] = NAME("Cookie"),
    [HEADER_LAST_EVENT_ID] = NAME("Last-Event-ID"),
    [HEADER_ENSIGN_INTERNAL_KEY] = NAME("Ensign-Internal-Key"),
    [HEADER_METHOD_OVERRIDE] = NAME(QUERY_METHOD_OVERRIDE_HEADER),
#undef NAME
};

static int slot_of(const char *name, size_t len)
{
    for (int slot = 0; slot < HEADER_SLOTS; slot++)
        if (slot_names[slot].len == len && strcasecmp(slot_names[slot].name, name) == 0)
            return slot;
    return -1;
}

int header_index_slot(const char *name)
{
    return slot_of(name, strlen(name));
}

void header_index_build(struct header_index *ix, const struct evkeyvalq *headers)
{
    memset(ix, 0, sizeof *ix);
    ix->built = true;
    if (headers == NULL)
        return;
    const struct evkeyval *h;
    TAILQ_FOREACH(h, headers, next)
    {
        int slot = slot_of(h->key, strlen(h->key));
        if (slot >= 0 && ix->value[slot] == NULL)
            ix->value[slot] = h->value;
    }
}

/* ---- the compare libevent calls (see the header) ---- */

static signed char fold(char c)
{
    return (signed char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
}

int evutil_ascii_strcasecmp(const char *str1, const char *str2)
{
    libevent_replacement_reached(REPLACEMENT_EVUTIL_ASCII_STRCASECMP);
    for (;; str1++, str2++) {
        signed char x = (signed char)*str1, y = (signed char)*str2;
        if (x != y) {
            x = fold(*str1);
            y = fold(*str2);
            if (x != y)
                return x < y ? -1 : 1;
        }
        if (x == '\0')
            return 0;
    }
}
