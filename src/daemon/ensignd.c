/*
 * ensignd.c - the server's entry point: command line, configuration, and
 * handing over to the master (ensignd(8)).
 *
 *   ensignd [-c FILE] [-t] [-V] [-h]
 *
 * Exit status: 0 clean stop (or -t/-V/-h success), 1 start-up error.
 * A configuration error is one line on stderr, with the journal's error
 * priority when stderr is the journal (log.h): ExecStartPre and
 * ExecReload run `ensignd -t`, so `journalctl -p err` shows why a start
 * or a reload was refused.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build_config.h"
#include "base/config.h"
#include "http/event_memory.h"
#include "http/head_format.h"
#include "http/libevent_replacements.h"
#include "base/log.h"
#include "daemon/master.h"
#include "daemon/proctitle.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ensignd [-c FILE] [-t] [-V] [-h]\n"
                 "  -c FILE  configuration file (default " CONFIG_DEFAULT_PATH ")\n"
                 "  -t       check the configuration and exit\n"
                 "  -V       print the version and exit\n"
                 "  -h       this help\n");
}

/*
 * -t: state_dir must exist as a writable directory, or be creatable (its
 * parent exists and is writable). Creates nothing, touches no database.
 */
static int check_state_dir(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "state_dir %s is not a directory", dir);
            return -1;
        }
        if (access(dir, W_OK | X_OK) != 0) {
            snprintf(err, errlen, "state_dir %s is not writable: %s", dir, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (errno != ENOENT) {
        snprintf(err, errlen, "state_dir %s: %s", dir, strerror(errno));
        return -1;
    }
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", dir);
    const char *parent = dirname(copy);
    if (access(parent, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "state_dir %s does not exist and cannot be created in %s: %s", dir,
                 parent, strerror(errno));
        return -1;
    }
    return 0;
}

/*
 * -t: access_log_path (when the access log is on and goes to a file) must
 * be a writable file, or creatable in an existing, writable directory.
 * Creates nothing: the master opens the file at start and on SIGHUP.
 */
static int check_access_log_path(const struct config *cfg, char *err, size_t errlen)
{
    const char *path = cfg->access_log_path;
    if (cfg->access_log == CONFIG_ACCESS_LOG_OFF || path[0] == '\0')
        return 0;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode) || access(path, W_OK) != 0) {
            snprintf(err, errlen, "access_log_path %s is not a writable file", path);
            return -1;
        }
        return 0;
    }
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    if (errno != ENOENT || access(dir, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "access_log_path %s cannot be created in %s: %s", path, dir,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    event_memory_install(); /* before any libevent call (event_memory.h) */
    if (!head_format_prepare()) {
        fprintf(stderr, "ensignd: libevent has no evutil_date_rfc1123\n");
        return EXIT_FAILURE;
    }
    const char *path = CONFIG_DEFAULT_PATH;
    int check_only = 0, opt;
    while ((opt = getopt(argc, argv, "c:tVh")) != -1) {
        switch (opt) {
        case 'c':
            path = optarg;
            break;
        case 't':
            check_only = 1;
            break;
        case 'V':
            printf("ensignd %s\n", PACKAGE_VERSION);
            return EXIT_SUCCESS;
        case 'h':
            usage(stdout);
            return EXIT_SUCCESS;
        default:
            usage(stderr);
            return EXIT_FAILURE;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return EXIT_FAILURE;
    }
    static char path_copy[4096]; /* survives proctitle_init rewriting argv */
    snprintf(path_copy, sizeof path_copy, "%s", path);
    proctitle_init(argc, argv);

    struct config cfg;
    char err[512];
    int status;
    if (config_load(path_copy, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "%sensignd: %s\n", log_priority_prefix(LOG_LEVEL_ERROR), err);
        status = EXIT_FAILURE;
    } else if (check_only) {
        status = check_state_dir(cfg.state_dir, err, sizeof err) == 0 &&
                         check_access_log_path(&cfg, err, sizeof err) == 0
                     ? EXIT_SUCCESS
                     : EXIT_FAILURE;
        if (status == EXIT_SUCCESS)
            printf("configuration OK\n");
        else
            fprintf(stderr, "%sensignd: %s: %s\n", log_priority_prefix(LOG_LEVEL_ERROR), path_copy,
                    err);
        config_free(&cfg);
    } else {
        log_set_level((enum log_level)cfg.log_level);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int proven = libevent_replacements_prove(err, sizeof err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (proven != 0) {
            log_error("%s", err); /* before any worker: the defences are not there */
            config_free(&cfg);
            status = EXIT_FAILURE;
        } else {
            log_debug("libevent replacements proven in effect in %lld us",
                      (long long)(t1.tv_sec - t0.tv_sec) * 1000000 +
                          (t1.tv_nsec - t0.tv_nsec) / 1000);
            status = master_run(path_copy, &cfg);
        }
    }
    return status;
}
