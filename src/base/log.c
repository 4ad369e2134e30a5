/*
 * log.c - one line per event on stderr: "TIME LEVEL [role pid] message".
 *
 * Owns the process-wide level and role tag. Each line is formatted into a
 * local buffer and written with one write(2), so lines from the master and
 * its children never interleave mid-line on the shared stderr. One event is
 * one line: trailing white space is dropped and line breaks inside a
 * message (libpq's "ERROR: ...\nDETAIL: ..." errors, text a client sent)
 * become spaces, other control characters '?'.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static enum log_level current_level = LOG_LEVEL_INFO;
static char current_role[32] = "ensignd";

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    current_level = level;
}

void log_set_role(const char *role)
{
    snprintf(current_role, sizeof current_role, "%s", role);
}

int log_level_parse(const char *name, enum log_level *out)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

static size_t format_prefix(char *buf, size_t size, enum log_level level)
{
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    int more = snprintf(buf + n, size - n, ".%03ldZ %s [%s %ld] ", now.tv_nsec / 1000000L,
                        level_names[level], current_role, (long)getpid());
    return more > 0 ? n + (size_t)more : n;
}

/* Makes len bytes of text one line (see the header comment); returns the
 * new length. */
static size_t one_line(char *text, size_t len)
{
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ' ||
                       text[len - 1] == '\t'))
        len--;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n' || c == '\r')
            text[i] = ' ';
        else if ((c < 0x20 && c != '\t') || c == 0x7f)
            text[i] = '?';
    }
    return len;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level < current_level)
        return;
    char line[2048];
    size_t n = format_prefix(line, sizeof line, level);
    va_list ap;
    va_start(ap, fmt);
    int body = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (body < 0)
        body = 0;
    size_t len = (size_t)body < sizeof line - n - 1 ? (size_t)body : sizeof line - n - 2;
    n += one_line(line + n, len);
    line[n++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, n);
    (void)ignored;
}
