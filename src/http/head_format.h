/*
 * head_format.h - the lines of every answer's head, written without
 * printf.
 *
 * Owns the program's definitions of evbuffer_add_printf and
 * evutil_date_rfc1123, which take libevent's place for evhttp's own
 * calls (head_format.c says why and how), and the two line writers they
 * use, and the ready-made blocks of header lines an answer may carry in
 * place of one header (head_format_attach_block). No state but a
 * per-thread copy of the current second's Date text and the block
 * attached to the answer being sent.
 */
#ifndef ENSIGN_HEAD_FORMAT_H
#define ENSIGN_HEAD_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

struct evbuffer;
struct evkeyvalq;

/* The name of the one header that stands for an attached block. */
#define HEAD_FORMAT_BLOCK_HEADER "X-Ensign-Head-Block"

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

/*
 * Attaches lines (len bytes of complete "name: value\r\n" header lines,
 * written once when the content is loaded) to the answer whose output
 * headers are headers: evhttp writes them, in the place of one header,
 * when it writes that answer's head, for the cost of one header instead of
 * one per line. The answer must be sent (evhttp_send_reply) before the next
 * attach on this thread: evhttp writes the head inside that call, and the
 * block is consumed there. lines must outlive the call. -1 when evhttp
 * refused the header (out of memory).
 */
int head_format_attach_block(struct evkeyvalq *headers, const char *lines, size_t len);

#endif
