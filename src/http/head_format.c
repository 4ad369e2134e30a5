/*
 * head_format.c - the lines of every answer's head, written without
 * printf (see head_format.h).
 *
 * evhttp writes an answer's status line and each of its header lines
 * with evbuffer_add_printf ("HTTP/%d.%d %d %s\r\n", "%s: %s\r\n"), and
 * formats the Date header with evutil_date_rfc1123, an snprintf of the
 * current time, for every answer. On the single-evaluation load these
 * printfs were about 0.9 µs of the ~14 µs of server CPU per request.
 *
 * The definitions below take libevent's place (an executable's definition
 * of a function that a shared library calls through its PLT wins, as in
 * intake.c and header_index.c):
 *  - evbuffer_add_printf writes those two formats by hand into one
 *    reserved extent of the buffer; any other format (and a NULL string)
 *    goes to libevent's evbuffer_add_vprintf, unchanged. Same bytes, same
 *    return value (the bytes added, or -1).
 *  - evutil_date_rfc1123 without a time (evhttp's call: "now") keeps the
 *    text of the current second per thread and formats it again, through
 *    libevent's own definition, only when the second changes; with a time
 *    it is libevent's call as it is.
 *  - the header line of HEAD_FORMAT_BLOCK_HEADER is not written: in its
 *    place go the lines attached with head_format_attach_block (the
 *    dashboard's ETag, caching and security headers, written once per
 *    file at load). evhttp writes an answer's head inside
 *    evhttp_send_reply, so the block attached just before is the one of
 *    the answer being written; it is consumed there, and a block header
 *    with nothing attached writes nothing.
 * tests/unit/test_head_format.c checks both against libevent's output.
 * Both are listed in libevent_replacements.c and proven in effect at
 * start-up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "http/head_format.h"
#include "http/libevent_replacements.h"

#include <dlfcn.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/util.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATUS_LINE_FORMAT "HTTP/%d.%d %d %s\r\n"
#define HEADER_LINE_FORMAT "%s: %s\r\n"
#define INT_DIGITS 11 /* "-2147483648" */

/* Writes n's decimal digits at out; returns their count. */
static size_t put_int(char *out, int n)
{
    char digits[INT_DIGITS];
    size_t count = 0;
    unsigned long magnitude = n < 0 ? 0UL - (unsigned long)n : (unsigned long)n;
    do {
        digits[count++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude != 0);
    size_t len = 0;
    if (n < 0)
        out[len++] = '-';
    while (count > 0)
        out[len++] = digits[--count];
    return len;
}

static size_t put_text(char *out, const char *text, size_t len)
{
    memcpy(out, text, len);
    return len;
}

/* The bytes at extent, len of them, committed to buf: the bytes added or -1. */
static int commit(struct evbuffer *buf, struct evbuffer_iovec *extent, size_t len)
{
    extent->iov_len = len;
    return evbuffer_commit_space(buf, extent, 1) == 0 ? (int)len : -1;
}

static int reserve(struct evbuffer *buf, size_t most, struct evbuffer_iovec *extent)
{
    return evbuffer_reserve_space(buf, (ev_ssize_t)most, extent, 1) == 1 ? 0 : -1;
}

int head_format_header_line(struct evbuffer *buf, const char *name, const char *value)
{
    size_t name_len = strlen(name), value_len = strlen(value);
    size_t most = name_len + value_len + 4;
    struct evbuffer_iovec extent;
    if (most > (size_t)EV_SSIZE_MAX || reserve(buf, most, &extent) != 0)
        return -1;
    char *out = extent.iov_base;
    size_t len = put_text(out, name, name_len);
    len += put_text(out + len, ": ", 2);
    len += put_text(out + len, value, value_len);
    len += put_text(out + len, "\r\n", 2);
    return commit(buf, &extent, len);
}

int head_format_status_line(struct evbuffer *buf, int major, int minor, int code,
                            const char *reason)
{
    size_t reason_len = strlen(reason);
    size_t most = sizeof "HTTP/. \r\n" + 3 * INT_DIGITS + reason_len;
    struct evbuffer_iovec extent;
    if (most > (size_t)EV_SSIZE_MAX || reserve(buf, most, &extent) != 0)
        return -1;
    char *out = extent.iov_base;
    size_t len = put_text(out, "HTTP/", 5);
    len += put_int(out + len, major);
    out[len++] = '.';
    len += put_int(out + len, minor);
    out[len++] = ' ';
    len += put_int(out + len, code);
    out[len++] = ' ';
    len += put_text(out + len, reason, reason_len);
    len += put_text(out + len, "\r\n", 2);
    return commit(buf, &extent, len);
}

/* ---- the attached block ---- */

struct attached_block {
    const char *lines; /* NULL when none is attached */
    size_t len;
};

static _Thread_local struct attached_block attached;

int head_format_attach_block(struct evkeyvalq *headers, const char *lines, size_t len)
{
    attached = (struct attached_block){lines, len};
    return evhttp_add_header(headers, HEAD_FORMAT_BLOCK_HEADER, "");
}

/* The attached lines added to buf in place of the block's header line:
 * the bytes added, or -1. */
static int write_attached_block(struct evbuffer *buf)
{
    struct attached_block block = attached;
    attached = (struct attached_block){NULL, 0};
    if (block.lines == NULL || block.len == 0)
        return 0;
    return evbuffer_add(buf, block.lines, block.len) == 0 ? (int)block.len : -1;
}

static bool is_block_header(const char *name)
{
    return name[0] == 'X' && strcmp(name, HEAD_FORMAT_BLOCK_HEADER) == 0;
}

/* ---- the interposed definitions ---- */

int evbuffer_add_printf(struct evbuffer *buf, const char *fmt, ...)
{
    libevent_replacement_reached(REPLACEMENT_EVBUFFER_ADD_PRINTF);
    va_list ap, untouched;
    va_start(ap, fmt);
    va_copy(untouched, ap);
    int added = -2; /* not a format written by hand */
    if (strcmp(fmt, HEADER_LINE_FORMAT) == 0) {
        const char *name = va_arg(ap, const char *);
        const char *value = va_arg(ap, const char *);
        if (name != NULL && value != NULL)
            added = is_block_header(name) ? write_attached_block(buf)
                                          : head_format_header_line(buf, name, value);
    } else if (strcmp(fmt, STATUS_LINE_FORMAT) == 0) {
        int major = va_arg(ap, int), minor = va_arg(ap, int), code = va_arg(ap, int);
        const char *reason = va_arg(ap, const char *);
        if (reason != NULL)
            added = head_format_status_line(buf, major, minor, code, reason);
    }
    if (added == -2)
        added = evbuffer_add_vprintf(buf, fmt, untouched);
    va_end(untouched);
    va_end(ap);
    return added;
}

typedef int (*date_fn)(char *, size_t, const struct tm *);

static date_fn libevent_date;

bool head_format_prepare(void)
{
    if (libevent_date == NULL)
        libevent_date = (date_fn)dlsym(RTLD_NEXT, "evutil_date_rfc1123");
    return libevent_date != NULL;
}

struct date_cache {
    time_t second;
    bool valid;
    int len;
    char text[HEAD_FORMAT_DATE_MAX];
};

static _Thread_local struct date_cache date_cache;

int evutil_date_rfc1123(char *date, const size_t datelen, const struct tm *tm)
{
    if (!head_format_prepare())
        abort(); /* a libevent without it: cannot happen (evhttp calls it) */
    libevent_replacement_reached(REPLACEMENT_EVUTIL_DATE_RFC1123);
    date_fn original = libevent_date;
    if (tm != NULL)
        return original(date, datelen, tm);
    time_t now = time(NULL);
    struct date_cache *c = &date_cache;
    if (!c->valid || c->second != now) {
        struct tm broken;
        if (gmtime_r(&now, &broken) == NULL)
            return original(date, datelen, NULL);
        c->len = original(c->text, sizeof c->text, &broken);
        c->valid = c->len > 0 && (size_t)c->len < sizeof c->text;
        c->second = now;
        if (!c->valid)
            return original(date, datelen, &broken);
    }
    if (datelen > 0) {
        size_t copied = (size_t)c->len < datelen ? (size_t)c->len : datelen - 1;
        memcpy(date, c->text, copied);
        date[copied] = '\0';
    }
    return c->len;
}
