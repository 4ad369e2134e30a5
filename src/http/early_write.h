/*
 * early_write.h - complete answers written to their socket in the turn
 * of the loop that made them.
 *
 * evhttp_send_reply only queues an answer: it enables the connection's
 * write event, the next epoll_wait reports the socket writable, the
 * bufferevent writes, and evhttp finishes the request and disables the
 * write event again. With the epoll changelist that is two epoll_ctl
 * calls and a second wake-up of the connection for every answer.
 * early_write_send_reply sends through evhttp_send_reply as before and
 * remembers the connection; once the loop has run this turn's callbacks,
 * one event writes every remembered connection's output and, when all of
 * it went out, hands the connection back to evhttp as its own write
 * callback would (bufferevent_trigger). The write event is then enabled
 * and disabled within one turn, which the changelist cancels: no
 * epoll_ctl, no writable wake-up. Whatever does not complete (a full
 * socket buffer, an error, a connection evhttp has let go) stays with
 * the bufferevent's own write event, as without this module.
 *
 * Owns struct early_write: the flush event and a fixed array of
 * remembered connections (at most the worker's connection limit; past it
 * an answer simply takes the usual path). Each remembered bufferevent
 * holds a reference (bufferevent_incref) until it is flushed, so a
 * connection evhttp frees in between stays valid memory. Created and
 * freed by the worker (daemon/worker.c), after evhttp_free.
 */
#ifndef ENSIGN_EARLY_WRITE_H
#define ENSIGN_EARLY_WRITE_H

#include <stddef.h>

struct event_base;
struct evhttp_request;
struct early_write;

/* NULL when out of memory. */
struct early_write *early_write_new(struct event_base *base, size_t max_connections);
/* Flushes what is still remembered, then frees. NULL is fine. */
void early_write_free(struct early_write *ew);

/* evhttp_send_reply(req, code, reason, NULL) of a complete answer, its
 * connection remembered for this turn's flush (ew NULL: not remembered). */
void early_write_send_reply(struct early_write *ew, struct evhttp_request *req, int code,
                            const char *reason);

/* Connections remembered and not flushed yet (tests). */
size_t early_write_pending(const struct early_write *ew);

#endif
