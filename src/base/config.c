/*
 * config.c - the configuration key table, the file parser and the strings
 * inside struct config.
 *
 * Owns: the key table returned by config_keys(), the parsing and bounding of
 * every value, and every string in struct config (strdup'ed here, freed by
 * config_free).
 * Invariants: keys[] and slots[] are both indexed by enum key_index, in
 * documentation order; defaults are applied by the same code that parses the
 * file, so the table and the parser cannot drift apart; a failed config_load
 * leaves nothing allocated. Errors name "PATH:LINE: message". A row's
 * reloadable flag is the only list of keys that need a restart: a reload
 * keeps the running value of each key whose flag is false
 * (config_keep_restart_only), and the docs are checked against the flags.
 * Called by ensignd (master: at start, on SIGHUP, and for -t) and ensignctl.
 * tests/unit/test_config.c checks etc/ensign.conf and ensign.conf(5) against
 * the table.
 */
#include "base/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

enum key_index {
    KEY_LISTEN,
    KEY_DATABASE,
    KEY_DATABASE_REPLICA,
    KEY_WORKERS,
    KEY_STATE_DIR,
    KEY_REFRESH_INTERVAL_MS,
    KEY_SNAPSHOT_PACK_MB,
    KEY_SNAPSHOT_CHUNK_FLAGS,
    KEY_USAGE_FLUSH_INTERVAL_MS,
    KEY_RATELIMIT_EVALUATION,
    KEY_RATELIMIT_MANAGEMENT,
    KEY_RATELIMIT_WAITLIST,
    KEY_MAX_BODY_BYTES,
    KEY_MAX_HEADER_BYTES,
    KEY_CORS_ALLOW_ORIGINS,
    KEY_LOG_LEVEL,
    KEY_USER,
    KEY_STATEMENT_TIMEOUT_MS,
    KEY_SHUTDOWN_TIMEOUT_MS,
    KEY_USAGE_SLOTS,
    KEY_RATELIMIT_SLOTS,
    KEY_WAITLIST,
    KEY_RATELIMIT_LOGIN,
    KEY_TRUSTED_PROXIES,
    KEY_WORKER_STALL_MS,
    KEY_REQUEST_TIMEOUT_MS,
    KEY_METRICS_LISTEN,
    KEY_AGENT_LLM_URL,
    KEY_AGENT_LLM_MODEL,
    KEY_AGENT_LLM_KEY_FILE,
    KEY_STREAM_MAX_PER_WORKER,
    KEY_STREAM_MAX_PER_KEY,
    KEY_ACCESS_LOG,
    KEY_ACCESS_LOG_PATH,
    KEY_MAX_CONNECTIONS_PER_WORKER,
    KEY_SESSION_COOKIE_SECURE,
    KEY_HEALTHZ_DATABASE_TIMEOUT_MS,
    KEY_WEBHOOK_ALLOW_PRIVATE,
    KEY_WEBHOOK_RETRY_BASE_MS,
    KEY_STALE_AFTER_DAYS,
    KEY_UNKNOWN_FLAG_SLOTS,
    KEY_UI_DIR,
    KEY_COUNT
};

#define RATE_MAX 100000000LL
#define SLOTS_MIN 1024LL
#define SLOTS_MAX 16777216LL

static const struct config_key keys[KEY_COUNT] = {
    [KEY_LISTEN] = {"listen", CONFIG_LISTEN, "127.0.0.1:8080", 0, 0, true,
                    "Address and port to accept HTTP connections on: HOST:PORT, "
                    "[IPV6-ADDRESS]:PORT, or *:PORT for every address."},
    [KEY_DATABASE] = {"database", CONFIG_STRING, "dbname=ensign", 0, 0, true,
                      "The libpq connection string used to reach PostgreSQL."},
    [KEY_DATABASE_REPLICA] = {"database_replica", CONFIG_STRING, "", 0, 0, true,
                              "A libpq connection string to a streaming replica that the "
                              "refresher reads the configuration from, polling it for "
                              "changes; empty reads database (the primary)."},
    [KEY_WORKERS] = {"workers", CONFIG_WORKERS, "auto", 1, 64, true,
                     "Number of worker processes serving requests; auto means one per "
                     "online CPU (at most 64)."},
    [KEY_STATE_DIR] = {"state_dir", CONFIG_STRING, CONFIG_DEFAULT_STATE_DIR, 0, 0, false,
                       "Directory holding the flag snapshot file, which lets evaluation "
                       "start while the database is unreachable."},
    [KEY_REFRESH_INTERVAL_MS] = {"refresh_interval_ms", CONFIG_INT, "1000", 50, 600000, true,
                                 "Longest time in milliseconds before a configuration "
                                 "change is served; LISTEN/NOTIFY usually makes it faster."},
    [KEY_SNAPSHOT_PACK_MB] = {"snapshot_pack_mb", CONFIG_INT, "1024", 1, 1024, false,
                              "Size in MiB at which a snapshot pack file in state_dir is "
                              "sealed and the next one started; every worker maps each "
                              "pack once, at 1 GiB of address space whatever this size."},
    [KEY_SNAPSHOT_CHUNK_FLAGS] = {"snapshot_chunk_flags", CONFIG_INT, "500", 0, 1000000, true,
                                  "Flags per chunk of the snapshot of an organization of more "
                                  "than twice as many, so that a change rewrites one chunk; 0 "
                                  "keeps every organization whole."},
    [KEY_USAGE_FLUSH_INTERVAL_MS] = {"usage_flush_interval_ms", CONFIG_INT, "5000", 100, 3600000,
                                     true,
                                     "How often, in milliseconds, evaluation counters are "
                                     "written to the database."},
    [KEY_RATELIMIT_EVALUATION] = {"ratelimit_evaluation", CONFIG_INT, "0", 0, RATE_MAX, true,
                                  "Evaluation requests allowed per minute per SDK key; 0 "
                                  "disables the limit (the default: every instance of a "
                                  "fleet may share one key)."},
    [KEY_RATELIMIT_MANAGEMENT] = {"ratelimit_management", CONFIG_INT, "600", 0, RATE_MAX, true,
                                  "Write requests allowed per minute per access token; 0 "
                                  "disables the limit."},
    [KEY_RATELIMIT_WAITLIST] = {"ratelimit_waitlist", CONFIG_INT, "10", 0, RATE_MAX, true,
                                "Waitlist submissions allowed per minute per client address; "
                                "0 disables the limit."},
    [KEY_MAX_BODY_BYTES] = {"max_body_bytes", CONFIG_INT, "1048576", 1024, 104857600, true,
                            "Largest accepted request body in bytes; a larger body gets "
                            "413."},
    [KEY_MAX_HEADER_BYTES] = {"max_header_bytes", CONFIG_INT, "8192", 1024, 65536, true,
                              "Largest accepted block of request headers in bytes; larger "
                              "headers are refused."},
    [KEY_CORS_ALLOW_ORIGINS] = {"cors_allow_origins", CONFIG_STRING, "*", 0, 0, true,
                                "Origins allowed to call /ofrep from a browser: * or a "
                                "space-separated list."},
    [KEY_LOG_LEVEL] = {"log_level", CONFIG_LOGLEVEL, "info", 0, 0, true,
                       "Least severe messages logged: debug, info, warn or error."},
    [KEY_USER] = {"user", CONFIG_STRING, "", 0, 0, false,
                  "When started as root, the user to switch to after binding the socket "
                  "and opening the state directory; empty keeps the current user."},
    [KEY_STATEMENT_TIMEOUT_MS] = {"statement_timeout_ms", CONFIG_INT, "5000", 100, 600000, true,
                                  "Longest time in milliseconds a database statement may "
                                  "run before it is cancelled."},
    [KEY_SHUTDOWN_TIMEOUT_MS] = {"shutdown_timeout_ms", CONFIG_INT, "10000", 100, 600000, true,
                                 "Longest time in milliseconds a graceful stop waits for "
                                 "in-flight requests and the last counter flush."},
    [KEY_USAGE_SLOTS] = {"usage_slots", CONFIG_INT, "65536", SLOTS_MIN, SLOTS_MAX, false,
                         "Number of evaluation-counter slots in shared memory, sized at "
                         "start."},
    [KEY_RATELIMIT_SLOTS] = {"ratelimit_slots", CONFIG_INT, "65536", SLOTS_MIN, SLOTS_MAX, false,
                             "Number of rate-limit buckets in shared memory, sized at "
                             "start."},
    [KEY_WAITLIST] = {"waitlist", CONFIG_BOOL, "on", 0, 0, true,
                      "Whether the waitlist accepts submissions: on or off."},
    [KEY_RATELIMIT_LOGIN] = {"ratelimit_login", CONFIG_INT, "10", 0, RATE_MAX, true,
                             "Session login attempts allowed per minute per client address "
                             "(IPv6: per /64) and, separately, per account; 0 disables the "
                             "limit."},
    [KEY_TRUSTED_PROXIES] = {"trusted_proxies", CONFIG_STRING, "", 0, 0, true,
                             "Space-separated addresses of reverse proxies whose "
                             "X-Forwarded-For header names the client; empty trusts none."},
    [KEY_WORKER_STALL_MS] = {"worker_stall_ms", CONFIG_INT, "5000", 0, 600000, true,
                             "A worker whose heartbeat is older than this many milliseconds "
                             "is killed and replaced; 0 disables the check."},
    [KEY_REQUEST_TIMEOUT_MS] = {"request_timeout_ms", CONFIG_INT, "10000", 100, 600000, true,
                                "Time in milliseconds within which a request's head and body "
                                "must arrive; slower clients are dropped."},
    [KEY_METRICS_LISTEN] = {"metrics_listen", CONFIG_LISTEN_OPT, "", 0, 0, false,
                            "Address and port that alone serve /metrics; empty serves it on "
                            "listen."},
    [KEY_AGENT_LLM_URL] = {"agent_llm_url", CONFIG_STRING, "", 0, 0, true,
                           "An OpenAI-compatible chat-completions endpoint for the agent; "
                           "empty uses the built-in one."},
    [KEY_AGENT_LLM_MODEL] = {"agent_llm_model", CONFIG_STRING, "", 0, 0, true,
                             "The model named in the agent's chat-completions requests; empty "
                             "takes agent_llm_url's fragment, else \"default\"."},
    [KEY_AGENT_LLM_KEY_FILE] = {"agent_llm_key_file", CONFIG_STRING, "", 0, 0, true,
                                "A file whose first line is the API key the agent sends to "
                                "agent_llm_url as a Bearer token; empty sends none."},
    [KEY_STREAM_MAX_PER_WORKER] = {"stream_max_per_worker", CONFIG_INT, "10000", 0, 1000000, true,
                                   "Open change streams allowed per worker (OFREP and "
                                   "organization streams together)."},
    [KEY_STREAM_MAX_PER_KEY] = {"stream_max_per_key", CONFIG_INT, "1000", 0, 1000000, true,
                                "Open change streams allowed per SDK key, access token or "
                                "session on each node."},
    [KEY_ACCESS_LOG] = {"access_log", CONFIG_ACCESSLOG, "management", 0, 0, true,
                        "Which requests get an access line (method, path without query, "
                        "status, duration, bytes): off, management (all but evaluations "
                        "and event streams) or all."},
    [KEY_ACCESS_LOG_PATH] = {"access_log_path", CONFIG_STRING, "", 0, 0, true,
                             "File the access lines are appended to through a buffer, "
                             "reopened on SIGHUP; empty writes them to standard error."},
    [KEY_MAX_CONNECTIONS_PER_WORKER] = {"max_connections_per_worker", CONFIG_INT, "10000", 16,
                                        1000000, true,
                                        "Open connections a worker serves at once; beyond it, "
                                        "new connections wait until one closes."},
    [KEY_SESSION_COOKIE_SECURE] = {"session_cookie_secure", CONFIG_BOOL, "off", 0, 0, true,
                                   "on adds Secure to the session cookie (browsers then send it "
                                   "over HTTPS only, as behind a TLS proxy); off leaves it out."},
    [KEY_HEALTHZ_DATABASE_TIMEOUT_MS] = {"healthz_database_timeout_ms", CONFIG_INT, "60000", 0,
                                         86400000, true,
                                         "After this many milliseconds without reaching the "
                                         "database, /v1/healthz answers 503; 0 disables the "
                                         "check."},
    [KEY_WEBHOOK_ALLOW_PRIVATE] = {"webhook_allow_private", CONFIG_BOOL, "off", 0, 0, true,
                                   "on lets webhooks reach loopback, private, link-local, "
                                   "unique-local, CGNAT and unspecified addresses (tests, "
                                   "closed networks); off refuses them at creation and at "
                                   "every delivery."},
    [KEY_WEBHOOK_RETRY_BASE_MS] = {"webhook_retry_base_ms", CONFIG_INT, "30000", 10, 3600000, true,
                                   "First retry delay of a failed webhook delivery; each "
                                   "further retry waits twice as long (with jitter, at most an "
                                   "hour) until the delivery is 24 hours old."},
    [KEY_STALE_AFTER_DAYS] = {"stale_after_days", CONFIG_INT, "30", 1, 36500, true,
                              "Days after which a flag never evaluated since its creation, "
                              "not evaluated since, or fully rolled out (every enabled "
                              "environment without rules, serving one variant) is stale."},
    [KEY_UNKNOWN_FLAG_SLOTS] = {"unknown_flag_slots", CONFIG_INT, "4096", SLOTS_MIN, SLOTS_MAX,
                                false,
                                "Number of shared-memory slots counting the unknown flag keys "
                                "SDKs ask for (per environment, key and hour), sized at "
                                "start."},
    [KEY_UI_DIR] = {"ui_dir", CONFIG_STRING, CONFIG_DEFAULT_UI_DIR, 0, 0, true,
                    "Directory of the dashboard's files, served under /ui/ and read at start "
                    "and on reload; a missing directory serves no dashboard."},
};

/* Where each key's value lives in struct config, and how wide it is. */
enum slot_kind { SLOT_STRING, SLOT_INT, SLOT_LLONG, SLOT_BOOL, SLOT_LISTEN };

struct key_slot {
    size_t offset;
    enum slot_kind kind;
};

#define SLOT(field, kind)                                                                          \
    {                                                                                              \
        offsetof(struct config, field), kind                                                       \
    }

static const struct key_slot slots[KEY_COUNT] = {
    [KEY_LISTEN] = SLOT(listen, SLOT_LISTEN),
    [KEY_DATABASE] = SLOT(database, SLOT_STRING),
    [KEY_DATABASE_REPLICA] = SLOT(database_replica, SLOT_STRING),
    [KEY_WORKERS] = SLOT(workers, SLOT_INT),
    [KEY_STATE_DIR] = SLOT(state_dir, SLOT_STRING),
    [KEY_REFRESH_INTERVAL_MS] = SLOT(refresh_interval_ms, SLOT_INT),
    [KEY_SNAPSHOT_PACK_MB] = SLOT(snapshot_pack_mb, SLOT_INT),
    [KEY_SNAPSHOT_CHUNK_FLAGS] = SLOT(snapshot_chunk_flags, SLOT_INT),
    [KEY_USAGE_FLUSH_INTERVAL_MS] = SLOT(usage_flush_interval_ms, SLOT_INT),
    [KEY_RATELIMIT_EVALUATION] = SLOT(ratelimit_evaluation, SLOT_INT),
    [KEY_RATELIMIT_MANAGEMENT] = SLOT(ratelimit_management, SLOT_INT),
    [KEY_RATELIMIT_WAITLIST] = SLOT(ratelimit_waitlist, SLOT_INT),
    [KEY_MAX_BODY_BYTES] = SLOT(max_body_bytes, SLOT_LLONG),
    [KEY_MAX_HEADER_BYTES] = SLOT(max_header_bytes, SLOT_INT),
    [KEY_CORS_ALLOW_ORIGINS] = SLOT(cors_allow_origins, SLOT_STRING),
    [KEY_LOG_LEVEL] = SLOT(log_level, SLOT_INT),
    [KEY_USER] = SLOT(user, SLOT_STRING),
    [KEY_STATEMENT_TIMEOUT_MS] = SLOT(statement_timeout_ms, SLOT_INT),
    [KEY_SHUTDOWN_TIMEOUT_MS] = SLOT(shutdown_timeout_ms, SLOT_INT),
    [KEY_USAGE_SLOTS] = SLOT(usage_slots, SLOT_INT),
    [KEY_RATELIMIT_SLOTS] = SLOT(ratelimit_slots, SLOT_INT),
    [KEY_WAITLIST] = SLOT(waitlist_open, SLOT_BOOL),
    [KEY_RATELIMIT_LOGIN] = SLOT(ratelimit_login, SLOT_INT),
    [KEY_TRUSTED_PROXIES] = SLOT(trusted_proxies, SLOT_STRING),
    [KEY_WORKER_STALL_MS] = SLOT(worker_stall_ms, SLOT_INT),
    [KEY_REQUEST_TIMEOUT_MS] = SLOT(request_timeout_ms, SLOT_INT),
    [KEY_METRICS_LISTEN] = SLOT(metrics_listen, SLOT_STRING),
    [KEY_AGENT_LLM_URL] = SLOT(agent_llm_url, SLOT_STRING),
    [KEY_AGENT_LLM_MODEL] = SLOT(agent_llm_model, SLOT_STRING),
    [KEY_AGENT_LLM_KEY_FILE] = SLOT(agent_llm_key_file, SLOT_STRING),
    [KEY_STREAM_MAX_PER_WORKER] = SLOT(stream_max_per_worker, SLOT_INT),
    [KEY_STREAM_MAX_PER_KEY] = SLOT(stream_max_per_key, SLOT_INT),
    [KEY_ACCESS_LOG] = SLOT(access_log, SLOT_INT),
    [KEY_ACCESS_LOG_PATH] = SLOT(access_log_path, SLOT_STRING),
    [KEY_MAX_CONNECTIONS_PER_WORKER] = SLOT(max_connections_per_worker, SLOT_INT),
    [KEY_SESSION_COOKIE_SECURE] = SLOT(session_cookie_secure, SLOT_BOOL),
    [KEY_HEALTHZ_DATABASE_TIMEOUT_MS] = SLOT(healthz_database_timeout_ms, SLOT_INT),
    [KEY_WEBHOOK_ALLOW_PRIVATE] = SLOT(webhook_allow_private, SLOT_BOOL),
    [KEY_WEBHOOK_RETRY_BASE_MS] = SLOT(webhook_retry_base_ms, SLOT_INT),
    [KEY_STALE_AFTER_DAYS] = SLOT(stale_after_days, SLOT_INT),
    [KEY_UNKNOWN_FLAG_SLOTS] = SLOT(unknown_flag_slots, SLOT_INT),
    [KEY_UI_DIR] = SLOT(ui_dir, SLOT_STRING),
};

static const char *const log_level_names[] = {
    [LOG_LEVEL_DEBUG] = "debug",
    [LOG_LEVEL_INFO] = "info",
    [LOG_LEVEL_WARN] = "warn",
    [LOG_LEVEL_ERROR] = "error",
};

const struct config_key *config_keys(size_t *count)
{
    if (count)
        *count = KEY_COUNT;
    return keys;
}

__attribute__((format(printf, 3, 4))) static int fail(char *msg, size_t msglen, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (msg && msglen > 0)
        vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- storing values into struct config ---- */

static void *slot_address(struct config *cfg, enum key_index idx)
{
    return (char *)cfg + slots[idx].offset;
}

static int replace_string(char **field, const char *value, char *msg, size_t msglen)
{
    char *copy = strdup(value);
    if (!copy)
        return fail(msg, msglen, "out of memory");
    free(*field);
    *field = copy;
    return 0;
}

static void store_number(struct config *cfg, enum key_index idx, long long n)
{
    void *field = slot_address(cfg, idx);
    switch (slots[idx].kind) {
    case SLOT_LLONG:
        *(long long *)field = n;
        break;
    case SLOT_BOOL:
        *(bool *)field = n != 0;
        break;
    default:
        *(int *)field = (int)n;
        break;
    }
}

/* ---- value parsers: each writes a message without location on error ---- */

static bool is_decimal(const char *text)
{
    const char *p = text[0] == '-' ? text + 1 : text;
    if (*p == '\0')
        return false;
    for (; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    return true;
}

static int parse_bounded(const struct config_key *key, const char *value, long long *out, char *msg,
                         size_t msglen)
{
    if (!is_decimal(value))
        return fail(msg, msglen, "%s: \"%s\" is not an integer", key->name, value);
    errno = 0;
    long long n = strtoll(value, NULL, 10);
    if (errno == ERANGE || n < key->min || n > key->max)
        return fail(msg, msglen, "%s: %s is out of range (%lld..%lld)", key->name, value, key->min,
                    key->max);
    *out = n;
    return 0;
}

static long long online_cpus(const struct config_key *key)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < key->min)
        return key->min;
    if (n > key->max)
        return key->max;
    return n;
}

static int parse_workers(const struct config_key *key, const char *value, long long *out, char *msg,
                         size_t msglen)
{
    if (strcmp(value, "auto") == 0) {
        *out = online_cpus(key);
        return 0;
    }
    if (!is_decimal(value))
        return fail(msg, msglen, "%s: \"%s\" is neither \"auto\" nor an integer", key->name, value);
    return parse_bounded(key, value, out, msg, msglen);
}

static int parse_log_level(const char *value, long long *out, char *msg, size_t msglen)
{
    for (size_t i = 0; i < sizeof log_level_names / sizeof log_level_names[0]; i++) {
        if (strcmp(value, log_level_names[i]) == 0) {
            *out = (long long)i;
            return 0;
        }
    }
    return fail(msg, msglen, "log_level: \"%s\" is not one of debug, info, warn, error", value);
}

/* A switch's own words for on and off from before on/off was the one
 * spelling, still read (a table apart from keys[], whose rows all have the
 * same fields). */
static const struct {
    int key;
    const char *on, *off;
} old_switch_words[] = {{KEY_WAITLIST, "open", "closed"}};

/* A switch: on or off, the one documented spelling. yes/no, true/false,
 * 1/0 and the key's own old pair (old_switch_words) are read too, so
 * files written before on/off still load. */
static int parse_bool(const struct config_key *key, const char *value, long long *out, char *msg,
                      size_t msglen)
{
    static const char *const spellings[][2] = {
        {"on", "off"}, {"yes", "no"}, {"true", "false"}, {"1", "0"}};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        for (int word = 0; word < 2; word++) {
            if (strcmp(value, spellings[i][word]) == 0) {
                *out = word == 0;
                return 0;
            }
        }
    }
    for (size_t i = 0; i < sizeof old_switch_words / sizeof old_switch_words[0]; i++) {
        if (&keys[old_switch_words[i].key] != key)
            continue;
        if (strcmp(value, old_switch_words[i].on) == 0 ||
            strcmp(value, old_switch_words[i].off) == 0) {
            *out = strcmp(value, old_switch_words[i].on) == 0;
            return 0;
        }
    }
    return fail(msg, msglen, "%s: \"%s\" is not one of on, off", key->name, value);
}

/* access_log: off | management | all; "on" stays an alias of management
 * for configuration files written before the three values. */
static int parse_access_log(const char *value, long long *out, char *msg, size_t msglen)
{
    static const char *const names[] = {
        [CONFIG_ACCESS_LOG_OFF] = "off",
        [CONFIG_ACCESS_LOG_MANAGEMENT] = "management",
        [CONFIG_ACCESS_LOG_ALL] = "all",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(value, names[i]) == 0) {
            *out = (long long)i;
            return 0;
        }
    }
    if (strcmp(value, "on") == 0) {
        *out = CONFIG_ACCESS_LOG_MANAGEMENT;
        return 0;
    }
    return fail(msg, msglen, "access_log: \"%s\" is not one of off, management, all", value);
}

/* ---- listen: host:port, [v6]:port, *:port ---- */

struct listen_addr {
    char host[256]; /* without brackets; empty for "*" */
    bool any;
    int port;
};

static bool parse_port(const char *text, int *port)
{
    if (*text == '\0' || strlen(text) > 5)
        return false;
    for (const char *p = text; *p; p++)
        if (!isdigit((unsigned char)*p))
            return false;
    long n = strtol(text, NULL, 10);
    if (n < 1 || n > 65535)
        return false;
    *port = (int)n;
    return true;
}

static bool is_host_name(const char *host)
{
    if (*host == '\0')
        return false;
    for (const char *p = host; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-_", *p))
            return false;
    return true;
}

static bool is_ipv6(const char *text)
{
    struct in6_addr addr;
    return inet_pton(AF_INET6, text, &addr) == 1;
}

/* Splits TEXT into host and port text; false when the form is wrong. */
static bool split_listen(const char *text, struct listen_addr *out, const char **port_text)
{
    const char *colon;
    size_t host_len;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            return false;
        colon = close + 1;
        text++;
        host_len = (size_t)(close - text);
    } else {
        colon = strrchr(text, ':');
        if (!colon)
            return false;
        host_len = (size_t)(colon - text);
    }
    if (host_len == 0 || host_len >= sizeof out->host)
        return false;
    memcpy(out->host, text, host_len);
    out->host[host_len] = '\0';
    *port_text = colon + 1;
    return true;
}

static int parse_listen(const char *value, struct listen_addr *out, char *msg, size_t msglen)
{
    const char *port_text;
    bool bracketed = value[0] == '[';
    memset(out, 0, sizeof *out);
    if (!split_listen(value, out, &port_text))
        return fail(msg, msglen, "listen: \"%s\" is not HOST:PORT, [ADDRESS]:PORT or *:PORT",
                    value);
    out->any = !bracketed && strcmp(out->host, "*") == 0;
    bool host_ok = bracketed ? is_ipv6(out->host) : (out->any || is_host_name(out->host));
    if (!host_ok)
        return fail(msg, msglen, "listen: \"%s\" has an invalid host", value);
    if (!parse_port(port_text, &out->port))
        return fail(msg, msglen, "listen: \"%s\" has an invalid port (1..65535)", value);
    if (out->any)
        out->host[0] = '\0';
    return 0;
}

static int store_listen(struct config *cfg, const char *value, char *msg, size_t msglen)
{
    struct listen_addr addr;
    if (parse_listen(value, &addr, msg, msglen) < 0)
        return -1;
    char *text = strdup(value);
    char *host = addr.any ? NULL : strdup(addr.host);
    if (!text || (!addr.any && !host)) {
        free(text);
        free(host);
        return fail(msg, msglen, "out of memory");
    }
    free(cfg->listen);
    free(cfg->listen_host);
    cfg->listen = text;
    cfg->listen_host = host;
    cfg->listen_port = addr.port;
    return 0;
}

int config_parse_address(const char *text, char *host, size_t hostlen, int *port)
{
    struct listen_addr addr;
    char msg[8];
    if (parse_listen(text, &addr, msg, sizeof msg) < 0 || strlen(addr.host) >= hostlen)
        return -1;
    snprintf(host, hostlen, "%s", addr.any ? "" : addr.host);
    *port = addr.port;
    return 0;
}

/* An address that may be empty (metrics_listen): checked like listen,
 * stored as written. */
static int store_optional_listen(char **field, const char *name, const char *value, char *msg,
                                 size_t msglen)
{
    struct listen_addr addr;
    if (value[0] != '\0' && parse_listen(value, &addr, msg, msglen) < 0) {
        if (strncmp(msg, "listen:", 7) == 0) {
            char detail[256];
            snprintf(detail, sizeof detail, "%s", msg + 7);
            fail(msg, msglen, "%s:%s", name, detail);
        }
        return -1;
    }
    return replace_string(field, value, msg, msglen);
}

/* ---- applying one key = value ---- */

static int parse_number(enum key_index idx, const char *value, long long *n, char *msg,
                        size_t msglen)
{
    const struct config_key *key = &keys[idx];
    switch (key->type) {
    case CONFIG_INT:
        return parse_bounded(key, value, n, msg, msglen);
    case CONFIG_WORKERS:
        return parse_workers(key, value, n, msg, msglen);
    case CONFIG_LOGLEVEL:
        return parse_log_level(value, n, msg, msglen);
    case CONFIG_BOOL:
        return parse_bool(key, value, n, msg, msglen);
    case CONFIG_ACCESSLOG:
        return parse_access_log(value, n, msg, msglen);
    default:
        return fail(msg, msglen, "%s: not a numeric key", key->name);
    }
}

static int apply_value(struct config *cfg, enum key_index idx, const char *value, char *msg,
                       size_t msglen)
{
    switch (keys[idx].type) {
    case CONFIG_STRING:
        return replace_string(slot_address(cfg, idx), value, msg, msglen);
    case CONFIG_LISTEN:
        return store_listen(cfg, value, msg, msglen);
    case CONFIG_LISTEN_OPT:
        return store_optional_listen(slot_address(cfg, idx), keys[idx].name, value, msg, msglen);
    default: {
        long long n;
        if (parse_number(idx, value, &n, msg, msglen) < 0)
            return -1;
        store_number(cfg, idx, n);
        return 0;
    }
    }
}

static int find_key(const char *name)
{
    for (int i = 0; i < KEY_COUNT; i++)
        if (strcmp(keys[i].name, name) == 0)
            return i;
    return -1;
}

void config_set_defaults(struct config *cfg)
{
    char msg[256];
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < KEY_COUNT; i++) {
        if (apply_value(cfg, (enum key_index)i, keys[i].default_value, msg, sizeof msg) < 0) {
            /* Only out of memory: every default is valid (unit-tested). */
            fprintf(stderr, "config: default of %s: %s\n", keys[i].name, msg);
            abort();
        }
    }
}

void config_free(struct config *cfg)
{
    if (!cfg)
        return;
    free(cfg->path);
    free(cfg->listen);
    free(cfg->listen_host);
    for (int i = 0; i < KEY_COUNT; i++)
        if (slots[i].kind == SLOT_STRING)
            free(*(char **)slot_address(cfg, (enum key_index)i));
    memset(cfg, 0, sizeof *cfg);
}

/* ---- a reload: restart-only keys keep their running values ---- */

static bool same_value(const struct config *a, const struct config *b, enum key_index idx)
{
    const void *x = (const char *)a + slots[idx].offset, *y = (const char *)b + slots[idx].offset;
    switch (slots[idx].kind) {
    case SLOT_STRING:
        return strcmp(*(char *const *)x, *(char *const *)y) == 0;
    case SLOT_LISTEN:
        return strcmp(a->listen, b->listen) == 0;
    case SLOT_LLONG:
        return *(const long long *)x == *(const long long *)y;
    case SLOT_BOOL:
        return *(const bool *)x == *(const bool *)y;
    default:
        return *(const int *)x == *(const int *)y;
    }
}

/* *field becomes a copy of VALUE (which may be NULL); -1 when out of memory. */
static int copy_string(char **field, const char *value)
{
    char *copy = NULL;
    if (value && !(copy = strdup(value)))
        return -1;
    free(*field);
    *field = copy;
    return 0;
}

/* FRESH takes a copy of RUNNING's value of key IDX; -1 when out of memory. */
static int take_value(struct config *fresh, const struct config *running, enum key_index idx)
{
    void *to = slot_address(fresh, idx);
    const void *from = (const char *)running + slots[idx].offset;
    switch (slots[idx].kind) {
    case SLOT_STRING:
        return copy_string(to, *(char *const *)from);
    case SLOT_LISTEN:
        fresh->listen_port = running->listen_port;
        return copy_string(&fresh->listen, running->listen) < 0 ||
                       copy_string(&fresh->listen_host, running->listen_host) < 0
                   ? -1
                   : 0;
    case SLOT_LLONG:
        *(long long *)to = *(const long long *)from;
        return 0;
    case SLOT_BOOL:
        *(bool *)to = *(const bool *)from;
        return 0;
    default:
        *(int *)to = *(const int *)from;
        return 0;
    }
}

/* Appends ", NAME" (or NAME first) to the list; never overflows. */
static void list_name(char *list, size_t len, size_t *used, const char *name)
{
    if (list == NULL || *used >= len)
        return;
    int n = snprintf(list + *used, len - *used, "%s%s", *used ? ", " : "", name);
    *used += n > 0 ? (size_t)n : 0;
}

int config_keep_restart_only(struct config *fresh, const struct config *running, char *changed,
                             size_t changedlen)
{
    size_t used = 0;
    int count = 0;
    if (changed && changedlen > 0)
        changed[0] = '\0';
    for (int i = 0; i < KEY_COUNT; i++) {
        if (keys[i].reloadable || same_value(fresh, running, (enum key_index)i))
            continue;
        list_name(changed, changedlen, &used, keys[i].name);
        count++;
        if (take_value(fresh, running, (enum key_index)i) < 0)
            return -1;
    }
    return count;
}

/* ---- the line syntax ---- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    *end = '\0';
    return s;
}

static bool is_blank_or_comment(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0' || *s == '#';
}

/* Unescapes a "..." value in place; S points at the opening quote. */
static int unquote(char *s, char **value, char *msg, size_t msglen)
{
    char *in = s + 1, *out = s;
    for (; *in && *in != '"'; in++) {
        if (*in == '\\') {
            in++;
            if (*in == '\0')
                break;
            if (*in != '"' && *in != '\\')
                return fail(msg, msglen, "invalid escape \"\\%.1s\" in quoted value", in);
        }
        *out++ = *in;
    }
    if (*in != '"')
        return fail(msg, msglen, "unterminated quoted value");
    char *rest = in + 1;
    *out = '\0';
    if (!is_blank_or_comment(rest))
        return fail(msg, msglen, "unexpected text after closing quote");
    *value = s;
    return 0;
}

/* Parses the text after '=': a quoted value, or bare text up to a comment. */
static int parse_value(char *s, char **value, char *msg, size_t msglen)
{
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '"')
        return unquote(s, value, msg, msglen);
    char *hash = strchr(s, '#');
    if (hash)
        *hash = '\0';
    *value = trim(s);
    return 0;
}

/*
 * Splits LINE into key and value; *key is NULL for a blank or comment line.
 * Modifies LINE in place.
 */
static int split_line(char *line, char **key, char **value, char *msg, size_t msglen)
{
    size_t split = strcspn(line, "#=");
    *key = NULL;
    if (line[split] != '=') {
        line[split] = '\0';
        char *word = trim(line);
        if (*word == '\0')
            return 0;
        return fail(msg, msglen, "missing \"=\" after \"%s\"", word);
    }
    line[split] = '\0';
    *key = trim(line);
    if (**key == '\0')
        return fail(msg, msglen, "missing key before \"=\"");
    return parse_value(line + split + 1, value, msg, msglen);
}

/* ---- reading a file ---- */

struct load_state {
    struct config *cfg;
    unsigned first_line[KEY_COUNT]; /* 0 when not yet set */
};

static int load_line(struct load_state *st, char *line, unsigned lineno, char *msg, size_t msglen)
{
    char *name = NULL, *value = NULL;
    line[strcspn(line, "\r\n")] = '\0';
    if (split_line(line, &name, &value, msg, msglen) < 0)
        return -1;
    if (!name)
        return 0;
    int idx = find_key(name);
    if (idx < 0)
        return fail(msg, msglen, "unknown key \"%s\"", name);
    if (st->first_line[idx])
        return fail(msg, msglen, "duplicate key \"%s\" (first set on line %u)", name,
                    st->first_line[idx]);
    st->first_line[idx] = lineno;
    return apply_value(st->cfg, (enum key_index)idx, value, msg, msglen);
}

static int load_stream(FILE *f, struct config *cfg, const char *path, char *err, size_t errlen)
{
    struct load_state st = {.cfg = cfg};
    char *line = NULL, msg[512];
    size_t cap = 0;
    unsigned lineno = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        lineno++;
        if (load_line(&st, line, lineno, msg, sizeof msg) < 0)
            rc = fail(err, errlen, "%s:%u: %s", path, lineno, msg);
    }
    if (rc == 0 && ferror(f))
        rc = fail(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    free(line);
    return rc;
}

int config_load(const char *path, struct config *cfg, char *err, size_t errlen)
{
    config_set_defaults(cfg);
    FILE *f = fopen(path, "r");
    if (!f) {
        fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        config_free(cfg);
        return -1;
    }
    int rc = load_stream(f, cfg, path, err, errlen);
    fclose(f);
    if (rc == 0 && !(cfg->path = strdup(path)))
        rc = fail(err, errlen, "%s: out of memory", path);
    if (rc < 0)
        config_free(cfg);
    return rc;
}
