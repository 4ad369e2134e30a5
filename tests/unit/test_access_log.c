/*
 * test_access_log.c - the access line equals the line log_event wrote for
 * it (the format did not change when it stopped going through printf), the
 * cached timestamp follows the clock, odd paths are quoted and long ones
 * cut, a file gets its lines only when the buffer is written (full,
 * flushed or freed) and then all of them, whole; stderr gets one line per
 * request with the journal's "<6>" when it is the journal; a path that
 * cannot be opened is an error naming it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/access_log.h"
#include "base/log.h"
#include "suites.h"

static const struct timespec JAN_2 = {1767323045, 678000000}; /* 2026-01-02T03:04:05.678Z */

static char temp_path[64];

static int temp_file(void)
{
    snprintf(temp_path, sizeof temp_path, "/tmp/ensign-test-alog.XXXXXX");
    int fd = mkstemp(temp_path);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* The whole of temp_path (static buffer). */
static const char *temp_contents(size_t *len)
{
    static char out[256 * 1024];
    int fd = open(temp_path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ssize_t n = read(fd, out, sizeof out - 1);
    close(fd);
    ck_assert_int_ge(n, 0);
    out[n] = '\0';
    if (len)
        *len = (size_t)n;
    return out;
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* A log writing to a temporary file (no journal prefix there). */
static struct access_log *file_log(void)
{
    struct access_log *log = access_log_new(temp_file());
    ck_assert_ptr_nonnull(log);
    ck_assert_int_eq(access_log_buffered(log), 1);
    return log;
}

static const char *format(struct access_log *log, const struct timespec *now, const char *path,
                          int status, uint64_t us, size_t bytes)
{
    static char line[ACCESS_LOG_LINE_MAX + 1];
    size_t n = access_log_format(log, line, now, "POST", path, status, us, bytes);
    ck_assert_uint_le(n, ACCESS_LOG_LINE_MAX);
    line[n] = '\0';
    return line;
}

START_TEST(line_is_the_logfmt_access_line)
{
    log_set_role("worker 3");
    struct access_log *log = file_log();
    char expected[512];
    snprintf(expected, sizeof expected,
             "ts=2026-01-02T03:04:05.678Z level=info role=\"worker 3\" pid=%ld event=access "
             "method=POST path=/ofrep/v1/evaluate/flags/x status=200 duration_ms=0.081 "
             "bytes=93\n",
             (long)getpid());
    ck_assert_str_eq(format(log, &JAN_2, "/ofrep/v1/evaluate/flags/x", 200, 81, 93), expected);
    access_log_free(log);
    unlink(temp_path);
}
END_TEST

/* What log_event writes for the same fields, from " level=" on. */
static const char *log_event_tail(const char *path, int status, uint64_t us, size_t bytes)
{
    static char out[4096];
    char value[512];
    int fd = temp_file();
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    log_detect_journal();
    log_event(LOG_LEVEL_INFO,
              "event=access method=%s path=%s status=%d duration_ms=%llu.%03llu bytes=%zu", "POST",
              log_value(value, sizeof value, path), status, (unsigned long long)(us / 1000),
              (unsigned long long)(us % 1000), bytes);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, out, sizeof out - 1, 0);
    close(fd);
    unlink(temp_path);
    ck_assert_int_gt(n, 0);
    out[n] = '\0';
    return strstr(out, " level=");
}

START_TEST(line_equals_log_event_line)
{
    static const struct {
        const char *path;
        int status;
        uint64_t us;
        size_t bytes;
    } cases[] = {
        {"/v1/healthz", 200, 17, 15},        {"/ofrep/v1/evaluate/flags", 429, 1234567, 0},
        {"/a b\"c\\d=e", 404, 0, 123456789}, {"", 400, 999, 1},
        {"/caf\xc3\xa9/\x01", 500, 1000, 2},
    };
    log_set_role("worker 0");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char mine[ACCESS_LOG_LINE_MAX + 1];
        unsetenv("JOURNAL_STREAM");
        struct access_log *log = file_log();
        snprintf(
            mine, sizeof mine, "%s",
            strstr(format(log, &JAN_2, cases[i].path, cases[i].status, cases[i].us, cases[i].bytes),
                   " level="));
        access_log_free(log);
        unlink(temp_path);
        ck_assert_str_eq(
            mine, log_event_tail(cases[i].path, cases[i].status, cases[i].us, cases[i].bytes));
    }
}
END_TEST

START_TEST(timestamp_follows_the_clock)
{
    struct access_log *log = file_log();
    ck_assert_int_eq(
        strncmp(format(log, &JAN_2, "/", 200, 1, 1), "ts=2026-01-02T03:04:05.678Z ", 28), 0);
    struct timespec later = {JAN_2.tv_sec, 5000000};
    ck_assert_int_eq(
        strncmp(format(log, &later, "/", 200, 1, 1), "ts=2026-01-02T03:04:05.005Z ", 28), 0);
    later.tv_sec += 1;
    ck_assert_int_eq(
        strncmp(format(log, &later, "/", 200, 1, 1), "ts=2026-01-02T03:04:06.005Z ", 28), 0);
    later.tv_sec += 86400 * 31 - 1;
    later.tv_nsec = 999999999;
    ck_assert_int_eq(
        strncmp(format(log, &later, "/", 200, 1, 1), "ts=2026-02-02T03:04:05.999Z ", 28), 0);
    access_log_free(log);
    unlink(temp_path);
}
END_TEST

START_TEST(long_paths_are_cut)
{
    char path[3000];
    memset(path, 'a', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    struct access_log *log = file_log();
    const char *line = format(log, &JAN_2, path, 200, 1, 1);
    const char *value = strstr(line, " path=") + 6;
    ck_assert_uint_eq(strcspn(value, " "), 511);
    ck_assert_ptr_nonnull(strstr(line, " status=200 duration_ms=0.001 bytes=1\n"));
    path[5] = ' '; /* quoted and escaped: still within the line */
    line = format(log, &JAN_2, path, 200, 1, 1);
    ck_assert_ptr_nonnull(strstr(line, " path=\"/aaaa aaa"));
    ck_assert_ptr_nonnull(strstr(line, "\" status=200 duration_ms=0.001 bytes=1\n"));
    access_log_free(log);
    unlink(temp_path);
}
END_TEST

START_TEST(file_gets_lines_when_the_buffer_is_written)
{
    struct access_log *log = file_log();
    size_t len;
    for (int i = 0; i < 3; i++)
        access_log_request(log, "GET", "/v1/healthz", 200, 10, 15);
    temp_contents(&len);
    ck_assert_uint_eq(len, 0); /* buffered */
    access_log_flush(log);
    ck_assert_uint_eq(count_lines(temp_contents(&len)), 3);
    size_t requests = 3;
    while (len < ACCESS_LOG_BUFFER / 2) { /* a full buffer is written without a flush */
        access_log_request(log, "GET", "/v1/healthz", 200, 10, 15);
        requests++;
        temp_contents(&len);
        if (requests > 10000)
            break;
    }
    const char *text = temp_contents(&len);
    ck_assert_uint_gt(len, 3 * 100);
    ck_assert_uint_le(len, 3 * 100 + ACCESS_LOG_BUFFER);
    ck_assert_int_eq(text[len - 1], '\n'); /* whole lines only */
    ck_assert_uint_lt(count_lines(text), requests);
    for (int i = 0; i < 10; i++, requests++)
        access_log_request(log, "GET", "/v1/healthz", 200, 10, 15);
    access_log_free(log); /* writes the rest */
    ck_assert_uint_eq(count_lines(temp_contents(&len)), requests);
    unlink(temp_path);
}
END_TEST

START_TEST(stderr_gets_a_line_per_request_with_the_journal_prefix)
{
    char out[4096];
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    int saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    struct stat st;
    char value[64];
    ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
    snprintf(value, sizeof value, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", value, 1);
    ck_assert_int_eq(log_detect_journal(), 1);
    struct access_log *log = access_log_new(-1);
    ck_assert_ptr_nonnull(log);
    ck_assert_int_eq(access_log_buffered(log), 0);
    access_log_request(log, "GET", "/v1/healthz", 200, 10, 15);
    ssize_t n = read(fds[0], out, sizeof out - 1); /* there at once: no buffer */
    ck_assert_int_gt(n, 0);
    out[n] = '\0';
    ck_assert_msg(strncmp(out, "<6>ts=", 6) == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, " event=access method=GET path=/v1/healthz status=200 "));
    ck_assert_uint_eq(count_lines(out), 1);
    access_log_request(log, "GET", "/metrics", 200, 10, 15);
    n = read(fds[0], out, sizeof out - 1);
    ck_assert_int_gt(n, 0);
    out[n] = '\0';
    ck_assert_ptr_nonnull(strstr(out, "path=/metrics "));
    access_log_free(log);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[0]);
    close(fds[1]);
    unsetenv("JOURNAL_STREAM");
    log_detect_journal();
}
END_TEST

START_TEST(open_file_appends_and_names_a_bad_path)
{
    char err[256] = "";
    int fd = temp_file();
    ck_assert_int_eq(write(fd, "old line\n", 9), 9);
    close(fd);
    fd = access_log_open_file(temp_path, err, sizeof err);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    struct access_log *log = access_log_new(fd);
    access_log_request(log, "GET", "/v1/healthz", 200, 10, 15);
    access_log_free(log);
    const char *text = temp_contents(NULL);
    ck_assert_int_eq(strncmp(text, "old line\nts=", 12), 0);
    unlink(temp_path);

    mode_t old = umask(022);
    fd = access_log_open_file(temp_path, err, sizeof err); /* created anew */
    umask(old);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    close(fd);
    unlink(temp_path);

    ck_assert_int_eq(access_log_open_file("/nonexistent-ensign-dir/access.log", err, sizeof err),
                     -1);
    ck_assert_str_eq(
        err, "access_log_path /nonexistent-ensign-dir/access.log: No such file or directory");
}
END_TEST

Suite *suite_access_log(void)
{
    Suite *s = suite_create("access_log");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, line_is_the_logfmt_access_line);
    tcase_add_test(tc, line_equals_log_event_line);
    tcase_add_test(tc, timestamp_follows_the_clock);
    tcase_add_test(tc, long_paths_are_cut);
    tcase_add_test(tc, file_gets_lines_when_the_buffer_is_written);
    tcase_add_test(tc, stderr_gets_a_line_per_request_with_the_journal_prefix);
    tcase_add_test(tc, open_file_appends_and_names_a_bad_path);
    suite_add_tcase(s, tc);
    return s;
}
