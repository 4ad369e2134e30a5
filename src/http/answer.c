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
    struct answer_pool *pool;  /* NULL: not pooled (oversized, lent beyond the bound, no server) */
    struct answer_block *next; /* on the free list, or among an answer's filled blocks */
    size_t cap;
    size_t used; /* bytes written, once filled */
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
    b->next = NULL;
    b->cap = cap;
    b->used = 0;
    if (pool != NULL)
        pool->outstanding++;
    return b;
}

static struct answer_block *block_take(struct answer_pool *pool)
{
    if (pool == NULL || pool->free_list == NULL)
        return block_new(pool, HTTP_ANSWER_BLOCK_SIZE);
    struct answer_block *b = pool->free_list;
    pool->free_list = b->next;
    b->next = NULL;
    b->used = 0;
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
    b->next = pool->free_list;
    pool->free_list = b;
    pool->idle++;
}

/* Leaves a as a closed answer holds nothing. */
static void answer_reset(struct http_answer *a)
{
    a->block = a->filled = a->filled_last = NULL;
    a->data = NULL;
    a->len = a->cap = a->filled_len = 0;
}

void http_answer_open(struct http_server *server, struct http_answer *a)
{
    answer_reset(a);
    a->pool = pool_of(server);
    a->block = block_take(a->pool);
    a->failed = a->block == NULL;
    a->data = a->block != NULL ? a->block->data : NULL;
    a->cap = a->block != NULL ? a->block->cap : 0;
}

/* Moves the current block, a->len bytes of it, to the end of the filled
 * ones (an empty one goes back instead). */
static void file_current(struct http_answer *a)
{
    struct answer_block *b = a->block;
    a->block = NULL;
    if (b == NULL)
        return;
    if (a->len == 0) {
        block_return(b);
        return;
    }
    b->used = a->len;
    b->next = NULL;
    if (a->filled_last != NULL)
        a->filled_last->next = b;
    else
        a->filled = b;
    a->filled_last = b;
    a->filled_len += a->len;
    a->len = 0;
}

bool http_answer_grow(struct http_answer *a, size_t more)
{
    if (a->failed)
        return false;
    struct answer_block *next =
        more <= HTTP_ANSWER_BLOCK_SIZE ? block_take(a->pool) : block_new(NULL, more);
    if (next == NULL) {
        a->failed = true;
        return false;
    }
    file_current(a);
    a->block = next;
    a->data = next->data;
    a->cap = next->cap;
    a->len = 0;
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
 * that stop reading) a block less than half full is copied instead, and a
 * fuller one leaves the pool (it is freed when it returns), so a worker's
 * pooled memory stays under 4 MB whatever its clients do. */
#define ANSWER_POOL_MAX_LENT 256

/* Adds b's bytes to out, by reference or copied; b is out's or back home
 * either way. */
static bool hand_over(struct answer_block *b, struct evbuffer *out)
{
    struct answer_pool *pool = b->pool;
    if (pool != NULL && pool->outstanding > ANSWER_POOL_MAX_LENT && b->used >= b->cap / 2) {
        pool->outstanding--; /* a block of its own from now on */
        b->pool = NULL;
    }
    if (b->pool == NULL || b->pool->outstanding <= ANSWER_POOL_MAX_LENT) {
        if (evbuffer_add_reference(out, b->data, b->used, block_released, b) == 0)
            return true;
    }
    bool added = evbuffer_add(out, b->data, b->used) == 0;
    block_return(b);
    return added;
}

/* Returns every block of a (filled and current) to its pool. */
static void return_all(struct http_answer *a)
{
    file_current(a);
    while (a->filled != NULL) {
        struct answer_block *b = a->filled;
        a->filled = b->next;
        block_return(b);
    }
    answer_reset(a);
}

bool http_answer_attach(struct http_answer *a, struct evbuffer *out)
{
    if (a->block == NULL) {
        return_all(a);
        return false;
    }
    file_current(a);
    size_t before = evbuffer_get_length(out);
    bool added = true;
    while (a->filled != NULL) {
        struct answer_block *b = a->filled;
        a->filled = b->next;
        b->next = NULL;
        if (!added)
            block_return(b);
        else
            added = hand_over(b, out);
    }
    if (!added && before == 0) /* a part of the body is no body */
        evbuffer_drain(out, evbuffer_get_length(out));
    answer_reset(a);
    return added;
}

char *http_answer_join(struct http_answer *a, size_t *len)
{
    *len = 0;
    char *text = a->failed ? NULL : malloc(http_answer_length(a) + 1);
    if (text != NULL) {
        file_current(a);
        for (const struct answer_block *b = a->filled; b != NULL; b = b->next) {
            memcpy(text + *len, b->data, b->used);
            *len += b->used;
        }
        text[*len] = '\0';
    }
    return_all(a);
    return text;
}

void http_answer_close(struct http_answer *a)
{
    return_all(a);
}

void http_answer_pool_free(struct answer_pool *pool)
{
    if (pool == NULL)
        return;
    while (pool->free_list != NULL) {
        struct answer_block *b = pool->free_list;
        pool->free_list = b->next;
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
