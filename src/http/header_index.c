/*
 * header_index.c - one pass over a request's headers (see header_index.h).
 */
#include "header_index.h"

#include <event2/http.h>
#include <sys/queue.h>
#include <event2/keyvalq_struct.h>
#include <string.h>
#include <strings.h>

#include "query_method.h"

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
