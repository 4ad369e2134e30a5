/*
 * answer.c - answer blocks and their pool (see answer.h).
 *
 * Why a pool: an answer body of a few KB copied into an evbuffer costs a
 * malloc of a chain of that size, and glibc serves a request of that size
 * by first consolidating the fast bins that the many small allocations of
 * evhttp's headers leave behind: together with the copy about a tenth of
 * a bulk evaluation's user time. A block from the free list costs neither.
 *
 * The pool holds as many blocks as answers were in flight at once (their
 * bytes still queued on a connection), but keeps at most
 * ANSWER_POOL_MAX_IDLE idle ones: a burst of slow readers does not leave
 * the worker holding their memory.
 */
#include "http/answer.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdlib.h>

#include "http/server.h"

#define ANSWER_POOL_MAX_IDLE 64

struct answer_pool {
    struct answer_block *free_list;
    size_t idle;        /* blocks on the free list */
    size_t outstanding; /* blocks not on the free list */
    bool closed;        /* the worker let go: returning blocks are freed */
};

struct answer_block {
    struct answer_pool *pool; /* NULL: not pooled (grown, or no server) */
    struct answer_block *next_free;
    size_t cap;
    char data[];
};

static struct answer_pool *pool_of(struct http_server *server)
{
    if (server == NULL)
        return NULL;
    if (server->answers == NULL)
        server->answers = calloc(1, sizeof *server->answers);
    return server->answers;
}

static struct answer_block *block_new(struct answer_pool *pool, size_t cap)
{
    struct answer_block *b = malloc(sizeof *b + cap);
    if (b == NULL)
        return NULL;
    b->pool = pool;
    b->next_free = NULL;
    b->cap = cap;
    if (pool != NULL)
        pool->outstanding++;
    return b;
}

static struct answer_block *block_take(struct answer_pool *pool)
{
    if (pool == NULL || pool->free_list == NULL)
        return block_new(pool, HTTP_ANSWER_BLOCK_SIZE);
    struct answer_block *b = pool->free_list;
    pool->free_list = b->next_free;
    pool->idle--;
    pool->outstanding++;
    return b;
}

static void block_return(struct answer_block *b)
{
    struct answer_pool *pool = b->pool;
    if (pool == NULL) {
        free(b);
        return;
    }
    pool->outstanding--;
    if (pool->closed || pool->idle >= ANSWER_POOL_MAX_IDLE) {
        free(b);
        if (pool->closed && pool->outstanding == 0)
            free(pool);
        return;
    }
    b->next_free = pool->free_list;
    pool->free_list = b;
    pool->idle++;
}

void http_answer_open(struct http_server *server, struct http_answer *a)
{
    a->block = block_take(pool_of(server));
    a->len = 0;
    a->failed = a->block == NULL;
    a->data = a->block != NULL ? a->block->data : NULL;
    a->cap = a->block != NULL ? a->block->cap : 0;
}

bool http_answer_grow(struct http_answer *a, size_t more)
{
    if (a->failed)
        return false;
    size_t cap = a->cap * 2;
    while (cap < a->len + more)
        cap *= 2;
    struct answer_block *bigger = block_new(NULL, cap);
    if (bigger == NULL) {
        a->failed = true;
        return false;
    }
    memcpy(bigger->data, a->data, a->len);
    block_return(a->block);
    a->block = bigger;
    a->data = bigger->data;
    a->cap = cap;
    return true;
}

static void block_released(const void *data, size_t len, void *extra)
{
    (void)data;
    (void)len;
    block_return(extra);
}

/* A pooled block lent to libevent holds 16 KB for what may be a 100-byte
 * answer until the client reads it: beyond this many at once (clients
 * that stop reading) answers are copied instead, so a worker's pooled
 * memory stays under 4 MB whatever its clients do. */
#define ANSWER_POOL_MAX_LENT 256

static bool may_lend(const struct answer_block *b)
{
    return b->pool == NULL || b->pool->outstanding <= ANSWER_POOL_MAX_LENT;
}

bool http_answer_attach(struct http_answer *a, struct evbuffer *out)
{
    if (a->block == NULL)
        return false;
    bool added = true;
    if (!may_lend(a->block) ||
        evbuffer_add_reference(out, a->data, a->len, block_released, a->block) != 0) {
        added = evbuffer_add(out, a->data, a->len) == 0;
        block_return(a->block);
    }
    a->block = NULL;
    a->data = NULL;
    a->len = a->cap = 0;
    return added;
}

void http_answer_close(struct http_answer *a)
{
    if (a->block != NULL)
        block_return(a->block);
    a->block = NULL;
    a->data = NULL;
    a->len = a->cap = 0;
}

void http_answer_pool_free(struct answer_pool *pool)
{
    if (pool == NULL)
        return;
    while (pool->free_list != NULL) {
        struct answer_block *b = pool->free_list;
        pool->free_list = b->next_free;
        free(b);
    }
    pool->idle = 0;
    if (pool->outstanding == 0)
        free(pool);
    else
        pool->closed = true;
}

/* ---- JSON strings ---- */

#define BYTES(b) (UINT64_C(0x0101010101010101) * (b))
/* Any byte of x below n (n <= 0x80), or equal to zero: the classic word
 * tests, exact as a yes/no for the whole word. */
#define ANY_BELOW(x, n) (((x)-BYTES(n)) & ~(x)&BYTES(0x80))
#define ANY_ZERO(x) ANY_BELOW(x, 1)

/* How many bytes of s stand in a JSON string as they are (no control
 * character, quote or backslash): 8 at a time, then byte by byte. */
static size_t plain_run(const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, sizeof x);
        if (ANY_BELOW(x, 0x20) | ANY_ZERO(x ^ BYTES('"')) | ANY_ZERO(x ^ BYTES('\\')))
            break;
    }
    while (i < n && (unsigned char)s[i] >= 0x20 && s[i] != '"' && s[i] != '\\')
        i++;
    return i;
}

void http_answer_plain(struct http_answer *a, const char *s, size_t n)
{
    if (!http_answer_room(a, n + 2))
        return;
    char *out = a->data + a->len;
    out[0] = '"';
    memcpy(out + 1, s, n);
    out[n + 1] = '"';
    a->len += n + 2;
}

void http_answer_string(struct http_answer *a, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t plain = plain_run(s, n);
    if (plain == n) {
        http_answer_plain(a, s, n);
        return;
    }
    http_answer_put(a, "\"", 1);
    http_answer_put(a, s, plain);
    for (size_t i = plain; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        http_answer_put(a, s + plain, i - plain);
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        if (c == '"' || c == '\\')
            http_answer_put(a, (char[2]){'\\', (char)c}, 2);
        else
            http_answer_put(a, esc, sizeof esc);
        plain = i + 1;
    }
    http_answer_put(a, s + plain, n - plain);
    http_answer_put(a, "\"", 1);
}
