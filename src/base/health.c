/*
 * health.c - the healthz checks in shared memory (see health.h).
 *
 * The reason text is guarded by a sequence counter (a seqlock with one
 * writer, the refresher): the writer makes the counter odd, stores the
 * bytes, makes it even again; a reader copies the bytes and retries when
 * the counter was odd or moved. Every byte is an atomic, so the copy is
 * never a data race.
 */
#include "base/health.h"

#include <string.h>
#include <time.h>

static const char *const names[HEALTH_CHECKS] = {
    [HEALTH_SNAPSHOT_WRITE] = "snapshot_write",
    [HEALTH_SNAPSHOT_STALE] = "snapshot_stale",
    [HEALTH_DATABASE] = "database",
};

#define READ_ATTEMPTS 16

void health_init(struct health_state *h)
{
    for (int c = 0; c < HEALTH_CHECKS; c++) {
        struct health_entry *e = &h->checks[c];
        atomic_init(&e->since_ms, 0);
        atomic_init(&e->sequence, 0);
        for (size_t i = 0; i < HEALTH_REASON_MAX; i++)
            atomic_init(&e->reason[i], '\0');
    }
}

int64_t health_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return ms > 0 ? ms : 1;
}

const char *health_check_name(enum health_check c)
{
    return c >= 0 && c < HEALTH_CHECKS ? names[c] : "unknown";
}

static void store_reason(struct health_entry *e, const char *reason)
{
    uint32_t seq = atomic_load_explicit(&e->sequence, memory_order_relaxed);
    atomic_store_explicit(&e->sequence, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    size_t n = strnlen(reason, HEALTH_REASON_MAX - 1);
    for (size_t i = 0; i < HEALTH_REASON_MAX; i++)
        atomic_store_explicit(&e->reason[i], i < n ? reason[i] : '\0', memory_order_relaxed);
    atomic_store_explicit(&e->sequence, seq + 2, memory_order_release);
}

void health_fail(struct health_state *h, enum health_check c, int64_t now_ms, const char *reason)
{
    if (h == NULL || c < 0 || c >= HEALTH_CHECKS)
        return;
    struct health_entry *e = &h->checks[c];
    store_reason(e, reason != NULL ? reason : "");
    if (atomic_load_explicit(&e->since_ms, memory_order_relaxed) == 0)
        atomic_store_explicit(&e->since_ms, now_ms > 0 ? now_ms : 1, memory_order_release);
}

void health_clear(struct health_state *h, enum health_check c)
{
    if (h == NULL || c < 0 || c >= HEALTH_CHECKS)
        return;
    atomic_store_explicit(&h->checks[c].since_ms, 0, memory_order_release);
}

bool health_failing(const struct health_state *h, enum health_check c)
{
    return h != NULL && c >= 0 && c < HEALTH_CHECKS &&
           atomic_load_explicit(&h->checks[c].since_ms, memory_order_acquire) != 0;
}

int64_t health_stale_limit_ms(int refresh_interval_ms)
{
    int64_t three = 3 * (int64_t)refresh_interval_ms;
    return three > HEALTH_STALE_MIN_MS ? three : HEALTH_STALE_MIN_MS;
}

struct health_limits health_limits_of(int refresh_interval_ms, int database_timeout_ms)
{
    return (struct health_limits){.stale_ms = health_stale_limit_ms(refresh_interval_ms),
                                  .database_ms = database_timeout_ms};
}

/* Copies e's reason into out (HEALTH_REASON_MAX bytes); "" when the
 * writer kept changing it. */
static void load_reason(const struct health_entry *e, char *out)
{
    for (int attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        uint32_t before = atomic_load_explicit(&e->sequence, memory_order_acquire);
        if (before % 2 != 0)
            continue;
        for (size_t i = 0; i < HEALTH_REASON_MAX; i++)
            out[i] = atomic_load_explicit(&e->reason[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&e->sequence, memory_order_relaxed) == before) {
            out[HEALTH_REASON_MAX - 1] = '\0';
            return;
        }
    }
    out[0] = '\0';
}

/* How long check c may fail before it counts; -1: never counts. */
static int64_t grace_ms(enum health_check c, const struct health_limits *limits)
{
    switch (c) {
    case HEALTH_SNAPSHOT_WRITE:
        return 0;
    case HEALTH_SNAPSHOT_STALE:
        return limits->stale_ms;
    case HEALTH_DATABASE:
        return limits->database_ms > 0 ? limits->database_ms : -1;
    default:
        return -1;
    }
}

size_t health_judge(const struct health_state *h, const struct health_limits *limits,
                    int64_t now_ms, struct health_failure out[HEALTH_CHECKS])
{
    size_t n = 0;
    for (int c = 0; h != NULL && c < HEALTH_CHECKS; c++) {
        const struct health_entry *e = &h->checks[c];
        int64_t since = atomic_load_explicit(&e->since_ms, memory_order_acquire);
        int64_t grace = grace_ms((enum health_check)c, limits);
        if (since == 0 || grace < 0 || now_ms - since < grace)
            continue;
        out[n].check = (enum health_check)c;
        out[n].for_ms = now_ms - since;
        load_reason(e, out[n].reason);
        n++;
    }
    return n;
}
