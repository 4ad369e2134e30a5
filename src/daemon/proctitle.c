/*
 * proctitle.c - rewriting argv in place so ps shows each process's role.
 *
 * Linux shows /proc/PID/cmdline from the original argv area. We copy the
 * environment strings to the heap, point environ at the copies, and then
 * own the contiguous argv+environ bytes for the title. Also sets the
 * kernel thread name (prctl PR_SET_NAME, 15 characters) used by top.
 */
#include "daemon/proctitle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

extern char **environ;

static char *title_area;
static size_t title_size;
/* The copied environment stays reachable through environ for the
 * process lifetime (libraries read it at exit). */
static char **copied_environ;

void proctitle_init(int argc, char **argv)
{
    if (argc == 0 || argv[0] == NULL)
        return;
    char *end = argv[0] + strlen(argv[0]) + 1;
    for (int i = 1; i < argc && argv[i] == end; i++)
        end = argv[i] + strlen(argv[i]) + 1;
    size_t count = 0;
    while (environ[count] != NULL)
        count++;
    copied_environ = calloc(count + 1, sizeof *copied_environ);
    if (copied_environ == NULL)
        return;
    for (size_t i = 0; i < count; i++) {
        if (environ[i] == end)
            end = environ[i] + strlen(environ[i]) + 1;
        copied_environ[i] = strdup(environ[i]);
    }
    environ = copied_environ;
    title_area = argv[0];
    title_size = (size_t)(end - argv[0]);
}

void proctitle_set(const char *fmt, ...)
{
    char title[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(title, sizeof title, fmt, ap);
    va_end(ap);
    prctl(PR_SET_NAME, title, 0, 0, 0);
    if (title_area == NULL || title_size < 2)
        return;
    memset(title_area, 0, title_size);
    snprintf(title_area, title_size - 1, "%s", title);
}
