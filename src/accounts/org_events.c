/*
 * org_events.c - the organization change stream of one worker (see
 * org_events.h).
 *
 * The hub keeps its channels in a hash table by organization id, one per
 * organization with streams on
 * this worker; a channel keeps its streams. A stream knows its credential
 * (the access token's or session's id, to be re-checked), its position
 * (the last seq it was sent, or none yet) and whether its Last-Event-ID
 * was not a position at all. The bytes, heartbeats, caps and ends are the
 * tap's (eval/streams.h).
 */
#include "accounts/org_events.h"

#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "base/log.h"
#include "base/token.h"
#include "db/db.h"
#include "eval/streams.h"
#include "http/http.h"
#include "http/server.h"
#include "mgmt/mgmt.h"

#define STRINGIFY(x) #x
#define TEXT_OF(x) STRINGIFY(x)
#define RETRY_TEXT "retry: 1000\n\n"
#define RETRY_AFTER_S "5"
#define EVENT_HEAD_MAX 96
#define CHANNEL_BUCKETS 256
/* Reads in flight per worker: a sweep or a new session marks every
 * channel, and the management requests queued on the same connection must
 * not wait behind a thousand reads (nor overflow its queue). */
#define READS_IN_FLIGHT_MAX 4
#define RESET_REASON                                                                               \
    "more than " TEXT_OF(ORG_EVENTS_REPLAY_MAX) " events missed, or an unknown last event id: "    \
                                                "reload"

/* clang-format off */

/*
 * $1 org id, $2 the least position of the channel's streams (NULL: none
 * has one yet), $3 the streams' credential ids (uuid[] text). One row per
 * event past GREATEST($2, head - REPLAY_MAX) up to the head, in order (one
 * row with a NULL seq when there is none): the head's seq, the event's
 * seq, its data (JSON text), and on every row the credentials that may
 * still read the organization's audit log (a JSON object keyed by their
 * ids): an organization
 * token of the organization, a personal token of a member with scope
 * audit (or full access), a live session of a member; none revoked,
 * expired or of a deleted user. One statement, so one snapshot: the
 * head and the events agree.
 */
static const char FETCH_SQL[] =
    "WITH h AS (SELECT COALESCE((SELECT seq FROM audit_chain_heads WHERE org_id = $1::uuid), 0)"
    "           AS seq),"
    " allowed AS (SELECT COALESCE(json_object_agg(c.id, true), '{}'::json)::text AS ids FROM ("
    "   SELECT t.id FROM access_tokens t"
    "     LEFT JOIN users u ON u.id = t.user_id"
    "     LEFT JOIN org_members m ON m.org_id = $1::uuid AND m.user_id = t.user_id"
    "    WHERE t.id = ANY($3::uuid[]) AND t.revoked_at IS NULL"
    "      AND (t.expires_at IS NULL OR t.expires_at > now())"
    "      AND ((t.kind = 'organization' AND t.org_id = $1::uuid)"
    "           OR (t.kind <> 'organization' AND u.id IS NOT NULL AND NOT u.deleted"
    "               AND m.user_id IS NOT NULL))"
    "      AND (t.full_access OR t.scopes->>'audit' IN ('read', 'write'))"
    "   UNION ALL"
    "   SELECT s.id FROM sessions s JOIN users u ON u.id = s.user_id"
    "     JOIN org_members m ON m.org_id = $1::uuid AND m.user_id = s.user_id"
    "    WHERE s.id = ANY($3::uuid[]) AND s.expires_at > now() AND NOT u.deleted) c)"
    " SELECT h.seq::text, e.seq::text, e.data, allowed.ids"
    "   FROM h CROSS JOIN allowed LEFT JOIN LATERAL ("
    "     SELECT x.seq, json_build_object('id', x.id, 'action', x.action,"
    "              'actor', json_build_object('id', COALESCE(x.actor_id, x.actor_token_id),"
    "                                         'name', x.actor_name),"
    "              'location', x.location, 'summary', x.summary,"
    "              'at', ensign_iso(x.created_at))::text AS data"
    "       FROM audit_events x"
    "      WHERE x.org_id = $1::uuid AND x.seq <= h.seq"
    "        AND x.seq > GREATEST(COALESCE($2::bigint, h.seq),"
    "                             h.seq - " TEXT_OF(ORG_EVENTS_REPLAY_MAX) ")"
    "      ORDER BY x.seq LIMIT " TEXT_OF(ORG_EVENTS_REPLAY_MAX) ") e ON true"
    "  ORDER BY e.seq";

/* clang-format on */

enum { COL_HEAD, COL_SEQ, COL_DATA, COL_ALLOWED };

struct org_channel;

struct org_stream {
    struct org_stream *prev, *next;
    struct org_channel *channel;
    struct stream_tap *tap;
    char credential[AUTH_UUID_LEN + 1];
    bool has_position;
    bool foreign_id; /* Last-Event-ID was not a position of the chain */
    uint64_t position;
};

struct org_channel {
    struct org_channel *next;
    struct org_events *hub;
    char org_id[AUTH_UUID_LEN + 1];
    struct org_stream *streams;
    size_t count;
    bool marked;    /* to read at the next wake-up */
    bool fetching;  /* a read in flight */
    bool from_head; /* the read in flight starts at the head (no stream had a position) */
    uint64_t from;  /* else the position it starts after */
};

struct org_events {
    struct http_server *w;
    struct org_channel *channels[CHANNEL_BUCKETS]; /* by org id hash */
    size_t nchannels;
    bool listening; /* LISTEN sent in the current session */
    unsigned reads; /* reads in flight (at most READS_IN_FLIGHT_MAX) */
    bool deferred;  /* a marked channel waits for a read to finish */
    struct event *wake;
    struct event *sweep;
};

/* ---- channels ---- */

/* FNV-1a of the organization id, to a bucket. */
static size_t bucket_of(const char *org_id)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)org_id; *p != '\0'; p++)
        h = (h ^ *p) * 16777619u;
    return h % CHANNEL_BUCKETS;
}

static struct org_channel *find_channel(struct org_events *hub, const char *org_id)
{
    for (struct org_channel *ch = hub->channels[bucket_of(org_id)]; ch != NULL; ch = ch->next)
        if (strcmp(ch->org_id, org_id) == 0)
            return ch;
    return NULL;
}

static struct org_channel *new_channel(struct org_events *hub, const char *org_id)
{
    struct org_channel *ch = calloc(1, sizeof *ch);
    if (ch == NULL)
        return NULL;
    ch->hub = hub;
    snprintf(ch->org_id, sizeof ch->org_id, "%s", org_id);
    size_t b = bucket_of(org_id);
    ch->next = hub->channels[b];
    hub->channels[b] = ch;
    hub->nchannels++;
    return ch;
}

/* Frees ch once it has no stream and no read in flight. */
static void free_channel_if_idle(struct org_channel *ch)
{
    if (ch->count > 0 || ch->fetching)
        return;
    struct org_channel **link = &ch->hub->channels[bucket_of(ch->org_id)];
    while (*link != ch)
        link = &(*link)->next;
    *link = ch->next;
    ch->hub->nchannels--;
    free(ch);
}

static void unlink_stream(struct org_stream *st)
{
    struct org_channel *ch = st->channel;
    if (st->prev != NULL)
        st->prev->next = st->next;
    else
        ch->streams = st->next;
    if (st->next != NULL)
        st->next->prev = st->prev;
    ch->count--;
}

/* The tap ended without us (client gone, stuck, drain): forget st. */
static void on_tap_gone(void *arg)
{
    struct org_stream *st = arg;
    struct org_channel *ch = st->channel;
    unlink_stream(st);
    free(st);
    free_channel_if_idle(ch);
}

/* We end st: a credential that may no longer read the log. */
static void end_stream(struct org_stream *st)
{
    unlink_stream(st);
    streams_tap_end(st->tap);
    free(st);
}

/* ---- writing events ---- */

/* The events of one read, each framed once ("id: N\ndata: JSON\n\n") and
 * written to every stream that has not seen it. */
struct framed {
    uint64_t seq;
    char *text;
    size_t len;
};

static bool send_connected(struct org_stream *st, uint64_t head)
{
    char text[EVENT_HEAD_MAX];
    snprintf(text, sizeof text, "id: %" PRIu64 "\nevent: connected\ndata: {\"id\":%" PRIu64 "}\n\n",
             head, head);
    return streams_tap_send(st->tap, text, strlen(text));
}

static bool send_reset(struct org_stream *st, uint64_t head)
{
    char text[2 * EVENT_HEAD_MAX];
    snprintf(text, sizeof text,
             "id: %" PRIu64 "\nevent: reset\ndata: {\"id\":%" PRIu64 ",\"reason\":\"" RESET_REASON
             "\"}\n\n",
             head, head);
    return streams_tap_send(st->tap, text, strlen(text));
}

static uint64_t row_u64(const PGresult *res, int row, int col)
{
    return strtoull(PQgetvalue(res, row, col), NULL, 10);
}

/* Frames the events of res into *out; returns how many rows hold an
 * event. *out is NULL when there are none, or when memory ran out (the
 * count is returned all the same: streams that need them wait for the
 * next read). */
static size_t frame_events(const PGresult *res, struct framed **out)
{
    int rows = PQntuples(res);
    *out = NULL;
    if (rows < 1 || PQgetisnull(res, 0, COL_SEQ))
        return 0;
    struct framed *f = calloc((size_t)rows, sizeof *f);
    if (f == NULL)
        return (size_t)rows;
    for (int row = 0; row < rows; row++) {
        const char *data = PQgetvalue(res, row, COL_DATA);
        size_t size = strlen(data) + EVENT_HEAD_MAX;
        f[row].seq = row_u64(res, row, COL_SEQ);
        f[row].text = malloc(size);
        if (f[row].text == NULL) {
            for (int i = 0; i < row; i++)
                free(f[i].text);
            free(f);
            return (size_t)rows;
        }
        int len = snprintf(f[row].text, size, "id: %" PRIu64 "\ndata: %s\n\n", f[row].seq, data);
        f[row].len = len > 0 ? (size_t)len : 0;
    }
    *out = f;
    return (size_t)rows;
}

static void free_framed(struct framed *f, size_t n)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(f[i].text);
    free(f);
}

enum update { UPDATED, NOT_AT_HAND, TOO_FAR_BEHIND };

/* Brings st to head: connected, reset, or the events it has not seen.
 * NOT_AT_HAND (st unchanged) when the events could not be framed
 * (memory); events that are not there at all (deleted from the log) are
 * skipped, so a tampered log never makes a stream wait forever;
 * TOO_FAR_BEHIND when the client does not read what it was sent. */
static enum update bring_up_to_date(struct org_stream *st, const struct framed *f, size_t n,
                                    uint64_t head)
{
    bool sent = true;
    if (!st->has_position) {
        sent = send_connected(st, head);
    } else if (st->foreign_id || st->position > head ||
               head - st->position > ORG_EVENTS_REPLAY_MAX) {
        sent = send_reset(st, head);
    } else if (st->position < head) {
        if (f == NULL && n > 0)
            return NOT_AT_HAND;
        for (size_t i = 0; i < n && sent; i++)
            if (f[i].seq > st->position)
                sent = streams_tap_send(st->tap, f[i].text, f[i].len);
    }
    st->has_position = true;
    st->foreign_id = false;
    st->position = head;
    return sent ? UPDATED : TOO_FAR_BEHIND;
}

/* ids: the JSON object whose keys are the credentials still allowed (a
 * hashed lookup, however many streams). */
static bool allowed(struct json_object *ids, const char *credential)
{
    return json_object_is_type(ids, json_type_object) &&
           json_object_object_get_ex(ids, credential, NULL);
}

/* True when the read covers what st missed: a stream that joined while
 * the read was in flight, with an older position, waits for the next. */
static bool covered(const struct org_channel *ch, const struct org_stream *st, uint64_t head)
{
    if (!st->has_position || st->foreign_id || st->position >= head ||
        head - st->position > ORG_EVENTS_REPLAY_MAX)
        return true;
    return st->position >= (ch->from_head ? head : ch->from);
}

static void deliver(struct org_channel *ch, const PGresult *res)
{
    if (PQntuples(res) < 1)
        return;
    uint64_t head = row_u64(res, 0, COL_HEAD);
    struct json_object *ids = json_tokener_parse(PQgetvalue(res, 0, COL_ALLOWED));
    struct framed *f;
    size_t n = frame_events(res, &f);
    struct org_stream *st = ch->streams;
    while (st != NULL) {
        struct org_stream *next = st->next;
        if (!allowed(ids, st->credential))
            end_stream(st);
        else if (!covered(ch, st, head))
            ch->marked = true;
        else
            switch (bring_up_to_date(st, f, n, head)) {
            case UPDATED:
                break;
            case NOT_AT_HAND: /* the next notification or sweep reads again */
                break;
            case TOO_FAR_BEHIND:
                end_stream(st); /* it reconnects with Last-Event-ID and catches up */
                break;
            }
        st = next;
    }
    free_framed(f, n);
    json_object_put(ids);
}

/* ---- reading ---- */

static void fetch(struct org_channel *ch);

static void on_fetched(PGresult *res, const char *error, void *arg)
{
    struct org_channel *ch = arg;
    struct org_events *hub = ch->hub;
    ch->fetching = false;
    hub->reads--;
    if (hub->deferred) {
        hub->deferred = false;
        event_active(hub->wake, EV_TIMEOUT, 0);
    }
    if (db_result_ok(res)) {
        log_debug("org events: read %d rows of organization %s for %zu streams", PQntuples(res),
                  ch->org_id, ch->count);
        deliver(ch, res);
    } else {
        log_warn("org events: reading the audit log failed: %s", error ? error : "no result");
    }
    if (ch->count == 0) {
        free_channel_if_idle(ch);
        return;
    }
    if (ch->marked)
        fetch(ch);
}

/* The least position of ch's streams as text into out; false when none
 * has one yet. */
static bool least_position(const struct org_channel *ch, char out[24])
{
    bool any = false;
    uint64_t least = UINT64_MAX;
    for (const struct org_stream *st = ch->streams; st != NULL; st = st->next) {
        if (st->has_position && !st->foreign_id && st->position < least) {
            least = st->position;
            any = true;
        }
    }
    snprintf(out, 24, "%" PRIu64, least);
    return any;
}

/* The streams' credentials as a uuid[] literal (caller frees). */
static char *credentials_literal(const struct org_channel *ch)
{
    size_t size = 3 + ch->count * (AUTH_UUID_LEN + 1);
    char *text = malloc(size);
    if (text == NULL)
        return NULL;
    size_t n = 0;
    text[n++] = '{';
    for (const struct org_stream *st = ch->streams; st != NULL; st = st->next) {
        if (n > 1)
            text[n++] = ',';
        size_t len = strlen(st->credential);
        memcpy(text + n, st->credential, len);
        n += len;
    }
    text[n++] = '}';
    text[n] = '\0';
    return text;
}

static void fetch(struct org_channel *ch)
{
    if (ch->fetching)
        return; /* stays marked: read again when this read is in */
    if (ch->hub->reads >= READS_IN_FLIGHT_MAX) {
        ch->hub->deferred = true;
        return;
    }
    ch->marked = false;
    char least[24];
    bool has_least = least_position(ch, least);
    ch->from_head = !has_least;
    ch->from = strtoull(least, NULL, 10);
    char *ids = credentials_literal(ch);
    if (ids == NULL)
        return;
    const char *params[] = {ch->org_id, has_least ? least : NULL, ids};
    if (db_query(ch->hub->w->db, FETCH_SQL, 3, params, on_fetched, ch) == 0) {
        ch->fetching = true;
        ch->hub->reads++;
    }
    free(ids);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct org_events *hub = arg;
    for (size_t b = 0; b < CHANNEL_BUCKETS; b++)
        for (struct org_channel *ch = hub->channels[b]; ch != NULL; ch = ch->next)
            if (ch->marked && !ch->fetching)
                fetch(ch); /* frees nothing: ch stays */
}

static void mark_all(struct org_events *hub)
{
    for (size_t b = 0; b < CHANNEL_BUCKETS; b++)
        for (struct org_channel *ch = hub->channels[b]; ch != NULL; ch = ch->next)
            ch->marked = true;
    event_active(hub->wake, EV_TIMEOUT, 0);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    mark_all(arg);
}

static void on_listen(PGresult *res, const char *error, void *arg)
{
    struct org_events *hub = arg;
    if (!db_result_ok(res)) {
        hub->listening = false;
        log_warn("org events: LISTEN failed: %s", error ? error : "no result");
    }
}

static void listen_once(struct org_events *hub)
{
    if (hub->listening)
        return;
    if (db_query(hub->w->db, "LISTEN " ORG_EVENTS_CHANNEL, 0, NULL, on_listen, hub) == 0)
        hub->listening = true;
}

/* A NOTIFY (its payload the organization's id), or a new session. */
static void on_notify(const char *channel, const char *payload, void *arg)
{
    struct org_events *hub = arg;
    if (channel == NULL) { /* a new session: LISTEN again, read everything */
        hub->listening = false;
        if (hub->nchannels > 0) {
            listen_once(hub);
            mark_all(hub);
        }
        return;
    }
    if (strcmp(channel, ORG_EVENTS_CHANNEL) != 0 || payload == NULL)
        return;
    struct org_channel *ch = find_channel(hub, payload);
    if (ch == NULL)
        return;
    ch->marked = true;
    event_active(hub->wake, EV_TIMEOUT, 0);
}

/* ---- the hub ---- */

struct org_events *org_events_new(struct http_server *w)
{
    struct org_events *hub = calloc(1, sizeof *hub);
    if (hub == NULL)
        return NULL;
    hub->w = w;
    hub->wake = event_new(w->base, -1, 0, on_wake, hub);
    hub->sweep = event_new(w->base, -1, EV_PERSIST, on_sweep, hub);
    if (hub->wake == NULL || hub->sweep == NULL) {
        org_events_free(hub);
        return NULL;
    }
    struct timeval every = {ORG_EVENTS_SWEEP_MS / 1000, (ORG_EVENTS_SWEEP_MS % 1000) * 1000};
    event_add(hub->sweep, &every);
    db_listen(w->db, on_notify, hub);
    return hub;
}

void org_events_free(struct org_events *hub)
{
    if (hub == NULL)
        return;
    for (size_t b = 0; b < CHANNEL_BUCKETS; b++)
        while (hub->channels[b] != NULL) { /* streams already ended with the tap hub */
            struct org_channel *ch = hub->channels[b];
            hub->channels[b] = ch->next;
            while (ch->streams != NULL) {
                struct org_stream *st = ch->streams;
                ch->streams = st->next;
                free(st);
            }
            free(ch);
        }
    if (hub->wake != NULL)
        event_free(hub->wake);
    if (hub->sweep != NULL)
        event_free(hub->sweep);
    free(hub);
}

/* ---- opening a stream ---- */

static void refuse(struct http_request *r, const char *why)
{
    http_add_header(r, "Retry-After", RETRY_AFTER_S);
    http_send_error(r, 503, why);
}

/* Reads Last-Event-ID into st: none, a position, or a foreign id. */
static void read_last_event_id(struct http_request *r, struct org_stream *st)
{
    const char *text = http_header(r, "Last-Event-ID");
    if (text == NULL || text[0] == '\0')
        return;
    char *end;
    errno = 0;
    unsigned long long seen = strtoull(text, &end, 10);
    st->has_position = true;
    if (errno != 0 || end == text || *end != '\0' || text[0] < '0' || text[0] > '9')
        st->foreign_id = true;
    else
        st->position = seen;
}

/* The key of the credential's stream count (stream_slots): the SHA-256 of
 * "org-events|" and its id, so it cannot meet an SDK key's digest. */
static void credential_key(const char *credential, uint8_t key[32])
{
    char text[16 + AUTH_UUID_LEN + 1];
    char hex[TOKEN_DIGEST_HEX_LEN + 1];
    int len = snprintf(text, sizeof text, "org-events|%s", credential);
    token_digest_hex(text, (size_t)len, hex);
    hex_decode(hex, key, 32);
}

void org_events_open(struct http_request *r, const struct mgmt_ctx *ctx)
{
    struct org_events *hub = r->server->org_events;
    struct stream_hub *taps = r->server->streams;
    if (hub == NULL || taps == NULL || r->server->db == NULL) {
        refuse(r, "change streams are not offered");
        return;
    }
    uint8_t key[32];
    credential_key(ctx->who.token_id, key);
    const char *why = streams_tap_admit(taps, key);
    if (why != NULL) {
        refuse(r, why);
        return;
    }
    struct org_channel *ch = find_channel(hub, ctx->org_id);
    struct org_stream *st = calloc(1, sizeof *st);
    if (ch == NULL && st != NULL)
        ch = new_channel(hub, ctx->org_id);
    if (st == NULL || ch == NULL) {
        free(st);
        streams_tap_unadmit(taps, key);
        refuse(r, "out of memory");
        return;
    }
    snprintf(st->credential, sizeof st->credential, "%s", ctx->who.token_id);
    read_last_event_id(r, st);
    st->tap = streams_tap_open(r, key, on_tap_gone, st);
    if (st->tap == NULL) {
        free(st);
        free_channel_if_idle(ch);
        streams_tap_unadmit(taps, key);
        refuse(r, "out of memory");
        return;
    }
    st->channel = ch;
    st->next = ch->streams;
    if (ch->streams != NULL)
        ch->streams->prev = st;
    ch->streams = st;
    ch->count++;
    streams_tap_send(st->tap, RETRY_TEXT, sizeof RETRY_TEXT - 1);
    listen_once(hub);
    ch->marked = true;
    event_active(hub->wake, EV_TIMEOUT, 0);
}

const char org_events_schema[] =
    "{\"type\":\"string\",\"contentMediaType\":\"text/event-stream\",\"description\":\"id: the "
    "event's position in the organization's audit chain; data: {id, action, actor: {id, name}, "
    "location, summary, at}; event: connected (first, id the current position) and event: "
    "reset (more than " TEXT_OF(ORG_EVENTS_REPLAY_MAX) " events missed: reload)\"}";
