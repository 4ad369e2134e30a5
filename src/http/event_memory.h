/*
 * event_memory.h - libevent's memory: per-thread free lists of small
 * blocks in front of malloc.
 *
 * evhttp allocates a few dozen small blocks for every request and frees
 * them when it ends (the request, each header's pair and its two
 * strings, the URI, buffer chains). event_memory_install hands libevent
 * these functions (event_set_mem_functions), so a worker in steady state
 * takes those blocks from its own free lists instead of from malloc.
 *
 * Owner: a block belongs to libevent from event_memory_malloc until
 * event_memory_free; a freed block belongs to the calling thread's free
 * list of its size class, which keeps at most EVENT_MEMORY_MAX_IDLE_BYTES
 * per class (the rest goes back to free()). Blocks larger than the
 * largest class go straight to malloc and free.
 *
 * Call event_memory_install first in main, before any libevent call:
 * every block libevent frees must have come from these functions. Memory
 * that libevent hands to its caller to free (evhttp_uriencode,
 * evhttp_uridecode, evhttp_encode_uri, evhttp_decode_uri,
 * evhttp_htmlescape, evbuffer_readln) is then given back with
 * event_memory_release, never with free().
 */
#ifndef ENSIGN_EVENT_MEMORY_H
#define ENSIGN_EVENT_MEMORY_H

#include <stddef.h>

#define EVENT_MEMORY_SMALLEST 32                 /* bytes a block of the first class holds */
#define EVENT_MEMORY_LARGEST 8192                /* blocks up to this size are kept */
#define EVENT_MEMORY_MAX_IDLE_BYTES (256 * 1024) /* per class and thread */

void event_memory_install(void);

/* Gives back a block libevent handed to the program (see above): to the
 * free lists once installed, to free() before (unit tests, tools). */
void event_memory_release(void *block);

void *event_memory_malloc(size_t size);
void *event_memory_realloc(void *block, size_t size);
void event_memory_free(void *block);

/* The bytes a block can hold (at least what was asked), for tests. */
size_t event_memory_capacity(const void *block);
/* Idle blocks of the calling thread's class that holds size bytes. */
size_t event_memory_idle(size_t size);

#endif
