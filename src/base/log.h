/*
 * log.h - one-line-per-event logging to stderr, as key=value fields.
 *
 * Every line is logfmt: `ts=... level=info role="worker 2" pid=N` and then
 * either `msg="free text"` (log_msg and the log_* macros) or the caller's
 * own fields (log_event, e.g. the access log). journald keeps each line
 * as one entry, and a collector can index the fields. Owns the
 * process-wide log level and the role tag. Never logs secrets: callers
 * pass only identifiers. Safe to call from any process role; not from
 * signal handlers.
 *
 * When stderr is the journal (systemd sets JOURNAL_STREAM to the
 * "device:inode" of the stream it gave as stderr, and fstat(2) of stderr
 * matches it), each line starts with its syslog priority, "<3>" error,
 * "<4>" warn, "<6>" info, "<7>" debug: journald strips the prefix and
 * stores it as PRIORITY, so `journalctl -p err` finds the errors.
 * Elsewhere (a file, a pipe, a terminal) lines carry no prefix.
 */
#ifndef ENSIGN_LOG_H
#define ENSIGN_LOG_H

#include <stddef.h>

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

void log_set_level(enum log_level level);
void log_set_role(const char *role);
/* The role tag as set ("ensignd" until log_set_role). */
const char *log_role(void);
/* Checks JOURNAL_STREAM against fstat(2) of stderr now and remembers the
 * answer (done on the first line otherwise); true when stderr is the
 * journal. Call again after stderr was replaced. */
int log_detect_journal(void);
/* "<N>" for LEVEL when stderr is the journal, "" otherwise. */
const char *log_priority_prefix(enum log_level level);
/* Parses "debug", "info", "warn", "error"; returns -1 for anything else. */
int log_level_parse(const char *name, enum log_level *out);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* true when a line at level would be written (skip formatting otherwise). */
int log_enabled(enum log_level level);
/* Writes the prefix and then the caller's fields, "key=value ..." as given:
 * values that may hold spaces or quotes go through log_value first. */
void log_event(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* TEXT as a logfmt value into out: bare when it is plain, otherwise
 * quoted with \" \\ and \n escapes (control bytes become \xNN). Truncated to fit. */
const char *log_value(char *out, size_t outlen, const char *text);

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
