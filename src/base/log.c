/*
 * log.c - one line per event on stderr, as key=value fields (logfmt):
 *
 *   ts=2026-01-02T03:04:05.678Z level=info role=master pid=42 msg="..."
 *
 * Owns the process-wide level and role tag. Each line is formatted into a
 * local buffer and written with one write(2), so lines from the master and
 * its children never interleave mid-line on the shared stderr. Free text
 * (log_msg) becomes the quoted msg field; log_event callers give their own
 * fields, quoting values through log_value. One event is one line: trailing
 * white space is dropped and line breaks inside a message (libpq's
 * "ERROR: ...\nDETAIL: ..." errors, text a client sent) become spaces,
 * other control characters '?'. When stderr is the journal
 * (JOURNAL_STREAM, see log.h) every line starts with its priority prefix.
 */
#include "base/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

static enum log_level current_level = LOG_LEVEL_INFO;
static char current_role[32] = "ensignd";

static const char *const level_names[] = {"debug", "info", "warn", "error"};
/* syslog priorities (sd-daemon.h's SD_DEBUG, SD_INFO, SD_WARNING, SD_ERR) */
static const char *const journal_prefixes[] = {"<7>", "<6>", "<4>", "<3>"};
static int journal_stream = -1; /* -1: not checked yet */

void log_set_level(enum log_level level)
{
    current_level = level;
}

void log_set_role(const char *role)
{
    snprintf(current_role, sizeof current_role, "%s", role);
}

const char *log_role(void)
{
    return current_role;
}

/* JOURNAL_STREAM's "DEV:INO" (decimal) names stderr's device and inode. */
static bool journal_matches(const char *value, const struct stat *st)
{
    char *end;
    unsigned long long dev = strtoull(value, &end, 10);
    if (end == value || *end != ':')
        return false;
    const char *ino_text = end + 1;
    unsigned long long ino = strtoull(ino_text, &end, 10);
    if (end == ino_text || *end != '\0')
        return false;
    return dev == (unsigned long long)st->st_dev && ino == (unsigned long long)st->st_ino;
}

int log_detect_journal(void)
{
    const char *value = getenv("JOURNAL_STREAM");
    struct stat st;
    journal_stream = value != NULL && fstat(STDERR_FILENO, &st) == 0 && journal_matches(value, &st);
    return journal_stream;
}

const char *log_priority_prefix(enum log_level level)
{
    if (journal_stream < 0)
        log_detect_journal();
    return journal_stream ? journal_prefixes[level] : "";
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

int log_enabled(enum log_level level)
{
    return level >= current_level;
}

static bool needs_quotes(const char *text)
{
    if (*text == '\0')
        return true;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || *p >= 0x7f)
            return true;
    return false;
}

const char *log_value(char *out, size_t outlen, const char *text)
{
    if (outlen < 3) {
        if (outlen > 0)
            out[0] = '\0';
        return out;
    }
    if (!needs_quotes(text)) {
        snprintf(out, outlen, "%s", text);
        return out;
    }
    size_t n = 0;
    out[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        char esc[5];
        size_t len;
        if (*p == '"' || *p == '\\')
            len = (size_t)snprintf(esc, sizeof esc, "\\%c", *p);
        else if (*p == '\n')
            len = (size_t)snprintf(esc, sizeof esc, "\\n");
        else if (*p < ' ' || *p == 0x7f)
            len = (size_t)snprintf(esc, sizeof esc, "\\x%02x", *p);
        else
            len = (size_t)snprintf(esc, sizeof esc, "%c", *p);
        if (n + len + 2 > outlen)
            break;
        memcpy(out + n, esc, len);
        n += len;
    }
    out[n++] = '"';
    out[n] = '\0';
    return out;
}

static size_t format_prefix(char *buf, size_t size, enum log_level level)
{
    struct timespec now;
    struct tm tm;
    char role[48];
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    const char *priority = log_priority_prefix(level);
    size_t n = strlen(priority);
    memcpy(buf, priority, n);
    n += strftime(buf + n, size - n, "ts=%Y-%m-%dT%H:%M:%S", &tm);
    int more =
        snprintf(buf + n, size - n, ".%03ldZ level=%s role=%s pid=%ld ", now.tv_nsec / 1000000L,
                 level_names[level], log_value(role, sizeof role, current_role), (long)getpid());
    return more > 0 ? n + (size_t)more : n;
}

static void write_line(char *line, size_t n)
{
    line[n++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, n);
    (void)ignored;
}

/* Appends vsnprintf output, leaving room for the newline; returns the new length. */
__attribute__((format(printf, 3, 0))) static size_t append(char *line, size_t n, const char *fmt,
                                                           va_list ap)
{
    int body = vsnprintf(line + n, LOG_LINE_MAX - n - 1, fmt, ap);
    if (body < 0)
        body = 0;
    return n + ((size_t)body < LOG_LINE_MAX - n - 1 ? (size_t)body : LOG_LINE_MAX - n - 2);
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
    char text[LOG_LINE_MAX], line[LOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    size_t len = one_line(text, append(text, 0, fmt, ap));
    va_end(ap);
    text[len] = '\0';
    size_t n = format_prefix(line, sizeof line, level);
    int more = snprintf(line + n, sizeof line - n - 1, "msg=");
    n += more > 0 ? (size_t)more : 0;
    log_value(line + n, sizeof line - n - 1, text);
    n += strlen(line + n);
    write_line(line, n);
}

void log_event(enum log_level level, const char *fmt, ...)
{
    if (level < current_level)
        return;
    char line[LOG_LINE_MAX];
    size_t n = format_prefix(line, sizeof line, level);
    va_list ap;
    va_start(ap, fmt);
    size_t start = n;
    n = append(line, n, fmt, ap);
    va_end(ap);
    n = start + one_line(line + start, n - start);
    write_line(line, n);
}
