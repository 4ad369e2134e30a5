/*
 * outbound.h - outbound HTTP on an event loop: libcurl's multi interface
 * driven by a libevent base, so a process that serves requests or runs a
 * background loop can make HTTP calls without blocking it.
 *
 * libcurl tells which sockets to watch (CURLMOPT_SOCKETFUNCTION: one
 * event per socket) and when to time out (CURLMOPT_TIMERFUNCTION: one
 * timer); both call curl_multi_socket_action, and each finished transfer
 * calls its done callback once, from the loop, never inside outbound_add.
 * The caller owns each easy handle (its options, its cleanup after done
 * or after outbound_remove); the driver owns only its CURLOPT_PRIVATE.
 *
 * Called by the deliverer (webhooks) and the agent's model client.
 */
#ifndef ENSIGN_OUTBOUND_H
#define ENSIGN_OUTBOUND_H

#include <curl/curl.h>
#include <stdbool.h>

struct event_base;
struct outbound;

/* A transfer ended: result is CURLE_OK or why it failed. */
typedef void (*outbound_done_cb)(void *arg, CURL *easy, CURLcode result);

/* A driver on base; NULL when out of memory. curl_global_init must have
 * run (outbound_global_init). */
struct outbound *outbound_new(struct event_base *base);

/* Frees the driver. The caller has removed (outbound_remove) or seen end
 * every transfer it added first. */
void outbound_free(struct outbound *o);

/* Starts easy; done(arg, easy, result) runs once when it ends. Returns 0,
 * or -1 (nothing started, done will not run). */
int outbound_add(struct outbound *o, CURL *easy, outbound_done_cb done, void *arg);

/* Stops a transfer before it ended (done will not run). */
void outbound_remove(struct outbound *o, CURL *easy);

/* curl_global_init once per process (idempotent); false on failure. */
bool outbound_global_init(void);

#endif
