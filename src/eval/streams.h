/*
 * streams.h - OFREP change-notification streams (doc/choices.md "Change notifications",
 * OFREP ADR-0008): GET /ofrep/v1/events/{environment}?token=T answers
 * text/event-stream and stays open in the worker's event loop.
 *
 * Owns the stream URL a bulk answer advertises (eventStreams), the stream
 * token, the open streams of one worker (struct stream_hub), the caps
 * stream_max_per_worker (this worker) and stream_max_per_key (the node, in
 * shared memory: stream_slots.h), the events, the heartbeat and the end of
 * streams on revocation and drain.
 *
 * The token is the lowercase hex SHA-256 digest of the SDK key, the value
 * the database and the snapshot already hold: the key cannot be recovered
 * from it, it opens streams only (a stream never carries a flag value),
 * and it is the same on every node and after a restart, so a reconnecting
 * EventSource needs no new URL. A server secret would protect only against
 * someone who already reads the database.
 *
 * Events: when the published snapshot generation moves (checked every
 * STREAMS_WATCH_MS while the worker holds a stream: one atomic load), each
 * key's environment is looked up again; a key no longer in the snapshot
 * (revoked) has its streams ended, and an environment whose bulk ETag (for
 * the empty context, clock left out) changed gets
 *   id: <generation>
 *   data: {"type":"refetchEvaluation","etag":ETAG,"lastModified":SECONDS}
 * on each of its streams (written straight to idle sockets for the first
 * DIRECT_WRITE_MS of the round, then queued to the event loop so that
 * requests interleave). A new stream first gets "retry:" and an event
 * {"type":"connected"} with the current generation as its id (so that a
 * reconnect sends it back as Last-Event-ID; providers ignore the type); a
 * Last-Event-ID older than the last change this worker saw for the key's
 * environment (or older than the generation the worker started tracking
 * it at) gets an event at once. Every stream gets a comment line every
 * STREAMS_HEARTBEAT_MS (the environment variable ENSIGN_STREAM_HEARTBEAT_MS
 * overrides it, for tests).
 *
 * Invariants: no database access; a stream is not an in-flight request (a
 * drain does not wait for it: streams_close_all ends every stream cleanly
 * so clients reconnect to the new workers); every open stream holds one
 * count in shared memory, released when it ends however it ends.
 *
 * Called by: the route table (streams_open), ofrep.c (streams_entry_json),
 * accounts/org_events.c (taps) and the worker (hub life, drain).
 */
#ifndef ENSIGN_STREAMS_H
#define ENSIGN_STREAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STREAMS_HEARTBEAT_MS 25000
#define STREAMS_WATCH_MS 20
#define STREAMS_RETRY_MS 1000
#define STREAMS_INACTIVITY_DELAY_SEC 120
#define STREAMS_ENTRY_MAX 768 /* an eventStreams entry, JSON */
#define STREAMS_TAP_BACKLOG_MAX (2u << 20)

struct http_request;
struct http_server;
struct snapshot;
struct snapshot_env;
struct stream_hub;

/* The worker's hub (NULL when out of memory). Raises the soft open-file
 * limit toward the hard one so that stream_max_per_worker streams fit. */
struct stream_hub *streams_hub_new(struct http_server *w);

/* Ends every stream cleanly and refuses new ones (503) from then on. */
void streams_close_all(struct stream_hub *hub);

/* Ends every stream and frees the hub; NULL is fine. */
void streams_hub_free(struct stream_hub *hub);

size_t streams_open_count(const struct stream_hub *hub);

/* Streams ended whose last bytes are not written yet (a draining worker
 * waits for them, within shutdown_timeout_ms, so every client sees a clean
 * end). */
size_t streams_ending(const struct stream_hub *hub);

/* GET /ofrep/v1/events/{environment}?token=T */
void streams_open(struct http_request *r);

/* The eventStreams entry of a bulk answer for env and the SDK key digest
 * (64 hex characters) into out; returns its length, 0 when streams are not
 * offered (no hub, or a cap of 0). The URL is absolute when the request had
 * a usable Host header (https when X-Forwarded-Proto says so). */
size_t streams_entry_json(struct http_request *r, const struct snapshot *s,
                          const struct snapshot_env *env, const char *digest_hex, char *out,
                          size_t outlen);

/*
 * Taps: event streams whose events come from a layer above the core (the
 * organization change stream, accounts/org_events.h), kept by the same
 * hub so that they share its caps, heartbeat, write timeout and drain.
 * digest keys the per-credential count in stream_slots (the cap
 * stream_max_per_key).
 *
 * streams_tap_admit: NULL when one more stream may open (its count is then
 * held: streams_tap_open takes it over, streams_tap_unadmit gives it
 * back), else why not (the caller answers 503 in its own envelope).
 * streams_tap_open: starts r's text/event-stream answer; NULL when out of
 * memory (the count is still held). gone(arg) runs once when the stream
 * ends without streams_tap_end (the client left, a stuck write, a drain);
 * the tap is freed right after it. streams_tap_send writes one piece of
 * event text, or returns false, writing nothing, when more than
 * STREAMS_TAP_BACKLOG_MAX bytes already wait for the client (a tap's
 * events are not to be dropped: its owner ends the stream, and the client
 * catches up when it reconnects); streams_tap_end ends the stream cleanly
 * and frees the tap.
 */
struct stream_tap;
typedef void (*streams_tap_gone_cb)(void *arg);
const char *streams_tap_admit(struct stream_hub *hub, const uint8_t digest[32]);
void streams_tap_unadmit(struct stream_hub *hub, const uint8_t digest[32]);
struct stream_tap *streams_tap_open(struct http_request *r, const uint8_t digest[32],
                                    streams_tap_gone_cb gone, void *arg);
bool streams_tap_send(struct stream_tap *tap, const char *text, size_t len);
void streams_tap_end(struct stream_tap *tap);

/* The response schema of the stream route for /openapi.json. */
extern const char streams_response_schema[];

#endif
