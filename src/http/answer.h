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
 * body that outgrows its block goes on in another block of the pool (the
 * filled ones wait in order and are handed over one after the other): a
 * bulk answer of megabytes is never copied to grow and never written into
 * memory the kernel has to fault in, so its cost per flag is the cost of
 * a small one (doc/choices.md, "A bulk answer in blocks"). Only a single
 * piece larger than a block gets a block of its own, freed when it
 * returns.
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
 * times over, a 200-flag one (about 30 KB) takes two. */
#define HTTP_ANSWER_BLOCK_SIZE 16384

struct http_answer {
    char *data;                  /* the current block's bytes (not NUL-terminated) */
    size_t len, cap;             /* of the current block */
    bool failed;                 /* out of memory: the body is incomplete */
    struct answer_block *block;  /* the current block */
    struct answer_block *filled; /* the blocks before it, first to last */
    struct answer_block *filled_last;
    size_t filled_len; /* their bytes */
    struct answer_pool *pool;
};

/* Starts an empty body in a block of server's pool (server may be NULL:
 * a block of its own). Never fails: a failure shows as a->failed. */
void http_answer_open(struct http_server *server, struct http_answer *a);

/* Makes room for more contiguous bytes in a new current block (the full
 * one joins the filled ones); false (and a->failed) when it cannot. */
bool http_answer_grow(struct http_answer *a, size_t more);

/* The body's length so far, over all its blocks. */
static inline size_t http_answer_length(const struct http_answer *a)
{
    return a->filled_len + a->len;
}

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

/* Hands the body to out by reference, block after block (each returns to
 * its pool once libevent is done with it); copies a block instead if
 * libevent refuses the reference, or when 256 pooled blocks are already
 * lent out (slow readers) and it is less than half full; a fuller one is
 * then lent as a block of its own (freed, not pooled, when it returns).
 * Closes a. Returns false if the body could not be added whole (out, if
 * it held nothing before, is then left empty again). */
bool http_answer_attach(struct http_answer *a, struct evbuffer *out);

/* The whole body as one NUL-terminated string (malloc'd, the caller frees
 * it; NULL when out of memory), *len its length; closes a. For the rare
 * caller that needs it in one piece (an internal request's capture). */
char *http_answer_join(struct http_answer *a, size_t *len);

/* Gives the block back without sending. */
void http_answer_close(struct http_answer *a);

/* Frees the pool's idle blocks; blocks still referenced free themselves
 * (and the pool after the last) when libevent lets go of them. */
void http_answer_pool_free(struct answer_pool *pool);

#endif
