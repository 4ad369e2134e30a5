/*
 * libevent_replacements.c - the one list of libevent functions ensignd
 * replaces, and the start-up proof that each is in effect (see
 * libevent_replacements.h).
 *
 * How a replacement works: libevent's shared object calls its own
 * exported functions through its PLT, so a definition of the same name in
 * the executable takes the library's place for libevent's internal calls
 * too (ELF symbol interposition). Most replacements then call libevent's
 * own definition, found with dlsym(RTLD_NEXT), and add their work before
 * or after it. This holds only while libevent is a shared object whose
 * internal calls are preemptible: a libevent linked with -Bsymbolic or
 * -Bsymbolic-functions (Ubuntu's default packaging flags), built with
 * hidden visibility or linked statically calls itself directly, and the
 * replacements silently stop applying. Debian 12's libevent 2.1.12 routes
 * these calls through the PLT; libevent_replacements_prove checks it at
 * every start.
 *
 * Written against libevent 2.1.12-stable; configure accepts 2.1.12 up to,
 * not including, 2.2 (2.2 renames and reshapes several of these).
 *
 * The inventory. For each: the file, what it replaces, why libevent 2.1's
 * public API cannot do it, what private detail it relies on.
 *
 *  evhttp_request_new, evhttp_request_free (intake.c)
 *    Replace: nothing of libevent's work; they attach a guard (deadline
 *    timer, framing verdict, surface) to each server request and count
 *    open connections for the per-worker cap and the accept balance.
 *    Why: 2.1 has no callback when evhttp creates or frees a request
 *    (evhttp_set_newreqcb is 2.2). Relies on: evhttp calling
 *    evhttp_request_new(evhttp_handle_request, http) for each incoming
 *    request (the cb_arg is the struct evhttp), and on
 *    evhttp_request_set_on_complete_cb's pointer being kept in
 *    req->on_complete_cb / on_complete_cb_arg (event2/http_struct.h) to
 *    find the guard again.
 *
 *  evhttp_parse_firstline_, evhttp_parse_headers_ (intake.c)
 *    Replace: libevent's head parsers, called first. Add: the head
 *    deadline from the first byte, the surface of the request line, 414 /
 *    431 for heads too long, NUL bytes in the head, and the framing rules
 *    (field names are tokens, Content-Length is 1*DIGIT, one Host that is
 *    a host, only chunked, not TE with CL, the leading HTAB of a field
 *    value stripped). Why: 2.1 has no hook between reading a head and
 *    reading its body; a verdict after the body is too late (the body
 *    would have been read as framed, a second request smuggled).
 *    Relies on: these internal (trailing underscore) names and their
 *    return codes (1 all read, 0 more data, -3 too long), being exported
 *    by libevent.so, and on struct evhttp_request's fields kind,
 *    input_headers, major, minor, headers_size (event2/http_struct.h).
 *
 *  evbuffer_readln (intake.c)
 *    Replaces: nothing; remembers the last line read and its length, so a
 *    chunk-size line with a NUL ("2<NUL>") is seen by evutil_strtoll.
 *    Why: libevent hands the chunk-size line to strtoll as a C string.
 *    Relies on: evhttp_handle_chunked_read calling evbuffer_readln then
 *    evutil_strtoll(line, &end, 16) on that same pointer.
 *
 *  evutil_strtoll (intake.c)
 *    Replaces: the base-16 calls (chunk-size lines only) with RFC 9112's
 *    chunk-size grammar (1*HEXDIG, then ";ext" or the end; strtoll takes
 *    "0x2", "+2", " 2"), accepting chunk extensions; other bases are
 *    libevent's. Why: 2.1 offers no chunk callback before the size is
 *    parsed. Relies on: base 16 being used only for chunk sizes in 2.1's
 *    http.c, and on a size < 0 making libevent refuse the body (413 via
 *    evhttp_send_error, turned into 400 there).
 *
 *  evhttp_send_error (http.c)
 *    Replaces: libevent's HTML error page for the errors evhttp raises
 *    itself (bad request line, head or body too large, malformed chunk)
 *    with the surface's JSON body. Why: 2.1 has no error callback
 *    (evhttp_set_errorcb is 2.2). Relies on: req->uri being freed before
 *    the call on parse errors (so the surface comes from intake.c),
 *    req->chunked, req->headers_size.
 *
 *  evbuffer_add_printf (head_format.c)
 *    Replaces: the two formats evhttp writes every answer's head with
 *    ("HTTP/%d.%d %d %s\r\n", "%s: %s\r\n") by hand; other formats go to
 *    libevent. Kept for speed: about 0.9 µs of the ~14 µs of server CPU
 *    per evaluation (ChangeLog). Relies on: evhttp_make_header's format
 *    strings, byte for byte.
 *
 *  evutil_date_rfc1123 (head_format.c)
 *    Replaces: the Date header's snprintf per answer by the text of the
 *    current second, cached. Kept for speed (same measurement). The
 *    public-API alternative, a Date header added by ensignd so that
 *    evhttp_maybe_add_date_header skips its own, would still cost a header
 *    insert and a lookup per answer (not measured). Relies on: evhttp
 *    calling it with tm == NULL for "now".
 *
 *  evutil_ascii_strcasecmp (header_index.c)
 *    Replaces: libevent's per-character compare with one that folds only
 *    bytes that differ. Kept for speed: evhttp compares header names many
 *    times per request (15 call sites in 2.1.12). Relies on nothing
 *    private but the name; same result as libevent's.
 *
 * Where 2.1's public API does the job, it is used instead: connections
 * are shaped with evhttp_set_bevcb (query_method.c), the body and head
 * size limits with evhttp_set_max_*_size, libevent's memory with
 * event_set_mem_functions (event_memory.c), its log with
 * event_set_log_callback (intake.c).
 */
#include "http/libevent_replacements.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

unsigned char libevent_replacement_seen[REPLACEMENTS];

static const struct {
    const char *name;
    const char *purpose;
} inventory[REPLACEMENTS] = {
    [REPLACEMENT_EVHTTP_REQUEST_NEW] = {"evhttp_request_new",
                                        "the per-request guard, deadline and connection cap"},
    [REPLACEMENT_EVHTTP_REQUEST_FREE] = {"evhttp_request_free",
                                         "the per-request guard, deadline and connection cap"},
    [REPLACEMENT_EVHTTP_PARSE_FIRSTLINE] = {"evhttp_parse_firstline_",
                                            "the request-head deadline and 414"},
    [REPLACEMENT_EVHTTP_PARSE_HEADERS] = {"evhttp_parse_headers_",
                                          "the framing checks against request smuggling"},
    [REPLACEMENT_EVBUFFER_READLN] = {"evbuffer_readln", "the chunk-size NUL check"},
    [REPLACEMENT_EVUTIL_STRTOLL] = {"evutil_strtoll", "the strict chunk-size check"},
    [REPLACEMENT_EVHTTP_SEND_ERROR] = {"evhttp_send_error", "JSON bodies for libevent's errors"},
    [REPLACEMENT_EVBUFFER_ADD_PRINTF] = {"evbuffer_add_printf", "the answer head without printf"},
    [REPLACEMENT_EVUTIL_DATE_RFC1123] = {"evutil_date_rfc1123", "the cached Date header"},
    [REPLACEMENT_EVUTIL_ASCII_STRCASECMP] = {"evutil_ascii_strcasecmp",
                                             "the fast header-name compare"},
};

const char *libevent_replacement_name(enum libevent_replacement r)
{
    return r < REPLACEMENTS ? inventory[r].name : "?";
}

const char *libevent_replacement_purpose(enum libevent_replacement r)
{
    return r < REPLACEMENTS ? inventory[r].purpose : "?";
}

/* ---- the probe ---- */

/* A chunked body whose size line is not a number: libevent reads the
 * head, then the size, refuses it and answers through evhttp_send_error. */
static const char PROBE_REQUEST[] = "POST /ofrep/v1/probe HTTP/1.1\r\n"
                                    "Host: probe\r\n"
                                    "Transfer-Encoding: chunked\r\n"
                                    "\r\n"
                                    "zz\r\n";

#define PROBE_TIMEOUT_MS 2000
#define PROBE_ANSWER_MAX 4096

struct probe {
    struct event_base *base;
    int client;
    char answer[PROBE_ANSWER_MAX];
    size_t len;
    bool timed_out;
};

/* Should never run: the probe request fails before dispatch. */
static void probe_dispatch(struct evhttp_request *req, void *arg)
{
    (void)arg;
    evhttp_send_reply(req, 200, "OK", NULL);
}

static void probe_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct probe *p = arg;
    ssize_t n = recv(fd, p->answer + p->len, sizeof p->answer - 1 - p->len, 0);
    if (n > 0)
        p->len += (size_t)n;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || p->len == sizeof p->answer - 1)
        event_base_loopbreak(p->base);
}

static void probe_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct probe *p = arg;
    p->timed_out = true;
    event_base_loopbreak(p->base);
}

/* A client connected to the port of bound and the probe request sent; -1. */
static int probe_connect(struct evhttp_bound_socket *bound)
{
    struct sockaddr_in addr;
    socklen_t addrlen = sizeof addr;
    if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&addr, &addrlen) != 0)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&addr, addrlen) != 0 ||
        send(fd, PROBE_REQUEST, sizeof PROBE_REQUEST - 1, MSG_NOSIGNAL) !=
            (ssize_t)(sizeof PROBE_REQUEST - 1) ||
        evutil_make_socket_nonblocking(fd) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Runs the exchange on p->base until the server closes or the timeout. */
static int probe_exchange(struct probe *p, struct evhttp *http, char *err, size_t errlen)
{
    struct evhttp_bound_socket *bound = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
    if (bound == NULL || (p->client = probe_connect(bound)) < 0) {
        snprintf(err, errlen,
                 "cannot prove the libevent replacements in effect: "
                 "no loopback connection to 127.0.0.1 for the probe");
        return -1;
    }
    struct event *reader = event_new(p->base, p->client, EV_READ | EV_PERSIST, probe_read, p);
    struct event *timer = evtimer_new(p->base, probe_timeout, p);
    struct timeval limit = {PROBE_TIMEOUT_MS / 1000, (PROBE_TIMEOUT_MS % 1000) * 1000};
    int rc = -1;
    if (reader != NULL && timer != NULL && event_add(reader, NULL) == 0 &&
        evtimer_add(timer, &limit) == 0 && event_base_dispatch(p->base) >= 0)
        rc = 0;
    if (rc == 0 && p->timed_out)
        snprintf(err, errlen,
                 "cannot prove the libevent replacements in effect: the probe "
                 "request got no answer within %d ms",
                 PROBE_TIMEOUT_MS);
    else if (rc != 0)
        snprintf(err, errlen,
                 "cannot prove the libevent replacements in effect: "
                 "the probe's event loop failed");
    if (reader != NULL)
        event_free(reader);
    if (timer != NULL)
        event_free(timer);
    return rc == 0 && !p->timed_out ? 0 : -1;
}

/* The verdict on what the probe saw: 0, or -1 with err. */
static int probe_verdict(const struct probe *p, char *err, size_t errlen)
{
    for (int r = 0; r < REPLACEMENTS; r++) {
        if (!libevent_replacement_seen[r]) {
            snprintf(err, errlen,
                     "libevent replacement %s (%s) is not in effect: libevent does not call "
                     "it through its PLT (built with -Bsymbolic-functions, hidden visibility "
                     "or linked statically?); refusing to start without the framing defences",
                     inventory[r].name, inventory[r].purpose);
            return -1;
        }
    }
    const char *body = strstr(p->answer, "\r\n\r\n");
    if (strncmp(p->answer, "HTTP/1.1 4", 10) != 0 || body == NULL || body[4] != '{') {
        snprintf(err, errlen,
                 "libevent replacement evhttp_send_error is not in effect: the probe's "
                 "malformed chunk was not answered with a JSON 4xx (got \"%.40s\")",
                 p->answer);
        return -1;
    }
    return 0;
}

int libevent_replacements_prove(char *err, size_t errlen)
{
    memset(libevent_replacement_seen, 0, sizeof libevent_replacement_seen);
    struct probe p = {.client = -1};
    struct evhttp *http = NULL;
    int rc = -1;
    p.base = event_base_new();
    if (p.base != NULL)
        http = evhttp_new(p.base);
    if (http == NULL) {
        snprintf(err, errlen,
                 "cannot prove the libevent replacements in effect: "
                 "no event base for the probe");
    } else {
        evhttp_set_gencb(http, probe_dispatch, NULL);
        rc = probe_exchange(&p, http, err, errlen);
    }
    if (p.client >= 0)
        close(p.client);
    if (http != NULL)
        evhttp_free(http);
    if (p.base != NULL)
        event_base_free(p.base);
    p.answer[p.len] = '\0';
    return rc == 0 ? probe_verdict(&p, err, errlen) : -1;
}
