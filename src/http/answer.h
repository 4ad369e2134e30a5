/*
 * answer.h - answer bodies written in place and handed to libevent
 * without a copy.
 *
 * Owns struct http_answer (a body being written) and the worker's pool of
 * answer blocks. The hot path (the OFREP answers) writes its JSON straight
 * into a block taken from the pool and http_send_answer (http.h) hands the
 * block to the connection's output by reference: no malloc and no copy of
 * the body per request. When libevent has written the bytes to the socket
 * (or dropped them with the connection) the block returns to the pool. A
 * body that outgrows its block moves to a larger block of its own, which
 * is freed, not pooled, when it returns.
 *
 * Invariants: a block is either on the pool's free list, held by exactly
 * one open http_answer, or referenced by exactly one evbuffer; the pool
 * outlives its blocks (http_answer_pool_free after evhttp_free; a block
 * that returns later still finds its pool, which goes with its last
 * block). The pool is created by the first answer of a worker and freed
 * by the worker (daemon/worker.c).
 */
#ifndef ENSIGN_HTTP_ANSWER_H
#define ENSIGN_HTTP_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct evbuffer;
struct http_server;
struct answer_pool;
struct answer_block;

/* A pooled block's room: a 20-flag bulk answer (about 3 KB) fits many
 * times over, a 200-flag one (about 30 KB) moves once. */
#define HTTP_ANSWER_BLOCK_SIZE 16384

struct http_answer {
    char *data; /* the body so far (not NUL-terminated) */
    size_t len, cap;
    bool failed; /* out of memory: the body is incomplete */
    struct answer_block *block;
};

/* Starts an empty body in a block of server's pool (server may be NULL:
 * a block of its own). Never fails: a failure shows as a->failed. */
void http_answer_open(struct http_server *server, struct http_answer *a);

/* Makes room for more bytes; false (and a->failed) when it cannot. */
bool http_answer_grow(struct http_answer *a, size_t more);

static inline bool http_answer_room(struct http_answer *a, size_t more)
{
    return a->len + more <= a->cap || http_answer_grow(a, more);
}

static inline void http_answer_put(struct http_answer *a, const char *s, size_t n)
{
    if (!http_answer_room(a, n))
        return;
    memcpy(a->data + a->len, s, n);
    a->len += n;
}

/* A string literal or other NUL-terminated text, as it is. */
static inline void http_answer_lit(struct http_answer *a, const char *s)
{
    http_answer_put(a, s, strlen(s));
}

/* Appends s (n bytes) as a JSON string: quoted, with quote, backslash and
 * control characters escaped (\u00XX, as the answers have always been
 * written). Keys, variant keys and rule ids need no escape: their run is
 * found 8 bytes at a time and copied once. */
void http_answer_string(struct http_answer *a, const char *s, size_t n);

/* Appends s quoted, unescaped: only for text known to need no escape
 * (constant words such as an evaluation reason). */
void http_answer_plain(struct http_answer *a, const char *s, size_t n);

/* Hands the body to out by reference (the block returns to its pool once
 * libevent is done with it); copies it instead if libevent refuses the
 * reference or 256 pooled blocks are already lent out (slow readers).
 * Closes a. Returns false if nothing could be added. */
bool http_answer_attach(struct http_answer *a, struct evbuffer *out);

/* Gives the block back without sending. */
void http_answer_close(struct http_answer *a);

/* Frees the pool's idle blocks; blocks still referenced free themselves
 * (and the pool after the last) when libevent lets go of them. */
void http_answer_pool_free(struct answer_pool *pool);

#endif
