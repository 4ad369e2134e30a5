/*
 * ensignctl.c - the administration tool: schema migrations and the
 * bootstrap of users, organizations and access tokens.
 *
 *     ensignctl [-c FILE] COMMAND [ARGS]
 *
 * The command line, its output and its exit statuses are the contract of
 * ensignctl(1): on success a command prints only its
 * result on stdout; errors go to stderr; the exit status is 0, 1 for a
 * runtime error (configuration, database, duplicate, unknown user) or 2 for
 * a usage error (detected before the configuration or database is touched).
 * Plaintext tokens and passwords are never stored or logged: tokens are
 * printed once and stored as SHA-256 digests (token.h), passwords as scrypt
 * hashes (password.h). SQL is constant with $n parameters (dbsync.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/auditverify.h"
#include "build_config.h"
#include "base/config.h"
#include "db/dbsync.h"
#include "db/migrate.h"
#include "db/password.h"
#include "base/token.h"

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

#define NAME_MAX_CHARS 200
#define USERNAME_MAX_CHARS 39
#define EMAIL_MAX_BYTES 320
#define EMAIL_LOCAL_MAX_BYTES 64
#define KEY_MAX_CHARS 63
#define EXPIRES_MAX_DAYS 36500

/* Personal tokens without --full may read everything and write nothing. */
static const char scopes_read_only[] =
    "{\"flags\":\"read\",\"orgs\":\"read\",\"projects\":\"read\",\"members\":\"read\","
    "\"audit\":\"read\",\"tokens\":\"read\",\"notifications\":\"read\"}";
static const char scopes_full[] =
    "{\"flags\":\"write\",\"orgs\":\"write\",\"projects\":\"write\",\"members\":\"write\","
    "\"audit\":\"write\",\"tokens\":\"write\",\"notifications\":\"write\"}";

static const char usage_text[] =
    "usage: ensignctl [-c FILE] COMMAND [ARGS]\n"
    "       ensignctl -h | -V\n"
    "\n"
    "commands:\n"
    "  migrate\n"
    "  user create --email EMAIL --name NAME [--username USERNAME] [--password-stdin]\n"
    "  org create --name NAME [--slug SLUG] --owner EMAIL\n"
    "  token create --user EMAIL --name NAME [--full] [--expires-in-days DAYS]\n"
    "  token create --org SLUG --name NAME [--expires-in-days DAYS]\n"
    "  audit verify --org SLUG\n"
    "  internal-key create --name NAME\n"
    "\n"
    "options:\n"
    "  -c FILE  configuration file (default " CONFIG_DEFAULT_PATH ")\n"
    "  -h       show this help\n"
    "  -V       show the version\n";

/* ---- messages ---- */

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ensignctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ensignctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'ensignctl -h' for help.\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

/* ---- validation of arguments ---- */

/* Characters of a UTF-8 string (continuation bytes not counted). */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

static bool has_control_chars(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7F)
            return true;
    return false;
}

static bool valid_name(const char *name)
{
    size_t n = utf8_chars(name);
    return n >= 1 && n <= NAME_MAX_CHARS && !has_control_chars(name);
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* ^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$, 1 to 63 characters. */
static bool valid_slug(const char *slug)
{
    size_t len = strlen(slug);
    if (len < 1 || len > KEY_MAX_CHARS)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_lower_alnum(slug[i]) && !(slug[i] == '-' && i > 0 && i + 1 < len))
            return false;
    return true;
}

/* Letters, digits and inner hyphens, 1 to 39 characters (as the schema). */
static bool valid_username(const char *username)
{
    size_t len = strlen(username);
    if (len < 1 || len > USERNAME_MAX_CHARS)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(username[i]) && !(username[i] == '-' && i > 0 && i + 1 < len))
            return false;
    return true;
}

static bool valid_email_local(const char *local, size_t len)
{
    if (len < 1 || len > EMAIL_LOCAL_MAX_BYTES || local[0] == '.' || local[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (strchr(" \"(),:;<>[\\]@", local[i]) || (local[i] == '.' && local[i + 1] == '.'))
            return false;
    return true;
}

/* Dot-separated labels of letters, digits, hyphens (or UTF-8), at least two. */
static bool valid_email_domain(const char *domain)
{
    size_t len = strlen(domain), label = 0;
    bool dotted = false;
    for (size_t i = 0; i < len; i++) {
        char c = domain[i];
        if (c == '.') {
            if (label == 0 || domain[i - 1] == '-')
                return false;
            dotted = true;
            label = 0;
        } else if (is_alnum(c) || (unsigned char)c >= 0x80 || (c == '-' && label > 0)) {
            label++;
        } else {
            return false;
        }
    }
    return dotted && label > 0 && domain[len - 1] != '-';
}

/* A practical address check: local@domain.tld, no spaces or controls. */
static bool valid_email(const char *email)
{
    size_t len = strlen(email);
    const char *at = strchr(email, '@');
    if (len < 3 || len > EMAIL_MAX_BYTES || at == NULL || has_control_chars(email))
        return false;
    return valid_email_local(email, (size_t)(at - email)) && valid_email_domain(at + 1);
}

/* The slug derived from a name: lowercase, each run of characters outside
 * [a-z0-9] becomes one '-', cut to 63, leading and trailing '-' removed. */
static void derive_slug(const char *name, char out[KEY_MAX_CHARS + 1])
{
    size_t len = 0;
    bool pending_dash = false;
    for (const char *p = name; *p && len < KEY_MAX_CHARS; p++) {
        char c = (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : *p;
        if (!is_lower_alnum(c)) {
            pending_dash = len > 0;
            continue;
        }
        if (pending_dash)
            out[len++] = '-';
        pending_dash = false;
        if (len < KEY_MAX_CHARS)
            out[len++] = c;
    }
    while (len > 0 && out[len - 1] == '-')
        len--;
    out[len] = '\0';
}

static bool parse_days(const char *text, long *days)
{
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0 || value > EXPIRES_MAX_DAYS)
        return false;
    *days = value;
    return true;
}

/* ---- the database ---- */

struct session {
    struct config cfg;
    PGconn *conn;
};

/*
 * PostgreSQL refused the role: peer authentication failed, or the role does
 * not exist. As root, peer authentication over the local socket asks for
 * the role "root", which the installed setup never creates.
 */
static bool role_refused(const char *message)
{
    return strstr(message, "Peer authentication failed") != NULL ||
           (strstr(message, "role \"") != NULL && strstr(message, "\" does not exist") != NULL);
}

static void hint_role(const char *config_path)
{
    fprintf(stderr,
            "ensignctl: hint: run as root, ensignctl reaches PostgreSQL as the role \"root\" "
            "(peer authentication) unless `database` names another; run it as the user "
            "the server runs as: runuser -u ensign -- ensignctl ..., or set `database` in %s "
            "to a role that exists and may connect\n",
            config_path);
}

static int session_open(const char *config_path, struct session *s)
{
    char err[512];
    if (config_load(config_path, &s->cfg, err, sizeof err) != 0)
        return fail(EXIT_RUNTIME, "%s", err);
    struct dbsync_error error;
    s->conn = dbsync_connect(s->cfg.database, &error);
    if (s->conn == NULL) {
        config_free(&s->cfg);
        fail(EXIT_RUNTIME, "cannot connect to the database: %s", error.message);
        if (geteuid() == 0 && role_refused(error.message))
            hint_role(config_path);
        return EXIT_RUNTIME;
    }
    return 0;
}

static void session_close(struct session *s)
{
    PQfinish(s->conn);
    config_free(&s->cfg);
}

enum insert_outcome { INSERTED, NO_OWNER, DUPLICATE, FAILED };

/*
 * Runs an INSERT ... RETURNING of one value and prints that value. Zero
 * rows means the named owner (user or organization) does not exist. On
 * DUPLICATE the violated constraint is in error->constraint; on FAILED the
 * message has been printed.
 */
static enum insert_outcome insert_and_print(PGconn *conn, const char *sql, int nparams,
                                            const char *const *values, struct dbsync_error *error)
{
    PGresult *res = dbsync_exec(conn, sql, nparams, values, error);
    if (res == NULL) {
        if (dbsync_error_is(error, DBSYNC_UNIQUE_VIOLATION))
            return DUPLICATE;
        fail(EXIT_RUNTIME, "database error: %s", error->message);
        return FAILED;
    }
    enum insert_outcome outcome = PQntuples(res) == 1 ? INSERTED : NO_OWNER;
    if (outcome == INSERTED)
        printf("%s\n", PQgetvalue(res, 0, 0));
    PQclear(res);
    return outcome;
}

/* ---- migrate ---- */

static int run_migrate(PGconn *conn)
{
    char err[1024];
    if (migrate_apply(conn, stdout, err, sizeof err) != 0)
        return fail(EXIT_RUNTIME, "%s", err);
    return 0;
}

/* ---- user create ---- */

struct user_args {
    const char *email;
    const char *name;
    const char *username;
    bool password_stdin;
};

static const char sql_user_create[] = "INSERT INTO users (email, name, username, password_hash)"
                                      " VALUES ($1, $2, $3, $4) RETURNING id";

/* Reads one line (the password) from stdin, without its line ending. */
static int read_password(char *buf, size_t size)
{
    if (fgets(buf, (int)size, stdin) == NULL)
        return fail(EXIT_RUNTIME, "--password-stdin: no password on standard input");
    size_t len = strcspn(buf, "\n");
    if (buf[len] != '\n' && !feof(stdin))
        return fail(EXIT_RUNTIME, "password is longer than %d bytes", PASSWORD_MAX_LEN);
    buf[len] = '\0';
    if (len > 0 && buf[len - 1] == '\r')
        buf[--len] = '\0';
    if (len < PASSWORD_MIN_LEN || len > PASSWORD_MAX_LEN)
        return fail(EXIT_RUNTIME, "password must be %d to %d characters", PASSWORD_MIN_LEN,
                    PASSWORD_MAX_LEN);
    return 0;
}

static int hash_password_from_stdin(char hash[PASSWORD_HASH_MAX])
{
    char password[PASSWORD_MAX_LEN + 3];
    int status = read_password(password, sizeof password);
    if (status == 0 && password_hash(password, hash) != 0)
        status = fail(EXIT_RUNTIME, "cannot hash the password");
    explicit_bzero(password, sizeof password);
    return status;
}

static int run_user_create(PGconn *conn, const struct user_args *a)
{
    char hash[PASSWORD_HASH_MAX];
    if (a->password_stdin) {
        int status = hash_password_from_stdin(hash);
        if (status != 0)
            return status;
    }
    const char *params[] = {a->email, a->name, a->username, a->password_stdin ? hash : NULL};
    struct dbsync_error error;
    switch (insert_and_print(conn, sql_user_create, 4, params, &error)) {
    case INSERTED:
        return 0;
    case DUPLICATE:
        if (strcmp(error.constraint, "users_username_key") == 0)
            return fail(EXIT_RUNTIME, "the username '%s' is already taken", a->username);
        return fail(EXIT_RUNTIME, "a user with email '%s' already exists", a->email);
    case NO_OWNER:
    case FAILED:
        break;
    }
    return EXIT_RUNTIME;
}

/* ---- org create ---- */

struct org_args {
    const char *name;
    const char *slug;
    const char *owner;
    char derived_slug[KEY_MAX_CHARS + 1];
};

/* One statement: no row when the owner does not exist. */
static const char sql_org_create[] =
    "WITH owner AS (SELECT id FROM users WHERE lower(email) = lower($3) AND NOT deleted),"
    " org AS (INSERT INTO orgs (name, slug) SELECT $1, $2 FROM owner RETURNING id, slug),"
    " member AS (INSERT INTO org_members (org_id, user_id, role)"
    "            SELECT org.id, owner.id, 'owner' FROM org, owner)"
    " SELECT slug FROM org";

static int run_org_create(PGconn *conn, const struct org_args *a)
{
    const char *params[] = {a->name, a->slug, a->owner};
    struct dbsync_error error;
    switch (insert_and_print(conn, sql_org_create, 3, params, &error)) {
    case INSERTED:
        return 0;
    case DUPLICATE:
        return fail(EXIT_RUNTIME, "an organization with slug '%s' already exists", a->slug);
    case NO_OWNER:
        return fail(EXIT_RUNTIME, "no user with email '%s'", a->owner);
    case FAILED:
        break;
    }
    return EXIT_RUNTIME;
}

/* ---- token create ---- */

struct token_args {
    const char *user_email;
    const char *org_slug;
    const char *name;
    bool full;
    long expires_days; /* 0: no expiry */
};

static const char sql_token_personal[] =
    "INSERT INTO access_tokens (kind, user_id, name, token_digest, prefix, last_four, scopes,"
    " full_access, expires_at)"
    " SELECT 'personal', id, $2, $3, $4, $5, $6::jsonb, $7::boolean,"
    "  CASE WHEN $8::integer > 0 THEN now() + make_interval(days => $8::integer) END"
    " FROM users WHERE lower(email) = lower($1) AND NOT deleted RETURNING id";

/* An organization token acts as the organization with role admin. */
static const char sql_token_org[] =
    "INSERT INTO access_tokens (kind, org_id, name, token_digest, prefix, last_four, scopes,"
    " full_access, expires_at)"
    " SELECT 'organization', id, $2, $3, $4, $5, $6::jsonb, $7::boolean,"
    "  CASE WHEN $8::integer > 0 THEN now() + make_interval(days => $8::integer) END"
    " FROM orgs WHERE slug = $1 RETURNING id";

static int store_token(PGconn *conn, const struct token_args *a, const char *token)
{
    char digest[TOKEN_DIGEST_HEX_LEN + 1], prefix[TOKEN_DISPLAY_PREFIX_LEN + 1], last_four[5];
    char days[24];
    token_digest_hex(token, strlen(token), digest);
    token_display_prefix(token, prefix);
    token_last_four(token, last_four);
    snprintf(days, sizeof days, "%ld", a->expires_days);
    bool personal = a->user_email != NULL;
    bool full = a->full || !personal;
    const char *params[] = {personal ? a->user_email : a->org_slug,
                            a->name,
                            digest,
                            prefix,
                            last_four,
                            full ? scopes_full : scopes_read_only,
                            full ? "true" : "false",
                            days};
    struct dbsync_error error;
    PGresult *res =
        dbsync_exec(conn, personal ? sql_token_personal : sql_token_org, 8, params, &error);
    if (res == NULL)
        return fail(EXIT_RUNTIME, "database error: %s", error.message);
    int found = PQntuples(res);
    PQclear(res);
    if (found == 1)
        return 0;
    if (personal)
        return fail(EXIT_RUNTIME, "no user with email '%s'", a->user_email);
    return fail(EXIT_RUNTIME, "no organization with slug '%s'", a->org_slug);
}

static int run_token_create(PGconn *conn, const struct token_args *a)
{
    char token[TOKEN_MAX_LEN];
    if (token_generate(TOKEN_PREFIX_ACCESS, token, sizeof token) != 0)
        return fail(EXIT_RUNTIME, "cannot generate a token");
    int status = store_token(conn, a, token);
    if (status == 0)
        printf("%s\n", token);
    explicit_bzero(token, sizeof token);
    return status;
}

/* ---- audit verify ---- */

static int run_audit_verify(PGconn *conn, const char *org_slug)
{
    char report[512];
    struct dbsync_error error;
    switch (auditverify_run(conn, org_slug, report, sizeof report, &error)) {
    case AUDITVERIFY_OK:
        printf("%s\n", report);
        return 0;
    case AUDITVERIFY_BROKEN:
        printf("%s\n", report);
        return EXIT_RUNTIME;
    case AUDITVERIFY_NO_ORG:
        return fail(EXIT_RUNTIME, "no organization with slug '%s'", org_slug);
    case AUDITVERIFY_ERROR:
        break;
    }
    return fail(EXIT_RUNTIME, "database error: %s", error.message);
}

/* ---- internal keys (Ensign-Internal-Key of internal operations) ---- */

static const char sql_internal_key[] =
    "INSERT INTO internal_keys (name, key_digest) VALUES ($1, $2) RETURNING id";

static int run_internal_key_create(PGconn *conn, const char *name)
{
    char key[TOKEN_MAX_LEN], digest[TOKEN_DIGEST_HEX_LEN + 1];
    if (token_generate(TOKEN_PREFIX_INTERNAL, key, sizeof key) != 0)
        return fail(EXIT_RUNTIME, "cannot generate a key");
    token_digest_hex(key, strlen(key), digest);
    const char *params[] = {name, digest};
    struct dbsync_error error;
    PGresult *res = dbsync_exec(conn, sql_internal_key, 2, params, &error);
    if (res == NULL) {
        explicit_bzero(key, sizeof key);
        return fail(EXIT_RUNTIME, "database error: %s", error.message);
    }
    int status = PQntuples(res) == 1 ? 0 : fail(EXIT_RUNTIME, "the key was not stored");
    PQclear(res);
    if (status == 0)
        printf("%s\n", key);
    explicit_bzero(key, sizeof key);
    return status;
}

/* ---- argument parsing of the commands ---- */

enum command_kind {
    COMMAND_MIGRATE,
    COMMAND_USER_CREATE,
    COMMAND_ORG_CREATE,
    COMMAND_TOKEN_CREATE,
    COMMAND_AUDIT_VERIFY,
    COMMAND_INTERNAL_KEY_CREATE
};

struct command {
    enum command_kind kind;
    struct user_args user;
    struct org_args org;
    struct token_args token;
    const char *audit_org; /* audit verify --org */
    const char *key_name;  /* internal-key create --name */
};

enum option_id {
    OPT_EMAIL = 256,
    OPT_NAME,
    OPT_USERNAME,
    OPT_PASSWORD_STDIN,
    OPT_SLUG,
    OPT_OWNER,
    OPT_USER,
    OPT_ORG,
    OPT_FULL,
    OPT_EXPIRES,
    OPT_HELP
};

static const struct option user_options[] = {
    {"email", required_argument, NULL, OPT_EMAIL},
    {"name", required_argument, NULL, OPT_NAME},
    {"username", required_argument, NULL, OPT_USERNAME},
    {"password-stdin", no_argument, NULL, OPT_PASSWORD_STDIN},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0}};

static const struct option org_options[] = {{"name", required_argument, NULL, OPT_NAME},
                                            {"slug", required_argument, NULL, OPT_SLUG},
                                            {"owner", required_argument, NULL, OPT_OWNER},
                                            {"help", no_argument, NULL, OPT_HELP},
                                            {NULL, 0, NULL, 0}};

static const struct option token_options[] = {
    {"user", required_argument, NULL, OPT_USER},
    {"org", required_argument, NULL, OPT_ORG},
    {"name", required_argument, NULL, OPT_NAME},
    {"full", no_argument, NULL, OPT_FULL},
    {"expires-in-days", required_argument, NULL, OPT_EXPIRES},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0}};

static const struct option audit_options[] = {{"org", required_argument, NULL, OPT_ORG},
                                              {"help", no_argument, NULL, OPT_HELP},
                                              {NULL, 0, NULL, 0}};

static const struct option internal_key_options[] = {{"name", required_argument, NULL, OPT_NAME},
                                                     {"help", no_argument, NULL, OPT_HELP},
                                                     {NULL, 0, NULL, 0}};

static const struct option no_options[] = {{"help", no_argument, NULL, OPT_HELP},
                                           {NULL, 0, NULL, 0}};

/* Cuts leading and trailing spaces of an argument in place (names). */
static char *trim_spaces(char *text)
{
    while (*text == ' ')
        text++;
    size_t len = strlen(text);
    while (len > 0 && text[len - 1] == ' ')
        text[--len] = '\0';
    return text;
}

/* What an option means for a command; -1 for a usage error. */
static int apply_user_option(struct user_args *a, int id, char *arg)
{
    switch (id) {
    case OPT_EMAIL:
        a->email = arg;
        return 0;
    case OPT_NAME:
        a->name = trim_spaces(arg);
        return 0;
    case OPT_USERNAME:
        a->username = arg;
        return 0;
    case OPT_PASSWORD_STDIN:
        a->password_stdin = true;
        return 0;
    }
    return -1;
}

static int apply_org_option(struct org_args *a, int id, char *arg)
{
    switch (id) {
    case OPT_NAME:
        a->name = trim_spaces(arg);
        return 0;
    case OPT_SLUG:
        a->slug = arg;
        return 0;
    case OPT_OWNER:
        a->owner = arg;
        return 0;
    }
    return -1;
}

static int apply_token_option(struct token_args *a, int id, char *arg)
{
    switch (id) {
    case OPT_USER:
        a->user_email = arg;
        return 0;
    case OPT_ORG:
        a->org_slug = arg;
        return 0;
    case OPT_NAME:
        a->name = trim_spaces(arg);
        return 0;
    case OPT_FULL:
        a->full = true;
        return 0;
    case OPT_EXPIRES:
        if (!parse_days(arg, &a->expires_days))
            return usage_error("--expires-in-days: expected a whole number of days from 0 to "
                               "36500, got '%s'",
                               arg);
        return 0;
    }
    return -1;
}

static int apply_option(struct command *c, int id, char *arg)
{
    switch (c->kind) {
    case COMMAND_USER_CREATE:
        return apply_user_option(&c->user, id, arg);
    case COMMAND_ORG_CREATE:
        return apply_org_option(&c->org, id, arg);
    case COMMAND_TOKEN_CREATE:
        return apply_token_option(&c->token, id, arg);
    case COMMAND_AUDIT_VERIFY:
        c->audit_org = arg;
        return 0;
    case COMMAND_INTERNAL_KEY_CREATE:
        c->key_name = trim_spaces(arg);
        return 0;
    case COMMAND_MIGRATE:
        break;
    }
    return -1;
}

static int check_user_args(const struct user_args *a)
{
    if (!a->email || !a->name)
        return usage_error("user create: --email and --name are required");
    if (!valid_email(a->email))
        return usage_error("not a valid email address: '%s'", a->email);
    if (!valid_name(a->name))
        return usage_error(
            "--name must be 1 to 200 printable characters (spaces around it are cut)");
    if (a->username && !valid_username(a->username))
        return usage_error("not a valid username: '%s' (1 to 39 letters, digits and inner "
                           "hyphens)",
                           a->username);
    return 0;
}

static int check_org_args(struct org_args *a)
{
    if (!a->name || !a->owner)
        return usage_error("org create: --name and --owner are required");
    if (!valid_name(a->name))
        return usage_error(
            "--name must be 1 to 200 printable characters (spaces around it are cut)");
    if (!valid_email(a->owner))
        return usage_error("not a valid email address: '%s'", a->owner);
    if (a->slug == NULL) {
        derive_slug(a->name, a->derived_slug);
        if (a->derived_slug[0] == '\0')
            return usage_error("cannot derive a slug from the name '%s': pass --slug", a->name);
        a->slug = a->derived_slug;
    }
    if (!valid_slug(a->slug))
        return usage_error("not a valid slug: '%s' (1 to 63 of a-z, 0-9 and inner hyphens)",
                           a->slug);
    return 0;
}

static int check_token_args(const struct token_args *a)
{
    if ((a->user_email == NULL) == (a->org_slug == NULL))
        return usage_error("token create: give exactly one of --user EMAIL or --org SLUG");
    if (!a->name)
        return usage_error("token create: --name is required");
    if (!valid_name(a->name))
        return usage_error(
            "--name must be 1 to 200 printable characters (spaces around it are cut)");
    if (a->org_slug && a->full)
        return usage_error("--full applies to personal tokens only (organization "
                           "tokens always have full access)");
    if (a->user_email && !valid_email(a->user_email))
        return usage_error("not a valid email address: '%s'", a->user_email);
    if (a->org_slug && !valid_slug(a->org_slug))
        return usage_error("not a valid slug: '%s'", a->org_slug);
    return 0;
}

static int check_command(struct command *c)
{
    switch (c->kind) {
    case COMMAND_USER_CREATE:
        return check_user_args(&c->user);
    case COMMAND_ORG_CREATE:
        return check_org_args(&c->org);
    case COMMAND_TOKEN_CREATE:
        return check_token_args(&c->token);
    case COMMAND_AUDIT_VERIFY:
        if (c->audit_org == NULL)
            return usage_error("audit verify: --org is required");
        if (!valid_slug(c->audit_org))
            return usage_error("not a valid slug: '%s'", c->audit_org);
        break;
    case COMMAND_INTERNAL_KEY_CREATE:
        if (c->key_name == NULL)
            return usage_error("internal-key create: --name is required");
        if (!valid_name(c->key_name))
            return usage_error(
                "--name must be 1 to 200 printable characters (spaces around it are cut)");
        break;
    case COMMAND_MIGRATE:
        break;
    }
    return 0;
}

/* Parses the command's options; argv[0] is the program name. Returns 0,
 * EXIT_USAGE, or -1 after printing help (exit 0). */
static int parse_command_options(struct command *c, const struct option *options, int argc,
                                 char **argv)
{
    optind = 0; /* GNU getopt: start over on this argument vector */
    int id;
    while ((id = getopt_long(argc, argv, ":", options, NULL)) != -1) {
        if (id == OPT_HELP) {
            fputs(usage_text, stdout);
            return -1;
        }
        if (id == '?' || id == ':')
            return usage_error("bad or incomplete option: '%s'", argv[optind - 1]);
        int rc = apply_option(c, id, optarg);
        if (rc != 0)
            return EXIT_USAGE;
    }
    if (optind < argc)
        return usage_error("unexpected argument: '%s'", argv[optind]);
    return check_command(c);
}

struct command_entry {
    const char *noun;
    const char *verb; /* NULL: a one-word command */
    enum command_kind kind;
    const struct option *options;
};

static const struct command_entry command_table[] = {
    {"migrate", NULL, COMMAND_MIGRATE, no_options},
    {"user", "create", COMMAND_USER_CREATE, user_options},
    {"org", "create", COMMAND_ORG_CREATE, org_options},
    {"token", "create", COMMAND_TOKEN_CREATE, token_options},
    {"audit", "verify", COMMAND_AUDIT_VERIFY, audit_options},
    {"internal-key", "create", COMMAND_INTERNAL_KEY_CREATE, internal_key_options},
};

static const struct command_entry *find_command(const char *noun, const char *verb)
{
    for (size_t i = 0; i < sizeof command_table / sizeof command_table[0]; i++) {
        const struct command_entry *e = &command_table[i];
        if (strcmp(e->noun, noun) == 0 && (e->verb == NULL || (verb && strcmp(e->verb, verb) == 0)))
            return e;
    }
    return NULL;
}

/* argv holds COMMAND [VERB] [OPTIONS]; program is argv[0] of main. */
static int parse_command(struct command *c, int argc, char **argv, char *program)
{
    const struct command_entry *e = find_command(argv[0], argc > 1 ? argv[1] : NULL);
    if (e == NULL)
        return usage_error("unknown command: '%s%s%s'", argv[0], argc > 1 ? " " : "",
                           argc > 1 ? argv[1] : "");
    c->kind = e->kind;
    int words = e->verb ? 2 : 1;
    /* Let getopt see the program name in front of the options. */
    argv[words - 1] = program;
    return parse_command_options(c, e->options, argc - words + 1, argv + words - 1);
}

static int run_command(PGconn *conn, const struct command *c)
{
    switch (c->kind) {
    case COMMAND_MIGRATE:
        return run_migrate(conn);
    case COMMAND_USER_CREATE:
        return run_user_create(conn, &c->user);
    case COMMAND_ORG_CREATE:
        return run_org_create(conn, &c->org);
    case COMMAND_TOKEN_CREATE:
        return run_token_create(conn, &c->token);
    case COMMAND_AUDIT_VERIFY:
        return run_audit_verify(conn, c->audit_org);
    case COMMAND_INTERNAL_KEY_CREATE:
        return run_internal_key_create(conn, c->key_name);
    }
    return EXIT_RUNTIME;
}

/* ---- main ---- */

/* Parses [-c FILE] [-h] [-V] up to the command. Returns 0 to go on, -1 to
 * exit 0 (help or version printed), or EXIT_USAGE. */
static int parse_global_options(int argc, char **argv, const char **config_path)
{
    static const struct option options[] = {{"config", required_argument, NULL, 'c'},
                                            {"help", no_argument, NULL, 'h'},
                                            {"version", no_argument, NULL, 'V'},
                                            {NULL, 0, NULL, 0}};
    int id;
    while ((id = getopt_long(argc, argv, "+:c:hV", options, NULL)) != -1) {
        switch (id) {
        case 'c':
            *config_path = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            return -1;
        case 'V':
            printf("ensignctl %s\n", PACKAGE_VERSION);
            return -1;
        default:
            return usage_error("bad or incomplete option: '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return usage_error("no command given");
    return 0;
}

int main(int argc, char **argv)
{
    const char *config_path = CONFIG_DEFAULT_PATH;
    int rc = parse_global_options(argc, argv, &config_path);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct command command = {0};
    rc = parse_command(&command, argc - optind, argv + optind, argv[0]);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct session session = {0};
    rc = session_open(config_path, &session);
    if (rc != 0)
        return rc;
    rc = run_command(session.conn, &command);
    session_close(&session);
    if (fflush(stdout) != 0 && rc == 0)
        rc = fail(EXIT_RUNTIME, "cannot write the result: %s", strerror(errno));
    return rc;
}
