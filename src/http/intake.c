/*
 * intake.c - connections and request heads before dispatch (see intake.h).
 *
 * The interposition: an executable's definition of a function that a
 * shared library calls through its PLT takes the library's place (http.c
 * does the same with evhttp_send_error). The definitions below call
 * libevent's own through dlsym(RTLD_NEXT) and add the guard's work before
 * or after it. They act only on requests of the evhttp that intake_start
 * was given; any other caller gets libevent's behaviour unchanged. Every
 * replacement is listed in libevent_replacements.c, marks itself reached,
 * and is proven in effect at start-up.
 * libevent 2.1's head parsers return 1 (all data read), 0 (more data
 * expected) or a negative error, the values used here.
 *
 * Invariants: a guard is in use exactly while its request lives (taken in
 * evhttp_request_new, returned in evhttp_request_free); its deadline timer
 * is pending only between the request's first byte and its dispatch; the
 * listeners are enabled exactly when accepting is not paused, fewer than
 * the maximum connections are open and the accept balance allows it
 * (below). Nothing is allocated once the listeners are added (each gets
 * its watcher event then).
 *
 * The accept balance (accept_balance.h): the open connections (in_use)
 * are published in shared memory, and the rule is evaluated right after
 * each accept (so a worker that got ahead stops before libevent's accept
 * loop takes the next queued connection), soon after each close (deferred
 * to the end of the loop iteration, so a keep-alive connection's request
 * ending and the next one starting publish nothing), every
 * INTAKE_BALANCE_IDLE_CHECK_MS while the worker accepts and holds
 * connections (a sibling's count may have dropped), and, while the rule
 * holds the worker back, whenever a connection waits: its listeners are
 * then disabled but a watcher event on each socket stays armed, so the
 * worker re-reads the counts as soon as a connection is queued and again
 * on each turn of its loop (yielding the CPU in between) until a sibling
 * takes it or the counts let this worker take it. In a burst of
 * connections two workers thus take turns without waiting for a timer. A
 * connection that waits INTAKE_BALANCE_STARVE_MS (the sibling that should
 * take it is busy or stopped) is taken anyway, with whatever else waits
 * (not what comes next): the balance may delay a connection that long,
 * never refuse it. Every worker polls every socket, so each new
 * connection wakes every worker (a small thundering herd: with 2 to 8
 * workers, a few failed accept() calls and re-reads of the counts).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "http/intake.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <time.h>

#include "http/accept_balance.h"
#include "http/libevent_replacements.h"
#include "base/log.h"
#include "http/server.h"

#define PARSE_ALL_DATA_READ 1
#define PARSE_DATA_TOO_LONG (-3)
#define MAX_LISTENERS 256
#define SURFACE_PEEK 48

struct guard {
    struct evhttp_request *req; /* NULL while free */
    struct event *deadline;
    struct guard *next_free;
    int surface; /* -1 until the request line is seen */
    int framing_status;
    const char *framing_error;
    int too_long_status; /* 414 or 431 once the head outgrew its limit */
    bool armed;
};

struct intake {
    struct http_server *w;
    struct accept_balance *balance; /* NULL: no balance (accept below the cap) */
    unsigned balance_slot;
    int32_t published;           /* this worker's entry in the balance table */
    bool balanced;               /* the balance rule lets this worker accept */
    bool starved;                /* a queue waited too long for a sibling: accept anyway */
    bool watching;               /* the watchers are armed */
    long long waiting_since_ms;  /* when the watchers began firing, or 0 */
    long long last_watch_ms;     /* when they last fired */
    struct event *balance_timer; /* balance_tick: the periodic re-check */
    struct event *balance_soon;  /* balance_after_close: activated, never timed */
    struct event *watchers[MAX_LISTENERS]; /* balance_watch on each listener's socket */
    struct guard *guards;
    size_t count, in_use;
    struct guard *free_list;
    struct timeval timeout;
    struct evconnlistener *listeners[MAX_LISTENERS];
    size_t nlisteners;
    bool listening; /* listeners currently enabled */
    bool paused;    /* out of descriptors: waiting for resume */
    struct event *resume;
    time_t last_report;
    unsigned long suppressed;
};

static struct intake intake;

/* ---- libevent's originals ---- */

typedef struct evhttp_request *(*request_new_fn)(void (*)(struct evhttp_request *, void *), void *);
typedef void (*request_free_fn)(struct evhttp_request *);
typedef int (*parse_fn)(struct evhttp_request *, struct evbuffer *);

static void *original(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);
    if (fn == NULL) {
        log_error("libevent has no %s: %s", name, dlerror());
        abort();
    }
    return fn;
}

/* ---- accepting ---- */

/* Held back by the balance alone: the watchers wake this worker while a
 * connection waits, to re-evaluate the rule with fresh counts. */
static void set_watching(bool want)
{
    if (want == intake.watching)
        return;
    for (size_t i = 0; i < intake.nlisteners; i++) {
        if (intake.watchers[i] != NULL && want)
            event_add(intake.watchers[i], NULL);
        else if (intake.watchers[i] != NULL)
            event_del(intake.watchers[i]);
    }
    intake.watching = want;
    intake.waiting_since_ms = 0;
}

static void set_listening(void)
{
    bool may = !intake.paused && intake.in_use < intake.count;
    bool want = may && (intake.balanced || intake.starved);
    set_watching(may && !want && intake.balance != NULL);
    if (want == intake.listening)
        return;
    for (size_t i = 0; i < intake.nlisteners; i++) {
        if (want)
            evconnlistener_enable(intake.listeners[i]);
        else
            evconnlistener_disable(intake.listeners[i]);
    }
    intake.listening = want;
}

/* ---- the accept balance ---- */

/* What this worker's balance entry should say. */
static int32_t balance_entry(void)
{
    bool may_accept = !intake.paused && intake.in_use < intake.count && intake.nlisteners > 0;
    return may_accept ? (int32_t)intake.in_use : ACCEPT_BALANCE_ABSENT;
}

/* Publishes the entry when it changed and re-evaluates the rule. */
static void balance_update(void)
{
    if (intake.balance == NULL)
        return;
    int32_t entry = balance_entry();
    if (entry != intake.published) {
        accept_balance_publish(intake.balance, intake.balance_slot, entry);
        intake.published = entry;
    }
    intake.balanced =
        accept_balance_may_accept(intake.balance, intake.balance_slot, (int32_t)intake.in_use);
}

/* True when a connection waits in the queue of one of the listeners. */
static bool connections_waiting(void)
{
    struct pollfd fds[MAX_LISTENERS];
    for (size_t i = 0; i < intake.nlisteners; i++)
        fds[i] =
            (struct pollfd){.fd = evconnlistener_get_fd(intake.listeners[i]), .events = POLLIN};
    return intake.nlisteners > 0 && poll(fds, (nfds_t)intake.nlisteners, 0) > 0;
}

/* While accepting with connections open, a sibling's count may drop
 * below this worker's: re-check now and then. */
static void balance_schedule(void)
{
    if (intake.balance == NULL || intake.nlisteners == 0 || !intake.listening || intake.in_use == 0)
        return;
    struct timeval every = {0, INTAKE_BALANCE_IDLE_CHECK_MS * 1000};
    event_add(intake.balance_timer, &every);
}

/* Re-evaluates the rule and publishes the count (on a new connection).
 * An override for a starved queue ends once the queues are empty: it
 * takes what waited, not what comes next. */
static void balance_after_change(void)
{
    balance_update();
    if (intake.starved && (intake.balanced || !connections_waiting()))
        intake.starved = false;
    set_listening();
    balance_schedule();
}

static void balance_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    balance_after_change();
}

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A connection waits while the balance holds this worker back: accept
 * when the counts now allow it, or when it has waited
 * INTAKE_BALANCE_STARVE_MS for the sibling that should take it; else
 * yield the CPU to that sibling (the watcher fires again on the next turn
 * of the loop while the connection waits). */
static void balance_watch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    balance_update();
    long long now = monotonic_ms();
    if (intake.waiting_since_ms == 0 || now - intake.last_watch_ms > INTAKE_BALANCE_STARVE_MS)
        intake.waiting_since_ms = now;
    intake.last_watch_ms = now;
    if (!intake.balanced && now - intake.waiting_since_ms >= INTAKE_BALANCE_STARVE_MS)
        intake.starved = true;
    set_listening();
    if (intake.watching)
        sched_yield();
    else
        balance_schedule();
}

/* After closes: publishes only a net change of the loop iteration. */
static void balance_after_close(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    if ((int32_t)intake.in_use != intake.published)
        balance_after_change();
}

void intake_balance_join(struct accept_balance *table, unsigned slot)
{
    intake.balance = table;
    intake.balance_slot = slot;
    intake.published = ACCEPT_BALANCE_ABSENT;
    intake.balanced = true;
    balance_after_change();
}

static void balance_leave(void)
{
    if (intake.balance != NULL)
        accept_balance_publish(intake.balance, intake.balance_slot, ACCEPT_BALANCE_ABSENT);
    intake.published = ACCEPT_BALANCE_ABSENT;
}

static void resume_accepting(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    intake.paused = false;
    balance_after_change();
}

static void report_accept_error(int err)
{
    time_t now = time(NULL);
    if (now - intake.last_report < INTAKE_LOG_INTERVAL_S) {
        intake.suppressed++;
        return;
    }
    log_warn("accept: %s; pausing new connections for %d ms (%lu more since the last report)",
             strerror(err), INTAKE_ACCEPT_PAUSE_MS, intake.suppressed);
    intake.last_report = now;
    intake.suppressed = 0;
}

static void on_accept_error(struct evconnlistener *listener, void *arg)
{
    (void)listener;
    (void)arg;
    int err = EVUTIL_SOCKET_ERROR();
    report_accept_error(err);
    intake.paused = true;
    balance_update();
    set_listening();
    struct timeval pause = {0, INTAKE_ACCEPT_PAUSE_MS * 1000};
    if (intake.resume != NULL)
        event_add(intake.resume, &pause);
}

void intake_add_listener(struct evconnlistener *listener)
{
    if (listener == NULL || intake.nlisteners >= MAX_LISTENERS)
        return;
    evconnlistener_set_error_cb(listener, on_accept_error);
    intake.watchers[intake.nlisteners] =
        intake.w != NULL ? event_new(intake.w->base, evconnlistener_get_fd(listener),
                                     EV_READ | EV_PERSIST, balance_watch, NULL)
                         : NULL;
    intake.listeners[intake.nlisteners++] = listener;
    if (!intake.listening)
        evconnlistener_disable(listener);
    if (intake.watching && intake.watchers[intake.nlisteners - 1] != NULL)
        event_add(intake.watchers[intake.nlisteners - 1], NULL);
}

void intake_forget_listeners(void)
{
    set_watching(false);
    for (size_t i = 0; i < intake.nlisteners; i++) {
        if (intake.watchers[i] != NULL)
            event_free(intake.watchers[i]);
        intake.watchers[i] = NULL;
    }
    intake.nlisteners = 0;
    balance_leave();
}

/* ---- libevent's log ---- */

/* libevent's own messages, in Ensign's format and at most a few a second. */
static void libevent_log(int severity, const char *msg)
{
    static time_t window;
    static unsigned in_window;
    time_t now = time(NULL);
    if (now != window) {
        window = now;
        in_window = 0;
    }
    if (++in_window > 5)
        return;
    enum log_level level = severity >= EVENT_LOG_ERR    ? LOG_LEVEL_ERROR
                           : severity == EVENT_LOG_WARN ? LOG_LEVEL_WARN
                                                        : LOG_LEVEL_DEBUG;
    log_msg(level, "libevent: %s", msg);
}

/* ---- the pool ---- */

static void on_complete(struct evhttp_request *req, void *arg)
{
    (void)req;
    (void)arg;
}

static struct guard *guard_of(struct evhttp_request *req)
{
    if (intake.guards == NULL || req == NULL || req->on_complete_cb != on_complete)
        return NULL;
    return req->on_complete_cb_arg;
}

static void deadline_passed(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct guard *g = arg;
    struct evhttp_connection *evcon = g->req != NULL ? evhttp_request_get_connection(g->req) : NULL;
    g->armed = false;
    if (evcon == NULL)
        return;
    log_debug("closing a connection whose request did not arrive within %ld ms",
              (long)(intake.timeout.tv_sec * 1000 + intake.timeout.tv_usec / 1000));
    evhttp_connection_free(evcon); /* frees g->req, which returns g */
}

int intake_start(struct http_server *w, size_t max_connections, int request_timeout_ms)
{
    event_set_log_callback(libevent_log);
    intake.w = w;
    intake.count = max_connections;
    intake.timeout.tv_sec = request_timeout_ms / 1000;
    intake.timeout.tv_usec = (suseconds_t)(request_timeout_ms % 1000) * 1000;
    intake.guards = calloc(max_connections, sizeof *intake.guards);
    intake.resume = evtimer_new(w->base, resume_accepting, NULL);
    intake.balance_timer = evtimer_new(w->base, balance_tick, NULL);
    intake.balance_soon = evtimer_new(w->base, balance_after_close, NULL);
    intake.balanced = true;
    if (intake.guards == NULL || intake.resume == NULL || intake.balance_timer == NULL ||
        intake.balance_soon == NULL)
        goto fail;
    for (size_t i = 0; i < max_connections; i++) {
        struct guard *g = &intake.guards[i];
        g->deadline = evtimer_new(w->base, deadline_passed, g);
        if (g->deadline == NULL)
            goto fail;
        g->next_free = intake.free_list;
        intake.free_list = g;
    }
    intake.listening = true;
    return 0;
fail:
    intake_end();
    return -1;
}

void intake_end(void)
{
    intake_forget_listeners();
    for (size_t i = 0; intake.guards != NULL && i < intake.count; i++)
        if (intake.guards[i].deadline != NULL)
            event_free(intake.guards[i].deadline);
    free(intake.guards);
    if (intake.resume != NULL)
        event_free(intake.resume);
    if (intake.balance_timer != NULL)
        event_free(intake.balance_timer);
    if (intake.balance_soon != NULL)
        event_free(intake.balance_soon);
    balance_leave();
    memset(&intake, 0, sizeof intake);
}

/* ---- the interposed functions ---- */

struct evhttp_request *evhttp_request_new(void (*cb)(struct evhttp_request *, void *), void *arg)
{
    static request_new_fn real;
    if (real == NULL)
        real = (request_new_fn)original("evhttp_request_new");
    libevent_replacement_reached(REPLACEMENT_EVHTTP_REQUEST_NEW);
    struct evhttp_request *req = real(cb, arg);
    if (req == NULL || intake.guards == NULL || arg != intake.w->http)
        return req;
    struct guard *g = intake.free_list;
    if (g == NULL) { /* at the cap: shed this connection */
        evhttp_request_free(req);
        return NULL;
    }
    intake.free_list = g->next_free;
    *g = (struct guard){.req = req, .deadline = g->deadline, .surface = -1};
    evhttp_request_set_on_complete_cb(req, on_complete, g);
    intake.in_use++;
    if ((int32_t)intake.in_use > intake.published)
        balance_after_change(); /* a new connection, not a keep-alive one's next request */
    else
        set_listening();
    return req;
}

void evhttp_request_free(struct evhttp_request *req)
{
    static request_free_fn real;
    if (real == NULL)
        real = (request_free_fn)original("evhttp_request_free");
    libevent_replacement_reached(REPLACEMENT_EVHTTP_REQUEST_FREE);
    struct guard *g = guard_of(req);
    if (g != NULL) {
        event_del(g->deadline);
        g->req = NULL;
        g->next_free = intake.free_list;
        intake.free_list = g;
        intake.in_use--;
        set_listening();
        if (intake.balance != NULL) /* after this iteration's callbacks */
            event_active(intake.balance_soon, EV_TIMEOUT, 0);
    }
    real(req);
}

/* The surface named by the request line at the start of buf, or -1. */
static int peek_surface(struct evbuffer *buf)
{
    char line[SURFACE_PEEK + 1];
    ev_ssize_t n = evbuffer_copyout(buf, line, SURFACE_PEEK);
    if (n <= 0)
        return -1;
    line[n] = '\0';
    char *space = memchr(line, ' ', (size_t)n);
    if (space == NULL || space[1] != '/')
        return -1;
    char *end = strpbrk(space + 1, " ?");
    if (end == NULL && n == SURFACE_PEEK)
        end = line + n; /* a long path: its first segments suffice */
    if (end == NULL)
        return -1;
    *end = '\0';
    return (int)envelope_surface_for_path(space + 1);
}

int evhttp_parse_firstline_(struct evhttp_request *req, struct evbuffer *buf);
int evhttp_parse_firstline_(struct evhttp_request *req, struct evbuffer *buf)
{
    static parse_fn real;
    if (real == NULL)
        real = (parse_fn)original("evhttp_parse_firstline_");
    libevent_replacement_reached(REPLACEMENT_EVHTTP_PARSE_FIRSTLINE);
    struct guard *g = guard_of(req);
    if (g != NULL && !g->armed && evbuffer_get_length(buf) > 0) {
        g->armed = true;
        event_add(g->deadline, &intake.timeout);
    }
    if (g != NULL && g->surface < 0)
        g->surface = peek_surface(buf);
    int status = real(req, buf);
    if (g != NULL && status == PARSE_DATA_TOO_LONG)
        g->too_long_status = 414;
    return status;
}

/* True when a NUL byte comes before the end of the head in buf. */
static bool nul_in_head(struct evbuffer *buf)
{
    struct evbuffer_ptr nul = evbuffer_search(buf, "", 1, NULL);
    if (nul.pos < 0)
        return false;
    struct evbuffer_ptr end = evbuffer_search(buf, "\r\n\r\n", 4, NULL);
    struct evbuffer_ptr lf_end = evbuffer_search(buf, "\n\n", 2, NULL);
    if (end.pos < 0 || (lf_end.pos >= 0 && lf_end.pos < end.pos))
        end = lf_end;
    return end.pos < 0 || nul.pos < end.pos;
}

/* Strips the optional white space (SP or HTAB, RFC 9110 section 5.6.3)
 * that libevent leaves before a field value: it skips spaces only, so
 * "Transfer-Encoding:<TAB>chunked" would not read as chunked. */
static void strip_leading_ows(struct evkeyvalq *headers)
{
    struct evkeyval *kv;
    TAILQ_FOREACH(kv, headers, next)
    {
        size_t skip = strspn(kv->value, " \t");
        if (skip > 0)
            memmove(kv->value, kv->value + skip, strlen(kv->value + skip) + 1);
    }
}

/* Removes every header called name. */
static void remove_all(struct evkeyvalq *headers, const char *name)
{
    while (evhttp_remove_header(headers, name) == 0)
        ;
}

int evhttp_parse_headers_(struct evhttp_request *req, struct evbuffer *buf);
int evhttp_parse_headers_(struct evhttp_request *req, struct evbuffer *buf)
{
    static parse_fn real;
    if (real == NULL)
        real = (parse_fn)original("evhttp_parse_headers_");
    libevent_replacement_reached(REPLACEMENT_EVHTTP_PARSE_HEADERS);
    struct guard *g = guard_of(req);
    if (g != NULL && g->framing_error == NULL && nul_in_head(buf)) {
        g->framing_error = "a NUL byte in the request head";
        g->framing_status = 400;
    }
    int status = real(req, buf);
    if (g != NULL && status == PARSE_DATA_TOO_LONG)
        g->too_long_status = 431;
    if (g == NULL || status != PARSE_ALL_DATA_READ || req->kind != EVHTTP_REQUEST)
        return status;
    strip_leading_ows(req->input_headers);
    if (g->framing_error == NULL)
        g->framing_error =
            intake_framing_check(req->input_headers, req->major, req->minor, &g->framing_status);
    if (g->framing_error != NULL) {
        /* Read no body: it could be a second request in disguise. The
         * answer closes the connection (http.c). */
        remove_all(req->input_headers, "Content-Length");
        remove_all(req->input_headers, "Transfer-Encoding");
        remove_all(req->input_headers, "Expect");
    }
    return status;
}

/* ---- chunk sizes ----
 *
 * libevent 2.1 reads a chunk-size line with evbuffer_readln and then
 * evutil_strtoll(line, &end, 16), and accepts it when the number ends the
 * line or is followed by a space. strtoll also takes leading white space,
 * a sign and a "0x" prefix, and the line is a C string, so "0x2", "+2",
 * " 2" and "2<NUL>" all read as 2, while the valid chunk extension
 * "20;ext=1" is refused; any refusal is reported as a body too large
 * (413). Chunk-size lines are the only base-16 calls: here a line is
 * checked by RFC 9112 section 7.1 (intake_chunk_size_line_ok), a valid
 * one is handed back as ending at its number, and an invalid one returns
 * -1, which libevent refuses, with chunk_size_malformed set for
 * evhttp_send_error to answer 400. The line's length comes from the
 * evbuffer_readln call that read it (the last line read), so a NUL inside
 * it is seen. The worker is single-threaded and libevent reports the
 * refusal before reading anything else, so one flag suffices. */

static bool chunk_size_malformed;
static const char *last_line; /* the line evbuffer_readln returned last */
static size_t last_line_len;

bool intake_chunk_size_malformed(void)
{
    return chunk_size_malformed;
}

bool intake_chunk_size_line_ok(const char *line, size_t len)
{
    size_t digits = strspn(line, "0123456789abcdefABCDEF");
    if (digits == 0 || strlen(line) != len)
        return false;
    const char *rest = line + digits;
    rest += strspn(rest, " \t");
    if (*rest == '\0')
        return true;
    if (*rest != ';')
        return false;
    for (const unsigned char *p = (const unsigned char *)rest; *p != '\0'; p++)
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return false;
    return true;
}

typedef char *(*readln_fn)(struct evbuffer *, size_t *, enum evbuffer_eol_style);

char *evbuffer_readln(struct evbuffer *buffer, size_t *n_read_out, enum evbuffer_eol_style style)
{
    static readln_fn real;
    if (real == NULL)
        real = (readln_fn)original("evbuffer_readln");
    libevent_replacement_reached(REPLACEMENT_EVBUFFER_READLN);
    size_t n = 0;
    char *line = real(buffer, &n, style);
    last_line = line;
    last_line_len = n;
    if (n_read_out != NULL)
        *n_read_out = n;
    return line;
}

typedef ev_int64_t (*strtoll_fn)(const char *, char **, int);

ev_int64_t evutil_strtoll(const char *s, char **endptr, int base)
{
    static strtoll_fn real;
    if (real == NULL)
        real = (strtoll_fn)original("evutil_strtoll");
    libevent_replacement_reached(REPLACEMENT_EVUTIL_STRTOLL);
    char *end = NULL;
    ev_int64_t value = real(s, &end, base);
    if (base != 16 || intake.guards == NULL) {
        if (endptr != NULL)
            *endptr = end;
        return value;
    }
    size_t len = s == last_line ? last_line_len : strlen(s);
    chunk_size_malformed = value < 0 || !intake_chunk_size_line_ok(s, len);
    if (endptr != NULL)
        *endptr = chunk_size_malformed ? end : (char *)"";
    return chunk_size_malformed ? -1 : value;
}

/* ---- what the dispatcher asks ---- */

const char *intake_dispatched(struct evhttp_request *req, int *status)
{
    struct guard *g = guard_of(req);
    if (g == NULL)
        return NULL;
    event_del(g->deadline);
    *status = g->framing_status;
    return g->framing_error;
}

int intake_head_too_long(struct evhttp_request *req)
{
    struct guard *g = guard_of(req);
    return g != NULL ? g->too_long_status : 0;
}

int intake_surface(struct evhttp_request *req)
{
    struct guard *g = guard_of(req);
    return g != NULL ? g->surface : -1;
}

/* ---- the framing rules ---- */

/* RFC 9110 section 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" /
 * "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
 * (a table: every header name of every request goes through it) */
#define TCHAR_PUNCT(c)                                                                             \
    ((c) == '!' || (c) == '#' || (c) == '$' || (c) == '%' || (c) == '&' || (c) == '\'' ||          \
     (c) == '*' || (c) == '+' || (c) == '-' || (c) == '.' || (c) == '^' || (c) == '_' ||           \
     (c) == '`' || (c) == '|' || (c) == '~')
#define TCHAR(c)                                                                                   \
    (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') ||     \
     TCHAR_PUNCT(c))

static bool tchar_table[256];
static bool tchar_table_ready;

static void tchar_table_fill(void)
{
    for (int c = 0; c < 256; c++)
        tchar_table[c] = TCHAR(c);
    tchar_table_ready = true;
}

bool intake_token_ok(const char *name)
{
    if (!tchar_table_ready)
        tchar_table_fill();
    if (*name == '\0')
        return false;
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++)
        if (!tchar_table[*p])
            return false;
    return true;
}

bool intake_digits_ok(const char *value)
{
    size_t n = strspn(value, "0123456789");
    return n > 0 && value[n] == '\0';
}

/* RFC 9110 section 5.5: a recipient of CR, LF or NUL in a field value
 * must reject the message (or replace them). libevent splits lines at LF
 * and NUL is refused with the head (nul_in_head), so a bare CR is what can
 * be left; other control characters are invalid but harmless, and every
 * value of every request goes through this (strchr is vectorized). */
static bool field_value_ok(const char *value)
{
    return strchr(value, '\r') == NULL;
}

bool intake_host_ok(const char *value)
{
    /* uri-host [ ":" port ] (RFC 9110 section 7.2): reg-name characters
     * (unreserved, pct-encoded, sub-delims), an IP literal's brackets and
     * colons; may be empty */
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789-._~%!$&'()*+,;=:[]";
    return value[strspn(value, allowed)] == '\0';
}

/* How often one header name occurs, its first value, and whether a later
 * value differs from it. */
struct header_tally {
    size_t n;
    const char *first;
    bool differ;
};

static void tally(struct header_tally *t, const char *value)
{
    if (t->n++ == 0)
        t->first = value;
    else if (strcmp(value, t->first) != 0)
        t->differ = true;
}

#define NAME_IS(key, len, name) ((len) == sizeof(name) - 1 && strcasecmp((key), (name)) == 0)

/* Counts the three framing headers; the first rule a field breaks, or NULL. */
static const char *tally_fields(const struct evkeyvalq *headers, struct header_tally *length,
                                struct header_tally *coding, struct header_tally *host)
{
    /* one pass over the headers, names told apart by length first */
    const struct evkeyval *kv;
    TAILQ_FOREACH(kv, headers, next)
    {
        if (!intake_token_ok(kv->key))
            return "a header field name that is not a token";
        if (!field_value_ok(kv->value))
            return "a CR in a header field value";
        size_t len = strlen(kv->key);
        if (NAME_IS(kv->key, len, "Content-Length")) {
            if (!intake_digits_ok(kv->value))
                return "a Content-Length that is not a decimal number";
            tally(length, kv->value);
        } else if (NAME_IS(kv->key, len, "Transfer-Encoding")) {
            tally(coding, kv->value);
        } else if (NAME_IS(kv->key, len, "Host")) {
            if (!intake_host_ok(kv->value))
                return "a Host header that is not a host";
            tally(host, kv->value);
        }
    }
    return NULL;
}

const char *intake_framing_check(const struct evkeyvalq *headers, int major, int minor, int *status)
{
    struct header_tally length = {0}, coding = {0}, host = {0};
    *status = 400;
    if (major != 1) {
        *status = 505;
        return "only HTTP/1.x is supported";
    }
    const char *broken = tally_fields(headers, &length, &coding, &host);
    if (broken != NULL)
        return broken;
    if (length.differ)
        return "conflicting Content-Length headers";
    if (coding.n > 1 || (coding.n == 1 && strcasecmp(coding.first, "chunked") != 0))
        return "the only transfer coding accepted is chunked";
    if (coding.n > 0 && length.n > 0)
        return "Transfer-Encoding and Content-Length together";
    if (host.n > 1)
        return "more than one Host header";
    if (host.n == 0 && minor >= 1)
        return "an HTTP/1.1 request needs a Host header";
    return NULL;
}
