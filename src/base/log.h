/*
 * log.h - one-line-per-event logging to stderr.
 *
 * Owns the process-wide log level and the role tag ("master", "worker 2",
 * "refresher") that prefixes every line. Never logs secrets: callers pass
 * only identifiers. Safe to call from any process role; not from signal
 * handlers.
 */
#ifndef ENSIGN_LOG_H
#define ENSIGN_LOG_H

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

void log_set_level(enum log_level level);
void log_set_role(const char *role);
/* Parses "debug", "info", "warn", "error"; returns -1 for anything else. */
int log_level_parse(const char *name, enum log_level *out);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
