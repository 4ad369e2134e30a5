/*
 * streams.c - the change-notification streams of one worker (see
 * streams.h).
 *
 * A hub holds channels, one per SDK key with open streams on this worker
 * (hashed by digest), and each channel its streams in a list. What a
 * channel remembers is what the events need: the key's environment id, the
 * environment's clock-free bulk ETag at the last generation seen, the
 * generation at which that ETag last changed and when. A stream is a
 * libevent request whose reply was started (http_start_stream) and never
 * ended until the client leaves (the connection's close callback), the
 * key is revoked, or the worker drains.
 */
#include "eval/streams.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "eval/eval.h"
#include "base/hex.h"
#include "http/http.h"
#include "base/log.h"
#include "eval/served_snapshot.h"
#include "http/server.h"
#include "eval/shm.h"
#include "eval/snapshot.h"
#include "eval/stream_slots.h"
#include "base/token.h"

#define CHANNEL_BUCKETS 1024
#define ENV_ID_MAX 64
#define WRITE_TIMEOUT_S 60
#define OUTPUT_BACKLOG_MAX 16384 /* a client this far behind gets no more heartbeats */
#define READ_BACKLOG_MAX 1024    /* what a client may send on a stream before we stop reading */
#define EVENT_TEXT_MAX 256
#define RETRY_AFTER_S "5"
/* How long one round of events may write to sockets itself before it
 * leaves the rest to the event loop (where requests interleave). */
#define DIRECT_WRITE_MS 10.0

const char streams_response_schema[] = "{\"type\":\"string\",\"contentMediaType\":"
                                       "\"text/event-stream\"}";

struct channel;

struct stream {
    struct stream *prev, *next;
    struct channel *channel; /* NULL for a tap (struct stream_tap) */
    struct evhttp_request *req;
};

/* A stream whose events come from a layer above (streams_tap_open). */
struct stream_tap {
    struct stream st; /* first: a tap's stream is the tap */
    struct stream_hub *hub;
    uint8_t digest[STREAM_SLOTS_DIGEST_LEN];
    streams_tap_gone_cb gone;
    void *arg;
};

struct channel {
    struct channel *next_in_bucket;
    struct stream_hub *hub;
    uint8_t digest[TOKEN_DIGEST_HEX_LEN / 2];
    char digest_hex[TOKEN_DIGEST_HEX_LEN + 1];
    char env_id[ENV_ID_MAX];
    char tag[EVAL_ETAG_SIZE]; /* bulk ETag, empty context, clock left out */
    uint64_t tracked_since;   /* generation this worker started watching at */
    uint64_t changed_gen;     /* generation at which tag last changed */
    int64_t changed_at;       /* then, in seconds since the epoch */
    struct stream *streams;
    size_t count;
};

struct stream_hub {
    struct stream *taps; /* the taps' streams */
    struct http_server *w;
    struct channel *buckets[CHANNEL_BUCKETS];
    size_t open;   /* streams and taps */
    size_t ending; /* ended streams whose connection is not closed yet */
    bool closed;   /* draining: no new streams */
    uint64_t seen_published;
    struct event *watch;
    struct event *heartbeat;
    struct timeval heartbeat_every;
    struct evbuffer *scratch;
    double direct_until; /* monotonic ms: write to sockets directly until then */
};

/* ---- small helpers ---- */

static int64_t unix_seconds(void)
{
    return (int64_t)time(NULL);
}

static int64_t wall_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static uint64_t published_generation(const struct stream_hub *hub)
{
    const struct shm_region *shm = hub->w->shm;
    if (shm == NULL || shm->header == NULL)
        return 0;
    return atomic_load_explicit(&shm->header->snapshot_generation, memory_order_acquire);
}

static struct stream_slots *slots_of(const struct stream_hub *hub)
{
    return hub->w->shm != NULL ? hub->w->shm->stream_slots : NULL;
}

/* The environment's clock-free configuration tag: its bulk ETag for the
 * empty context at a fixed instant. */
static void config_tag(const struct snapshot *s, const struct snapshot_env *env,
                       char out[EVAL_ETAG_SIZE])
{
    eval_bulk_etag(s, env, NULL, 0, out);
}

static bool env_id_equal(const struct snapshot *s, const struct snapshot_env *env, const char *id)
{
    return env->id.len < ENV_ID_MAX && strcmp(snapshot_string(s, env->id), id) == 0;
}

/* ---- writing to streams ---- */

/* Writes text as one chunk straight to the socket when nothing is queued
 * before it: no event toggling and no extra loop turn per stream, which is
 * most of the cost of telling thousands of streams. What the socket does
 * not take is queued, already framed, for the bufferevent to write.
 * False when it wrote nothing (then the caller queues it the usual way). */
static bool write_now(struct bufferevent *bev, const struct evhttp_request *req, const char *text,
                      size_t len)
{
    if (!req->chunked)
        return false;
    char head[24];
    int head_len = snprintf(head, sizeof head, "%zx\r\n", len);
    struct iovec iov[3] = {{head, (size_t)head_len}, {(void *)text, len}, {(void *)"\r\n", 2}};
    size_t total = (size_t)head_len + len + 2;
    ssize_t sent = writev(bufferevent_getfd(bev), iov, 3);
    if (sent <= 0)
        return false;
    if ((size_t)sent == total)
        return true;
    struct evbuffer *rest = bufferevent_get_output(bev);
    for (size_t i = 0, skip = (size_t)sent; i < 3; i++) {
        size_t n = iov[i].iov_len;
        if (skip < n)
            evbuffer_add(rest, (const char *)iov[i].iov_base + skip, n - skip);
        skip = skip > n ? skip - n : 0;
    }
    return true;
}

/* Writes text to st unless more than backlog_max bytes wait for the
 * client already (then false: text is dropped). */
static bool send_text_within(struct stream_hub *hub, struct stream *st, const char *text,
                             size_t len, size_t backlog_max)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(st->req);
    struct bufferevent *bev = evcon != NULL ? evhttp_connection_get_bufferevent(evcon) : NULL;
    if (bev == NULL)
        return false;
    size_t queued = evbuffer_get_length(bufferevent_get_output(bev));
    if (queued > backlog_max)
        return false;
    if (queued == 0 && monotonic_ms() < hub->direct_until && write_now(bev, st->req, text, len))
        return true;
    evbuffer_add(hub->scratch, text, len);
    evhttp_send_reply_chunk(st->req, hub->scratch);
    evbuffer_drain(hub->scratch, evbuffer_get_length(hub->scratch));
    return true;
}

/* An OFREP event or a heartbeat: dropped for a client OUTPUT_BACKLOG_MAX
 * behind (a stuck client: the write timeout ends it; the next event says
 * the same, newer). */
static void send_text(struct stream_hub *hub, struct stream *st, const char *text, size_t len)
{
    send_text_within(hub, st, text, len, OUTPUT_BACKLOG_MAX);
}

/* The refetchEvaluation event of ch's environment into out. */
static size_t format_event(const struct snapshot *s, const struct snapshot_env *env,
                           const struct channel *ch, char out[EVENT_TEXT_MAX])
{
    char etag[EVAL_ETAG_SIZE];
    char escaped[2 * EVAL_ETAG_SIZE];
    eval_bulk_etag(s, env, NULL, wall_clock_us(), etag);
    size_t n = 0;
    for (const char *p = etag; *p != '\0' && n + 2 < sizeof escaped; p++) {
        if (*p == '"' || *p == '\\')
            escaped[n++] = '\\';
        escaped[n++] = *p;
    }
    escaped[n] = '\0';
    int len = snprintf(out, EVENT_TEXT_MAX,
                       "id: %" PRIu64 "\ndata: {\"type\":\"refetchEvaluation\",\"etag\":\"%s\","
                       "\"lastModified\":%" PRId64 "}\n\n",
                       snapshot_generation(s), escaped, ch->changed_at);
    return len > 0 && len < EVENT_TEXT_MAX ? (size_t)len : 0;
}

/* ---- ending streams ---- */

static void unlink_tap(struct stream_hub *hub, struct stream_tap *tap)
{
    struct stream *st = &tap->st;
    if (st->prev != NULL)
        st->prev->next = st->next;
    else
        hub->taps = st->next;
    if (st->next != NULL)
        st->next->prev = st->prev;
    hub->open--;
    struct stream_slots *slots = slots_of(hub);
    if (slots != NULL)
        stream_slots_release(slots, tap->digest, (int32_t)getpid());
}

static void unlink_stream(struct stream_hub *hub, struct stream *st)
{
    struct channel *ch = st->channel;
    if (ch == NULL) {
        unlink_tap(hub, (struct stream_tap *)st);
        return;
    }
    if (st->prev != NULL)
        st->prev->next = st->next;
    else
        ch->streams = st->next;
    if (st->next != NULL)
        st->next->prev = st->prev;
    ch->count--;
    hub->open--;
    struct stream_slots *slots = slots_of(hub);
    if (slots != NULL)
        stream_slots_release(slots, ch->digest, (int32_t)getpid());
}

static size_t bucket_of(const uint8_t *digest)
{
    return ((size_t)digest[0] | (size_t)digest[1] << 8) % CHANNEL_BUCKETS;
}

static void free_channel_if_empty(struct stream_hub *hub, struct channel *ch)
{
    if (ch->count > 0)
        return;
    struct channel **link = &hub->buckets[bucket_of(ch->digest)];
    while (*link != ch)
        link = &(*link)->next_in_bucket;
    *link = ch->next_in_bucket;
    free(ch);
}

static void stop_timers_if_idle(struct stream_hub *hub)
{
    if (hub->open > 0)
        return;
    if (hub->watch != NULL)
        event_del(hub->watch);
    if (hub->heartbeat != NULL)
        event_del(hub->heartbeat);
}

/* The client went away (or the write timed out): libevent is freeing the
 * connection. A request whose reply was not ended was detached from it
 * and is ours to free; one still attached goes with the connection. */
static void on_connection_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct stream *st = arg;
    struct channel *ch = st->channel;
    struct stream_tap *tap = ch == NULL ? (struct stream_tap *)st : NULL;
    struct stream_hub *hub = ch != NULL ? ch->hub : tap->hub;
    struct evhttp_request *req = st->req;
    unlink_stream(hub, st);
    if (tap != NULL)
        tap->gone(tap->arg);
    free(st);
    if (ch != NULL)
        free_channel_if_empty(hub, ch);
    if (evhttp_request_get_connection(req) == NULL)
        evhttp_request_free(req);
    stop_timers_if_idle(hub);
}

/* The connection of an ended stream closed: its terminator was sent (or
 * the client left first). */
static void on_ended_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct stream_hub *hub = arg;
    hub->ending--;
}

/* Ends st with the chunked terminator; the connection then closes
 * (Connection: close was sent), which streams_ending() follows. */
static void end_stream(struct stream_hub *hub, struct stream *st)
{
    struct channel *ch = st->channel;
    struct evhttp_connection *evcon = evhttp_request_get_connection(st->req);
    if (evcon != NULL) {
        evhttp_connection_set_closecb(evcon, on_ended_close, hub);
        hub->ending++;
    }
    evhttp_send_reply_end(st->req);
    unlink_stream(hub, st);
    free(st);
    if (ch != NULL)
        free_channel_if_empty(hub, ch);
}

static void end_channel(struct stream_hub *hub, struct channel *ch)
{
    while (ch->count > 1)
        end_stream(hub, ch->streams);
    end_stream(hub, ch->streams); /* frees ch */
}

/* ---- watching the generation ---- */

static void notify_channel(struct stream_hub *hub, const struct snapshot *s,
                           const struct snapshot_env *env, struct channel *ch)
{
    char text[EVENT_TEXT_MAX];
    size_t len = format_event(s, env, ch, text);
    if (len == 0)
        return;
    for (struct stream *st = ch->streams; st != NULL; st = st->next)
        send_text(hub, st, text, len);
}

/* Revocation and changes for one channel; false when it was ended. */
static bool check_channel(struct stream_hub *hub, const struct snapshot *s, struct channel *ch)
{
    const struct snapshot_env *env = snapshot_env_by_sdk_digest(s, ch->digest_hex);
    if (env == NULL || !env_id_equal(s, env, ch->env_id)) {
        end_channel(hub, ch);
        return false;
    }
    char tag[EVAL_ETAG_SIZE];
    config_tag(s, env, tag);
    if (strcmp(tag, ch->tag) != 0) {
        memcpy(ch->tag, tag, sizeof tag);
        ch->changed_gen = snapshot_generation(s);
        ch->changed_at = unix_seconds();
        notify_channel(hub, s, env, ch);
    }
    return true;
}

static void check_all(struct stream_hub *hub, const struct snapshot *s)
{
    double started = monotonic_ms();
    size_t streams = hub->open;
    hub->direct_until = started + DIRECT_WRITE_MS;
    for (size_t b = 0; b < CHANNEL_BUCKETS; b++) {
        struct channel *ch = hub->buckets[b];
        while (ch != NULL) {
            struct channel *next = ch->next_in_bucket;
            check_channel(hub, s, ch);
            ch = next;
        }
    }
    log_debug("streams: generation %" PRIu64 " checked for %zu streams in %.1f ms",
              snapshot_generation(s), streams, monotonic_ms() - started);
}

static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct stream_hub *hub = arg;
    uint64_t published = published_generation(hub);
    if (published == hub->seen_published)
        return;
    const struct snapshot *s = served_snapshot_current(hub->w->snapshot);
    if (s == NULL)
        return;
    hub->seen_published = published;
    check_all(hub, s);
    stop_timers_if_idle(hub);
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    static const char comment[] = ": keep-alive\n\n";
    struct stream_hub *hub = arg;
    for (size_t b = 0; b < CHANNEL_BUCKETS; b++)
        for (struct channel *ch = hub->buckets[b]; ch != NULL; ch = ch->next_in_bucket)
            for (struct stream *st = ch->streams; st != NULL; st = st->next)
                send_text(hub, st, comment, sizeof comment - 1);
    for (struct stream *st = hub->taps; st != NULL; st = st->next)
        send_text(hub, st, comment, sizeof comment - 1);
}

static void start_timers(struct stream_hub *hub)
{
    struct timeval watch_every = {0, STREAMS_WATCH_MS * 1000};
    if (!event_pending(hub->watch, EV_TIMEOUT, NULL))
        event_add(hub->watch, &watch_every);
    if (!event_pending(hub->heartbeat, EV_TIMEOUT, NULL))
        event_add(hub->heartbeat, &hub->heartbeat_every);
}

/* ---- the hub ---- */

static struct timeval heartbeat_interval(void)
{
    long ms = STREAMS_HEARTBEAT_MS;
    const char *env = getenv("ENSIGN_STREAM_HEARTBEAT_MS");
    if (env != NULL) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 10 && v <= STREAMS_HEARTBEAT_MS)
            ms = v;
    }
    return (struct timeval){ms / 1000, (ms % 1000) * 1000};
}

/* Lets stream_max_per_worker streams (plus room for requests) fit under
 * the soft open-file limit, as far as the hard limit allows. */
static void raise_open_file_limit(const struct config *cfg)
{
    struct rlimit lim;
    rlim_t wanted = (rlim_t)cfg->stream_max_per_worker + 1024;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= wanted)
        return;
    lim.rlim_cur = lim.rlim_max != RLIM_INFINITY && lim.rlim_max < wanted ? lim.rlim_max : wanted;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
        log_warn("cannot raise the open-file limit to %llu: %s", (unsigned long long)wanted,
                 strerror(errno));
}

struct stream_hub *streams_hub_new(struct http_server *w)
{
    struct stream_hub *hub = calloc(1, sizeof *hub);
    if (hub == NULL)
        return NULL;
    hub->w = w;
    hub->heartbeat_every = heartbeat_interval();
    hub->scratch = evbuffer_new();
    hub->watch = event_new(w->base, -1, EV_PERSIST, on_watch, hub);
    hub->heartbeat = event_new(w->base, -1, EV_PERSIST, on_heartbeat, hub);
    if (hub->scratch == NULL || hub->watch == NULL || hub->heartbeat == NULL) {
        streams_hub_free(hub);
        return NULL;
    }
    raise_open_file_limit(w->cfg);
    struct stream_slots *slots = slots_of(hub);
    size_t reaped = slots != NULL ? stream_slots_reap(slots) : 0;
    if (reaped > 0)
        log_info("freed the stream counts of %zu ended workers", reaped);
    return hub;
}

void streams_close_all(struct stream_hub *hub)
{
    if (hub == NULL)
        return;
    hub->closed = true;
    for (size_t b = 0; b < CHANNEL_BUCKETS; b++)
        while (hub->buckets[b] != NULL)
            end_channel(hub, hub->buckets[b]);
    while (hub->taps != NULL) {
        struct stream_tap *tap = (struct stream_tap *)hub->taps;
        tap->gone(tap->arg);
        end_stream(hub, &tap->st);
    }
    stop_timers_if_idle(hub);
}

void streams_hub_free(struct stream_hub *hub)
{
    if (hub == NULL)
        return;
    streams_close_all(hub);
    if (hub->watch != NULL)
        event_free(hub->watch);
    if (hub->heartbeat != NULL)
        event_free(hub->heartbeat);
    if (hub->scratch != NULL)
        evbuffer_free(hub->scratch);
    free(hub);
}

size_t streams_open_count(const struct stream_hub *hub)
{
    return hub != NULL ? hub->open : 0;
}

size_t streams_ending(const struct stream_hub *hub)
{
    return hub != NULL ? hub->ending : 0;
}

/* ---- opening a stream ---- */

static void refuse(struct http_request *r, int status, const char *details)
{
    if (status == 503)
        http_add_header(r, "Retry-After", RETRY_AFTER_S);
    http_send_eval_error(r, status, NULL, status == 401 ? "AUTHENTICATION_ERROR" : "GENERAL",
                         details);
}

static struct channel *find_channel(struct stream_hub *hub, const uint8_t *digest)
{
    for (struct channel *ch = hub->buckets[bucket_of(digest)]; ch != NULL; ch = ch->next_in_bucket)
        if (memcmp(ch->digest, digest, sizeof ch->digest) == 0)
            return ch;
    return NULL;
}

static struct channel *new_channel(struct stream_hub *hub, const struct snapshot *s,
                                   const struct snapshot_env *env, const uint8_t *digest,
                                   const char *digest_hex)
{
    struct channel *ch = calloc(1, sizeof *ch);
    if (ch == NULL)
        return NULL;
    ch->hub = hub;
    memcpy(ch->digest, digest, sizeof ch->digest);
    memcpy(ch->digest_hex, digest_hex, sizeof ch->digest_hex);
    memcpy(ch->env_id, snapshot_string(s, env->id), env->id.len + 1);
    config_tag(s, env, ch->tag);
    ch->tracked_since = snapshot_generation(s);
    ch->changed_gen = ch->tracked_since;
    ch->changed_at = unix_seconds();
    size_t b = bucket_of(digest);
    ch->next_in_bucket = hub->buckets[b];
    hub->buckets[b] = ch;
    return ch;
}

/* True when a client that saw event last_id has missed a change. */
static bool missed_change(const struct channel *ch, uint64_t current, const char *last_id)
{
    if (last_id == NULL)
        return false;
    char *end;
    errno = 0;
    unsigned long long seen = strtoull(last_id, &end, 10);
    if (errno != 0 || end == last_id || *end != '\0' || last_id[0] == '-')
        return true; /* not one of ours: tell it to refetch */
    if (seen >= current)
        return false;
    return seen < ch->tracked_since || seen < ch->changed_gen;
}

/* Why a stream of digest cannot open now (NULL: it can, and holds its
 * count in stream_slots). */
static const char *over_cap(struct stream_hub *hub, const uint8_t *digest, const char *key_full)
{
    const struct config *cfg = hub->w->cfg;
    if (hub->closed)
        return "this worker is shutting down";
    if (hub->open >= (size_t)cfg->stream_max_per_worker)
        return "too many open streams on this worker";
    struct stream_slots *slots = slots_of(hub);
    if (slots != NULL &&
        !stream_slots_acquire(slots, digest, (int32_t)getpid(), (uint32_t)cfg->stream_max_per_key))
        return key_full;
    return NULL;
}

/* Connection settings of a stream: no read timeout (the client only
 * listens), a write timeout for clients that stop reading, and a small
 * bound on what a client may send meanwhile. */
static void tune_connection(struct evhttp_connection *evcon, struct stream *st)
{
    evhttp_connection_set_closecb(evcon, on_connection_close, st);
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    struct timeval write_timeout = {WRITE_TIMEOUT_S, 0};
    bufferevent_set_timeouts(bev, NULL, &write_timeout);
    bufferevent_setwatermark(bev, EV_READ, 0, READ_BACKLOG_MAX);
}

/* Starts st's reply to r as an event stream: the request's headers dropped
 * (not needed any more: an idle stream stays small), Connection: close,
 * the connection tuned. */
static void start_reply(struct http_request *r, struct stream *st)
{
    st->req = http_start_stream(r, "text/event-stream");
    evhttp_clear_headers(evhttp_request_get_input_headers(st->req));
    struct evkeyvalq *out = evhttp_request_get_output_headers(st->req);
    evhttp_clear_headers(out);
    evhttp_add_header(out, "Connection", "close");
    tune_connection(evhttp_request_get_connection(st->req), st);
}

/* Sends the first lines: the retry hint, then a refetchEvaluation event
 * when last_id missed a change, else a "connected" event (a type OFREP
 * providers ignore) whose id is the current generation: EventSource
 * implementations that keep an id only from an event with data (the
 * `eventsource` package) then send it back as Last-Event-ID on reconnect. */
static void greet(struct stream_hub *hub, struct stream *st, const struct snapshot *s,
                  const struct snapshot_env *env, bool missed)
{
    hub->direct_until = monotonic_ms() + DIRECT_WRITE_MS;
    char text[64 + EVENT_TEXT_MAX];
    int n = snprintf(text, sizeof text, "retry: %d\n", STREAMS_RETRY_MS);
    if (missed)
        n += (int)format_event(s, env, st->channel, text + n);
    else
        n +=
            snprintf(text + n, sizeof text - (size_t)n,
                     "id: %" PRIu64 "\ndata: {\"type\":\"connected\"}\n\n", snapshot_generation(s));
    send_text(hub, st, text, (size_t)n);
}

static void attach_stream(struct http_request *r, struct stream_hub *hub, const struct snapshot *s,
                          const struct snapshot_env *env, const uint8_t *digest,
                          const char *digest_hex)
{
    struct channel *ch = find_channel(hub, digest);
    struct stream *st = calloc(1, sizeof *st);
    if (ch == NULL && st != NULL)
        ch = new_channel(hub, s, env, digest, digest_hex);
    if (st == NULL || ch == NULL) {
        free(st);
        struct stream_slots *slots = slots_of(hub);
        if (slots != NULL)
            stream_slots_release(slots, digest, (int32_t)getpid());
        refuse(r, 503, "out of memory");
        return;
    }
    bool missed = missed_change(ch, snapshot_generation(s), http_header(r, "Last-Event-ID"));
    st->channel = ch;
    st->next = ch->streams;
    if (ch->streams != NULL)
        ch->streams->prev = st;
    ch->streams = st;
    ch->count++;
    hub->open++;
    start_reply(r, st);
    greet(hub, st, s, env, missed);
    if (hub->seen_published == 0)
        hub->seen_published = published_generation(hub);
    start_timers(hub);
}

void streams_open(struct http_request *r)
{
    struct stream_hub *hub = r->server->streams;
    if (hub == NULL) {
        refuse(r, 503, "change streams are not offered");
        return;
    }
    const struct snapshot *s = served_snapshot_current(r->server->snapshot);
    if (s == NULL) {
        http_add_header(r, "Retry-After", "1");
        http_send_eval_error(r, 503, NULL, "GENERAL", "no flag snapshot is available yet");
        return;
    }
    char token[128];
    char digest_hex[TOKEN_DIGEST_HEX_LEN + 1];
    uint8_t digest[TOKEN_DIGEST_HEX_LEN / 2];
    const char *env_param = http_param(r, "environment");
    const struct snapshot_env *env = NULL;
    if (http_query_param(r, "token", token, sizeof token) &&
        hex_decode(token, digest, sizeof digest)) {
        hex_encode(digest, sizeof digest, digest_hex);
        env = snapshot_env_by_sdk_digest(s, digest_hex);
    }
    if (env == NULL || env_param == NULL || !env_id_equal(s, env, env_param)) {
        http_add_header(r, "WWW-Authenticate", "Bearer");
        refuse(r, 401, "unknown or revoked stream token");
        return;
    }
    const char *why = over_cap(hub, digest, "too many open streams for this SDK key");
    if (why != NULL) {
        refuse(r, 503, why);
        return;
    }
    attach_stream(r, hub, s, env, digest, digest_hex);
}

/* ---- taps: streams fed from above ---- */

const char *streams_tap_admit(struct stream_hub *hub, const uint8_t digest[STREAM_SLOTS_DIGEST_LEN])
{
    if (hub == NULL)
        return "change streams are not offered";
    return over_cap(hub, digest, "too many open streams for this credential");
}

void streams_tap_unadmit(struct stream_hub *hub, const uint8_t digest[STREAM_SLOTS_DIGEST_LEN])
{
    struct stream_slots *slots = slots_of(hub);
    if (slots != NULL)
        stream_slots_release(slots, digest, (int32_t)getpid());
}

struct stream_tap *streams_tap_open(struct http_request *r,
                                    const uint8_t digest[STREAM_SLOTS_DIGEST_LEN],
                                    streams_tap_gone_cb gone, void *arg)
{
    struct stream_hub *hub = r->server->streams;
    struct stream_tap *tap = calloc(1, sizeof *tap);
    if (tap == NULL)
        return NULL;
    tap->hub = hub;
    memcpy(tap->digest, digest, sizeof tap->digest);
    tap->gone = gone;
    tap->arg = arg;
    struct stream *st = &tap->st;
    st->next = hub->taps;
    if (hub->taps != NULL)
        hub->taps->prev = st;
    hub->taps = st;
    hub->open++;
    start_reply(r, st);
    if (hub->seen_published == 0)
        hub->seen_published = published_generation(hub);
    start_timers(hub);
    return tap;
}

bool streams_tap_send(struct stream_tap *tap, const char *text, size_t len)
{
    tap->hub->direct_until = monotonic_ms() + DIRECT_WRITE_MS;
    return send_text_within(tap->hub, &tap->st, text, len, STREAMS_TAP_BACKLOG_MAX);
}

void streams_tap_end(struct stream_tap *tap)
{
    struct stream_hub *hub = tap->hub;
    end_stream(hub, &tap->st);
    stop_timers_if_idle(hub);
}

/* ---- the URL a bulk answer advertises ---- */

static bool host_usable(const char *host)
{
    size_t len = host != NULL ? strlen(host) : 0;
    if (len == 0 || len > 255)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = host[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_';
        if (!ok)
            return false;
    }
    return true;
}

static bool id_usable(const char *id, size_t len)
{
    if (len == 0 || len >= ENV_ID_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
              (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
            return false;
    return true;
}

size_t streams_entry_json(struct http_request *r, const struct snapshot *s,
                          const struct snapshot_env *env, const char *digest_hex, char *out,
                          size_t outlen)
{
    const struct http_server *w = r->server;
    if (w->streams == NULL || w->cfg->stream_max_per_worker == 0 ||
        w->cfg->stream_max_per_key == 0 || !id_usable(snapshot_string(s, env->id), env->id.len))
        return 0;
    const char *host = http_header(r, "Host");
    bool https = http_forwarded_https(r);
    /* {"type":"sse","url":"[ORIGIN]/ofrep/v1/events/ENV?token=DIGEST",
     * "inactivityDelaySec":N}, pieces copied (every request writes one) */
    struct piece {
        const char *text;
        size_t len;
    } pieces[8];
    size_t count = 0;
#define PIECE(t, n) (pieces[count++] = (struct piece){(t), (n)})
#define LITERAL(t) PIECE((t), sizeof(t) - 1)
#define TEXT_OF(n) #n
#define NUMBER_TEXT(n) TEXT_OF(n) /* a numeric macro as a literal */
    LITERAL("{\"type\":\"sse\",\"url\":\"");
    if (host_usable(host)) {
        PIECE(https ? "https://" : "http://", https ? 8 : 7);
        PIECE(host, strlen(host));
    }
    LITERAL("/ofrep/v1/events/");
    PIECE(snapshot_string(s, env->id), env->id.len);
    LITERAL("?token=");
    PIECE(digest_hex, strlen(digest_hex));
    LITERAL("\",\"inactivityDelaySec\":" NUMBER_TEXT(STREAMS_INACTIVITY_DELAY_SEC) "}");
#undef LITERAL
#undef NUMBER_TEXT
#undef TEXT_OF
#undef PIECE
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (n + pieces[i].len >= outlen)
            return 0;
        memcpy(out + n, pieces[i].text, pieces[i].len);
        n += pieces[i].len;
    }
    out[n] = '\0';
    return n;
}
