/*
 * test_log.c - one event is one line: libpq's multi-line errors and
 * control characters in a message do not break the log's format; when
 * stderr is the journal (JOURNAL_STREAM names its device and inode) each
 * line starts with its syslog priority, and only then.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "suites.h"

/* Logs through log_msg with stderr sent to a temporary file; returns what
 * was written (static buffer). */
static const char *captured(const char *message)
{
    static char out[4096];
    char path[] = "/tmp/ensign-test-log.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    log_msg(LOG_LEVEL_WARN, "database: %s", message);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, out, sizeof out - 1, 0);
    close(fd);
    unlink(path);
    ck_assert_int_gt(n, 0);
    out[n] = '\0';
    return out;
}

START_TEST(multi_line_messages_become_one_line)
{
    const char *line = captured("ERROR:  relation \"x\" does not exist\nLINE 1: SELECT\n"
                                "        ^\nDETAIL:  something\n");
    ck_assert_ptr_eq(strchr(line, '\n'), line + strlen(line) - 1);
    ck_assert_ptr_nonnull(strstr(line, "ERROR:  relation \\\"x\\\" does not exist LINE 1: SELECT"));
    ck_assert_ptr_nonnull(strstr(line, "DETAIL:  something\"\n"));
    ck_assert_ptr_nonnull(strstr(line, " level=warn "));
}
END_TEST

START_TEST(control_characters_are_replaced)
{
    const char *line = captured("a\rb\x1b[31mc\td");
    ck_assert_ptr_nonnull(strstr(line, "a b?[31mc\\x09d\"\n"));
}
END_TEST

/* ---- journal priorities ---- */

/* Sets JOURNAL_STREAM to fd's "dev:ino", plus ino_offset on the inode. */
static void set_journal_stream(int fd, unsigned long long ino_offset)
{
    struct stat st;
    char value[64];
    ck_assert_int_eq(fstat(fd, &st), 0);
    snprintf(value, sizeof value, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino + ino_offset);
    ck_assert_int_eq(setenv("JOURNAL_STREAM", value, 1), 0);
}

/* Logs one line at each level with stderr on a pipe whose identity is
 * (or, with ino_offset, is not) JOURNAL_STREAM; returns the lines read. */
static const char *levels_through_pipe(unsigned long long ino_offset, int *detected)
{
    static char out[8192];
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    int saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    set_journal_stream(STDERR_FILENO, ino_offset);
    *detected = log_detect_journal();
    log_set_level(LOG_LEVEL_DEBUG);
    log_error("an error");
    log_warn("a warning");
    log_info("news");
    log_debug("detail");
    log_event(LOG_LEVEL_INFO, "event=access status=200");
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[1]);
    ssize_t n = read(fds[0], out, sizeof out - 1);
    close(fds[0]);
    ck_assert_int_gt(n, 0);
    out[n] = '\0';
    unsetenv("JOURNAL_STREAM");
    log_detect_journal();
    return out;
}

START_TEST(journal_lines_carry_their_priority)
{
    int detected;
    const char *text = levels_through_pipe(0, &detected);
    ck_assert_int_eq(detected, 1);
    ck_assert_msg(strncmp(text, "<3>ts=", 6) == 0, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, " level=error "));
    ck_assert_ptr_nonnull(strstr(text, "\n<4>ts="));
    ck_assert_ptr_nonnull(strstr(text, "\n<6>ts="));
    ck_assert_ptr_nonnull(strstr(text, "\n<7>ts="));
    const char *event = strstr(text, "event=access");
    ck_assert_ptr_nonnull(event);
    const char *start = event;
    while (start > text && start[-1] != '\n')
        start--;
    ck_assert_int_eq(strncmp(start, "<6>ts=", 6), 0);
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    ck_assert_uint_eq(lines, 5);
}
END_TEST

START_TEST(other_streams_get_no_prefix)
{
    int detected;
    const char *text = levels_through_pipe(1, &detected); /* another inode */
    ck_assert_int_eq(detected, 0);
    ck_assert_msg(strncmp(text, "ts=", 3) == 0, "%s", text);
    ck_assert_ptr_null(strstr(text, "<3>"));
    ck_assert_ptr_null(strstr(text, "<6>"));
    ck_assert_ptr_nonnull(strstr(text, "\nts="));
}
END_TEST

START_TEST(journal_stream_must_be_dev_colon_ino)
{
    static const char *const bad[] = {"", "12", "12:", ":12", "12:34x", "x:y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("JOURNAL_STREAM", bad[i], 1);
        ck_assert_msg(log_detect_journal() == 0, "JOURNAL_STREAM=%s", bad[i]);
        ck_assert_str_eq(log_priority_prefix(LOG_LEVEL_ERROR), "");
    }
    unsetenv("JOURNAL_STREAM");
    ck_assert_int_eq(log_detect_journal(), 0);
    ck_assert_str_eq(log_priority_prefix(LOG_LEVEL_ERROR), "");
    set_journal_stream(STDERR_FILENO, 0);
    ck_assert_int_eq(log_detect_journal(), 1);
    ck_assert_str_eq(log_priority_prefix(LOG_LEVEL_ERROR), "<3>");
    ck_assert_str_eq(log_priority_prefix(LOG_LEVEL_WARN), "<4>");
    ck_assert_str_eq(log_priority_prefix(LOG_LEVEL_INFO), "<6>");
    ck_assert_str_eq(log_priority_prefix(LOG_LEVEL_DEBUG), "<7>");
    unsetenv("JOURNAL_STREAM");
    log_detect_journal();
}
END_TEST

Suite *suite_log(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, multi_line_messages_become_one_line);
    tcase_add_test(tc, control_characters_are_replaced);
    tcase_add_test(tc, journal_lines_carry_their_priority);
    tcase_add_test(tc, other_streams_get_no_prefix);
    tcase_add_test(tc, journal_stream_must_be_dev_colon_ino);
    suite_add_tcase(s, tc);
    return s;
}
