/*
 * ratelimit.h - per-credential and per-address request limits, shared by
 * every worker through shared memory.
 *
 * Owns the rate-limit table: fixed-size open addressing of ratelimit_slots
 * token buckets keyed by a 64-bit hash of (class, key), updated lock-free
 * with one compare-and-swap per request. Each bucket holds `limit` requests
 * and refills `limit` per minute. It is kept in fixed-point integers as its
 * theoretical arrival time (the virtual-scheduling form of a token bucket,
 * the GCRA nginx limit_req uses in spirit): one 64-bit CLOCK_MONOTONIC
 * nanosecond value per bucket, which is its whole state.
 *
 * Invariants: a slot's key never returns to empty, so probe runs never
 * break; a bucket that has fully refilled carries no information and may be
 * taken over by another key when its run has no empty slot left. When the
 * run (RATELIMIT_MAX_PROBES slots) holds no such bucket either, the stalest
 * one is taken over and starts full for the new key (counted in
 * ratelimit_overflows): a table with more clients than slots forgets the
 * least recent ones, never grows and never stops limiting the active ones.
 * A limit of 0 disables a class.
 *
 * Called by shm.c (size and init), the OFREP handlers (evaluation, per SDK
 * key), management write handlers (per access token), the waitlist and
 * session login (per client address, ratelimit_check_address), through
 * ratelimit_apply or ratelimit_check.
 */
#ifndef ENSIGN_RATELIMIT_H
#define ENSIGN_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct http_request;
struct ratelimit_table;

#define RATELIMIT_MAX_PROBES 32

enum ratelimit_class {
    RATELIMIT_EVALUATION,
    RATELIMIT_MANAGEMENT,
    RATELIMIT_WAITLIST,
    RATELIMIT_LOGIN
};

struct ratelimit_result {
    bool allowed;
    uint32_t limit;         /* requests per minute; 0: no limit applies */
    uint32_t remaining;     /* requests left right now */
    uint32_t reset_s;       /* seconds until the bucket is full again */
    uint32_t retry_after_s; /* when refused: seconds until one request fits (>= 1) */
};

/* Bytes of shared memory a table of slots buckets needs. */
size_t ratelimit_area_size(size_t slots);

/* Prepares area (ratelimit_area_size(slots) bytes) as an empty table. */
struct ratelimit_table *ratelimit_area_init(void *area, size_t slots);

/* The configured per-minute limit of a class (0: disabled). */
uint32_t ratelimit_limit_for(const struct config *cfg, enum ratelimit_class c);

/* CLOCK_MONOTONIC in nanoseconds: the same clock in every process. */
uint64_t ratelimit_now_ns(void);

/*
 * Takes one request from the bucket of (c, key) with limit per minute at
 * time now_ns. Fills out and returns out->allowed. limit 0 always allows.
 */
bool ratelimit_take(struct ratelimit_table *t, enum ratelimit_class c, const char *key,
                    size_t keylen, uint32_t limit, uint64_t now_ns, struct ratelimit_result *out);

/* Buckets taken over before they had refilled (the table was full). */
uint64_t ratelimit_overflows(const struct ratelimit_table *t);

/*
 * Takes one request for r under the worker's configured limit and adds
 * the RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers
 * (and Retry-After when refused). Answers nothing; returns allowed.
 */
bool ratelimit_apply(struct http_request *r, enum ratelimit_class c, const char *key, size_t keylen,
                     struct ratelimit_result *out);

/*
 * ratelimit_apply, then, when refused, answers 429 with the surface's
 * error body and returns false. Returns true when the request may go on.
 */
bool ratelimit_check(struct http_request *r, enum ratelimit_class c, const char *key,
                     size_t keylen);

/*
 * ratelimit_check keyed by the client's address (http_client_address,
 * which honours trusted_proxies): the waitlist and session login budgets.
 */
bool ratelimit_check_address(struct http_request *r, enum ratelimit_class c);

#endif
