/*
 * test_config.c - unit tests of the configuration table and parser
 * (src/base/config.c), of what a reload keeps (config_keep_restart_only),
 * and the documentation check: every key of config_keys() appears with its
 * default in etc/ensign.conf and in doc/ensign.conf.5, and both say "needs
 * a restart" of exactly the keys whose row is not reloadable.
 *
 * Parser tests write temporary files under /tmp (mkstemp) and remove them.
 * The documentation files are found under $top_srcdir (exported by the test
 * harness; "." when unset). Run by check_main.c through suite_config().
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "suites.h"

/* ---- helpers ---- */

static char temp_path[64];

/* Writes CONTENT to a fresh temporary file whose name is left in temp_path. */
static const char *write_temp(const char *content)
{
    snprintf(temp_path, sizeof temp_path, "/tmp/ensign-config-XXXXXX");
    int fd = mkstemp(temp_path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(content, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    return temp_path;
}

static void remove_temp(void)
{
    unlink(temp_path);
}

/* Loads CONTENT; on success the caller frees *cfg. */
static int load_text(const char *content, struct config *cfg, char *err, size_t errlen)
{
    const char *path = write_temp(content);
    int rc = config_load(path, cfg, err, errlen);
    remove_temp();
    return rc;
}

static const char *top_srcdir(void)
{
    const char *dir = getenv("top_srcdir");
    return dir && *dir ? dir : ".";
}

/* The annotated file as installed: etc/ensign.conf with this build's
 * state_dir default (Makefile.am writes it into the build tree). */
static const char *installed_conf(char *path, size_t len)
{
    const char *dir = getenv("top_builddir");
    snprintf(path, len, "%s/etc/ensign-installed.conf", dir && *dir ? dir : ".");
    return path;
}

/* Reads PATH into a malloc'ed string. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(mem);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, mem);
    fclose(f);
    fclose(mem);
    return text;
}

/* Reads $top_srcdir/RELPATH into a malloc'ed string. */
static char *read_source_file(const char *relpath)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", top_srcdir(), relpath);
    return read_file(path);
}

static bool has_line(const char *text, const char *line)
{
    size_t len = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++) {
        bool at_start = p == text || p[-1] == '\n';
        bool at_end = p[len] == '\n' || p[len] == '\0';
        if (at_start && at_end)
            return true;
    }
    return false;
}

/* The commented-out line etc/ensign.conf shows for KEY. */
static void default_line(const struct config_key *key, char *buf, size_t len)
{
    const char *d = key->default_value;
    if (*d == '\0' || strpbrk(d, " \t#\""))
        snprintf(buf, len, "# %s = \"%s\"", key->name, d);
    else
        snprintf(buf, len, "# %s = %s", key->name, d);
}

static int expected_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static void assert_str_or_null_eq(const char *a, const char *b)
{
    if (!a || !b)
        ck_assert_ptr_eq(a, b);
    else
        ck_assert_str_eq(a, b);
}

static void assert_same_settings(const struct config *a, const struct config *b)
{
    ck_assert_str_eq(a->listen, b->listen);
    assert_str_or_null_eq(a->listen_host, b->listen_host);
    ck_assert_int_eq(a->listen_port, b->listen_port);
    ck_assert_str_eq(a->database, b->database);
    ck_assert_str_eq(a->database_replica, b->database_replica);
    ck_assert_int_eq(a->workers, b->workers);
    ck_assert_str_eq(a->state_dir, b->state_dir);
    ck_assert_int_eq(a->refresh_interval_ms, b->refresh_interval_ms);
    ck_assert_int_eq(a->snapshot_pack_mb, b->snapshot_pack_mb);
    ck_assert_int_eq(a->usage_flush_interval_ms, b->usage_flush_interval_ms);
    ck_assert_int_eq(a->ratelimit_evaluation, b->ratelimit_evaluation);
    ck_assert_int_eq(a->ratelimit_management, b->ratelimit_management);
    ck_assert_int_eq(a->ratelimit_waitlist, b->ratelimit_waitlist);
    ck_assert_int_eq(a->max_body_bytes, b->max_body_bytes);
    ck_assert_int_eq(a->max_header_bytes, b->max_header_bytes);
    ck_assert_str_eq(a->cors_allow_origins, b->cors_allow_origins);
    ck_assert_int_eq(a->log_level, b->log_level);
    ck_assert_str_eq(a->user, b->user);
    ck_assert_int_eq(a->statement_timeout_ms, b->statement_timeout_ms);
    ck_assert_int_eq(a->shutdown_timeout_ms, b->shutdown_timeout_ms);
    ck_assert_int_eq(a->usage_slots, b->usage_slots);
    ck_assert_int_eq(a->ratelimit_slots, b->ratelimit_slots);
    ck_assert_int_eq(a->waitlist_open, b->waitlist_open);
    assert_str_or_null_eq(a->metrics_listen, b->metrics_listen);
    ck_assert_int_eq(a->access_log, b->access_log);
    ck_assert_str_eq(a->access_log_path, b->access_log_path);
    ck_assert_int_eq(a->session_cookie_secure, b->session_cookie_secure);
}

/* ---- the table ---- */

START_TEST(test_table_order_and_flags)
{
    static const struct {
        const char *name;
        const char *def;
        bool reloadable;
    } expected[] = {
        {"listen", "127.0.0.1:8080", true},
        {"database", "dbname=ensign", true},
        {"database_replica", "", true},
        {"workers", "auto", true},
        {"state_dir", LOCALSTATEDIR "/lib/ensign", false},
        {"refresh_interval_ms", "1000", true},
        {"snapshot_pack_mb", "1024", false},
        {"snapshot_chunk_flags", "500", true},
        {"usage_flush_interval_ms", "5000", true},
        {"ratelimit_evaluation", "0", true},
        {"ratelimit_management", "600", true},
        {"ratelimit_waitlist", "10", true},
        {"max_body_bytes", "1048576", true},
        {"max_header_bytes", "8192", true},
        {"cors_allow_origins", "*", true},
        {"log_level", "info", true},
        {"user", "", false},
        {"statement_timeout_ms", "5000", true},
        {"shutdown_timeout_ms", "10000", true},
        {"usage_slots", "65536", false},
        {"ratelimit_slots", "65536", false},
        {"waitlist", "on", true},
        {"ratelimit_login", "10", true},
        {"trusted_proxies", "", true},
        {"worker_stall_ms", "5000", true},
        {"request_timeout_ms", "10000", true},
        {"metrics_listen", "", false},
        {"agent_llm_url", "", true},
        {"agent_llm_model", "", true},
        {"agent_llm_key_file", "", true},
        {"stream_max_per_worker", "10000", true},
        {"stream_max_per_key", "1000", true},
        {"access_log", "management", true},
        {"access_log_path", "", true},
        {"max_connections_per_worker", "10000", true},
        {"session_cookie_secure", "off", true},
        {"healthz_database_timeout_ms", "60000", true},
        {"webhook_allow_private", "off", true},
        {"webhook_retry_base_ms", "30000", true},
        {"stale_after_days", "30", true},
        {"unknown_flag_slots", "4096", false},
        {"ui_dir", DATADIR "/ensign/ui", true},
    };
    size_t n;
    const struct config_key *keys = config_keys(&n);
    ck_assert_uint_eq(n, sizeof expected / sizeof expected[0]);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(keys[i].name, expected[i].name);
        ck_assert_str_eq(keys[i].default_value, expected[i].def);
        ck_assert_int_eq(keys[i].reloadable, expected[i].reloadable);
        size_t help_len = strlen(keys[i].help);
        ck_assert_uint_gt(help_len, 10);
        ck_assert_int_eq(keys[i].help[help_len - 1], '.');
    }
}
END_TEST

START_TEST(test_table_bounds)
{
    static const struct {
        const char *name;
        long long min, max;
    } expected[] = {
        {"workers", 1, 64},
        {"refresh_interval_ms", 50, 600000},
        {"snapshot_pack_mb", 1, 1024},
        {"snapshot_chunk_flags", 0, 1000000},
        {"usage_flush_interval_ms", 100, 3600000},
        {"ratelimit_evaluation", 0, 100000000},
        {"ratelimit_management", 0, 100000000},
        {"ratelimit_waitlist", 0, 100000000},
        {"max_body_bytes", 1024, 104857600},
        {"max_header_bytes", 1024, 65536},
        {"statement_timeout_ms", 100, 600000},
        {"shutdown_timeout_ms", 100, 600000},
        {"usage_slots", 1024, 16777216},
        {"ratelimit_slots", 1024, 16777216},
        {"ratelimit_login", 0, 100000000},
        {"worker_stall_ms", 0, 600000},
        {"request_timeout_ms", 100, 600000},
        {"stream_max_per_worker", 0, 1000000},
        {"stream_max_per_key", 0, 1000000},
        {"max_connections_per_worker", 16, 1000000},
        {"stale_after_days", 1, 36500},
        {"unknown_flag_slots", 1024, 16777216},
    };
    size_t n;
    const struct config_key *keys = config_keys(&n);
    for (size_t e = 0; e < sizeof expected / sizeof expected[0]; e++) {
        size_t i = 0;
        while (i < n && strcmp(keys[i].name, expected[e].name) != 0)
            i++;
        ck_assert_uint_lt(i, n);
        ck_assert_int_eq(keys[i].min, expected[e].min);
        ck_assert_int_eq(keys[i].max, expected[e].max);
    }
}
END_TEST

/* ---- defaults ---- */

START_TEST(test_defaults)
{
    struct config cfg;
    config_set_defaults(&cfg);
    ck_assert_ptr_null(cfg.path);
    ck_assert_str_eq(cfg.listen, "127.0.0.1:8080");
    ck_assert_str_eq(cfg.listen_host, "127.0.0.1");
    ck_assert_int_eq(cfg.listen_port, 8080);
    ck_assert_str_eq(cfg.database, "dbname=ensign");
    ck_assert_str_eq(cfg.database_replica, "");
    ck_assert_int_eq(cfg.workers, expected_workers());
    ck_assert_str_eq(cfg.state_dir, LOCALSTATEDIR "/lib/ensign");
    ck_assert_int_eq(cfg.refresh_interval_ms, 1000);
    ck_assert_int_eq(cfg.usage_flush_interval_ms, 5000);
    ck_assert_int_eq(cfg.ratelimit_evaluation, 0);
    ck_assert_int_eq(cfg.ratelimit_management, 600);
    ck_assert_int_eq(cfg.ratelimit_waitlist, 10);
    ck_assert_int_eq(cfg.max_body_bytes, 1048576);
    ck_assert_int_eq(cfg.max_header_bytes, 8192);
    ck_assert_str_eq(cfg.cors_allow_origins, "*");
    ck_assert_int_eq(cfg.log_level, LOG_LEVEL_INFO);
    ck_assert_str_eq(cfg.user, "");
    ck_assert_int_eq(cfg.statement_timeout_ms, 5000);
    ck_assert_int_eq(cfg.shutdown_timeout_ms, 10000);
    ck_assert_int_eq(cfg.usage_slots, 65536);
    ck_assert_int_eq(cfg.ratelimit_slots, 65536);
    ck_assert_int_eq(cfg.waitlist_open, true);
    ck_assert_int_eq(cfg.session_cookie_secure, false);
    ck_assert_int_eq(cfg.healthz_database_timeout_ms, 60000);
    config_free(&cfg);
    ck_assert_ptr_null(cfg.listen);
    config_free(&cfg); /* a freed config may be freed again */
}
END_TEST

START_TEST(test_empty_file_gives_defaults)
{
    struct config cfg, defaults;
    char err[256] = "";
    ck_assert_int_eq(load_text("", &cfg, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    config_set_defaults(&defaults);
    assert_same_settings(&cfg, &defaults);
    config_free(&defaults);
    config_free(&cfg);
}
END_TEST

/* ---- every value type ---- */

START_TEST(test_every_type_parsed)
{
    struct config cfg;
    char err[256] = "";
    const char *text = "listen = 0.0.0.0:9090\n"
                       "database = host=db dbname=flags\n"
                       "workers = 3\n"
                       "state_dir = /srv/ensign\n"
                       "refresh_interval_ms = 50\n"
                       "usage_flush_interval_ms = 3600000\n"
                       "ratelimit_evaluation = 0\n"
                       "ratelimit_management = 100000000\n"
                       "ratelimit_waitlist = 7\n"
                       "max_body_bytes = 104857600\n"
                       "max_header_bytes = 1024\n"
                       "cors_allow_origins = https://a.example https://b.example\n"
                       "log_level = debug\n"
                       "user = ensign\n"
                       "statement_timeout_ms = 600000\n"
                       "shutdown_timeout_ms = 100\n"
                       "usage_slots = 1024\n"
                       "ratelimit_slots = 16777216\n"
                       "waitlist = closed\n";
    const char *path = write_temp(text);
    ck_assert_int_eq(config_load(path, &cfg, err, sizeof err), 0);
    ck_assert_str_eq(cfg.path, path);
    remove_temp();
    ck_assert_str_eq(cfg.listen, "0.0.0.0:9090");
    ck_assert_str_eq(cfg.listen_host, "0.0.0.0");
    ck_assert_int_eq(cfg.listen_port, 9090);
    ck_assert_str_eq(cfg.database, "host=db dbname=flags");
    ck_assert_int_eq(cfg.workers, 3);
    ck_assert_str_eq(cfg.state_dir, "/srv/ensign");
    ck_assert_int_eq(cfg.refresh_interval_ms, 50);
    ck_assert_int_eq(cfg.usage_flush_interval_ms, 3600000);
    ck_assert_int_eq(cfg.ratelimit_evaluation, 0);
    ck_assert_int_eq(cfg.ratelimit_management, 100000000);
    ck_assert_int_eq(cfg.ratelimit_waitlist, 7);
    ck_assert_int_eq(cfg.max_body_bytes, 104857600);
    ck_assert_int_eq(cfg.max_header_bytes, 1024);
    ck_assert_str_eq(cfg.cors_allow_origins, "https://a.example https://b.example");
    ck_assert_int_eq(cfg.log_level, LOG_LEVEL_DEBUG);
    ck_assert_str_eq(cfg.user, "ensign");
    ck_assert_int_eq(cfg.statement_timeout_ms, 600000);
    ck_assert_int_eq(cfg.shutdown_timeout_ms, 100);
    ck_assert_int_eq(cfg.usage_slots, 1024);
    ck_assert_int_eq(cfg.ratelimit_slots, 16777216);
    ck_assert_int_eq(cfg.waitlist_open, false);
    config_free(&cfg);
}
END_TEST

START_TEST(test_log_levels_and_waitlist)
{
    static const struct {
        const char *name;
        int level;
    } levels[] = {{"debug", LOG_LEVEL_DEBUG},
                  {"info", LOG_LEVEL_INFO},
                  {"warn", LOG_LEVEL_WARN},
                  {"error", LOG_LEVEL_ERROR}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        char text[64], err[256];
        struct config cfg;
        snprintf(text, sizeof text, "log_level = %s\nwaitlist = %s\n", levels[i].name,
                 i % 2 ? "open" : "closed");
        ck_assert_int_eq(load_text(text, &cfg, err, sizeof err), 0);
        ck_assert_int_eq(cfg.log_level, levels[i].level);
        ck_assert_int_eq(cfg.waitlist_open, i % 2 == 1);
        config_free(&cfg);
    }
}
END_TEST

START_TEST(test_workers_auto)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(load_text("workers = 64\n", &cfg, err, sizeof err), 0);
    ck_assert_int_eq(cfg.workers, 64);
    config_free(&cfg);
    ck_assert_int_eq(load_text("workers = auto\n", &cfg, err, sizeof err), 0);
    ck_assert_int_eq(cfg.workers, expected_workers());
    ck_assert_int_ge(cfg.workers, 1);
    config_free(&cfg);
}
END_TEST

/* ---- switches: on/off, and every older spelling still read ---- */

static const struct {
    const char *value;
    bool on;
} bool_spellings[] = {
    {"on", true},   {"off", false},   {"yes", true}, {"no", false},
    {"true", true}, {"false", false}, {"1", true},   {"0", false},
};

START_TEST(test_bool_spellings)
{
    const char *keys[] = {"waitlist", "session_cookie_secure"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char text[128], err[256] = "";
        struct config cfg;
        snprintf(text, sizeof text, "%s = %s\n", keys[k], bool_spellings[_i].value);
        ck_assert_msg(load_text(text, &cfg, err, sizeof err) == 0, "%s", err);
        bool got = k == 0 ? cfg.waitlist_open : cfg.session_cookie_secure;
        ck_assert_msg(got == bool_spellings[_i].on, "%s read as %d", text, got);
        config_free(&cfg);
    }
}
END_TEST

/* open/closed: the waitlist's spelling before on/off, still read. */
START_TEST(test_waitlist_open_closed)
{
    struct config cfg;
    char err[256] = "";
    ck_assert_int_eq(load_text("waitlist = closed\n", &cfg, err, sizeof err), 0);
    ck_assert_int_eq(cfg.waitlist_open, false);
    config_free(&cfg);
    ck_assert_int_eq(load_text("waitlist = \"open\"\n", &cfg, err, sizeof err), 0);
    ck_assert_int_eq(cfg.waitlist_open, true);
    config_free(&cfg);
}
END_TEST

/* Every CONFIG_BOOL row documents on/off: its default is one of them. */
START_TEST(test_bool_defaults_are_on_or_off)
{
    size_t n, bools = 0;
    const struct config_key *keys = config_keys(&n);
    for (size_t i = 0; i < n; i++) {
        if (keys[i].type != CONFIG_BOOL)
            continue;
        bools++;
        ck_assert_msg(strcmp(keys[i].default_value, "on") == 0 ||
                          strcmp(keys[i].default_value, "off") == 0,
                      "%s defaults to %s", keys[i].name, keys[i].default_value);
    }
    ck_assert_uint_eq(bools, 3);
}
END_TEST

/* ---- a reload: restart-only keys keep their running values ---- */

/* A value other than the default for every key, in table order. */
static const char *const changed_values[] = {
    "listen = 0.0.0.0:9090",
    "database = \"host=db dbname=flags\"",
    "database_replica = \"host=replica dbname=flags\"",
    "workers = 3",
    "state_dir = /srv/ensign",
    "refresh_interval_ms = 50",
    "snapshot_pack_mb = 64",
    "snapshot_chunk_flags = 7",
    "usage_flush_interval_ms = 100",
    "ratelimit_evaluation = 5",
    "ratelimit_management = 6",
    "ratelimit_waitlist = 7",
    "max_body_bytes = 2048",
    "max_header_bytes = 2048",
    "cors_allow_origins = https://a.example",
    "log_level = debug",
    "user = ensign",
    "statement_timeout_ms = 100",
    "shutdown_timeout_ms = 100",
    "usage_slots = 1024",
    "ratelimit_slots = 2048",
    "waitlist = off",
    "ratelimit_login = 3",
    "trusted_proxies = 10.0.0.1",
    "worker_stall_ms = 0",
    "request_timeout_ms = 100",
    "metrics_listen = 127.0.0.1:9100",
    "agent_llm_url = http://127.0.0.1:8000/v1/chat/completions",
    "agent_llm_model = llama3",
    "agent_llm_key_file = /etc/ensign/llm.key",
    "stream_max_per_worker = 1",
    "stream_max_per_key = 1",
    "access_log = all",
    "access_log_path = /tmp/access.log",
    "max_connections_per_worker = 16",
    "session_cookie_secure = on",
    "healthz_database_timeout_ms = 0",
    "webhook_allow_private = on",
    "webhook_retry_base_ms = 10",
    "stale_after_days = 1",
    "unknown_flag_slots = 1024",
    "ui_dir = /srv/ui",
};

static char *changed_file_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(mem);
    for (size_t i = 0; i < sizeof changed_values / sizeof changed_values[0]; i++)
        fprintf(mem, "%s\n", changed_values[i]);
    fclose(mem);
    return text;
}

/* The names of the rows that are not reloadable, as the master's warning
 * lists them. */
static void restart_only_names(char *buf, size_t len, size_t *count)
{
    size_t n, used = 0;
    const struct config_key *keys = config_keys(&n);
    buf[0] = '\0';
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        if (keys[i].reloadable)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", *count ? ", " : "", keys[i].name);
        (*count)++;
    }
}

START_TEST(test_reload_keeps_restart_only_keys)
{
    size_t n;
    config_keys(&n);
    ck_assert_uint_eq(sizeof changed_values / sizeof changed_values[0], n);
    struct config running, fresh;
    char err[512] = "", changed[512], expected[512];
    ck_assert_int_eq(load_text("", &running, err, sizeof err), 0);
    char *text = changed_file_text();
    ck_assert_msg(load_text(text, &fresh, err, sizeof err) == 0, "%s", err);
    free(text);
    size_t restart_only;
    restart_only_names(expected, sizeof expected, &restart_only);
    ck_assert_int_eq(config_keep_restart_only(&fresh, &running, changed, sizeof changed),
                     (int)restart_only);
    ck_assert_str_eq(changed, expected);
    ck_assert_str_eq(
        changed, "state_dir, snapshot_pack_mb, user, usage_slots, ratelimit_slots, metrics_listen, "
                 "unknown_flag_slots");
    /* the restart-only keys hold the running values */
    ck_assert_str_eq(fresh.state_dir, LOCALSTATEDIR "/lib/ensign");
    ck_assert_int_eq(fresh.snapshot_pack_mb, 1024);
    ck_assert_str_eq(fresh.user, "");
    ck_assert_int_eq(fresh.usage_slots, 65536);
    ck_assert_int_eq(fresh.ratelimit_slots, 65536);
    ck_assert_str_eq(fresh.metrics_listen, "");
    ck_assert_int_eq(fresh.unknown_flag_slots, 4096);
    /* every other key holds the file's value */
    ck_assert_str_eq(fresh.listen, "0.0.0.0:9090");
    ck_assert_str_eq(fresh.listen_host, "0.0.0.0");
    ck_assert_int_eq(fresh.listen_port, 9090);
    ck_assert_str_eq(fresh.database, "host=db dbname=flags");
    ck_assert_str_eq(fresh.database_replica, "host=replica dbname=flags");
    ck_assert_int_eq(fresh.workers, 3);
    ck_assert_int_eq(fresh.refresh_interval_ms, 50);
    ck_assert_int_eq(fresh.max_body_bytes, 2048);
    ck_assert_int_eq(fresh.log_level, LOG_LEVEL_DEBUG);
    ck_assert_int_eq(fresh.waitlist_open, false);
    ck_assert_str_eq(fresh.access_log_path, "/tmp/access.log");
    ck_assert_int_eq(fresh.session_cookie_secure, true);
    ck_assert_int_eq(fresh.healthz_database_timeout_ms, 0);
    ck_assert_int_eq(fresh.stale_after_days, 1);
    /* the running config is untouched, and a second pass finds nothing to keep */
    ck_assert_str_eq(running.user, "");
    ck_assert_str_eq(running.listen, "127.0.0.1:8080");
    ck_assert_int_eq(config_keep_restart_only(&fresh, &running, changed, sizeof changed), 0);
    ck_assert_str_eq(changed, "");
    config_free(&fresh);
    config_free(&running);
}
END_TEST

START_TEST(test_reload_of_reloadable_keys_warns_of_none)
{
    struct config running, fresh;
    char err[512] = "", changed[64] = "x";
    ck_assert_int_eq(load_text("state_dir = /srv/a\nuser = ensign\n", &running, err, sizeof err),
                     0);
    ck_assert_int_eq(load_text("state_dir = /srv/a\nuser = ensign\nworkers = 5\nlisten = "
                               "[::1]:8081\nwaitlist = closed\n",
                               &fresh, err, sizeof err),
                     0);
    ck_assert_int_eq(config_keep_restart_only(&fresh, &running, changed, sizeof changed), 0);
    ck_assert_str_eq(changed, "");
    ck_assert_int_eq(fresh.workers, 5);
    ck_assert_str_eq(fresh.listen_host, "::1");
    ck_assert_int_eq(fresh.waitlist_open, false);
    ck_assert_str_eq(fresh.state_dir, "/srv/a");
    config_free(&fresh);
    config_free(&running);
}
END_TEST

/* A short buffer gets a truncated list, never an overflow; NULL gets none. */
START_TEST(test_reload_changed_list_truncated)
{
    struct config running, fresh;
    char err[512] = "", changed[8];
    ck_assert_int_eq(load_text("", &running, err, sizeof err), 0);
    ck_assert_int_eq(load_text("user = a\nusage_slots = 1024\nmetrics_listen = *:9100\n", &fresh,
                               err, sizeof err),
                     0);
    ck_assert_int_eq(config_keep_restart_only(&fresh, &running, changed, sizeof changed), 3);
    ck_assert_str_eq(changed, "user, u");
    ck_assert_str_eq(fresh.user, "");
    ck_assert_str_eq(fresh.metrics_listen, "");
    config_free(&fresh);
    ck_assert_int_eq(load_text("user = b\n", &fresh, err, sizeof err), 0);
    ck_assert_int_eq(config_keep_restart_only(&fresh, &running, NULL, 0), 1);
    ck_assert_str_eq(fresh.user, "");
    ck_assert_ptr_ne(fresh.user, running.user); /* a copy: each config owns its strings */
    config_free(&fresh);
    config_free(&running);
}
END_TEST

/* ---- quoting, comments, whitespace ---- */

START_TEST(test_quoting_and_comments)
{
    struct config cfg;
    char err[256] = "";
    const char *text = "# a comment line\n"
                       "\n"
                       "   \t\n"
                       "   # an indented comment\n"
                       "  database   =   \"host=db password='a # b'\"   # trailing\n"
                       "state_dir=/srv/x#no space before the comment\n"
                       "user = \"\"\n"
                       "cors_allow_origins = \"say \\\"hi\\\" \\\\ there\"\n"
                       "log_level = \"warn\"\r\n"
                       "workers = 2 # two\n"
                       "listen = \"[::1]:8443\"";
    ck_assert_int_eq(load_text(text, &cfg, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(cfg.database, "host=db password='a # b'");
    ck_assert_str_eq(cfg.state_dir, "/srv/x");
    ck_assert_str_eq(cfg.user, "");
    ck_assert_str_eq(cfg.cors_allow_origins, "say \"hi\" \\ there");
    ck_assert_int_eq(cfg.log_level, LOG_LEVEL_WARN);
    ck_assert_int_eq(cfg.workers, 2);
    ck_assert_str_eq(cfg.listen, "[::1]:8443");
    ck_assert_str_eq(cfg.listen_host, "::1");
    ck_assert_int_eq(cfg.listen_port, 8443);
    config_free(&cfg);
}
END_TEST

START_TEST(test_unquoted_inner_quotes_and_empty_value)
{
    struct config cfg;
    char err[256] = "";
    ck_assert_int_eq(load_text("database = a\"b\nuser =\n", &cfg, err, sizeof err), 0);
    ck_assert_str_eq(cfg.database, "a\"b");
    ck_assert_str_eq(cfg.user, "");
    config_free(&cfg);
}
END_TEST

/* ---- errors: exact "PATH:LINE: message" ---- */

static const struct {
    const char *text;
    unsigned line;
    const char *message;
} error_cases[] = {
    {"# ok\nlistn = 1.2.3.4:80\n", 2, "unknown key \"listn\""},
    {"workers = 2\n\nworkers = 3\n", 3, "duplicate key \"workers\" (first set on line 1)"},
    {"log_level debug\n", 1, "missing \"=\" after \"log_level debug\""},
    {"log_level # = debug\n", 1, "missing \"=\" after \"log_level\""},
    {"= 5\n", 1, "missing key before \"=\""},
    {"user = \"ensign\n", 1, "unterminated quoted value"},
    {"user = \"ensign\\\"\n", 1, "unterminated quoted value"},
    {"user = \"ens\\ign\"\n", 1, "invalid escape \"\\i\" in quoted value"},
    {"user = \"ensign\" x\n", 1, "unexpected text after closing quote"},
    {"refresh_interval_ms = abc\n", 1, "refresh_interval_ms: \"abc\" is not an integer"},
    {"refresh_interval_ms = 100ms\n", 1, "refresh_interval_ms: \"100ms\" is not an integer"},
    {"refresh_interval_ms = 0x10\n", 1, "refresh_interval_ms: \"0x10\" is not an integer"},
    {"refresh_interval_ms = +100\n", 1, "refresh_interval_ms: \"+100\" is not an integer"},
    {"refresh_interval_ms = \" 100\"\n", 1, "refresh_interval_ms: \" 100\" is not an integer"},
    {"refresh_interval_ms =\n", 1, "refresh_interval_ms: \"\" is not an integer"},
    {"refresh_interval_ms = 49\n", 1, "refresh_interval_ms: 49 is out of range (50..600000)"},
    {"refresh_interval_ms = 600001\n", 1,
     "refresh_interval_ms: 600001 is out of range (50..600000)"},
    {"ratelimit_evaluation = -1\n", 1, "ratelimit_evaluation: -1 is out of range (0..100000000)"},
    {"max_body_bytes = 99999999999999999999999\n", 1,
     "max_body_bytes: 99999999999999999999999 is out of range (1024..104857600)"},
    {"usage_slots = -99999999999999999999999\n", 1,
     "usage_slots: -99999999999999999999999 is out of range (1024..16777216)"},
    {"workers = 0\n", 1, "workers: 0 is out of range (1..64)"},
    {"workers = 65\n", 1, "workers: 65 is out of range (1..64)"},
    {"workers = many\n", 1, "workers: \"many\" is neither \"auto\" nor an integer"},
    {"workers = AUTO\n", 1, "workers: \"AUTO\" is neither \"auto\" nor an integer"},
    {"log_level = verbose\n", 1, "log_level: \"verbose\" is not one of debug, info, warn, error"},
    {"waitlist = maybe\n", 1, "waitlist: \"maybe\" is not one of on, off"},
    {"waitlist = On\n", 1, "waitlist: \"On\" is not one of on, off"},
    {"waitlist =\n", 1, "waitlist: \"\" is not one of on, off"},
    {"session_cookie_secure = 2\n", 1, "session_cookie_secure: \"2\" is not one of on, off"},
    {"session_cookie_secure = closed\n", 1,
     "session_cookie_secure: \"closed\" is not one of on, off"},
    {"listen = 8080\n", 1, "listen: \"8080\" is not HOST:PORT, [ADDRESS]:PORT or *:PORT"},
    {"listen = :8080\n", 1, "listen: \":8080\" is not HOST:PORT, [ADDRESS]:PORT or *:PORT"},
    {"listen = [::1]8080\n", 1, "listen: \"[::1]8080\" is not HOST:PORT, [ADDRESS]:PORT or *:PORT"},
    {"listen = [::1\n", 1, "listen: \"[::1\" is not HOST:PORT, [ADDRESS]:PORT or *:PORT"},
    {"listen = ::1:8080\n", 1, "listen: \"::1:8080\" has an invalid host"},
    {"listen = [nothost]:8080\n", 1, "listen: \"[nothost]:8080\" has an invalid host"},
    {"listen = \"a b:80\"\n", 1, "listen: \"a b:80\" has an invalid host"},
    {"listen = 127.0.0.1:0\n", 1, "listen: \"127.0.0.1:0\" has an invalid port (1..65535)"},
    {"listen = 127.0.0.1:65536\n", 1, "listen: \"127.0.0.1:65536\" has an invalid port (1..65535)"},
    {"listen = *:http\n", 1, "listen: \"*:http\" has an invalid port (1..65535)"},
    {"listen = *:\n", 1, "listen: \"*:\" has an invalid port (1..65535)"},
    {"listen = [::1]:-1\n", 1, "listen: \"[::1]:-1\" has an invalid port (1..65535)"},
    {"metrics_listen = 9100\n", 1,
     "metrics_listen: \"9100\" is not HOST:PORT, [ADDRESS]:PORT or *:PORT"},
    {"metrics_listen = 127.0.0.1:0\n", 1,
     "metrics_listen: \"127.0.0.1:0\" has an invalid port (1..65535)"},
    {"access_log = yes\n", 1, "access_log: \"yes\" is not one of off, management, all"},
    {"\naccess_log = On\n", 2, "access_log: \"On\" is not one of off, management, all"},
};

START_TEST(test_error_messages)
{
    struct config cfg;
    char err[512] = "", expected[512];
    const char *path = write_temp(error_cases[_i].text);
    int rc = config_load(path, &cfg, err, sizeof err);
    remove_temp();
    snprintf(expected, sizeof expected, "%s:%u: %s", path, error_cases[_i].line,
             error_cases[_i].message);
    ck_assert_int_eq(rc, -1);
    ck_assert_str_eq(err, expected);
    /* A failed load leaves nothing allocated. */
    ck_assert_ptr_null(cfg.path);
    ck_assert_ptr_null(cfg.listen);
    ck_assert_ptr_null(cfg.database);
}
END_TEST

START_TEST(test_cannot_open)
{
    struct config cfg;
    char err[256];
    ck_assert_int_eq(config_load("/nonexistent/ensign.conf", &cfg, err, sizeof err), -1);
    ck_assert_str_eq(err, "/nonexistent/ensign.conf: cannot open: No such file or directory");
    ck_assert_ptr_null(cfg.database);
}
END_TEST

START_TEST(test_error_without_buffer)
{
    struct config cfg;
    ck_assert_int_eq(load_text("nope = 1\n", &cfg, NULL, 0), -1);
}
END_TEST

START_TEST(test_error_message_truncated)
{
    struct config cfg;
    char err[8];
    ck_assert_int_eq(load_text("nope = 1\n", &cfg, err, sizeof err), -1);
    ck_assert_str_eq(err, "/tmp/en");
}
END_TEST

/* ---- listen forms ---- */

static const struct {
    const char *text;
    const char *host; /* NULL for every address */
    int port;
} listen_cases[] = {
    {"127.0.0.1:8080", "127.0.0.1", 8080},
    {"localhost:1", "localhost", 1},
    {"flags.example.com:65535", "flags.example.com", 65535},
    {"[::1]:8080", "::1", 8080},
    {"[::]:443", "::", 443},
    {"[2001:db8::42]:8443", "2001:db8::42", 8443},
    {"*:8080", NULL, 8080},
};

START_TEST(test_listen_forms)
{
    struct config cfg;
    char text[128], err[256] = "";
    snprintf(text, sizeof text, "listen = %s\n", listen_cases[_i].text);
    ck_assert_int_eq(load_text(text, &cfg, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    ck_assert_str_eq(cfg.listen, listen_cases[_i].text);
    assert_str_or_null_eq(cfg.listen_host, listen_cases[_i].host);
    ck_assert_int_eq(cfg.listen_port, listen_cases[_i].port);
    config_free(&cfg);
}
END_TEST

START_TEST(test_metrics_listen_and_access_log)
{
    struct config cfg;
    char err[256] = "", host[64];
    int port = 0;
    ck_assert_int_eq(
        load_text("metrics_listen = [::1]:9100\naccess_log = off\n", &cfg, err, sizeof err), 0);
    ck_assert_str_eq(cfg.metrics_listen, "[::1]:9100");
    ck_assert_int_eq(cfg.access_log, CONFIG_ACCESS_LOG_OFF);
    ck_assert_int_eq(config_parse_address(cfg.metrics_listen, host, sizeof host, &port), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_int_eq(port, 9100);
    config_free(&cfg);
    ck_assert_int_eq(load_text("metrics_listen = \"\"\naccess_log = on\n", &cfg, err, sizeof err),
                     0);
    ck_assert_str_eq(cfg.metrics_listen, "");
    ck_assert_int_eq(cfg.access_log, CONFIG_ACCESS_LOG_MANAGEMENT); /* "on": the old spelling */
    config_free(&cfg);
    ck_assert_int_eq(load_text("access_log = all\naccess_log_path = /var/log/ensign/access.log\n",
                               &cfg, err, sizeof err),
                     0);
    ck_assert_int_eq(cfg.access_log, CONFIG_ACCESS_LOG_ALL);
    ck_assert_str_eq(cfg.access_log_path, "/var/log/ensign/access.log");
    config_free(&cfg);
    ck_assert_int_eq(load_text("access_log = management\n", &cfg, err, sizeof err), 0);
    ck_assert_int_eq(cfg.access_log, CONFIG_ACCESS_LOG_MANAGEMENT);
    ck_assert_str_eq(cfg.access_log_path, "");
    config_free(&cfg);
    ck_assert_int_eq(config_parse_address("*:9100", host, sizeof host, &port), 0);
    ck_assert_str_eq(host, "");
    ck_assert_int_eq(config_parse_address("", host, sizeof host, &port), -1);
    ck_assert_int_eq(config_parse_address("[::1]:9100", host, 3, &port), -1);
}
END_TEST

/* ---- documentation: etc/ensign.conf and doc/ensign.conf.5 ---- */

START_TEST(test_annotated_file_lists_every_key)
{
    char path[PATH_MAX];
    char *conf = read_file(installed_conf(path, sizeof path));
    size_t n;
    const struct config_key *keys = config_keys(&n);
    for (size_t i = 0; i < n; i++) {
        char line[256];
        default_line(&keys[i], line, sizeof line);
        ck_assert_msg(has_line(conf, line), "etc/ensign.conf lacks the line '%s'", line);
    }
    free(conf);
}
END_TEST

START_TEST(test_man_page_lists_every_key)
{
    char *man = read_source_file("doc/ensign.conf.5");
    size_t n;
    const struct config_key *keys = config_keys(&n);
    for (size_t i = 0; i < n; i++) {
        char head[128];
        snprintf(head, sizeof head, "\n.It Cm %s ", keys[i].name);
        ck_assert_msg(strstr(man, head) != NULL, "doc/ensign.conf.5 lacks '.It Cm %s'",
                      keys[i].name);
    }
    free(man);
}
END_TEST

/* The text of KEY's entry in the man page: from ".It Cm KEY " to the next
 * entry or the end of the list. Caller frees. */
static char *man_entry(const char *man, const char *key)
{
    char head[128];
    snprintf(head, sizeof head, "\n.It Cm %s ", key);
    const char *start = strstr(man, head);
    ck_assert_msg(start != NULL, "doc/ensign.conf.5 lacks '.It Cm %s'", key);
    const char *next = strstr(start + 1, "\n.It Cm ");
    const char *end = strstr(start + 1, "\n.El\n");
    if (next == NULL || (end != NULL && end < next))
        next = end;
    ck_assert_ptr_nonnull(next);
    return strndup(start, (size_t)(next - start));
}

START_TEST(test_man_page_says_which_keys_need_a_restart)
{
    char *man = read_source_file("doc/ensign.conf.5");
    size_t n, restart_only = 0;
    const struct config_key *keys = config_keys(&n);
    /* each entry says so exactly when its row is not reloadable */
    for (size_t i = 0; i < n; i++) {
        char *entry = man_entry(man, keys[i].name);
        bool says = strstr(entry, "Changes need a restart.") != NULL;
        ck_assert_msg(says == !keys[i].reloadable, "doc/ensign.conf.5: %s %s", keys[i].name,
                      says ? "says it needs a restart but is reloadable"
                           : "needs a restart but does not say so");
        free(entry);
        restart_only += !keys[i].reloadable;
    }
    /* the list in DESCRIPTION holds exactly those keys */
    const char *from = strstr(man, ".\\\" restart-only keys:");
    const char *to = strstr(man, ".\\\" end of restart-only keys");
    ck_assert_msg(from && to && from < to, "doc/ensign.conf.5 lacks the restart-only list");
    char *list = strndup(from, (size_t)(to - from));
    size_t listed = 0;
    for (const char *p = list; (p = strstr(p, "\n.Cm ")) != NULL; p++)
        listed++;
    ck_assert_uint_eq(listed, restart_only);
    for (size_t i = 0; i < n; i++) {
        char line[128];
        snprintf(line, sizeof line, "\n.Cm %s\n", keys[i].name);
        ck_assert_msg((strstr(list, line) != NULL) == !keys[i].reloadable,
                      "doc/ensign.conf.5's restart-only list and the table disagree on %s",
                      keys[i].name);
    }
    free(list);
    free(man);
}
END_TEST

/* Each key's block in etc/ensign.conf (the comment lines above its
 * default) says "Needs a restart." or "Applied on SIGHUP." as its row. */
START_TEST(test_annotated_file_says_which_keys_need_a_restart)
{
    char path[PATH_MAX];
    char *conf = read_file(installed_conf(path, sizeof path));
    size_t n;
    const struct config_key *keys = config_keys(&n);
    const char *block = conf;
    for (size_t i = 0; i < n; i++) {
        char line[256];
        default_line(&keys[i], line, sizeof line);
        const char *at = strstr(block, line);
        ck_assert_msg(at != NULL, "etc/ensign.conf lacks '%s' after the previous key", line);
        char *text = strndup(block, (size_t)(at - block));
        bool restart = strstr(text, "Needs a restart.") != NULL;
        bool sighup = strstr(text, "Applied on SIGHUP.") != NULL;
        ck_assert_msg(restart != sighup && restart == !keys[i].reloadable,
                      "etc/ensign.conf: %s should say \"%s\"", keys[i].name,
                      keys[i].reloadable ? "Applied on SIGHUP." : "Needs a restart.");
        free(text);
        block = at + strlen(line);
    }
    free(conf);
}
END_TEST

START_TEST(test_annotated_file_gives_defaults)
{
    char path[PATH_MAX], err[512] = "";
    struct config cfg, defaults;
    installed_conf(path, sizeof path);
    ck_assert_msg(config_load(path, &cfg, err, sizeof err) == 0, "%s", err);
    config_set_defaults(&defaults);
    assert_same_settings(&cfg, &defaults);
    config_free(&defaults);
    config_free(&cfg);
}
END_TEST

/* Uncommenting every "# KEY = DEFAULT" line must still give the defaults. */
START_TEST(test_uncommented_defaults_parse)
{
    size_t n;
    const struct config_key *keys = config_keys(&n);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    for (size_t i = 0; i < n; i++) {
        char line[256];
        default_line(&keys[i], line, sizeof line);
        fprintf(mem, "%s\n", line + 2);
    }
    fclose(mem);
    struct config cfg, defaults;
    char err[512] = "";
    int rc = load_text(text, &cfg, err, sizeof err);
    free(text);
    ck_assert_msg(rc == 0, "%s", err);
    config_set_defaults(&defaults);
    assert_same_settings(&cfg, &defaults);
    config_free(&defaults);
    config_free(&cfg);
}
END_TEST

Suite *suite_config(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, test_table_order_and_flags);
    tcase_add_test(tc, test_table_bounds);
    tcase_add_test(tc, test_defaults);
    suite_add_tcase(s, tc);

    tc = tcase_create("parser");
    tcase_add_test(tc, test_empty_file_gives_defaults);
    tcase_add_test(tc, test_every_type_parsed);
    tcase_add_test(tc, test_log_levels_and_waitlist);
    tcase_add_test(tc, test_workers_auto);
    tcase_add_loop_test(tc, test_bool_spellings, 0,
                        (int)(sizeof bool_spellings / sizeof bool_spellings[0]));
    tcase_add_test(tc, test_waitlist_open_closed);
    tcase_add_test(tc, test_bool_defaults_are_on_or_off);
    tcase_add_test(tc, test_quoting_and_comments);
    tcase_add_test(tc, test_unquoted_inner_quotes_and_empty_value);
    tcase_add_test(tc, test_metrics_listen_and_access_log);
    tcase_add_loop_test(tc, test_listen_forms, 0,
                        (int)(sizeof listen_cases / sizeof listen_cases[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("reload");
    tcase_add_test(tc, test_reload_keeps_restart_only_keys);
    tcase_add_test(tc, test_reload_of_reloadable_keys_warns_of_none);
    tcase_add_test(tc, test_reload_changed_list_truncated);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, test_error_messages, 0,
                        (int)(sizeof error_cases / sizeof error_cases[0]));
    tcase_add_test(tc, test_cannot_open);
    tcase_add_test(tc, test_error_without_buffer);
    tcase_add_test(tc, test_error_message_truncated);
    suite_add_tcase(s, tc);

    tc = tcase_create("docs");
    tcase_add_test(tc, test_annotated_file_lists_every_key);
    tcase_add_test(tc, test_man_page_lists_every_key);
    tcase_add_test(tc, test_man_page_says_which_keys_need_a_restart);
    tcase_add_test(tc, test_annotated_file_says_which_keys_need_a_restart);
    tcase_add_test(tc, test_annotated_file_gives_defaults);
    tcase_add_test(tc, test_uncommented_defaults_parse);
    suite_add_tcase(s, tc);
    return s;
}
