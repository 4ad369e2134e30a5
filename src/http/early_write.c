/*
 * early_write.c - complete answers written to their socket in the turn
 * of the loop that made them (see early_write.h).
 *
 * The flush event has no file descriptor; the first answer of a turn
 * activates it, and libevent runs it after the callbacks already active
 * in that turn (the requests read in the same epoll_wait), before the
 * next epoll_wait applies the changelist. A socket bufferevent keeps its
 * output frozen at the front (only it may drain it); the flush unfreezes
 * it around its write, as the bufferevent's own write callback does.
 *
 * Invariants: 0 <= count <= cap; every remembered bufferevent holds one
 * reference of ours, dropped by the flush; the flush event is active
 * exactly while count > 0.
 */
#include "http/early_write.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stdlib.h>

struct early_write {
    struct event *flush;
    struct bufferevent **remembered;
    size_t count, cap;
};

/* Writes what bev's output holds; true when all of it went out. */
static bool write_output(struct bufferevent *bev)
{
    struct evbuffer *out = bufferevent_get_output(bev);
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd < 0 || evbuffer_get_length(out) == 0)
        return false;
    evbuffer_unfreeze(out, 1);
    int written = evbuffer_write(out, fd);
    evbuffer_freeze(out, 1);
    return written > 0 && evbuffer_get_length(out) == 0;
}

/* Writes one connection's answer and, when it is all out, finishes it as
 * evhttp's write callback would; otherwise leaves it to the write event. */
static void flush_one(struct bufferevent *bev)
{
    bufferevent_data_cb write_cb = NULL;
    bufferevent_getcb(bev, NULL, &write_cb, NULL, NULL);
    if (write_cb != NULL && (bufferevent_get_enabled(bev) & EV_WRITE) && write_output(bev))
        bufferevent_trigger(bev, EV_WRITE, 0);
    bufferevent_decref(bev);
}

static void flush_all(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct early_write *ew = arg;
    /* entries added while this runs (a connection's next request
     * answered at once) are taken too: the loop ends on an empty list */
    while (ew->count > 0)
        flush_one(ew->remembered[--ew->count]);
}

struct early_write *early_write_new(struct event_base *base, size_t max_connections)
{
    struct early_write *ew = calloc(1, sizeof *ew);
    if (ew == NULL)
        return NULL;
    ew->cap = max_connections > 0 ? max_connections : 1;
    ew->remembered = calloc(ew->cap, sizeof *ew->remembered);
    ew->flush = event_new(base, -1, 0, flush_all, ew);
    if (ew->remembered == NULL || ew->flush == NULL) {
        early_write_free(ew);
        return NULL;
    }
    return ew;
}

void early_write_free(struct early_write *ew)
{
    if (ew == NULL)
        return;
    while (ew->count > 0)
        bufferevent_decref(ew->remembered[--ew->count]);
    if (ew->flush != NULL)
        event_free(ew->flush);
    free(ew->remembered);
    free(ew);
}

void early_write_send_reply(struct early_write *ew, struct evhttp_request *req, int code,
                            const char *reason)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon != NULL ? evhttp_connection_get_bufferevent(evcon) : NULL;
    if (bev != NULL && ew != NULL && ew->count < ew->cap)
        bufferevent_incref(bev); /* before the send: it may let the connection go */
    else
        bev = NULL;
    evhttp_send_reply(req, code, reason, NULL);
    if (bev == NULL)
        return;
    ew->remembered[ew->count++] = bev;
    if (ew->count == 1)
        event_active(ew->flush, EV_WRITE, 0);
}

size_t early_write_pending(const struct early_write *ew)
{
    return ew != NULL ? ew->count : 0;
}
