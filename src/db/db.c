/*
 * db.c - a worker's asynchronous PostgreSQL connection on its event base.
 *
 * Owns the PGconn, its libevent events, the FIFO of queued queries and the
 * reconnect state. States:
 *
 *   CONNECTING  PQconnectPoll steps, each waiting on a fresh one-shot event
 *               (PQsocket may change between steps), under a deadline.
 *   SETTING_UP  the session's first query sets statement_timeout,
 *               TimeZone UTC and DateStyle ISO; queued queries wait for it.
 *   READY       queries are sent one at a time, each as a prepared
 *               statement of the session (see below); a persistent EV_READ
 *               event collects results, an EV_WRITE event finishes PQflush
 *               when the socket buffer was full. A watchdog drops the
 *               connection when an answer takes far longer than
 *               statement_timeout (a silent network).
 *   WAITING     after a failure: retry after a backoff of 100 ms doubling
 *               to 5 s, reset once a session is ready again.
 *   CLOSING     inside db_close.
 *
 * Invariants: every job's callback runs exactly once. Error callbacks are
 * never run from inside db_query: failed jobs go to a list that a
 * zero-delay "kick" event drains (the kick also dispatches the queue). From
 * the first failure until the next session is ready (`down`), db_query
 * fails fast rather than queueing, so requests answer 503 quickly. db.c
 * PQclears every result after the callback. Conninfo is never logged (it
 * may hold a password). Note that libpq resolves host names during
 * PQconnectPoll, which can block briefly; configure an address or a socket
 * directory to avoid it.
 *
 * Prepared statements: the first time a session sees a statement text it
 * sends PQsendPrepare (one extra round trip, once per session and text),
 * then PQsendQueryPrepared, so PostgreSQL parses and plans a statement
 * once per session rather than once per request (a third of a 1,000-flag
 * list's server time was planning). The cache is keyed by the text (hash
 * and comparison, not the pointer: a caller may reuse a buffer), holds at
 * most DB_PREPARED_MAX texts per session and is forgotten with the
 * session (a new one prepares again). A text PostgreSQL refuses to
 * prepare and one past the cap are sent with PQsendQueryParams, so the
 * caller sees the same answers and errors either way. A prepared
 * statement that fails because it is prepared (SQLSTATE 26000: unknown in
 * the session, as behind a transaction-pooling proxy; 0A000: a cached
 * plan whose result type changed under a schema change) did not run: it
 * is sent again at once as text, and stays text in that session.
 *
 * Notifications: the session's read event runs whether a query is in
 * flight or not, so a NOTIFY of a channel the session LISTENs on (a
 * LISTEN is an ordinary db_query) reaches the db_listen callback as soon
 * as it arrives; a new session forgets every LISTEN, which is why the
 * callback also hears of each new session.
 *
 * Called by worker.c (db_open/db_close), by management handlers and by
 * accounts/org_events.c (db_listen).
 */
#include "db/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "base/log.h"

#define DB_BACKOFF_MIN_MS 100
#define DB_BACKOFF_MAX_MS 5000
#define DB_CONNECT_TIMEOUT_MS 5000
#define DB_WATCHDOG_GRACE_MS 5000
#define DB_QUEUE_MAX 1024
#define DB_ERROR_LEN 256
#define DB_PREPARED_MAX 256
#define DB_STMT_NAME_LEN 24

static const char SESSION_SETUP_SQL[] =
    "SELECT pg_catalog.set_config('statement_timeout', $1, false),"
    " pg_catalog.set_config('TimeZone', 'UTC', false),"
    " pg_catalog.set_config('DateStyle', 'ISO', false)";

enum db_state { DB_CONNECTING, DB_SETTING_UP, DB_READY, DB_WAITING, DB_CLOSING };

struct db_job {
    struct db_job *next;
    char *sql;
    int nparams;
    char **values;
    db_result_cb cb;
    void *arg;
    char error[DB_ERROR_LEN]; /* set when the job fails without a result */
};

/* A statement text of the session: prepared as "ensign_<number>", or
 * sent unprepared (prepared false) after PostgreSQL refused it. */
struct db_stmt {
    uint64_t hash;
    char *sql;
    unsigned number;
    bool prepared;
};

struct job_list {
    struct db_job *head;
    struct db_job *tail;
    size_t len;
};

struct db {
    struct event_base *base;
    char *conninfo;
    int statement_timeout_ms;
    PGconn *conn;
    enum db_state state;
    bool down; /* a failure happened and no session is ready yet */
    int backoff_ms;
    struct event *io;     /* connect step (one-shot) or session EV_READ (persistent) */
    struct event *writer; /* EV_WRITE while PQflush has output pending */
    struct event *timer;  /* connect deadline, retry backoff or query watchdog */
    struct event *kick;   /* zero-delay: answer failed jobs, dispatch the queue */
    struct job_list queue;
    struct job_list failed;
    struct db_job *inflight;
    struct db_stmt *inflight_stmt; /* its cache entry, NULL when sent unprepared */
    bool preparing;                /* the result awaited is the PQsendPrepare's */
    struct db_stmt stmts[DB_PREPARED_MAX];
    size_t nstmts;
    PGresult *last;         /* latest result of the query in flight */
    db_notify_cb on_notify; /* db_listen: NOTIFY messages and new sessions */
    void *listen_arg;
    char error[DB_ERROR_LEN];
    _Atomic uint64_t *errors; /* /metrics counter, or NULL */
};

static void count_error(struct db *db)
{
    if (db->errors != NULL)
        atomic_fetch_add_explicit(db->errors, 1, memory_order_relaxed);
}

/* A failure of the server or the connection rather than an answer to bad input. */
static bool server_side_failure(const PGresult *res)
{
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    if (state == NULL)
        return true;
    static const char *const classes[] = {"08", "53", "57", "58", "XX"};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strncmp(state, classes[i], 2) == 0)
            return true;
    return false;
}

/* ---- jobs ---- */

static void list_push(struct job_list *list, struct db_job *job)
{
    job->next = NULL;
    if (list->tail)
        list->tail->next = job;
    else
        list->head = job;
    list->tail = job;
    list->len++;
}

static struct db_job *list_pop(struct job_list *list)
{
    struct db_job *job = list->head;
    if (!job)
        return NULL;
    list->head = job->next;
    if (!list->head)
        list->tail = NULL;
    list->len--;
    return job;
}

static void job_free(struct db_job *job)
{
    for (int i = 0; i < job->nparams; i++)
        free(job->values[i]);
    free(job->values);
    free(job->sql);
    free(job);
}

static struct db_job *job_new(const char *sql, int nparams, const char *const *values,
                              db_result_cb cb, void *arg)
{
    struct db_job *job = calloc(1, sizeof *job);
    if (!job)
        return NULL;
    job->cb = cb;
    job->arg = arg;
    job->sql = strdup(sql);
    job->values = nparams > 0 ? calloc((size_t)nparams, sizeof *job->values) : NULL;
    if (!job->sql || (nparams > 0 && !job->values)) {
        job_free(job);
        return NULL;
    }
    for (int i = 0; i < nparams; i++, job->nparams++) {
        if (values[i] && !(job->values[i] = strdup(values[i]))) {
            job_free(job);
            return NULL;
        }
    }
    return job;
}

/* Queues job for an error callback from the kick event. */
static void job_fail(struct db *db, struct db_job *job, const char *why)
{
    snprintf(job->error, sizeof job->error, "%s", why);
    list_push(&db->failed, job);
    event_active(db->kick, EV_TIMEOUT, 0);
}

/* Runs the callbacks of failed jobs; new failures they cause wait for the next kick. */
static void answer_failed(struct db *db)
{
    struct job_list batch = db->failed;
    db->failed = (struct job_list){0};
    struct db_job *job;
    while ((job = list_pop(&batch))) {
        job->cb(NULL, job->error, job->arg);
        job_free(job);
    }
}

/* Moves the job in flight and every queued job to the failed list. */
static void fail_all(struct db *db, const char *why)
{
    if (db->inflight) {
        job_fail(db, db->inflight, why);
        db->inflight = NULL;
    }
    struct db_job *job;
    while ((job = list_pop(&db->queue)))
        job_fail(db, job, why);
}

/* ---- connection ---- */

/* Copies libpq's message as one line (it may hold newlines and tabs). */
static void set_error(struct db *db, const char *text)
{
    snprintf(db->error, sizeof db->error, "%s", text && *text ? text : "unknown error");
    for (char *p = db->error; *p; p++) {
        if (*p == '\n' || *p == '\t' || *p == '\r')
            *p = ' ';
    }
    size_t n = strlen(db->error);
    while (n > 0 && db->error[n - 1] == ' ')
        db->error[--n] = '\0';
}

static void on_notice(void *arg, const char *message)
{
    (void)arg;
    log_debug("database notice: %.*s", (int)strcspn(message, "\n"), message);
}

static void free_event(struct event **ev)
{
    if (*ev) {
        event_free(*ev);
        *ev = NULL;
    }
}

/* Forgets the session's prepared statements (they die with it). */
static void forget_statements(struct db *db)
{
    for (size_t i = 0; i < db->nstmts; i++)
        free(db->stmts[i].sql);
    db->nstmts = 0;
    db->inflight_stmt = NULL;
    db->preparing = false;
}

static void teardown(struct db *db)
{
    forget_statements(db);
    free_event(&db->io);
    free_event(&db->writer);
    evtimer_del(db->timer);
    PQclear(db->last);
    db->last = NULL;
    if (db->conn) {
        PQfinish(db->conn);
        db->conn = NULL;
    }
}

static void arm_timer(struct db *db, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(db->timer, &tv);
}

/* what: "connect failed" or "connection lost"; why: libpq's or our own reason. */
static void connection_down(struct db *db, const char *what, const char *why)
{
    set_error(db, why);
    count_error(db);
    if (!db->down)
        log_warn("database %s: %s; retrying in %d ms", what, db->error, db->backoff_ms);
    else
        log_debug("database %s: %s; retrying in %d ms", what, db->error, db->backoff_ms);
    db->down = true;
    teardown(db);
    fail_all(db, db->error);
    db->state = DB_WAITING;
    arm_timer(db, db->backoff_ms);
    db->backoff_ms =
        db->backoff_ms * 2 > DB_BACKOFF_MAX_MS ? DB_BACKOFF_MAX_MS : db->backoff_ms * 2;
}

/* Sends pending output; arms the writer while some remains. Returns -1 on loss. */
static int flush_output(struct db *db)
{
    int rc = PQflush(db->conn);
    if (rc < 0) {
        connection_down(db, "connection lost", PQerrorMessage(db->conn));
        return -1;
    }
    if (rc > 0)
        event_add(db->writer, NULL);
    return 0;
}

/* ---- prepared statements ---- */

/* FNV-1a of the statement text. */
static uint64_t text_hash(const char *text)
{
    uint64_t h = 14695981039346656037ULL;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

static struct db_stmt *stmt_find(struct db *db, const char *sql, uint64_t hash)
{
    for (size_t i = 0; i < db->nstmts; i++) {
        if (db->stmts[i].hash == hash && strcmp(db->stmts[i].sql, sql) == 0)
            return &db->stmts[i];
    }
    return NULL;
}

/* A new entry for sql (not prepared yet), or NULL when the cache is full. */
static struct db_stmt *stmt_add(struct db *db, const char *sql, uint64_t hash)
{
    if (db->nstmts >= DB_PREPARED_MAX)
        return NULL;
    char *copy = strdup(sql);
    if (copy == NULL)
        return NULL;
    struct db_stmt *st = &db->stmts[db->nstmts];
    *st = (struct db_stmt){.hash = hash, .sql = copy, .number = (unsigned)db->nstmts};
    db->nstmts++;
    return st;
}

static void stmt_name(const struct db_stmt *st, char name[DB_STMT_NAME_LEN])
{
    snprintf(name, DB_STMT_NAME_LEN, "ensign_%u", st->number);
}

/*
 * Sends the job in flight: its prepared statement, or a PQsendPrepare
 * first when the session has not seen the text (db->preparing; the job is
 * sent again when that answer is in), or the text itself. Returns libpq's
 * 1 (sent) or 0.
 */
static int send_inflight(struct db *db)
{
    struct db_job *job = db->inflight;
    const char *const *values = (const char *const *)job->values;
    uint64_t hash = text_hash(job->sql);
    struct db_stmt *st = stmt_find(db, job->sql, hash);
    char name[DB_STMT_NAME_LEN];
    db->inflight_stmt = NULL;
    if (st == NULL && (st = stmt_add(db, job->sql, hash)) != NULL) {
        stmt_name(st, name);
        db->inflight_stmt = st;
        db->preparing = true;
        return PQsendPrepare(db->conn, name, job->sql, job->nparams, NULL);
    }
    if (st != NULL && st->prepared) {
        stmt_name(st, name);
        db->inflight_stmt = st;
        return PQsendQueryPrepared(db->conn, name, job->nparams, values, NULL, NULL, 0);
    }
    return PQsendQueryParams(db->conn, job->sql, job->nparams, NULL, values, NULL, NULL, 0);
}

/* After send_inflight: arms the watchdog and flushes, or fails the job. */
static void after_send(struct db *db, int sent)
{
    if (!sent) {
        if (PQstatus(db->conn) == CONNECTION_BAD) {
            connection_down(db, "connection lost", PQerrorMessage(db->conn));
            return;
        }
        struct db_job *job = db->inflight;
        db->inflight = NULL;
        db->inflight_stmt = NULL;
        db->preparing = false;
        job_fail(db, job, PQerrorMessage(db->conn));
        return;
    }
    if (db->statement_timeout_ms > 0)
        arm_timer(db, db->statement_timeout_ms + DB_WATCHDOG_GRACE_MS);
    flush_output(db);
}

/* The PQsendPrepare's answer is in: the job goes out prepared, or (refused)
 * as text, which then answers with PostgreSQL's own error if any. */
static void finish_prepare(struct db *db)
{
    PGresult *res = db->last;
    db->last = NULL;
    db->preparing = false;
    struct db_stmt *st = db->inflight_stmt;
    st->prepared = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!st->prepared) {
        const char *why = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
        log_debug("database: statement %u sent unprepared: %s", st->number,
                  why ? why : "no result");
    }
    PQclear(res);
    after_send(db, send_inflight(db));
}

static void dispatch_next(struct db *db)
{
    if (db->state != DB_READY || db->inflight || !db->queue.head)
        return;
    db->inflight = list_pop(&db->queue);
    after_send(db, send_inflight(db));
}

static void finish_setup(struct db *db)
{
    PGresult *res = db->last;
    db->last = NULL;
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok) {
        char why[DB_ERROR_LEN];
        snprintf(why, sizeof why, "session setup: %s", res ? PQresultErrorMessage(res) : "");
        PQclear(res);
        connection_down(db, "connect failed", why);
        return;
    }
    PQclear(res);
    evtimer_del(db->timer);
    if (db->down)
        log_info("database connection restored");
    else
        log_info("database connection ready");
    db->down = false;
    db->backoff_ms = DB_BACKOFF_MIN_MS;
    db->state = DB_READY;
    if (db->on_notify != NULL)
        db->on_notify(NULL, NULL, db->listen_arg);
}

static void finish_job(struct db *db)
{
    struct db_job *job = db->inflight;
    PGresult *res = db->last;
    db->inflight = NULL;
    db->inflight_stmt = NULL;
    db->last = NULL;
    evtimer_del(db->timer);
    const char *error = NULL;
    if (!res)
        error = "query returned no result";
    else if (PQresultStatus(res) == PGRES_FATAL_ERROR)
        error = PQresultErrorMessage(res);
    if (!res || (PQresultStatus(res) == PGRES_FATAL_ERROR && server_side_failure(res)))
        count_error(db);
    job->cb(res, error, job->arg);
    PQclear(res);
    job_free(job);
}

/*
 * When the prepared statement in flight failed because it is prepared
 * (26000: the session does not have it, as behind a transaction-pooling
 * proxy; 0A000: its cached plan's result type changed under a schema
 * change), the statement did not run: sends the job again as text and
 * keeps that text unprepared in this session. True when it did.
 */
static bool resent_unprepared(struct db *db)
{
    const char *state = db_sqlstate(db->last);
    if (db->inflight_stmt == NULL || (strcmp(state, "26000") != 0 && strcmp(state, "0A000") != 0))
        return false;
    log_debug("database: statement %u sent unprepared from now on: SQLSTATE %s",
              db->inflight_stmt->number, state);
    db->inflight_stmt->prepared = false;
    PQclear(db->last);
    db->last = NULL;
    after_send(db, send_inflight(db));
    return true;
}

static bool awaiting_result(const struct db *db)
{
    return db->state == DB_SETTING_UP || (db->state == DB_READY && db->inflight);
}

/* Reads every complete result; a query is done when PQgetResult gives NULL. */
static void collect_results(struct db *db)
{
    while (awaiting_result(db) && !PQisBusy(db->conn)) {
        PGresult *res = PQgetResult(db->conn);
        if (res) {
            PQclear(db->last);
            db->last = res;
            continue;
        }
        if (PQstatus(db->conn) == CONNECTION_BAD) {
            connection_down(db, "connection lost", PQerrorMessage(db->conn));
            return;
        }
        if (db->state == DB_SETTING_UP) {
            finish_setup(db);
        } else if (db->preparing) {
            finish_prepare(db);
            continue;
        } else if (resent_unprepared(db)) {
            continue;
        } else {
            finish_job(db);
        }
        dispatch_next(db);
    }
}

/* Hands each NOTIFY to the listener (db_listen), or drops it. */
static void drain_notifications(struct db *db)
{
    PGnotify *n;
    while ((n = PQnotifies(db->conn))) {
        if (db->on_notify != NULL)
            db->on_notify(n->relname, n->extra, db->listen_arg);
        PQfreemem(n);
    }
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct db *db = arg;
    if (!PQconsumeInput(db->conn)) {
        connection_down(db, "connection lost", PQerrorMessage(db->conn));
        return;
    }
    drain_notifications(db);
    collect_results(db);
    if (db->conn && PQstatus(db->conn) == CONNECTION_BAD)
        connection_down(db, "connection lost", PQerrorMessage(db->conn));
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    flush_output(arg);
}

static void begin_session(struct db *db)
{
    free_event(&db->io);
    evutil_socket_t fd = PQsocket(db->conn);
    if (PQsetnonblocking(db->conn, 1) != 0) {
        connection_down(db, "connect failed", PQerrorMessage(db->conn));
        return;
    }
    db->io = event_new(db->base, fd, EV_READ | EV_PERSIST, on_readable, db);
    db->writer = event_new(db->base, fd, EV_WRITE, on_writable, db);
    if (!db->io || !db->writer) {
        connection_down(db, "connect failed", "out of memory");
        return;
    }
    event_add(db->io, NULL);
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", db->statement_timeout_ms);
    const char *values[] = {timeout};
    db->state = DB_SETTING_UP;
    if (!PQsendQueryParams(db->conn, SESSION_SETUP_SQL, 1, NULL, values, NULL, NULL, 0)) {
        connection_down(db, "connect failed", PQerrorMessage(db->conn));
        return;
    }
    flush_output(db);
}

static void on_connect_step(evutil_socket_t fd, short what, void *arg);

/* Waits for the socket libpq names now: it may differ from the last step's. */
static void watch_connect(struct db *db, PostgresPollingStatusType poll)
{
    free_event(&db->io);
    short events = poll == PGRES_POLLING_READING ? EV_READ : EV_WRITE;
    db->io = event_new(db->base, PQsocket(db->conn), events, on_connect_step, db);
    if (!db->io) {
        connection_down(db, "connect failed", "out of memory");
        return;
    }
    event_add(db->io, NULL);
}

static void on_connect_step(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct db *db = arg;
    PostgresPollingStatusType poll = PQconnectPoll(db->conn);
    if (poll == PGRES_POLLING_OK)
        begin_session(db);
    else if (poll == PGRES_POLLING_FAILED)
        connection_down(db, "connect failed", PQerrorMessage(db->conn));
    else
        watch_connect(db, poll);
}

static void start_connect(struct db *db)
{
    db->state = DB_CONNECTING;
    db->conn = PQconnectStart(db->conninfo);
    if (!db->conn || PQstatus(db->conn) == CONNECTION_BAD) {
        connection_down(db, "connect failed",
                        db->conn ? PQerrorMessage(db->conn) : "out of memory");
        return;
    }
    PQsetNoticeProcessor(db->conn, on_notice, db);
    arm_timer(db, DB_CONNECT_TIMEOUT_MS);
    watch_connect(db, PGRES_POLLING_WRITING);
}

/* One timer, three meanings, by state. */
static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct db *db = arg;
    if (db->state == DB_WAITING)
        start_connect(db);
    else if (db->state == DB_READY)
        connection_down(db, "connection lost", "no answer from the server in time");
    else
        connection_down(db, "connect failed", "timed out");
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct db *db = arg;
    answer_failed(db);
    dispatch_next(db);
}

/* ---- public ---- */

struct db *db_open(struct event_base *base, const char *conninfo, int statement_timeout_ms)
{
    struct db *db = calloc(1, sizeof *db);
    if (!db)
        return NULL;
    db->base = base;
    db->statement_timeout_ms = statement_timeout_ms;
    db->backoff_ms = DB_BACKOFF_MIN_MS;
    db->conninfo = strdup(conninfo);
    db->timer = evtimer_new(base, on_timer, db);
    db->kick = event_new(base, -1, 0, on_kick, db);
    if (!db->conninfo || !db->timer || !db->kick) {
        db_close(db);
        return NULL;
    }
    start_connect(db);
    return db;
}

void db_listen(struct db *db, db_notify_cb cb, void *arg)
{
    if (db == NULL)
        return;
    db->on_notify = cb;
    db->listen_arg = arg;
}

void db_count_errors(struct db *db, _Atomic uint64_t *counter)
{
    if (db != NULL)
        db->errors = counter;
}

void db_close(struct db *db)
{
    if (!db)
        return;
    db->state = DB_CLOSING;
    if (db->timer)
        teardown(db);
    fail_all(db, "database connection closed");
    answer_failed(db);
    free_event(&db->kick);
    free_event(&db->timer);
    free(db->conninfo);
    free(db);
}

int db_query(struct db *db, const char *sql, int nparams, const char *const *values,
             db_result_cb cb, void *arg)
{
    if (!db || db->state == DB_CLOSING || nparams < 0)
        return -1;
    struct db_job *job = job_new(sql, nparams, values, cb, arg);
    if (!job)
        return -1;
    if (db->down)
        job_fail(db, job, db->error);
    else if (db->queue.len >= DB_QUEUE_MAX)
        job_fail(db, job, "database queue full");
    else
        list_push(&db->queue, job);
    event_active(db->kick, EV_TIMEOUT, 0);
    return 0;
}

const char *db_sqlstate(const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return state ? state : "";
}

bool db_result_ok(const PGresult *res)
{
    ExecStatusType status = PQresultStatus(res);
    return res && (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK);
}

bool db_unavailable(const PGresult *res)
{
    if (!res)
        return true;
    const char *state = db_sqlstate(res);
    return strncmp(state, "08", 2) == 0 || strncmp(state, "53", 2) == 0 ||
           strncmp(state, "57", 2) == 0 || strncmp(state, "40", 2) == 0;
}
