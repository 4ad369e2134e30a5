/*
 * query_method.c - QUERY requests made readable by evhttp (see
 * query_method.h).
 *
 * Invariants: only a read that lands in an empty input buffer (the start
 * of a request on an idle connection) and whose first line is complete and
 * begins "QUERY " is rewritten; the rewrite keeps every other byte and
 * their order; the callback never runs for its own modifications.
 */
#include "http/query_method.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <string.h>
#include <strings.h>

static const char QUERY_PREFIX[] = "QUERY ";
static const char OVERRIDE_LINE[] = QUERY_METHOD_OVERRIDE_HEADER ": QUERY\r\n";

/* Rewrites "QUERY <target> HTTP/x\r\n<rest>" to
 * "POST <target> HTTP/x\r\nX-HTTP-Method-Override: QUERY\r\n<rest>". */
static void rewrite(struct evbuffer *in)
{
    size_t eol_len = 0;
    struct evbuffer_ptr eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_CRLF);
    if (eol.pos < 0)
        return; /* the line is not complete: leave it to evhttp (501) */
    struct evbuffer *out = evbuffer_new();
    if (out == NULL)
        return;
    evbuffer_add(out, "POST ", 5);
    evbuffer_drain(in, sizeof QUERY_PREFIX - 1);
    evbuffer_remove_buffer(in, out, (size_t)eol.pos - (sizeof QUERY_PREFIX - 1) + eol_len);
    evbuffer_add(out, OVERRIDE_LINE, sizeof OVERRIDE_LINE - 1);
    evbuffer_add_buffer(out, in);
    evbuffer_add_buffer(in, out);
    evbuffer_free(out);
}

static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
    static bool rewriting;
    (void)arg;
    if (rewriting || info->orig_size != 0 || info->n_added < sizeof QUERY_PREFIX - 1)
        return;
    unsigned char *head = evbuffer_pullup(in, sizeof QUERY_PREFIX - 1);
    if (head == NULL || memcmp(head, QUERY_PREFIX, sizeof QUERY_PREFIX - 1) != 0)
        return;
    rewriting = true;
    rewrite(in);
    rewriting = false;
}

int query_method_watch(struct evbuffer *in)
{
    return evbuffer_add_cb(in, on_input, NULL) != NULL ? 0 : -1;
}

struct bufferevent *query_method_bufferevent(struct event_base *base, void *arg)
{
    (void)arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    /* a large answer (a 1,000-flag list is 585 KB) in writes of up to
     * 256 KB, not libevent's 16 KB: fewer trips through the loop */
    if (bev != NULL)
        bufferevent_set_max_single_write(bev, QUERY_METHOD_MAX_SINGLE_WRITE);
    if (bev != NULL && query_method_watch(bufferevent_get_input(bev)) != 0) {
        bufferevent_free(bev);
        return NULL;
    }
    return bev;
}

bool query_method_override(const char *header_value)
{
    return header_value != NULL && strcasecmp(header_value, "QUERY") == 0;
}
