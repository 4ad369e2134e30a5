/*
 * deliverer.c - sends webhook deliveries (see deliverer.h).
 *
 * The loop: a libevent base with a tick timer (TICK_MS) that checks the
 * stop flag, drains the LISTEN channel ensign_webhooks (the audit trigger
 * NOTIFYs it in the change's transaction) and, when notified or every
 * POLL_MS, claims due rows while fewer than MAX_IN_FLIGHT are in flight.
 * Requests run on libcurl's multi interface on that base (http/outbound.h),
 * and finished transfers are recorded.
 *
 * The claim (CLAIM_SQL) sets a lease of LEASE_S seconds and a fresh
 * claim_id and commits before the POST: another node skips the row while
 * the lease lives; a crashed node's row is claimed again after it. Each
 * outcome is recorded with ensign_webhook_record under the claim_id, so a
 * late record of an expired claim writes nothing. The lease (60 s) is six
 * times the request timeout (10 s): a live deliverer always records
 * before its lease ends, so two live nodes never send one row.
 *
 * Each request: POST with the stored body, Content-Type
 * application/json, Ensign-Event (the action), Ensign-Delivery (the row's
 * id), Ensign-Signature (webhook_signature.h); http and https only, TLS
 * verified against the system's CA store, no redirects (a 3xx is a
 * failure), no proxy from the environment, 10 s in all. Unless
 * webhook_allow_private is on, CURLOPT_OPENSOCKETFUNCTION refuses a socket
 * to a refused address class (webhook_target.h): the check is on the
 * address about to be connected, after DNS. A 2xx is delivered; anything
 * else (a status, a timeout, a refused or failed connection) is a failure
 * retried with backoff (sql/0017_webhooks.sql).
 *
 * Once an hour (and at start) it deletes the delivered and failed
 * deliveries last changed more than 30 days ago, so the table stays
 * bounded by a month of events; pending ones are never deleted.
 *
 * Blocking libpq is fine here (bgloop.h): this process serves no requests;
 * a slow statement only delays the transfers in flight.
 */
#include "daemon/deliverer.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "base/webhook_signature.h"
#include "base/webhook_target.h"
#include "daemon/bgloop.h"
#include "daemon/proctitle.h"
#include "db/dbsync.h"
#include "http/outbound.h"

#define TICK_MS 100
#define POLL_MS 1000
#define PRUNE_MS 3600000LL /* how often finished deliveries past their keep are deleted */
#define MAX_IN_FLIGHT 32
#define LEASE_S 60
#define REQUEST_TIMEOUT_MS 10000L
#define ERROR_MAX 200

/* $1 how many. The rows due, not leased, of active webhooks. */
static const char CLAIM_SQL[] =
    "WITH due AS (SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
    "              WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND w.active"
    "                AND (d.claimed_until IS NULL OR d.claimed_until < now())"
    "              ORDER BY d.next_attempt_at LIMIT $1::int FOR UPDATE OF d SKIP LOCKED),"
    " c AS (UPDATE webhook_deliveries d SET claimed_until = now() + interval '60 seconds',"
    "        claim_id = gen_random_uuid(), attempts = d.attempts + 1, updated_at = now()"
    "        FROM due WHERE d.id = due.id"
    "        RETURNING d.id, d.claim_id, d.action, d.body, d.webhook_id)"
    " SELECT c.id, c.claim_id, c.action, c.body, w.url, w.secret"
    "   FROM c JOIN webhooks w ON w.id = c.webhook_id";

/* Finished deliveries are kept 30 days (doc/choices.md "Webhooks"). */
static const char PRUNE_SQL[] = "DELETE FROM webhook_deliveries WHERE status <> 'pending'"
                                " AND updated_at < now() - interval '30 days'";

/* $1 id, $2 claim, $3 delivered, $4 code, $5 ms, $6 error, $7 retry base. */
static const char RECORD_SQL[] = "SELECT ensign_webhook_record($1, $2, $3, $4, $5, $6, $7)";

struct deliverer {
    const struct config *cfg;
    struct event_base *base;
    struct event *tick;
    struct outbound *out; /* libcurl on this loop */
    struct bgloop db;
    int in_flight;
    struct transfer *live[MAX_IN_FLIGHT]; /* the transfers in flight, NULL slots free */
    long long next_poll_ms;
    long long next_prune_ms;    /* 0: at the first tick */
    bool wanted;                /* a NOTIFY arrived: claim at the next tick */
    long long stop_deadline_ms; /* once stopping: when to leave what is in flight */
};

/* One transfer; owned by the deliverer from claim to record. */
struct transfer {
    struct deliverer *d;
    int slot; /* in d->live */
    CURL *easy;
    struct curl_slist *headers;
    char id[40], claim[40];
    char *body;
    char error[CURL_ERROR_SIZE];
};

/* ---- recording ---- */

static void record(struct deliverer *d, const struct transfer *t, bool delivered, long code,
                   long duration_ms, const char *error)
{
    char code_text[16], ms_text[24], base_text[16];
    snprintf(code_text, sizeof code_text, "%ld", code);
    snprintf(ms_text, sizeof ms_text, "%ld", duration_ms);
    snprintf(base_text, sizeof base_text, "%d", d->cfg->webhook_retry_base_ms);
    const char *params[] = {
        t->id, t->claim, delivered ? "true" : "false", code > 0 ? code_text : NULL, ms_text,
        error, base_text};
    struct dbsync_error err;
    if (!bgloop_ensure_connected(&d->db)) {
        log_warn("webhook delivery %s: outcome not recorded (database unavailable); it will be "
                 "sent again after its lease",
                 t->id);
        return;
    }
    if (dbsync_command(d->db.conn, RECORD_SQL, 7, params, &err) != 0) {
        log_warn("webhook delivery %s: outcome not recorded: %s", t->id, err.message);
        if (PQstatus(d->db.conn) != CONNECTION_OK)
            bgloop_disconnect(&d->db);
    }
}

static void transfer_free(struct transfer *t)
{
    if (t->easy != NULL) {
        outbound_remove(t->d->out, t->easy);
        curl_easy_cleanup(t->easy);
    }
    curl_slist_free_all(t->headers);
    free(t->body);
    free(t);
}

/* A transfer ended (outbound's done callback, arg the transfer). */
static void finish(void *arg, CURL *easy, CURLcode result)
{
    struct transfer *t = arg;
    struct deliverer *d = t->d;
    long code = 0;
    curl_off_t micros = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(easy, CURLINFO_TOTAL_TIME_T, &micros);
    bool delivered = result == CURLE_OK && code >= 200 && code < 300;
    char error[ERROR_MAX + 1] = "";
    if (result != CURLE_OK)
        snprintf(error, sizeof error, "%.200s",
                 t->error[0] ? t->error : curl_easy_strerror(result));
    else if (!delivered)
        snprintf(error, sizeof error, "HTTP status %ld", code);
    log_msg(delivered ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO,
            "webhook delivery %s: %s (status %ld, %ld ms)", t->id, delivered ? "delivered" : error,
            code, (long)(micros / 1000));
    record(d, t, delivered, code, (long)(micros / 1000), delivered ? NULL : error);
    d->live[t->slot] = NULL;
    d->in_flight--;
    transfer_free(t);
}

/* ---- one request ---- */

/* Refuses a socket to a refused address class (after DNS: the address
 * curl is about to connect to). */
static curl_socket_t open_checked_socket(void *clientp, curlsocktype purpose,
                                         struct curl_sockaddr *address)
{
    const struct deliverer *d = clientp;
    if (purpose != CURLSOCKTYPE_IPCXN)
        return CURL_SOCKET_BAD;
    if (!d->cfg->webhook_allow_private) {
        const char *why = webhook_address_class(&address->addr, address->addrlen);
        if (why != NULL) {
            log_info("webhook: refusing to connect to a %s address "
                     "(webhook_allow_private is off)",
                     why);
            return CURL_SOCKET_BAD;
        }
    }
    return socket(address->family, address->socktype, address->protocol);
}

static size_t discard_body(char *data, size_t size, size_t n, void *arg)
{
    (void)data;
    (void)arg;
    return size * n;
}

static bool add_header(struct transfer *t, const char *name, const char *value)
{
    char line[256];
    snprintf(line, sizeof line, "%s: %s", name, value);
    struct curl_slist *grown = curl_slist_append(t->headers, line);
    if (grown == NULL)
        return false;
    t->headers = grown;
    return true;
}

static bool set_headers(struct transfer *t, const char *action, const char *secret)
{
    char signature[WEBHOOK_SIGNATURE_MAX];
    if (webhook_signature(secret, (long long)time(NULL), t->body, strlen(t->body), signature) != 0)
        return false;
    return add_header(t, "Content-Type", "application/json") &&
           add_header(t, "User-Agent", "Ensign-Webhooks/1") &&
           add_header(t, "Ensign-Event", action) && add_header(t, "Ensign-Delivery", t->id) &&
           add_header(t, "Ensign-Signature", signature) && add_header(t, "Expect", "");
}

static bool configure(struct transfer *t, const char *url)
{
    CURL *e = t->easy;
    return curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, REQUEST_TIMEOUT_MS) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(t->body)) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_checked_socket) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, t->d) == CURLE_OK &&
           curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error) == CURLE_OK;
}

/* Starts the POST of one claimed row (columns of CLAIM_SQL). */
static void start(struct deliverer *d, const PGresult *res, int row)
{
    struct transfer *t = calloc(1, sizeof *t);
    if (t == NULL)
        return; /* the lease expires and another claim sends it */
    t->d = d;
    while (d->live[t->slot] != NULL) /* claim() asked for no more rows than free slots */
        t->slot++;
    snprintf(t->id, sizeof t->id, "%s", PQgetvalue(res, row, 0));
    snprintf(t->claim, sizeof t->claim, "%s", PQgetvalue(res, row, 1));
    t->body = strdup(PQgetvalue(res, row, 3));
    t->easy = curl_easy_init();
    if (t->body == NULL || t->easy == NULL ||
        !set_headers(t, PQgetvalue(res, row, 2), PQgetvalue(res, row, 5)) ||
        !configure(t, PQgetvalue(res, row, 4)) || outbound_add(d->out, t->easy, finish, t) != 0) {
        log_error("webhook delivery %s: cannot start the request", t->id);
        CURL *easy = t->easy;
        t->easy = NULL;
        curl_easy_cleanup(easy);
        transfer_free(t);
        return;
    }
    d->live[t->slot] = t;
    d->in_flight++;
}

static void claim(struct deliverer *d)
{
    int room = MAX_IN_FLIGHT - d->in_flight;
    if (room <= 0 || !bgloop_ensure_connected(&d->db))
        return;
    char room_text[16];
    snprintf(room_text, sizeof room_text, "%d", room);
    const char *params[] = {room_text};
    struct dbsync_error err;
    PGresult *res = dbsync_exec(d->db.conn, CLAIM_SQL, 1, params, &err);
    if (res == NULL) {
        log_warn("webhook claim failed: %s", err.message);
        if (PQstatus(d->db.conn) != CONNECTION_OK)
            bgloop_disconnect(&d->db);
        return;
    }
    for (int i = 0; i < PQntuples(res); i++)
        start(d, res, i);
    PQclear(res);
}

/* ---- the tick ---- */

/* Once told to stop: no more claims; the transfers in flight finish (each
 * within the 10 s timeout) and are recorded, for at most the stop's
 * grace (shutdown_timeout_ms less a second, before the master's SIGKILL);
 * what is still in flight then is left to its lease. */
static void stop_when_drained(struct deliverer *d)
{
    long long now = bgloop_now_ms();
    if (d->stop_deadline_ms == 0) {
        int grace = d->cfg->shutdown_timeout_ms - 1000;
        d->stop_deadline_ms = now + (grace > 0 ? grace : 0);
        if (d->in_flight > 0)
            log_info("webhook deliverer stopping: waiting for %d deliveries in flight",
                     d->in_flight);
    }
    if (d->in_flight == 0 || now >= d->stop_deadline_ms)
        event_base_loopbreak(d->base);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct deliverer *d = arg;
    if (bgloop_stopping()) {
        stop_when_drained(d);
        return;
    }
    if (bgloop_ensure_connected(&d->db) && bgloop_wait(&d->db, 0) > 0)
        d->wanted = true;
    long long now = bgloop_now_ms();
    if (d->wanted || now >= d->next_poll_ms) {
        d->wanted = false;
        d->next_poll_ms = now + POLL_MS;
        claim(d);
    }
    if (now >= d->next_prune_ms && bgloop_ensure_connected(&d->db)) {
        struct dbsync_error err;
        d->next_prune_ms = now + PRUNE_MS;
        if (dbsync_command(d->db.conn, PRUNE_SQL, 0, NULL, &err) != 0)
            log_warn("webhook deliveries not pruned: %s", err.message);
    }
}

static int setup(struct deliverer *d)
{
    if (!outbound_global_init())
        return -1;
    d->base = event_base_new();
    if (d->base == NULL || (d->out = outbound_new(d->base)) == NULL)
        return -1;
    d->tick = event_new(d->base, -1, EV_PERSIST, on_tick, d);
    if (d->tick == NULL)
        return -1;
    struct timeval tick = {.tv_sec = 0, .tv_usec = TICK_MS * 1000};
    return event_add(d->tick, &tick);
}

static void teardown(struct deliverer *d)
{
    /* Transfers still in flight past the stop's grace are left unrecorded:
     * their leases expire and another claim sends them (doc/choices.md
     * "Webhooks"). */
    for (int i = 0; i < MAX_IN_FLIGHT; i++)
        if (d->live[i] != NULL)
            transfer_free(d->live[i]);
    outbound_free(d->out);
    if (d->tick != NULL)
        event_free(d->tick);
    if (d->base != NULL)
        event_base_free(d->base);
    if (d->db.conn != NULL)
        PQfinish(d->db.conn);
    curl_global_cleanup();
}

int deliverer_main(const struct config *cfg)
{
    log_set_role("deliverer");
    proctitle_set("ensignd: deliverer");
    bgloop_install_signals();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    struct deliverer d = {.cfg = cfg};
    d.db.conninfo = cfg->database;
    d.db.listen_channel = "ensign_webhooks";
    int status = EXIT_SUCCESS;
    if (setup(&d) != 0) {
        log_error("webhook deliverer: cannot set up its event loop or libcurl");
        status = EXIT_FAILURE;
    } else {
        event_base_dispatch(d.base);
    }
    teardown(&d);
    return status;
}
