/*
 * access_log.c - a worker's access lines, formatted without printf and
 * written through a buffer (access_log.h).
 *
 * A line is four copied pieces and three numbers: the timestamp text up to
 * the seconds (remade when the second changes, as head_format.c does for
 * Date), the milliseconds, the fixed part from "Z level=info" to
 * "method=" (made once: the role and pid of a worker do not change), the
 * method and path, and the status, duration and byte count as digits.
 * A path that needs quoting goes through log_value like every logfmt value.
 * Write errors (a full disk) drop the buffered lines and say so on stderr
 * at most once a minute; the worker keeps serving.
 */
#include "http/access_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

#define PATH_VALUE_MAX 512 /* as the log_event line had: at most 511 bytes of path */
#define METHOD_MAX 16
#define WRITE_ERROR_EVERY_S 60

struct access_log {
    int fd; /* the file, or -1: stderr, one write per line */
    size_t used;
    time_t ts_second; /* the second ts_text shows; -1 before the first line */
    char ts_text[48]; /* [<6>]ts=2026-01-02T03:04:05. */
    size_t ts_len;
    char fixed[128]; /* Z level=info role="worker 0" pid=43 event=access method= */
    size_t fixed_len;
    const char *journal; /* "<6>" when stderr is the journal, else "" (stderr only) */
    time_t error_reported_s;
    char *buffer; /* ACCESS_LOG_BUFFER bytes, file only */
};

int access_log_open_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
    if (fd < 0)
        snprintf(err, errlen, "access_log_path %s: %s", path, strerror(errno));
    return fd;
}

static void make_fixed(struct access_log *log)
{
    char role[48];
    int n =
        snprintf(log->fixed, sizeof log->fixed, "Z level=info role=%s pid=%ld event=access method=",
                 log_value(role, sizeof role, log_role()), (long)getpid());
    log->fixed_len = n < 0 ? 0 : (size_t)n < sizeof log->fixed ? (size_t)n : sizeof log->fixed - 1;
}

struct access_log *access_log_new(int fd)
{
    struct access_log *log = calloc(1, sizeof *log);
    if (log != NULL && fd >= 0 && (log->buffer = malloc(ACCESS_LOG_BUFFER)) == NULL) {
        free(log);
        log = NULL;
    }
    if (log == NULL) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    log->fd = fd;
    log->ts_second = -1;
    log->journal = fd < 0 ? log_priority_prefix(LOG_LEVEL_INFO) : "";
    make_fixed(log);
    return log;
}

int access_log_buffered(const struct access_log *log)
{
    return log != NULL && log->fd >= 0;
}

/* ---- formatting ---- */

static char *put_digits(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

static char *put(char *p, const char *text, size_t len)
{
    memcpy(p, text, len);
    return p + len;
}

static void remake_timestamp(struct access_log *log, time_t second)
{
    struct tm tm;
    gmtime_r(&second, &tm);
    size_t j = strlen(log->journal);
    memcpy(log->ts_text, log->journal, j);
    size_t n = strftime(log->ts_text + j, sizeof log->ts_text - j, "ts=%Y-%m-%dT%H:%M:%S.", &tm);
    log->ts_len = j + n;
    log->ts_second = second;
}

/* True when text can stand as a bare logfmt value (log.c's rule). */
static bool plain_value(const char *text, size_t *len)
{
    const unsigned char *p = (const unsigned char *)text;
    for (; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p >= 0x7f)
            return false;
    *len = (size_t)(p - (const unsigned char *)text);
    return *len > 0;
}

static char *put_path(char *p, const char *path)
{
    size_t len;
    if (plain_value(path, &len))
        return put(p, path, len < PATH_VALUE_MAX ? len : PATH_VALUE_MAX - 1);
    char quoted[PATH_VALUE_MAX];
    log_value(quoted, sizeof quoted, path);
    return put(p, quoted, strlen(quoted));
}

size_t access_log_format(struct access_log *log, char *out, const struct timespec *now,
                         const char *method, const char *path, int status, uint64_t duration_us,
                         size_t bytes)
{
    if (now->tv_sec != log->ts_second)
        remake_timestamp(log, now->tv_sec);
    char *p = put(out, log->ts_text, log->ts_len);
    unsigned ms = (unsigned)(now->tv_nsec / 1000000L);
    *p++ = (char)('0' + ms / 100);
    *p++ = (char)('0' + ms / 10 % 10);
    *p++ = (char)('0' + ms % 10);
    p = put(p, log->fixed, log->fixed_len);
    p = put(p, method, strnlen(method, METHOD_MAX));
    p = put(p, " path=", 6);
    p = put_path(p, path);
    p = put(p, " status=", 8);
    p = put_digits(p, status < 0 ? 0 : (uint64_t)status);
    p = put(p, " duration_ms=", 13);
    p = put_digits(p, duration_us / 1000);
    unsigned frac = (unsigned)(duration_us % 1000);
    *p++ = '.';
    *p++ = (char)('0' + frac / 100);
    *p++ = (char)('0' + frac / 10 % 10);
    *p++ = (char)('0' + frac % 10);
    p = put(p, " bytes=", 7);
    p = put_digits(p, bytes);
    *p++ = '\n';
    return (size_t)(p - out);
}

/* ---- writing ---- */

static void report_write_error(struct access_log *log, size_t lost, int err)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (log->error_reported_s != 0 && now.tv_sec - log->error_reported_s < WRITE_ERROR_EVERY_S)
        return;
    log->error_reported_s = now.tv_sec;
    log_error("access log: cannot write, %zu bytes of lines dropped: %s", lost, strerror(err));
}

static void write_all(struct access_log *log, int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            report_write_error(log, len, n < 0 ? errno : ENOSPC);
            return;
        }
        data += n;
        len -= (size_t)n;
    }
}

void access_log_flush(struct access_log *log)
{
    if (log == NULL || log->fd < 0 || log->used == 0)
        return;
    write_all(log, log->fd, log->buffer, log->used);
    log->used = 0;
}

void access_log_request(struct access_log *log, const char *method, const char *path, int status,
                        uint64_t duration_us, size_t bytes)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (log->fd < 0) {
        char line[ACCESS_LOG_LINE_MAX];
        size_t n = access_log_format(log, line, &now, method, path, status, duration_us, bytes);
        write_all(log, STDERR_FILENO, line, n);
        return;
    }
    if (log->used + ACCESS_LOG_LINE_MAX > ACCESS_LOG_BUFFER)
        access_log_flush(log);
    log->used += access_log_format(log, log->buffer + log->used, &now, method, path, status,
                                   duration_us, bytes);
}

void access_log_free(struct access_log *log)
{
    if (log == NULL)
        return;
    access_log_flush(log);
    if (log->fd >= 0)
        close(log->fd);
    free(log->buffer);
    free(log);
}
