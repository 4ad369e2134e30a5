/*
 * event_memory.c - libevent's memory: per-thread free lists of small
 * blocks in front of malloc (see event_memory.h).
 *
 * Every block carries a 16-byte head before the bytes libevent sees (so
 * those keep malloc's 16-byte alignment): its capacity and, while idle,
 * the next idle block of its class. Classes are powers of two from
 * EVENT_MEMORY_SMALLEST to EVENT_MEMORY_LARGEST: evbuffer already asks
 * for powers of two for its chains, and evhttp's strings and pairs are
 * small, so rounding up costs little. A block larger than the largest
 * class has its exact size as capacity and is never kept.
 *
 * Why: glibc's per-thread cache holds 7 blocks per size; a request's
 * header pairs and strings overflow it, and the rest goes through
 * _int_malloc, _int_free and malloc_consolidate. Measured on the
 * single-evaluation load (wrk, 64 connections): about 1 µs of the ~15 µs
 * of server CPU per request (see ChangeLog).
 *
 * Under AddressSanitizer an idle block's bytes are poisoned, so a use
 * after libevent freed it is still reported (until the block is reused).
 */
#include "http/event_memory.h"

#include <event2/event.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

struct head {
    size_t capacity;
    struct head *next_idle;
};
_Static_assert(sizeof(struct head) == 16, "the head keeps malloc's 16-byte alignment");

#define SMALLEST_SHIFT 5 /* log2(EVENT_MEMORY_SMALLEST) */
#define CLASSES 9        /* 32 .. 8192 */
_Static_assert(EVENT_MEMORY_SMALLEST == 1 << SMALLEST_SHIFT, "smallest class");
_Static_assert(EVENT_MEMORY_LARGEST == EVENT_MEMORY_SMALLEST << (CLASSES - 1), "largest class");

struct idle_list {
    struct head *first;
    size_t count;
};

static _Thread_local struct idle_list idle[CLASSES];
static bool installed;

/* The class whose blocks hold size bytes; CLASSES when none does. */
static unsigned class_of(size_t size)
{
    if (size <= EVENT_MEMORY_SMALLEST)
        return 0;
    if (size > EVENT_MEMORY_LARGEST)
        return CLASSES;
    return (unsigned)(64 - __builtin_clzll((unsigned long long)(size - 1))) - SMALLEST_SHIFT;
}

static size_t class_capacity(unsigned cls)
{
    return (size_t)EVENT_MEMORY_SMALLEST << cls;
}

static size_t class_max_idle(unsigned cls)
{
    return EVENT_MEMORY_MAX_IDLE_BYTES / class_capacity(cls);
}

static struct head *head_of(const void *block)
{
    return (struct head *)((uintptr_t)block - sizeof(struct head));
}

static void *fresh_block(size_t capacity)
{
    if (capacity > SIZE_MAX - sizeof(struct head))
        return NULL;
    struct head *h = malloc(sizeof *h + capacity);
    if (h == NULL)
        return NULL;
    h->capacity = capacity;
    h->next_idle = NULL;
    return h + 1;
}

void *event_memory_malloc(size_t size)
{
    unsigned cls = class_of(size);
    if (cls == CLASSES)
        return fresh_block(size);
    struct idle_list *list = &idle[cls];
    struct head *h = list->first;
    if (h == NULL)
        return fresh_block(class_capacity(cls));
    list->first = h->next_idle;
    list->count--;
    h->next_idle = NULL;
    UNPOISON(h + 1, h->capacity);
    return h + 1;
}

void event_memory_free(void *block)
{
    if (block == NULL)
        return;
    struct head *h = head_of(block);
    unsigned cls = class_of(h->capacity);
    if (cls == CLASSES || idle[cls].count >= class_max_idle(cls)) {
        free(h);
        return;
    }
    POISON(block, h->capacity);
    h->next_idle = idle[cls].first;
    idle[cls].first = h;
    idle[cls].count++;
}

void *event_memory_realloc(void *block, size_t size)
{
    if (block == NULL)
        return event_memory_malloc(size);
    if (size == 0) {
        event_memory_free(block);
        return NULL;
    }
    size_t capacity = head_of(block)->capacity;
    if (size <= capacity)
        return block;
    void *bigger = event_memory_malloc(size);
    if (bigger == NULL)
        return NULL;
    memcpy(bigger, block, capacity);
    event_memory_free(block);
    return bigger;
}

size_t event_memory_capacity(const void *block)
{
    return head_of(block)->capacity;
}

size_t event_memory_idle(size_t size)
{
    unsigned cls = class_of(size);
    return cls == CLASSES ? 0 : idle[cls].count;
}

void event_memory_install(void)
{
    event_set_mem_functions(event_memory_malloc, event_memory_realloc, event_memory_free);
    installed = true;
}

void event_memory_release(void *block)
{
    if (installed)
        event_memory_free(block);
    else
        free(block);
}
