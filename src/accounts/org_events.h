/*
 * org_events.h - the organization change stream, GET /v1/orgs/{org}/events
 * (doc/choices.md "The organization change stream"): one server-sent event
 * per audit event of the organization, for people (the dashboard's
 * EventSource, with the session cookie) and tools (an access token).
 *
 *   id: <the event's position in the organization's audit chain (seq)>
 *   data: {"id","action","actor":{id,name},"location","summary","at"}
 *
 * Never a secret, never a flag value, never the actor's IP address: the
 * same fields the audit log shows. A new stream first gets "retry:" then
 * "event: connected" whose id is the chain's current position (so that a
 * reconnect says where it was); a reconnect with Last-Event-ID N gets the
 * events after N first (at most ORG_EVENTS_REPLAY_MAX of them), else
 * (more missed, an id that is not a position of the chain) one
 * "event: reset" whose id is the current position: reload, then follow.
 * Heartbeat comments, the write timeout, the caps (stream_max_per_worker
 * with the OFREP streams, stream_max_per_key per credential: access token
 * or session) and the end of streams on a drain are the core's
 * (eval/streams.h taps).
 *
 * How events reach a stream: every audit insert NOTIFYs ensign_audit with
 * its organization's id (sql/0016_audit_notify.sql); each worker with
 * streams LISTENs on its own management connection (db_listen), and a
 * notification marks its organization's channel; one zero-delay event
 * then reads the new events of each marked organization in ONE query
 * (seq past the least position of its streams) and writes to every
 * stream of the organization what it has not seen. The same query tells
 * which of the streams' credentials may still read the organization's
 * audit log (a removed member, a revoked token, an ended session: their
 * streams end). Every ORG_EVENTS_SWEEP_MS every channel is read again
 * (revocations that write no event in the organization), and a new
 * database session re-LISTENs and reads every channel (notifications
 * sent while the connection was down are lost, the events are not).
 *
 * Invariants: one query per organization with streams per wake-up, never
 * one per stream, and at most a few in flight per worker (org_events.c); a stream only ever moves
 * forward in seq; at most one query in flight per channel (a notification meanwhile marks it for
 * one more read).
 *
 * Called by the route table (org_events_open) and the worker (hub life:
 * org_events_new after the db and the stream hub, org_events_free after
 * db_close).
 */
#ifndef ENSIGN_ORG_EVENTS_H
#define ENSIGN_ORG_EVENTS_H

#define ORG_EVENTS_REPLAY_MAX 1000
#define ORG_EVENTS_SWEEP_MS 30000
#define ORG_EVENTS_CHANNEL "ensign_audit"

struct http_request;
struct http_server;
struct mgmt_ctx;
struct org_events;

/* The worker's hub (NULL when out of memory); listens on w->db. */
struct org_events *org_events_new(struct http_server *w);

/* Frees the hub (after db_close, which also forgot the listener: no query
 * of the hub is pending); NULL is fine. */
void org_events_free(struct org_events *hub);

/* GET /v1/orgs/{org}/events (role viewer, scope audit read). */
void org_events_open(struct http_request *r, const struct mgmt_ctx *ctx);

/* The response schema for /openapi.json. */
extern const char org_events_schema[];

#endif
