/*
 * test_usage.c - the shared-memory usage counters: counting, draining,
 * putting back, a full table, reclaiming old hours, concurrent adds, and
 * the uuid helpers; and a worker's private batch of counts, the unknown
 * flag keys' included.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "suites.h"
#include "eval/unknown_flags.h"
#include "eval/usage.h"
#include "eval/usage_batch.h"

#define HOUR 3600
#define NOW (INT64_C(1700000000))

struct collected {
    struct usage_entry e[4096];
    size_t n;
    uint64_t total;
};

static void collect(const struct usage_entry *e, void *arg)
{
    struct collected *c = arg;
    if (c->n < sizeof c->e / sizeof c->e[0])
        c->e[c->n++] = *e;
    c->total += e->count;
}

static struct usage_table *new_table(size_t slots)
{
    void *area = malloc(usage_area_size(slots));
    ck_assert_ptr_nonnull(area);
    return usage_area_init(area, slots);
}

static void id_of(unsigned n, uint8_t out[USAGE_ID_BYTES])
{
    memset(out, 0, USAGE_ID_BYTES);
    memcpy(out, &n, sizeof n);
    out[15] = 0x5a;
}

START_TEST(counts_and_drains_once)
{
    struct usage_table *t = new_table(1024);
    uint8_t flag[16], env[16];
    id_of(1, flag);
    id_of(2, env);
    for (int i = 0; i < 5; i++)
        ck_assert(usage_add(t, flag, env, "on", 2, NOW + i, 1));
    ck_assert(usage_add(t, flag, env, "off", 3, NOW, 2));
    struct collected c = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &c), 2);
    ck_assert_uint_eq(c.total, 7);
    for (size_t i = 0; i < c.n; i++) {
        ck_assert_mem_eq(c.e[i].flag_id, flag, 16);
        ck_assert_mem_eq(c.e[i].environment_id, env, 16);
        ck_assert_int_eq(c.e[i].hour, NOW / HOUR);
        if (strcmp(c.e[i].variant, "on") == 0) {
            ck_assert_uint_eq(c.e[i].count, 5);
            ck_assert_int_eq(c.e[i].last_seen, NOW + 4);
        } else {
            ck_assert_str_eq(c.e[i].variant, "off");
            ck_assert_uint_eq(c.e[i].count, 2);
        }
    }
    struct collected again = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &again), 0);
    ck_assert_uint_eq(usage_dropped(t), 0);
    free(t);
}
END_TEST

START_TEST(hours_environments_and_variants_are_separate_keys)
{
    struct usage_table *t = new_table(1024);
    uint8_t flag[16], env_a[16], env_b[16];
    id_of(1, flag);
    id_of(2, env_a);
    id_of(3, env_b);
    usage_add(t, flag, env_a, "v", 1, NOW, 1);
    usage_add(t, flag, env_a, "v", 1, NOW + HOUR, 1);
    usage_add(t, flag, env_b, "v", 1, NOW, 1);
    usage_add(t, flag, env_a, "w", 1, NOW, 1);
    usage_add(t, flag, env_a, "v", 1, NOW, 1);
    struct collected c = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &c), 4);
    ck_assert_uint_eq(c.total, 5);
    free(t);
}
END_TEST

START_TEST(put_back_entries_come_out_again)
{
    struct usage_table *t = new_table(1024);
    uint8_t flag[16], env[16];
    id_of(7, flag);
    id_of(8, env);
    usage_add(t, flag, env, "on", 2, NOW, 3);
    struct collected c = {.n = 0};
    usage_drain(t, NOW, collect, &c);
    ck_assert_uint_eq(c.n, 1);
    usage_add(t, flag, env, "on", 2, NOW + 10, 1); /* counted meanwhile */
    ck_assert(usage_add_entry(t, &c.e[0]));        /* the flush failed */
    struct collected later = {.n = 0};
    usage_drain(t, NOW + 20, collect, &later);
    ck_assert_uint_eq(later.n, 1);
    ck_assert_uint_eq(later.total, 4);
    ck_assert_int_eq(later.e[0].last_seen, NOW + 10);
    free(t);
}
END_TEST

START_TEST(full_table_drops_and_counts_drops)
{
    struct usage_table *t = new_table(1024);
    uint8_t env[16];
    id_of(99, env);
    uint64_t added = 0;
    for (unsigned i = 0; i < 3000; i++) {
        uint8_t flag[16];
        id_of(i, flag);
        usage_add(t, flag, env, "on", 2, NOW, 2);
        added += 2;
    }
    ck_assert_uint_gt(usage_dropped(t), 0);
    struct collected c = {.n = 0};
    size_t handed = usage_drain(t, NOW, collect, &c);
    ck_assert_uint_le(handed, 1024);
    ck_assert_uint_eq(c.total + usage_dropped(t), added);
    free(t);
}
END_TEST

/* Fills t with keys of hour NOW until counts drop, then drains at NOW. */
static void fill_and_drain(struct usage_table *t, const uint8_t env[16])
{
    for (unsigned i = 0; i < 5000; i++) {
        uint8_t flag[16];
        id_of(i, flag);
        usage_add(t, flag, env, "on", 2, NOW, 1);
    }
    ck_assert_uint_gt(usage_dropped(t), 0);
    struct collected c = {.n = 0};
    usage_drain(t, NOW, collect, &c);
}

/* Adds 512 new keys at time now; returns how many were dropped. */
static uint64_t add_new_keys(struct usage_table *t, const uint8_t env[16], int64_t now)
{
    uint64_t before = usage_dropped(t);
    for (unsigned i = 0; i < 512; i++) {
        uint8_t flag[16];
        id_of(10000 + i, flag);
        usage_add(t, flag, env, "on", 2, now, 1);
    }
    return usage_dropped(t) - before;
}

START_TEST(old_hours_are_reclaimed)
{
    uint8_t env[16];
    id_of(99, env);
    struct usage_table *kept = new_table(1024), *reclaimed = new_table(1024);
    fill_and_drain(kept, env);
    fill_and_drain(reclaimed, env);
    struct collected none = {.n = 0};
    ck_assert_uint_eq(usage_drain(kept, NOW + HOUR, collect, &none), 0);
    ck_assert_uint_eq(usage_drain(reclaimed, NOW + 2 * HOUR, collect, &none), 0);
    ck_assert_uint_gt(add_new_keys(kept, env, NOW + HOUR), 0);
    ck_assert_uint_eq(add_new_keys(reclaimed, env, NOW + 2 * HOUR), 0);
    struct collected after = {.n = 0};
    ck_assert_uint_eq(usage_drain(reclaimed, NOW + 2 * HOUR, collect, &after), 512);
    free(kept);
    free(reclaimed);
}
END_TEST

START_TEST(recent_hours_are_kept)
{
    struct usage_table *t = new_table(1024);
    uint8_t flag[16], env[16];
    id_of(1, flag);
    id_of(2, env);
    usage_add(t, flag, env, "on", 2, NOW, 1);
    struct collected c = {.n = 0};
    usage_drain(t, NOW, collect, &c);
    usage_drain(t, NOW + HOUR, collect, &c); /* one hour on: not reclaimed */
    usage_add(t, flag, env, "on", 2, NOW, 1);
    struct collected again = {.n = 0};
    usage_drain(t, NOW + HOUR, collect, &again);
    ck_assert_uint_eq(again.n, 1);
    ck_assert_uint_eq(again.total, 1);
    free(t);
}
END_TEST

START_TEST(bad_variants_are_dropped)
{
    struct usage_table *t = new_table(1024);
    uint8_t flag[16], env[16];
    id_of(1, flag);
    id_of(2, env);
    char long_key[80];
    memset(long_key, 'a', sizeof long_key);
    ck_assert(!usage_add(t, flag, env, long_key, sizeof long_key, NOW, 1));
    ck_assert(!usage_add(t, flag, env, "", 0, NOW, 1));
    ck_assert_uint_eq(usage_dropped(t), 2);
    ck_assert(usage_add(t, flag, env, long_key, USAGE_VARIANT_MAX, NOW, 1));
    struct collected c = {.n = 0};
    usage_drain(t, NOW, collect, &c);
    ck_assert_uint_eq(strlen(c.e[0].variant), USAGE_VARIANT_MAX);
    free(t);
}
END_TEST

struct adder {
    struct usage_table *t;
    unsigned seed;
};

#define THREADS 4
#define ADDS 20000

static void *add_many(void *arg)
{
    struct adder *a = arg;
    uint8_t env[16];
    id_of(42, env);
    for (unsigned i = 0; i < ADDS; i++) {
        uint8_t flag[16];
        id_of((i * 7 + a->seed) % 50, flag);
        usage_add(a->t, flag, env, i % 2 ? "on" : "off", i % 2 ? 2 : 3, NOW, 1);
    }
    return NULL;
}

START_TEST(concurrent_adds_and_drains_lose_nothing)
{
    struct usage_table *t = new_table(1024);
    pthread_t threads[THREADS];
    struct adder adders[THREADS];
    for (unsigned i = 0; i < THREADS; i++) {
        adders[i] = (struct adder){t, i};
        pthread_create(&threads[i], NULL, add_many, &adders[i]);
    }
    struct collected *during = calloc(1, sizeof *during);
    struct collected *after = calloc(1, sizeof *after);
    for (int i = 0; i < 50; i++)
        usage_drain(t, NOW, collect, during);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    usage_drain(t, NOW, collect, after);
    ck_assert_uint_eq(usage_dropped(t), 0);
    ck_assert_uint_eq(during->total + after->total, (uint64_t)THREADS * ADDS);
    free(during);
    free(after);
    free(t);
}
END_TEST

START_TEST(uuid_text_round_trip)
{
    uint8_t id[16];
    char text[37];
    ck_assert(usage_uuid_parse("0F1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", id));
    usage_uuid_format(id, text);
    ck_assert_str_eq(text, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
    ck_assert(!usage_uuid_parse("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f", id));
    ck_assert(!usage_uuid_parse("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f00", id));
    ck_assert(!usage_uuid_parse("0f1e2d3c04b5a-6978-8796-a5b4c3d2e1f0", id));
    ck_assert(!usage_uuid_parse("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1fg", id));
    ck_assert(!usage_uuid_parse("", id));
}
END_TEST

/* ---- usage_batch ---- */

#define FLAG_A "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
#define ENV_P "11111111-2222-3333-4444-555555555555"

#define FLAG_B "1f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f1"

static void open_snapshot_of(const char *flag_id, uint64_t generation, struct snapshot *out);

/* A snapshot with flag "a" (variants on/off) in one environment. */
static void open_snapshot(uint64_t generation, struct snapshot *out)
{
    open_snapshot_of(FLAG_A, generation, out);
}

/* The same with another flag id (as another organization's part). */
static void open_snapshot_of(const char *flag_id, uint64_t generation, struct snapshot *out)
{
    char dir[] = "/tmp/test_usage.XXXXXX", path[64], err[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/snapshot.bin", dir);
    struct snapshot_builder *b = snapshot_builder_new(generation);
    ck_assert_int_eq(snapshot_builder_add_environment(b, ENV_P, "org", "production"), 0);
    struct snapshot_variant_input variants[] = {{"on", "true"}, {"off", "false"}};
    struct snapshot_flag_input flag = {.env_id = ENV_P,
                                       .flag_id = flag_id,
                                       .flag_key = "a",
                                       .type = "boolean",
                                       .enabled = true,
                                       .off_variant_key = "off",
                                       .default_serve_json = "{\"variant\":\"on\"}",
                                       .variants = variants,
                                       .variant_count = 2};
    ck_assert_int_eq(snapshot_builder_add_flag(b, &flag), 0);
    ck_assert_int_eq(snapshot_builder_write(b, path, err, sizeof err), 0);
    snapshot_builder_free(b);
    ck_assert_int_eq(snapshot_open(path, out, err, sizeof err), 0);
    unlink(path);
    rmdir(dir);
}

static uint32_t variant_named(const struct snapshot *s, const char *key)
{
    const struct snapshot_flag *f = &s->flags[0];
    for (uint32_t i = 0; i < f->variant_count; i++)
        if (strcmp(snapshot_string(s, s->variants[f->variant_first + i].key), key) == 0)
            return f->variant_first + i;
    ck_abort_msg("no variant %s", key);
    return 0;
}

START_TEST(batch_counts_reach_the_table_on_flush)
{
    struct usage_table *t = new_table(1024);
    struct snapshot s;
    open_snapshot(5, &s);
    struct usage_batch *b = usage_batch_new();
    for (int i = 0; i < 3; i++)
        usage_batch_count(b, t, &s, 0, variant_named(&s, "on"), NOW + i);
    usage_batch_count(b, t, &s, 0, variant_named(&s, "off"), NOW);
    struct collected before = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &before), 0); /* still private */
    usage_batch_flush(b, t);
    struct collected c = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &c), 2);
    ck_assert_uint_eq(c.total, 4);
    uint8_t flag_id[16], env_id[16];
    usage_uuid_parse(FLAG_A, flag_id);
    usage_uuid_parse(ENV_P, env_id);
    for (size_t i = 0; i < c.n; i++) {
        ck_assert_mem_eq(c.e[i].flag_id, flag_id, 16);
        ck_assert_mem_eq(c.e[i].environment_id, env_id, 16);
        ck_assert_uint_eq(c.e[i].count, strcmp(c.e[i].variant, "on") == 0 ? 3 : 1);
        ck_assert_int_eq(c.e[i].hour, NOW / HOUR);
    }
    usage_batch_flush(b, t); /* empty now: adds nothing */
    struct collected none = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &none), 0);
    usage_batch_free(b);
    snapshot_close(&s);
    free(t);
}
END_TEST

/* A prefetch is a hint: it counts nothing, takes no slot and makes no
 * flush, whatever flag index it is given (the bulk loop asks ahead). */
START_TEST(batch_prefetch_changes_nothing)
{
    struct usage_table *t = new_table(1024);
    struct snapshot s;
    open_snapshot(5, &s);
    usage_batch_prefetch(NULL, &s, 0);
    struct usage_batch *b = usage_batch_new();
    size_t capacity = usage_batch_capacity(b);
    for (uint32_t flag = 0; flag < 100000; flag += 7)
        usage_batch_prefetch(b, &s, flag);
    ck_assert_uint_eq(usage_batch_capacity(b), capacity);
    ck_assert(!usage_batch_tick(b, t)); /* nothing pending */
    usage_batch_count(b, t, &s, 0, variant_named(&s, "on"), NOW);
    usage_batch_prefetch(b, &s, 0);
    usage_batch_flush(b, t);
    struct collected c = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &c), 1);
    ck_assert_uint_eq(c.total, 1);
    usage_batch_free(b);
    snapshot_close(&s);
    free(t);
}
END_TEST

START_TEST(batch_counts_flags_of_several_parts_apart)
{
    struct usage_table *t = new_table(1024);
    struct snapshot a, b;
    open_snapshot(5, &a);
    open_snapshot_of(FLAG_B, 9, &b); /* the same flag and variant indexes */
    struct usage_batch *batch = usage_batch_new();
    usage_batch_count(batch, t, &a, 0, variant_named(&a, "on"), NOW);
    usage_batch_count(batch, t, &b, 0, variant_named(&b, "on"), NOW);
    usage_batch_count(batch, t, &a, 0, variant_named(&a, "on"), NOW);
    struct collected before = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &before), 0); /* no flush between parts */
    usage_batch_flush(batch, t);
    struct collected c = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &c), 2);
    uint8_t flag_a[16], flag_b[16];
    usage_uuid_parse(FLAG_A, flag_a);
    usage_uuid_parse(FLAG_B, flag_b);
    for (size_t i = 0; i < c.n; i++) {
        bool is_a = memcmp(c.e[i].flag_id, flag_a, 16) == 0;
        ck_assert(is_a || memcmp(c.e[i].flag_id, flag_b, 16) == 0);
        ck_assert_uint_eq(c.e[i].count, is_a ? 2 : 1);
    }
    usage_batch_free(batch);
    snapshot_close(&a);
    snapshot_close(&b);
    free(t);
}
END_TEST

START_TEST(batch_flushes_itself_when_the_hour_changes)
{
    struct usage_table *t = new_table(1024);
    struct snapshot s;
    open_snapshot(5, &s);
    struct usage_batch *b = usage_batch_new();
    usage_batch_count(b, t, &s, 0, variant_named(&s, "on"), NOW);
    usage_batch_count(b, t, &s, 0, variant_named(&s, "on"), NOW + HOUR);
    struct collected c = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW + HOUR, collect, &c), 1);
    ck_assert_int_eq(c.e[0].hour, NOW / HOUR);
    usage_batch_flush(b, t);
    struct collected later = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW + HOUR, collect, &later), 1);
    ck_assert_int_eq(later.e[0].hour, NOW / HOUR + 1);
    usage_batch_free(b);
    snapshot_close(&s);
    free(t);
}
END_TEST

struct unknown_collected {
    struct unknown_entry e[256];
    size_t n;
    uint64_t total;
};

static void collect_unknown(const struct unknown_entry *e, void *arg)
{
    struct unknown_collected *c = arg;
    if (c->n < sizeof c->e / sizeof c->e[0])
        c->e[c->n++] = *e;
    c->total += e->count;
}

static struct unknown_table *new_unknown_table(size_t slots)
{
    void *area = malloc(unknown_flags_area_size(slots));
    ck_assert_ptr_nonnull(area);
    return unknown_flags_area_init(area, slots);
}

static void count_unknown(struct usage_batch *b, struct usage_table *t, const struct snapshot *s,
                          const char *key, int64_t now)
{
    usage_batch_count_unknown(b, t, s, 0, key, strlen(key), now);
}

START_TEST(batch_unknown_keys_reach_their_table_on_flush)
{
    struct usage_table *t = new_table(1024);
    struct unknown_table *u = new_unknown_table(1024);
    struct snapshot s;
    open_snapshot(5, &s);
    struct usage_batch *b = usage_batch_new();
    usage_batch_set_unknown(b, u);
    count_unknown(b, t, &s, "Not-A-Key", NOW);              /* outside the pattern */
    usage_batch_count_unknown(b, t, &s, 0, "a\0b", 3, NOW); /* a NUL inside: not "a" */
    char too_long[80];
    memset(too_long, 'k', sizeof too_long);
    usage_batch_count_unknown(b, t, &s, 0, too_long, sizeof too_long, NOW);
    count_unknown(b, t, &s, "other", NOW);
    count_unknown(b, t, &s, "typo-flag", NOW);
    count_unknown(b, t, &s, "typo-flag", NOW + 1);
    struct unknown_collected before = {.n = 0};
    ck_assert_uint_eq(unknown_flags_drain(u, NOW, collect_unknown, &before), 0);
    usage_batch_flush(b, t);
    struct unknown_collected c = {.n = 0};
    ck_assert_uint_eq(unknown_flags_drain(u, NOW + 1, collect_unknown, &c), 2);
    ck_assert_uint_eq(c.total, 3);
    uint8_t env_id[16];
    usage_uuid_parse(ENV_P, env_id);
    for (size_t i = 0; i < c.n; i++) {
        ck_assert_mem_eq(c.e[i].environment_id, env_id, 16);
        ck_assert_uint_eq(c.e[i].count, strcmp(c.e[i].key, "typo-flag") == 0 ? 2 : 1);
        ck_assert_int_eq(c.e[i].last_seen, NOW + 1);
    }
    struct collected usage = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &usage), 0); /* no flag counted */
    usage_batch_free(b);
    snapshot_close(&s);
    free(u);
    free(t);
}
END_TEST

/* Half full of distinct unknown keys, the batch flushes before it takes
 * another, as it does for flags. */
START_TEST(batch_flushes_itself_when_half_full_of_unknown_keys)
{
    struct usage_table *t = new_table(1024);
    struct unknown_table *u = new_unknown_table(4096);
    struct snapshot s;
    open_snapshot(5, &s);
    struct usage_batch *b = usage_batch_new();
    usage_batch_set_unknown(b, u);
    for (unsigned i = 0; i < 1000; i++) {
        char key[32];
        snprintf(key, sizeof key, "k-%u", i);
        count_unknown(b, t, &s, key, NOW);
    }
    struct unknown_collected *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    size_t early = unknown_flags_drain(u, NOW, collect_unknown, c);
    ck_assert_uint_gt(early, 0); /* flushed on its own before the explicit flush */
    uint64_t total = c->total;
    usage_batch_flush(b, t);
    c->n = 0;
    c->total = 0;
    unknown_flags_drain(u, NOW, collect_unknown, c);
    ck_assert_uint_eq(total + c->total, 1000);
    ck_assert_uint_eq(unknown_flags_dropped(u), 0);
    free(c);
    usage_batch_free(b);
    snapshot_close(&s);
    free(u);
    free(t);
}
END_TEST

/* Without a table for them (a worker without shared memory), unknown keys
 * are forgotten at the flush. */
START_TEST(batch_without_unknown_table_forgets_them)
{
    struct usage_table *t = new_table(1024);
    struct snapshot s;
    open_snapshot(5, &s);
    struct usage_batch *b = usage_batch_new();
    count_unknown(b, t, &s, "typo-flag", NOW);
    usage_batch_flush(b, t);
    struct collected usage = {.n = 0};
    ck_assert_uint_eq(usage_drain(t, NOW, collect, &usage), 0);
    usage_batch_free(b);
    snapshot_close(&s);
    free(t);
}
END_TEST

/* A snapshot of n flags "f-<i>" (variants on/off, ids ending in i) in one
 * environment, for the batch's growth. */
static void open_many_flags(unsigned n, struct snapshot *out)
{
    char dir[] = "/tmp/test_usage.XXXXXX", path[64], err[256];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/snapshot.bin", dir);
    struct snapshot_builder *b = snapshot_builder_new(7);
    ck_assert_int_eq(snapshot_builder_add_environment(b, ENV_P, "org", "production"), 0);
    struct snapshot_variant_input variants[] = {{"on", "true"}, {"off", "false"}};
    for (unsigned i = 0; i < n; i++) {
        char id[40], key[16];
        snprintf(id, sizeof id, "0f1e2d3c-4b5a-6978-8796-%012u", i);
        snprintf(key, sizeof key, "f-%u", i);
        struct snapshot_flag_input flag = {.env_id = ENV_P,
                                           .flag_id = id,
                                           .flag_key = key,
                                           .type = "boolean",
                                           .enabled = true,
                                           .off_variant_key = "off",
                                           .default_serve_json = "{\"variant\":\"on\"}",
                                           .variants = variants,
                                           .variant_count = 2};
        ck_assert_int_eq(snapshot_builder_add_flag(b, &flag), 0);
    }
    ck_assert_int_eq(snapshot_builder_write(b, path, err, sizeof err), 0);
    snapshot_builder_free(b);
    ck_assert_int_eq(snapshot_open(path, out, err, sizeof err), 0);
    ck_assert_uint_eq(out->counts[SNAPSHOT_SEC_FLAGS], n);
    unlink(path);
    rmdir(dir);
}

/* Counts one evaluation of every flag of s (variant: first + which). */
static void count_every_flag(struct usage_batch *b, struct usage_table *t, const struct snapshot *s,
                             uint32_t which, int64_t now)
{
    for (uint32_t f = 0; f < s->counts[SNAPSHOT_SEC_FLAGS]; f++)
        usage_batch_count(b, t, s, f, s->flags[f].variant_first + which, now);
}

struct drained_sum {
    size_t entries;
    uint64_t total;
    uint64_t max_count;
};

static void sum_entry(const struct usage_entry *e, void *arg)
{
    struct drained_sum *d = arg;
    d->entries++;
    d->total += e->count;
    if (e->count > d->max_count)
        d->max_count = e->count;
}

/* Repeated bulk evaluations of a 5,000-flag environment stay in the batch
 * (it grows) until the flush: one entry per flag, its count the number of
 * evaluations, nothing in the shared table before. */
START_TEST(batch_grows_to_hold_a_large_environment)
{
    struct usage_table *t = new_table(16384);
    struct snapshot s;
    open_many_flags(5000, &s);
    struct usage_batch *b = usage_batch_new();
    ck_assert_uint_eq(usage_batch_capacity(b), 512);
    for (int round = 0; round < 3; round++)
        count_every_flag(b, t, &s, 0, NOW);
    ck_assert_uint_ge(usage_batch_capacity(b), 5000);
    struct drained_sum before = {0};
    ck_assert_uint_eq(usage_drain(t, NOW, sum_entry, &before), 0); /* no flush on its own */
    usage_batch_flush(b, t);
    struct drained_sum after = {0};
    usage_drain(t, NOW, sum_entry, &after);
    ck_assert_uint_eq(after.entries, 5000);
    ck_assert_uint_eq(after.total, 15000);
    ck_assert_uint_eq(after.max_count, 3);
    ck_assert_uint_eq(usage_dropped(t), 0);
    /* the grown batch is reused after a flush, and keeps counting right */
    size_t grown = usage_batch_capacity(b);
    count_every_flag(b, t, &s, 1, NOW);
    usage_batch_flush(b, t);
    ck_assert_uint_eq(usage_batch_capacity(b), grown);
    struct drained_sum again = {0};
    usage_drain(t, NOW, sum_entry, &again);
    ck_assert_uint_eq(again.entries, 5000);
    ck_assert_uint_eq(again.total, 5000);
    usage_batch_free(b);
    snapshot_close(&s);
    free(t);
}
END_TEST

/* At its bound the batch stops growing and flushes on its own, losing no
 * count: 70,000 distinct pairs are more than it may hold. */
START_TEST(batch_flushes_itself_at_its_bound)
{
    struct usage_table *t = new_table(262144);
    struct snapshot s;
    open_many_flags(35000, &s);
    struct usage_batch *b = usage_batch_new();
    count_every_flag(b, t, &s, 0, NOW);
    count_every_flag(b, t, &s, 1, NOW);
    size_t bound = usage_batch_capacity(b);
    ck_assert_uint_lt(bound, 70000);
    ck_assert_uint_ge(bound, 32768);
    struct drained_sum early = {0};
    usage_drain(t, NOW, sum_entry, &early);
    ck_assert_uint_gt(early.entries, 0); /* flushed before the explicit flush */
    usage_batch_flush(b, t);
    struct drained_sum rest = {0};
    usage_drain(t, NOW, sum_entry, &rest);
    ck_assert_uint_eq(early.total + rest.total, 70000);
    ck_assert_uint_eq(usage_dropped(t), 0);
    /* and never grows past it */
    count_every_flag(b, t, &s, 0, NOW);
    count_every_flag(b, t, &s, 1, NOW);
    ck_assert_uint_eq(usage_batch_capacity(b), bound);
    usage_batch_flush(b, t);
    usage_batch_free(b);
    snapshot_close(&s);
    free(t);
}
END_TEST

/* The timer hands a small batch over at every tick, a batch of more than
 * USAGE_BATCH_TICK_ENTRIES entries one tick later per such many. */
START_TEST(batch_tick_waits_longer_for_a_large_batch)
{
    struct usage_table *t = new_table(16384);
    struct snapshot s;
    open_many_flags(5000, &s);
    struct usage_batch *b = usage_batch_new();
    ck_assert(!usage_batch_tick(b, t)); /* nothing pending */
    usage_batch_count(b, t, &s, 0, s.flags[0].variant_first, NOW);
    ck_assert(usage_batch_tick(b, t));
    struct drained_sum small = {0};
    usage_drain(t, NOW, sum_entry, &small);
    ck_assert_uint_eq(small.total, 1);

    count_every_flag(b, t, &s, 0, NOW); /* 5,000 entries: two ticks */
    ck_assert(!usage_batch_tick(b, t));
    struct drained_sum waiting = {0};
    ck_assert_uint_eq(usage_drain(t, NOW, sum_entry, &waiting), 0);
    ck_assert(usage_batch_tick(b, t));
    struct drained_sum large = {0};
    usage_drain(t, NOW, sum_entry, &large);
    ck_assert_uint_eq(large.total, 5000);
    ck_assert(!usage_batch_tick(b, t)); /* empty again */
    usage_batch_free(b);
    snapshot_close(&s);
    free(t);
}
END_TEST

Suite *suite_usage(void)
{
    Suite *s = suite_create("usage");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, counts_and_drains_once);
    tcase_add_test(tc, hours_environments_and_variants_are_separate_keys);
    tcase_add_test(tc, put_back_entries_come_out_again);
    tcase_add_test(tc, full_table_drops_and_counts_drops);
    tcase_add_test(tc, old_hours_are_reclaimed);
    tcase_add_test(tc, recent_hours_are_kept);
    tcase_add_test(tc, bad_variants_are_dropped);
    tcase_add_test(tc, concurrent_adds_and_drains_lose_nothing);
    tcase_add_test(tc, uuid_text_round_trip);
    suite_add_tcase(s, tc);
    TCase *batch = tcase_create("batch");
    tcase_add_test(batch, batch_counts_reach_the_table_on_flush);
    tcase_add_test(batch, batch_flushes_itself_when_the_hour_changes);
    tcase_add_test(batch, batch_counts_flags_of_several_parts_apart);
    tcase_add_test(batch, batch_prefetch_changes_nothing);
    tcase_add_test(batch, batch_grows_to_hold_a_large_environment);
    tcase_add_test(batch, batch_flushes_itself_at_its_bound);
    tcase_add_test(batch, batch_tick_waits_longer_for_a_large_batch);
    tcase_add_test(batch, batch_unknown_keys_reach_their_table_on_flush);
    tcase_add_test(batch, batch_flushes_itself_when_half_full_of_unknown_keys);
    tcase_add_test(batch, batch_without_unknown_table_forgets_them);
    suite_add_tcase(s, batch);
    return s;
}
