/*
 * head_format.h - the lines of every answer's head, written without
 * printf.
 *
 * Owns the program's definitions of evbuffer_add_printf and
 * evutil_date_rfc1123, which take libevent's place for evhttp's own
 * calls (head_format.c says why and how), and the two line writers they
 * use. No state but a per-thread copy of the current second's Date text.
 */
#ifndef ENSIGN_HEAD_FORMAT_H
#define ENSIGN_HEAD_FORMAT_H

#include <stdbool.h>

struct evbuffer;

/* Room for "Sun, 06 Nov 1994 08:49:37 GMT" and any year libevent prints. */
#define HEAD_FORMAT_DATE_MAX 64

/* Finds libevent's evutil_date_rfc1123, which the definition here calls
 * once a second; false when it cannot. Called by ensignd's main, which
 * also links this file into the program (nothing else references it). */
bool head_format_prepare(void);

/* "name: value\r\n" added to buf: the bytes added, or -1. */
int head_format_header_line(struct evbuffer *buf, const char *name, const char *value);

/* "HTTP/major.minor code reason\r\n" added to buf: the bytes added, or -1. */
int head_format_status_line(struct evbuffer *buf, int major, int minor, int code,
                            const char *reason);

#endif
