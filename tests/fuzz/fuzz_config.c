/*
 * fuzz_config.c - libFuzzer target: the configuration file parser.
 *
 * The input is the text of a configuration file. config_load reads it
 * through a path (an in-memory file), must either fill struct config or
 * answer -1 with a "PATH:LINE: message" (or "PATH: message") error, and
 * never crash, leak or overflow. On success the settings must respect the
 * key table's bounds, which the target checks for the integer keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "fuzz_common.h"

/* Every CONFIG_INT key's value lies within the key table's bounds. */
static void check_bounds(const struct config *cfg)
{
    size_t count;
    const struct config_key *keys = config_keys(&count);
    const int ints[] = {cfg->refresh_interval_ms, cfg->usage_flush_interval_ms,
                        cfg->ratelimit_evaluation, cfg->ratelimit_management};
    const char *const names[] = {"refresh_interval_ms", "usage_flush_interval_ms",
                                 "ratelimit_evaluation", "ratelimit_management"};
    for (size_t n = 0; n < sizeof ints / sizeof ints[0]; n++)
        for (size_t i = 0; i < count; i++)
            if (strcmp(keys[i].name, names[n]) == 0 &&
                (ints[n] < keys[i].min || ints[n] > keys[i].max)) {
                fprintf(stderr, "fuzz_config: %s = %d outside [%lld, %lld]\n", names[n], ints[n],
                        keys[i].min, keys[i].max);
                abort();
            }
    if (cfg->listen_port < 0 || cfg->listen_port > 65535 || cfg->workers < 1) {
        fprintf(stderr, "fuzz_config: port %d or workers %d out of range\n", cfg->listen_port,
                cfg->workers);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[FUZZ_PATH_MAX];
    int fd = fuzz_memfile(data, size, path);
    struct config cfg;
    char err[512];
    err[0] = '\0';
    if (config_load(path, &cfg, err, sizeof err) == 0) {
        check_bounds(&cfg);
        config_free(&cfg);
    } else if (strncmp(err, path, strlen(path)) != 0) {
        fprintf(stderr, "fuzz_config: error does not name the file: %s\n", err);
        abort();
    }
    close(fd);
    return 0;
}
