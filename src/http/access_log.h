/*
 * access_log.h - a worker's access log: one logfmt line per answered
 * request, the same line log_event wrote before (log.h):
 *
 *   ts=2026-01-02T03:04:05.678Z level=info role="worker 0" pid=43
 *   event=access method=POST path=/ofrep/v1/evaluate/flags/x status=200
 *   duration_ms=0.081 bytes=93
 *
 * Owns the line's formatting (a per-second timestamp text, the fixed
 * "level=... pid=... method=" part made once, digits by hand: no printf
 * per line) and, for a file, the worker's buffer and the worker's copy of
 * the file's descriptor. To a file (access_log_path) the lines gather in a
 * 64 KB buffer written with one write(2) when the next line would not fit,
 * when access_log_flush is called (the worker's one-second timer) and at
 * access_log_free; a crash loses at most that buffer. To stderr (no path)
 * each line is one write(2), with its journal priority prefix when stderr
 * is the journal, as every other log line.
 */
#ifndef ENSIGN_ACCESS_LOG_H
#define ENSIGN_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define ACCESS_LOG_BUFFER (64 * 1024)
#define ACCESS_LOG_LINE_MAX 1024 /* a longer path is cut to fit */
#define ACCESS_LOG_FLUSH_MS 1000

struct access_log;

/*
 * Opens PATH for appending (O_APPEND, created 0640 under the process's
 * umask); the descriptor is close-on-exec. Returns it, or -1 with
 * "access_log_path PATH: reason" in err.
 */
int access_log_open_file(const char *path, char *err, size_t errlen);

/*
 * The log of this process, formatting with its current log role and pid:
 * to FD (taken over: closed by access_log_free) through the buffer, or to
 * stderr line by line when FD is negative. NULL when out of memory (FD is
 * then closed).
 */
struct access_log *access_log_new(int fd);

/* Appends one request's line (path as a logfmt value, without the query). */
void access_log_request(struct access_log *log, const char *method, const char *path, int status,
                        uint64_t duration_us, size_t bytes);

/* Formats that line for time NOW into out (ACCESS_LOG_LINE_MAX bytes),
 * newline included, no NUL; returns its length. For the tests. */
size_t access_log_format(struct access_log *log, char *out, const struct timespec *now,
                         const char *method, const char *path, int status, uint64_t duration_us,
                         size_t bytes);

/* Writes the buffered lines (nothing for stderr). */
void access_log_flush(struct access_log *log);

/* true when lines go to a file through the buffer. */
int access_log_buffered(const struct access_log *log);

/* Flushes, closes the file and frees. NULL is fine. */
void access_log_free(struct access_log *log);

#endif
