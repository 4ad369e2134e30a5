/*
 * test_log.c - one event is one line: libpq's multi-line errors and
 * control characters in a message do not break the log's format.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
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

Suite *suite_log(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, multi_line_messages_become_one_line);
    tcase_add_test(tc, control_characters_are_replaced);
    suite_add_tcase(s, tc);
    return s;
}
