/*
 * ratelimit.c - token buckets in shared memory (see ratelimit.h).
 *
 * With limit N per minute, one request costs T = 60 s / N (in nanoseconds)
 * and a bucket holds N of them: the window W = N * T. A bucket's state is
 * its theoretical arrival time tat; tat <= now means full. A request at
 * now moves tat to max(tat, now) + T, which is allowed while the result is
 * at most now + W. So remaining = (W - (tat' - now)) / T and the bucket is
 * full again at tat'.
 */
#include "eval/ratelimit.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "http/http.h"
#include "http/metrics.h"
#include "eval/shm.h"
#include "http/server.h"

#define NS_PER_S UINT64_C(1000000000)
#define NS_PER_MINUTE (60 * NS_PER_S)

struct ratelimit_slot {
    _Atomic uint64_t key; /* 0: empty, never again once set */
    _Atomic uint64_t tat; /* CLOCK_MONOTONIC ns */
};

struct ratelimit_table {
    size_t slots;
    _Atomic uint64_t overflows;
    char pad[64 - sizeof(size_t) - sizeof(uint64_t)];
    struct ratelimit_slot slot[];
};

_Static_assert(sizeof(struct ratelimit_table) == 64, "the table header is one cache line");

size_t ratelimit_area_size(size_t slots)
{
    return sizeof(struct ratelimit_table) + slots * sizeof(struct ratelimit_slot);
}

struct ratelimit_table *ratelimit_area_init(void *area, size_t slots)
{
    struct ratelimit_table *t = area;
    memset(area, 0, ratelimit_area_size(slots));
    t->slots = slots;
    atomic_init(&t->overflows, 0);
    return t;
}

uint64_t ratelimit_overflows(const struct ratelimit_table *t)
{
    return atomic_load_explicit(&t->overflows, memory_order_relaxed);
}

uint32_t ratelimit_limit_for(const struct config *cfg, enum ratelimit_class c)
{
    switch (c) {
    case RATELIMIT_EVALUATION:
        return (uint32_t)cfg->ratelimit_evaluation;
    case RATELIMIT_MANAGEMENT:
        return (uint32_t)cfg->ratelimit_management;
    case RATELIMIT_WAITLIST:
        return (uint32_t)cfg->ratelimit_waitlist;
    case RATELIMIT_LOGIN:
        return (uint32_t)cfg->ratelimit_login;
    }
    return 0;
}

uint64_t ratelimit_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* FNV-1a over the class and the key, then a final mix; never 0. */
static uint64_t key_hash(enum ratelimit_class c, const char *key, size_t keylen)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ (uint64_t)c;
    h *= UINT64_C(0x100000001b3);
    for (size_t i = 0; i < keylen; i++) {
        h ^= (unsigned char)key[i];
        h *= UINT64_C(0x100000001b3);
    }
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h != 0 ? h : 1;
}

/* Claims an empty slot for key, or finds it taken by the same key. */
static bool claim_empty(struct ratelimit_slot *s, uint64_t key)
{
    uint64_t expected = 0;
    if (atomic_compare_exchange_strong_explicit(&s->key, &expected, key, memory_order_acq_rel,
                                                memory_order_acquire))
        return true;
    return expected == key;
}

/*
 * The bucket of key, claimed if need be: its own, an empty slot, a bucket
 * that has refilled (it carries no information), or else the stalest
 * bucket of the run (the earliest theoretical arrival time), which starts
 * over full for key and is counted in overflows. NULL only when another
 * process took that slot at the same instant.
 */
static struct ratelimit_slot *find_bucket(struct ratelimit_table *t, uint64_t key, uint64_t now)
{
    struct ratelimit_slot *idle = NULL, *stalest = NULL;
    uint64_t idle_key = 0, stalest_key = 0, stalest_tat = UINT64_MAX;
    size_t home = (size_t)(key % t->slots);
    size_t limit = t->slots < RATELIMIT_MAX_PROBES ? t->slots : RATELIMIT_MAX_PROBES;
    for (size_t i = 0; i < limit; i++) {
        struct ratelimit_slot *s = &t->slot[(home + i) % t->slots];
        uint64_t seen = atomic_load_explicit(&s->key, memory_order_acquire);
        if (seen == key)
            return s;
        if (seen == 0) {
            if (claim_empty(s, key))
                return s;
            continue;
        }
        uint64_t tat = atomic_load_explicit(&s->tat, memory_order_relaxed);
        if (idle == NULL && tat <= now) {
            idle = s;
            idle_key = seen;
        }
        if (tat < stalest_tat) {
            stalest = s;
            stalest_key = seen;
            stalest_tat = tat;
        }
    }
    if (idle != NULL)
        return atomic_compare_exchange_strong_explicit(&idle->key, &idle_key, key,
                                                       memory_order_acq_rel, memory_order_relaxed)
                   ? idle
                   : NULL;
    if (stalest == NULL ||
        !atomic_compare_exchange_strong_explicit(&stalest->key, &stalest_key, key,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return NULL;
    atomic_store_explicit(&stalest->tat, now, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->overflows, 1, memory_order_relaxed);
    return stalest;
}

static uint32_t ceil_seconds(uint64_t ns)
{
    uint64_t s = (ns + NS_PER_S - 1) / NS_PER_S;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

static void allow_unlimited(uint32_t limit, struct ratelimit_result *out)
{
    *out = (struct ratelimit_result){.allowed = true, .limit = limit, .remaining = limit};
}

bool ratelimit_take(struct ratelimit_table *t, enum ratelimit_class c, const char *key,
                    size_t keylen, uint32_t limit, uint64_t now_ns, struct ratelimit_result *out)
{
    if (limit == 0) {
        allow_unlimited(0, out);
        return true;
    }
    struct ratelimit_slot *s = find_bucket(t, key_hash(c, key, keylen), now_ns);
    if (s == NULL) { /* lost a race for the last slot of the run */
        allow_unlimited(limit, out);
        return true;
    }
    uint64_t cost = NS_PER_MINUTE / limit;
    uint64_t window = cost * limit;
    uint64_t tat = atomic_load_explicit(&s->tat, memory_order_relaxed);
    for (;;) {
        uint64_t next = (tat > now_ns ? tat : now_ns) + cost;
        if (next - now_ns > window) {
            uint64_t debt = tat > now_ns ? tat - now_ns : 0;
            *out = (struct ratelimit_result){.allowed = false,
                                             .limit = limit,
                                             .reset_s = ceil_seconds(debt),
                                             .retry_after_s = ceil_seconds(next - now_ns - window)};
            if (out->retry_after_s == 0)
                out->retry_after_s = 1;
            return false;
        }
        if (atomic_compare_exchange_weak_explicit(&s->tat, &tat, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *out = (struct ratelimit_result){.allowed = true,
                                             .limit = limit,
                                             .remaining =
                                                 (uint32_t)((window - (next - now_ns)) / cost),
                                             .reset_s = ceil_seconds(next - now_ns)};
            return true;
        }
    }
}

static enum metrics_limit metrics_limit_of(enum ratelimit_class c)
{
    switch (c) {
    case RATELIMIT_EVALUATION:
        return METRICS_LIMIT_EVALUATION;
    case RATELIMIT_MANAGEMENT:
        return METRICS_LIMIT_MANAGEMENT;
    case RATELIMIT_WAITLIST:
        return METRICS_LIMIT_WAITLIST;
    case RATELIMIT_LOGIN:
        break;
    }
    return METRICS_LIMIT_LOGIN;
}

static void add_number_header(struct http_request *r, const char *name, uint32_t value)
{
    char text[16];
    snprintf(text, sizeof text, "%u", value);
    http_add_header(r, name, text);
}

bool ratelimit_apply(struct http_request *r, enum ratelimit_class c, const char *key, size_t keylen,
                     struct ratelimit_result *out)
{
    const struct http_server *w = r->server;
    uint32_t limit = ratelimit_limit_for(w->cfg, c);
    if (limit == 0 || w->shm == NULL || w->shm->ratelimit == NULL) {
        allow_unlimited(0, out);
        return true;
    }
    ratelimit_take(w->shm->ratelimit, c, key, keylen, limit, ratelimit_now_ns(), out);
    add_number_header(r, "RateLimit-Limit", out->limit);
    add_number_header(r, "RateLimit-Remaining", out->remaining);
    add_number_header(r, "RateLimit-Reset", out->reset_s);
    if (!out->allowed) {
        add_number_header(r, "Retry-After", out->retry_after_s);
        if (w->metrics != NULL)
            metrics_add(&w->metrics->ratelimited[metrics_limit_of(c)], 1);
    }
    return out->allowed;
}

bool ratelimit_check_address(struct http_request *r, enum ratelimit_class c)
{
    char address[64];
    http_client_address(r, address, sizeof address);
    return ratelimit_check(r, c, address, strlen(address));
}

bool ratelimit_check(struct http_request *r, enum ratelimit_class c, const char *key, size_t keylen)
{
    struct ratelimit_result result;
    if (ratelimit_apply(r, c, key, keylen, &result))
        return true;
    char message[96];
    snprintf(message, sizeof message, "rate limit of %u requests per minute exceeded",
             result.limit);
    http_send_error(r, 429, message);
    return false;
}
