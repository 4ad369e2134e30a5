/*
 * shm.c - creation of the shared-memory region.
 *
 * The master calls shm_create once, before forking: an anonymous
 * MAP_SHARED mapping inherited by every child, so it survives any child's
 * death. Each user of the region contributes a size function and an init
 * function (the table below); the region never grows. The master does not
 * read the region after creating it.
 */
#include "eval/shm.h"

#include <string.h>
#include <sys/mman.h>

#include "http/accept_balance.h"
#include "base/config.h"
#include "eval/heartbeat.h"
#include "http/metrics.h"
#include "eval/ratelimit.h"
#include "eval/stream_slots.h"
#include "eval/unknown_flags.h"
#include "eval/usage.h"

struct shm_user {
    const char *name;
    size_t (*size)(const struct config *cfg);
    void (*init)(void *area, size_t size, const struct config *cfg);
    void (*attach)(struct shm_region *region, void *area); /* records where it lives */
};

static size_t header_size(const struct config *cfg)
{
    (void)cfg;
    return sizeof(struct shm_header);
}

static void header_init(void *area, size_t size, const struct config *cfg)
{
    (void)cfg;
    struct shm_header *h = area;
    memset(h, 0, size);
    h->magic = SHM_MAGIC;
    h->version = 1;
    atomic_init(&h->snapshot_generation, 0);
    atomic_init(&h->requests_served, 0);
    atomic_init(&h->worker_restarts, 0);
    health_init(&h->health);
}

static void header_attach(struct shm_region *region, void *area)
{
    region->header = area;
}

static size_t ratelimit_size(const struct config *cfg)
{
    return ratelimit_area_size((size_t)cfg->ratelimit_slots);
}

static void ratelimit_init(void *area, size_t size, const struct config *cfg)
{
    (void)size;
    ratelimit_area_init(area, (size_t)cfg->ratelimit_slots);
}

static void ratelimit_attach(struct shm_region *region, void *area)
{
    region->ratelimit = area;
}

static size_t usage_size(const struct config *cfg)
{
    return usage_area_size((size_t)cfg->usage_slots);
}

static void usage_init(void *area, size_t size, const struct config *cfg)
{
    (void)size;
    usage_area_init(area, (size_t)cfg->usage_slots);
}

static void usage_attach(struct shm_region *region, void *area)
{
    region->usage = area;
}

static size_t unknown_size(const struct config *cfg)
{
    return unknown_flags_area_size((size_t)cfg->unknown_flag_slots);
}

static void unknown_init(void *area, size_t size, const struct config *cfg)
{
    (void)size;
    unknown_flags_area_init(area, (size_t)cfg->unknown_flag_slots);
}

static void unknown_attach(struct shm_region *region, void *area)
{
    region->unknown = area;
}

static void metrics_init(void *area, size_t size, const struct config *cfg)
{
    (void)size;
    metrics_area_init(area, cfg);
}

static void metrics_attach(struct shm_region *region, void *area)
{
    region->metrics = area;
}

static size_t heartbeat_size(const struct config *cfg)
{
    (void)cfg;
    return heartbeat_area_size();
}

static void heartbeat_init(void *area, size_t size, const struct config *cfg)
{
    (void)size;
    (void)cfg;
    heartbeat_area_init(area);
}

static void heartbeat_attach(struct shm_region *region, void *area)
{
    region->heartbeat = area;
}

static void accept_balance_attach(struct shm_region *region, void *area)
{
    region->accept_balance = area;
}

static const struct shm_user shm_users[] = {
    {"header", header_size, header_init, header_attach},
    {"ratelimit", ratelimit_size, ratelimit_init, ratelimit_attach},
    {"usage", usage_size, usage_init, usage_attach},
    {"unknown_flags", unknown_size, unknown_init, unknown_attach},
    {"metrics", metrics_area_size, metrics_init, metrics_attach},
    {"heartbeat", heartbeat_size, heartbeat_init, heartbeat_attach},
    {"streams", stream_slots_shm_size, stream_slots_shm_init, stream_slots_shm_attach},
    {"accept_balance", accept_balance_shm_size, accept_balance_shm_init, accept_balance_attach},
};

#define SHM_ALIGN 64

static size_t align_up(size_t n)
{
    return (n + SHM_ALIGN - 1) & ~(size_t)(SHM_ALIGN - 1);
}

size_t shm_size(const struct config *cfg)
{
    size_t total = 0;
    for (size_t i = 0; i < sizeof shm_users / sizeof shm_users[0]; i++)
        total += align_up(shm_users[i].size(cfg));
    return total;
}

int shm_create(const struct config *cfg, struct shm_region *out)
{
    size_t size = shm_size(cfg);
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return -1;
    size_t offset = 0;
    for (size_t i = 0; i < sizeof shm_users / sizeof shm_users[0]; i++) {
        size_t area = shm_users[i].size(cfg);
        shm_users[i].init((char *)base + offset, area, cfg);
        shm_users[i].attach(out, (char *)base + offset);
        offset += align_up(area);
    }
    out->base = base;
    out->size = size;
    out->header->total_size = size;
    return 0;
}

void shm_destroy(struct shm_region *shm)
{
    if (shm->base != NULL)
        munmap(shm->base, shm->size);
    shm->base = NULL;
    shm->header = NULL;
    shm->usage = NULL;
    shm->unknown = NULL;
    shm->ratelimit = NULL;
    shm->metrics = NULL;
    shm->heartbeat = NULL;
    shm->accept_balance = NULL;
    shm->size = 0;
}
