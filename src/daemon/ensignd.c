/*
 * ensignd.c - the server's entry point: command line, configuration, and
 * handing over to the master (operations.md "ensignd").
 *
 *   ensignd [-c FILE] [-t] [-V] [-h]
 *
 * Exit status: 0 clean stop (or -t/-V/-h success), 1 start-up error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build_config.h"
#include "config.h"
#include "log.h"
#include "master.h"
#include "proctitle.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: ensignd [-c FILE] [-t] [-V] [-h]\n"
                 "  -c FILE  configuration file (default " CONFIG_DEFAULT_PATH ")\n"
                 "  -t       check the configuration and exit\n"
                 "  -V       print the version and exit\n"
                 "  -h       this help\n");
}

int main(int argc, char **argv)
{
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
        fprintf(stderr, "ensignd: %s\n", err);
        status = EXIT_FAILURE;
    } else if (check_only) {
        printf("configuration OK\n");
        config_free(&cfg);
        status = EXIT_SUCCESS;
    } else {
        log_set_level((enum log_level)cfg.log_level);
        status = master_run(path_copy, &cfg);
    }
    return status;
}
