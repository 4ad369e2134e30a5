/*
 * config.h - the configuration file: one table of keys drives the parser,
 * `ensignd -t`, the annotated etc/ensign.conf and ensign.conf(5).
 *
 * Owns struct config (every setting, parsed and bounded) and the key table.
 * The file format is `key = value` lines, `#` comments, optional "..."
 * quoting. Unknown keys and bad values are errors naming FILE:LINE.
 * A row's `reloadable` decides what a reload keeps: config_keep_restart_only
 * gives a freshly read config the running value of every other key.
 * Called by ensignd (master, at start and on SIGHUP) and ensignctl.
 */
#ifndef ENSIGN_CONFIG_H
#define ENSIGN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* Paths come from configure (--sysconfdir, --localstatedir), passed by the
 * build as SYSCONFDIR and LOCALSTATEDIR; a build without them gets the
 * Debian package's layout. */
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/var"
#endif
#define CONFIG_DEFAULT_PATH SYSCONFDIR "/ensign/ensign.conf"
#define CONFIG_DEFAULT_STATE_DIR LOCALSTATEDIR "/lib/ensign"
#ifndef DATADIR
#define DATADIR "/usr/share"
#endif
#define CONFIG_DEFAULT_UI_DIR DATADIR "/ensign/ui"

enum config_type {
    CONFIG_STRING,     /* any string */
    CONFIG_INT,        /* integer within [min, max] */
    CONFIG_LISTEN,     /* host:port, [v6]:port, *:port */
    CONFIG_WORKERS,    /* "auto" or integer within [min, max] */
    CONFIG_LOGLEVEL,   /* debug | info | warn | error */
    CONFIG_BOOL,       /* on | off; also yes/no, true/false, 1/0 and the row's old pair */
    CONFIG_LISTEN_OPT, /* like CONFIG_LISTEN, or empty */
    CONFIG_ACCESSLOG   /* off | management | all (on: management) */
};

/* access_log: which requests get an access line. */
enum config_access_log {
    CONFIG_ACCESS_LOG_OFF,
    CONFIG_ACCESS_LOG_MANAGEMENT, /* every request but evaluations and event streams */
    CONFIG_ACCESS_LOG_ALL
};

struct config_key {
    const char *name;
    enum config_type type;
    const char *default_value; /* as written in the file */
    long long min, max;        /* bounds for CONFIG_INT and CONFIG_WORKERS */
    bool reloadable;           /* applied on SIGHUP; else kept until a restart */
    const char *help;          /* one sentence, used by etc/ensign.conf and the man page */
};

struct config {
    char *path; /* the file this was read from */

    /* listen */
    char *listen;      /* as written */
    char *listen_host; /* NULL or "" means every address ("*") */
    int listen_port;

    char *database;
    char *database_replica; /* "": the refresher reads database */
    int workers;            /* resolved: "auto" becomes the CPU count */
    char *state_dir;
    int refresh_interval_ms;
    int snapshot_pack_mb;     /* seal a snapshot pack at this many MiB */
    int snapshot_chunk_flags; /* flags per chunk of a large organization; 0: none */
    int usage_flush_interval_ms;
    int ratelimit_evaluation;
    int ratelimit_management;
    int ratelimit_waitlist;
    long long max_body_bytes;
    int max_header_bytes;
    char *cors_allow_origins;
    int log_level; /* enum log_level */
    char *user;
    int statement_timeout_ms;
    int shutdown_timeout_ms;
    int usage_slots;
    int ratelimit_slots;
    bool waitlist_open;
    int ratelimit_login;
    char *trusted_proxies;
    int worker_stall_ms;
    int request_timeout_ms;
    char *metrics_listen;
    char *agent_llm_url;
    char *agent_llm_model;    /* "": agent_llm_url's fragment, else "default" */
    char *agent_llm_key_file; /* "": no API key */
    int stream_max_per_worker;
    int stream_max_per_key;
    int access_log;        /* enum config_access_log */
    char *access_log_path; /* "" or NULL: stderr; else a file written through a buffer */
    int max_connections_per_worker;
    bool session_cookie_secure;      /* the session cookie carries Secure */
    int healthz_database_timeout_ms; /* 503 after this long without the database; 0: never */
    char *ui_dir;                    /* the dashboard's files (http/ui_files.h) */
    bool webhook_allow_private;      /* webhooks may reach private and loopback addresses */
    int webhook_retry_base_ms;       /* first retry delay of a failed webhook delivery */
    int stale_after_days;            /* a flag's stale clocks (flag list and detail) */
    int unknown_flag_slots;          /* the unknown-key counters in shared memory */
};

/* The key table, in documentation order. */
const struct config_key *config_keys(size_t *count);

/* Fills *cfg with every default. Caller owns and calls config_free. */
void config_set_defaults(struct config *cfg);

/*
 * Reads PATH into *cfg (defaults first, then the file). On error returns -1
 * and writes "PATH:LINE: message" (or "PATH: message" when the file cannot
 * be opened) into err; *cfg is then freed and must not be used.
 */
int config_load(const char *path, struct config *cfg, char *err, size_t errlen);

void config_free(struct config *cfg);

/*
 * For a reload: FRESH takes a copy of RUNNING's value of every key whose
 * row is not reloadable and whose value differs; RUNNING is not changed.
 * Writes the names of those keys, ", "-separated, into changed ("" when
 * none; cut short when it does not fit) and returns how many there were,
 * or -1 when out of memory (FRESH then stays valid for config_free).
 */
int config_keep_restart_only(struct config *fresh, const struct config *running, char *changed,
                             size_t changedlen);

/*
 * Splits a listen-style address ("HOST:PORT", "[V6]:PORT", "*:PORT") into
 * host ("" for "*") and port; -1 when it is not one. For metrics_listen,
 * which is stored as written.
 */
int config_parse_address(const char *text, char *host, size_t hostlen, int *port);

#endif
