/*
 * test_snapshot_parts.c - the incremental snapshot (doc/choices.md,
 * "Incremental snapshots"): an index file naming per-organization parts
 * (src/eval/snapshot_build.c, snapshot.c), a worker's view that maps the
 * index and its parts and remaps only what changed, refusing a bad part
 * while keeping the old one (src/eval/served_snapshot.c), and the
 * writer's record of part files, deleting superseded ones one publication
 * later (src/eval/snapshot_parts.c). Files live in a temporary directory,
 * removed at the end.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/served_snapshot.h"
#include "eval/shm.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_catalog.h"
#include "eval/snapshot_packs.h"
#include "eval/snapshot_parts.h"
#include "scratch_dir.h"
#include "snapshot_fixture.h"
#include "suites.h"

static char dir[64];

/* The lengths of the part files written (a part file is a pack holding
 * one extent at offset 0), for the index to name. */
static struct {
    char name[64];
    uint64_t length;
} written[16];
static size_t written_count;

static void remember_length(const char *name, uint64_t length)
{
    for (size_t i = 0; i < written_count; i++)
        if (strcmp(written[i].name, name) == 0) {
            written[i].length = length;
            return;
        }
    ck_assert_uint_lt(written_count, sizeof written / sizeof *written);
    snprintf(written[written_count].name, sizeof written[0].name, "%s", name);
    written[written_count++].length = length;
}

static void make_dir(void)
{
    written_count = 0;
    scratch_dir_make(dir, sizeof dir, "parts");
}

static void remove_dir(void)
{
    scratch_dir_remove(dir);
}

/* The length the part file name had when written (4096 if never). */
static uint64_t length_of(const char *name)
{
    for (size_t i = 0; i < written_count; i++)
        if (strcmp(written[i].name, name) == 0)
            return written[i].length;
    return 4096;
}

/* Writes the part of one organization: environment env with flag `key`
 * serving variant `serve` (of "a" and "b"), at generation. */
static void write_part(const char *org, const char *env, const char *key, const char *serve,
                       uint64_t generation, const char *name)
{
    struct snapshot_builder *b = snapshot_fixture_builder(generation, org, env);
    snapshot_fixture_add_flag_serving(b, env, key, serve);
    remember_length(name, snapshot_fixture_write(b, dir, name));
}

/* Writes the index naming the two organizations' parts (each the whole
 * file, an extent at offset 0). */
static void write_index(uint64_t generation, const char *part1, uint64_t gen1, const char *part2,
                        uint64_t gen2)
{
    struct snapshot_builder *b = snapshot_fixture_two_orgs(generation);
    ck_assert_int_eq(snapshot_builder_add_part(b, ORG1, part1, 0, length_of(part1), gen1), 0);
    ck_assert_int_eq(snapshot_builder_add_part(b, ORG2, part2, 0, length_of(part2), gen2), 0);
    snapshot_fixture_write(b, dir, SNAPSHOT_FILE_NAME);
}

START_TEST(index_names_parts_and_finds_keys_across_organizations)
{
    make_dir();
    write_index(9, "org-1-7.bin", 7, "org-2-3.bin", 3);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, SNAPSHOT_FILE_NAME);
    struct snapshot s;
    ck_assert_msg(snapshot_open(path, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(snapshot_generation(&s), 9);
    ck_assert_uint_eq(s.counts[SNAPSHOT_SEC_PARTS], 2);
    ck_assert_uint_eq(s.counts[SNAPSHOT_SEC_FLAGS], 0);
    const struct snapshot_env *e2 = snapshot_env_by_sdk_digest(&s, KEY2);
    ck_assert_ptr_nonnull(e2);
    ck_assert_str_eq(snapshot_string(&s, e2->org), ORG2);
    ck_assert_uint_eq(e2->generation, 3);
    ck_assert_str_eq(snapshot_string(&s, s.parts[e2->part].file), "org-2-3.bin");
    ck_assert_uint_eq(s.parts[e2->part].generation, 3);
    const struct snapshot_env *e1 = snapshot_env_by_sdk_digest(&s, KEY1);
    ck_assert_uint_eq(e1->generation, 7);
    ck_assert_str_eq(snapshot_string(&s, s.parts[e1->part].org), ORG1);
    snapshot_close(&s);
    remove_dir();
}
END_TEST

START_TEST(a_file_without_parts_is_its_own_part)
{
    make_dir();
    write_part(ORG1, ENV1, "f", "a", 4, "whole.bin");
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/whole.bin", dir);
    struct snapshot s;
    ck_assert_msg(snapshot_open(path, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(s.envs[0].part, SNAPSHOT_NONE);
    ck_assert_uint_eq(s.envs[0].generation, 4);
    ck_assert_ptr_nonnull(snapshot_env_by_id(&s, ENV1, strlen(ENV1)));
    ck_assert_ptr_null(snapshot_env_by_id(&s, ENV1, strlen(ENV1) - 1));
    snapshot_close(&s);
    remove_dir();
}
END_TEST

START_TEST(builder_refuses_bad_parts)
{
    struct snapshot_builder *b = snapshot_builder_new(1);
    ck_assert_int_eq(snapshot_builder_add_environment(b, ENV1, ORG1, "production"), 0);
    ck_assert_int_eq(snapshot_builder_add_part(b, ORG1, "../escape.bin", 0, 4096, 1), -1);
    ck_assert_int_eq(snapshot_builder_add_part(b, ORG1, "a/b.bin", 0, 4096, 1), -1);
    ck_assert_int_eq(snapshot_builder_add_part(b, ORG1, "", 0, 4096, 1), -1);
    ck_assert_int_eq(snapshot_builder_add_part(b, ORG1, "pack-1.bin", 0, 4096, 1), 0);
    ck_assert_int_eq(snapshot_builder_add_part(b, ORG1, "pack-1.bin", 4096, 4096, 2), -1);
    ck_assert_str_eq(snapshot_builder_error(b), "part of organization " ORG1 " added twice");
    snapshot_builder_free(b);
}
END_TEST

/* ---- the worker's view ---- */

struct fixture {
    struct shm_header header;
    struct shm_region shm;
    struct served_snapshot *view;
};

static void view_open(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    f->shm.header = &f->header;
    f->view = served_snapshot_new(dir, &f->shm, NULL);
    ck_assert_ptr_nonnull(f->view);
}

static void publish(struct fixture *f, uint64_t generation)
{
    atomic_store(&f->header.snapshot_generation, generation);
}

/* The variant the view serves for the organization's flag (its key in
 * the part), or NULL when that part is not served; *part receives it. */
static const char *served(struct fixture *f, const char *digest, const char *key,
                          const struct snapshot **part)
{
    const struct snapshot *index = served_snapshot_current(f->view);
    ck_assert_ptr_nonnull(index);
    const struct snapshot_env *env = snapshot_env_by_sdk_digest(index, digest), *part_env;
    ck_assert_ptr_nonnull(env);
    *part = served_snapshot_part(f->view, env, &part_env);
    if (*part == NULL)
        return NULL;
    const struct snapshot_flag *flag = snapshot_flag_by_key(*part, part_env, key, strlen(key));
    ck_assert_ptr_nonnull(flag);
    const struct snapshot_serve *serve = &(*part)->serves[flag->default_serve];
    ck_assert_uint_eq(serve->kind, SNAPSHOT_SERVE_VARIANT);
    return snapshot_string(*part, (*part)->variants[flag->variant_first + serve->variant].key);
}

/* A directory with both organizations' parts (generations 5 and 6) and
 * their index, and a view of it; nothing published yet. */
static void two_organizations(struct fixture *f)
{
    make_dir();
    write_part(ORG1, ENV1, "one", "a", 5, "org-1-5.bin");
    write_part(ORG2, ENV2, "two", "a", 6, "org-2-6.bin");
    write_index(6, "org-1-5.bin", 5, "org-2-6.bin", 6);
    view_open(f);
}

START_TEST(view_remaps_only_the_changed_part)
{
    struct fixture f;
    two_organizations(&f);
    const struct snapshot *p1, *p2;
    ck_assert_ptr_null(served_snapshot_current(f.view)); /* nothing published yet */
    publish(&f, 6);
    ck_assert_str_eq(served(&f, KEY1, "one", &p1), "a");
    ck_assert_str_eq(served(&f, KEY2, "two", &p2), "a");
    const unsigned char *base2 = p2->base;

    /* Organization 1 changes: a new part, the index names it. */
    write_part(ORG1, ENV1, "one", "b", 7, "org-1-7.bin");
    write_index(7, "org-1-7.bin", 7, "org-2-6.bin", 6);
    publish(&f, 7);
    ck_assert_str_eq(served(&f, KEY1, "one", &p1), "b");
    ck_assert_uint_eq(snapshot_generation(p1), 7);
    ck_assert_str_eq(served(&f, KEY2, "two", &p2), "a");
    ck_assert_ptr_eq(p2->base, base2); /* the same mapping: not re-read */
    ck_assert_uint_eq(snapshot_generation(served_snapshot_current(f.view)), 7);
    served_snapshot_free(f.view);
    remove_dir();
}
END_TEST

/* A publication opens only the parts new to the view: the file of an
 * unchanged part may be gone from disk (nothing else is looked at). */
START_TEST(view_opens_only_new_parts)
{
    struct fixture f;
    two_organizations(&f);
    const struct snapshot *p1, *p2;
    publish(&f, 6);
    ck_assert_str_eq(served(&f, KEY2, "two", &p2), "a");
    const unsigned char *base2 = p2->base;
    char path[512];
    snprintf(path, sizeof path, "%s/org-2-6.bin", dir);
    ck_assert_int_eq(unlink(path), 0);
    write_part(ORG1, ENV1, "one", "b", 7, "org-1-7.bin");
    write_index(7, "org-1-7.bin", 7, "org-2-6.bin", 6);
    publish(&f, 7);
    ck_assert_str_eq(served(&f, KEY1, "one", &p1), "b");
    ck_assert_str_eq(served(&f, KEY2, "two", &p2), "a");
    ck_assert_ptr_eq(p2->base, base2);
    served_snapshot_free(f.view);
    remove_dir();
}
END_TEST

START_TEST(view_keeps_the_old_part_when_the_new_one_is_bad)
{
    struct fixture f;
    two_organizations(&f);
    publish(&f, 6);
    const struct snapshot *p1, *p2;
    ck_assert_str_eq(served(&f, KEY1, "one", &p1), "a");

    /* A truncated part: refused, organization 1 keeps generation 5. */
    write_part(ORG1, ENV1, "one", "b", 8, "org-1-8.bin");
    char path[512];
    snprintf(path, sizeof path, "%s/org-1-8.bin", dir);
    ck_assert_int_eq(truncate(path, 100), 0);
    write_index(8, "org-1-8.bin", 8, "org-2-6.bin", 6);
    publish(&f, 8);
    ck_assert_str_eq(served(&f, KEY1, "one", &p1), "a");
    ck_assert_uint_eq(snapshot_generation(p1), 5);
    ck_assert_str_eq(served(&f, KEY2, "two", &p2), "a");
    ck_assert_uint_eq(snapshot_generation(served_snapshot_current(f.view)), 8);

    /* A valid file of another generation than the index names: refused too. */
    write_part(ORG1, ENV1, "one", "b", 9, "org-1-9.bin");
    write_index(10, "org-1-9.bin", 10, "org-2-6.bin", 6);
    publish(&f, 10);
    ck_assert_str_eq(served(&f, KEY1, "one", &p1), "a");

    /* The next good publication is served. */
    write_index(11, "org-1-9.bin", 9, "org-2-6.bin", 6);
    publish(&f, 11);
    ck_assert_str_eq(served(&f, KEY1, "one", &p1), "b");
    served_snapshot_free(f.view);
    remove_dir();
}
END_TEST

START_TEST(view_without_an_old_part_serves_it_once_it_maps)
{
    make_dir();
    write_part(ORG1, ENV1, "one", "a", 5, "org-1-5.bin"); /* its length, for the index */
    char missing[512];
    snprintf(missing, sizeof missing, "%s/org-1-5.bin", dir);
    ck_assert_int_eq(unlink(missing), 0);
    write_part(ORG2, ENV2, "two", "a", 6, "org-2-6.bin");
    write_index(6, "org-1-5.bin", 5, "org-2-6.bin", 6); /* org-1-5.bin is missing */
    struct fixture f;
    view_open(&f);
    publish(&f, 6);
    const struct snapshot *p;
    ck_assert_ptr_null(served(&f, KEY1, "one", &p));
    ck_assert_str_eq(served(&f, KEY2, "two", &p), "a");

    /* The part is tried again a second later; the index, unchanged,
     * keeps its mapping. */
    const unsigned char *base = served_snapshot_current(f.view)->base;
    write_part(ORG1, ENV1, "one", "a", 5, "org-1-5.bin");
    ck_assert_ptr_null(served(&f, KEY1, "one", &p)); /* not before the retry */
    usleep(1100 * 1000);
    ck_assert_str_eq(served(&f, KEY1, "one", &p), "a");
    ck_assert_str_eq(served(&f, KEY2, "two", &p), "a");
    ck_assert_ptr_eq(served_snapshot_current(f.view)->base, base);
    served_snapshot_free(f.view);
    remove_dir();
}
END_TEST

/* An index read before its generation was published (between the
 * refresher's rename and its publication) is the file of that generation:
 * once published, the view keeps that mapping, so an environment found in
 * it stays valid (ofrep.c caches it per generation). */
START_TEST(view_maps_an_index_once_per_generation)
{
    struct fixture f;
    two_organizations(&f); /* the index on disk is generation 6 */
    publish(&f, 5);
    const struct snapshot *index = served_snapshot_current(f.view);
    ck_assert_ptr_nonnull(index);
    ck_assert_uint_eq(snapshot_generation(index), 6);
    const unsigned char *base = index->base;
    const struct snapshot_env *env = snapshot_env_by_sdk_digest(index, KEY1), *part_env;
    ck_assert_ptr_nonnull(env);
    publish(&f, 6);
    index = served_snapshot_current(f.view);
    ck_assert_ptr_eq(index->base, base);
    const struct snapshot *part = served_snapshot_part(f.view, env, &part_env);
    ck_assert_ptr_nonnull(part);
    ck_assert_ptr_nonnull(snapshot_flag_by_key(part, part_env, "one", 3));
    served_snapshot_free(f.view);
    remove_dir();
}
END_TEST

START_TEST(view_keeps_everything_when_the_index_is_bad)
{
    struct fixture f;
    two_organizations(&f);
    publish(&f, 6);
    const struct snapshot *p;
    ck_assert_str_eq(served(&f, KEY1, "one", &p), "a");
    char path[512], bad[512];
    snprintf(path, sizeof path, "%s/%s", dir, SNAPSHOT_FILE_NAME);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    FILE *fp = fopen(bad, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("not a snapshot", fp);
    fclose(fp);
    ck_assert_int_eq(rename(bad, path), 0); /* files are only ever renamed into place */
    publish(&f, 7);
    ck_assert_uint_eq(snapshot_generation(served_snapshot_current(f.view)), 6);
    ck_assert_str_eq(served(&f, KEY1, "one", &p), "a");
    served_snapshot_free(f.view);
    remove_dir();
}
END_TEST

/* The duplicate check is a bit per organization, not a scan of the parts
 * added so far: 20,000 organizations, then a second part of one added
 * early, one in the middle and the last are each refused. */
START_TEST(builder_refuses_a_second_part_among_many)
{
    char org[64], name[64];
    struct snapshot_builder *b = snapshot_builder_new(1);
    for (int i = 0; i < 20000; i++) {
        snprintf(org, sizeof org, "%08d-0000-0000-0000-000000000000", i);
        snprintf(name, sizeof name, "org-%d-1.bin", i);
        ck_assert_int_eq(snapshot_builder_add_part(b, org, name, 0, 4096, 1), 0);
    }
    const int again[] = {0, 9999, 19999};
    for (size_t k = 0; k < sizeof again / sizeof *again; k++) {
        struct snapshot_builder *c = snapshot_builder_new(1);
        for (int i = 0; i <= again[k]; i++) {
            snprintf(org, sizeof org, "%08d-0000-0000-0000-000000000000", i);
            ck_assert_int_eq(snapshot_builder_add_part(c, org, "p.bin", 0, 4096, 1), 0);
        }
        snprintf(org, sizeof org, "%08d-0000-0000-0000-000000000000", again[k]);
        ck_assert_int_eq(snapshot_builder_add_part(c, org, "q.bin", 0, 4096, 2), -1);
        ck_assert_ptr_nonnull(strstr(snapshot_builder_error(c), "added twice"));
        snapshot_builder_free(c);
    }
    snapshot_builder_free(b);
}
END_TEST

/* ---- the refresher's catalog of the index ---- */

/* part_ok for snapshot_catalog_load: refuses the organization ctx names. */
static bool all_but(void *ctx, const char *org, const char *file, uint64_t offset, uint64_t length,
                    uint64_t generation)
{
    (void)file;
    (void)offset;
    (void)length;
    (void)generation;
    return ctx == NULL || strcmp(org, ctx) != 0;
}

static void open_index_file(struct snapshot *s)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, SNAPSHOT_FILE_NAME);
    ck_assert_msg(snapshot_open(path, s, err, sizeof err) == 0, "%s", err);
}

START_TEST(catalog_loads_an_index_and_fills_the_next)
{
    make_dir();
    write_index(9, "org-1-7.bin", 7, "org-2-3.bin", 3);
    struct snapshot index;
    open_index_file(&index);
    struct snapshot_catalog c;
    struct snapshot_part_file *parts;
    size_t count;
    snapshot_catalog_init(&c);
    ck_assert_int_eq(snapshot_catalog_load(&c, &index, all_but, NULL, &parts, &count), 0);
    ck_assert_uint_eq(count, 2);
    ck_assert_str_eq(parts[0].org, ORG1);
    ck_assert_str_eq(parts[0].name, "org-1-7.bin");
    ck_assert_uint_eq(parts[0].offset, 0);
    ck_assert_uint_eq(parts[0].length, 4096);
    ck_assert_uint_eq(parts[1].generation, 3);
    ck_assert_uint_eq(c.org_count, 2);
    ck_assert_uint_eq(c.generation, 9); /* every part taken: whole at the index's */
    const struct snapshot_catalog_org *o2 = snapshot_catalog_find(&c, ORG2);
    ck_assert_ptr_nonnull(o2);
    ck_assert_uint_eq(o2->generation, 3);
    ck_assert_uint_eq(o2->env_count, 1);
    ck_assert_uint_eq(o2->key_count, 1);
    ck_assert_str_eq(snapshot_catalog_text(&c, c.envs[o2->env_first].id), ENV2);
    ck_assert_str_eq(snapshot_catalog_text(&c, c.envs[o2->env_first].key), "production");
    ck_assert_str_eq(snapshot_catalog_text(&c, c.keys[o2->key_first].digest), KEY2);
    ck_assert_str_eq(snapshot_catalog_text(&c, c.keys[o2->key_first].env_id), ENV2);
    ck_assert_ptr_null(snapshot_catalog_find(&c, "30000000-0000-0000-0000-000000000003"));
    snapshot_close(&index);

    /* The next catalog: organization 2 copied, a new third one with no
     * environments; filled into an index builder, keys find their
     * environments again. */
    struct snapshot_catalog next;
    snapshot_catalog_init(&next);
    ck_assert_int_eq(snapshot_catalog_copy_org(&next, &c, o2), 0);
    ck_assert_int_eq(snapshot_catalog_add_org(&next, ORG1, 8), -1); /* out of order */
    ck_assert_int_eq(snapshot_catalog_add_org(&next, "30000000-0000-0000-0000-000000000003", 8), 0);
    struct snapshot_builder *b = snapshot_builder_new(10);
    size_t skipped = 0;
    ck_assert_int_eq(snapshot_catalog_fill(&next, b, &skipped), 0);
    ck_assert_uint_eq(skipped, 0);
    ck_assert_int_eq(snapshot_builder_add_part(b, ORG2, "org-2-3.bin", 64, 4096, 3), 0);
    ck_assert_int_eq(snapshot_builder_append_sdk_key(b, KEY1, 1), -1); /* no such environment */
    ck_assert_int_eq(snapshot_builder_append_sdk_key(b, "not hex", 0), -1);
    snapshot_fixture_write(b, dir, SNAPSHOT_FILE_NAME);
    open_index_file(&index);
    ck_assert_uint_eq(index.counts[SNAPSHOT_SEC_ENVS], 1);
    const struct snapshot_env *e2 = snapshot_env_by_sdk_digest(&index, KEY2);
    ck_assert_ptr_nonnull(e2);
    ck_assert_str_eq(snapshot_string(&index, e2->id), ENV2);
    ck_assert_str_eq(snapshot_string(&index, e2->org), ORG2);
    ck_assert_str_eq(snapshot_string(&index, e2->key), "production");
    ck_assert_uint_eq(e2->generation, 3);
    ck_assert_str_eq(snapshot_string(&index, index.parts[e2->part].file), "org-2-3.bin");
    ck_assert_uint_eq(index.parts[e2->part].offset, 64);
    ck_assert_uint_eq(index.parts[e2->part].length, 4096);
    ck_assert_ptr_null(snapshot_env_by_sdk_digest(&index, KEY1));
    snapshot_close(&index);
    snapshot_catalog_free(&next);
    snapshot_catalog_free(&c);
    free(parts);
    remove_dir();
}
END_TEST

START_TEST(catalog_leaves_out_a_refused_part)
{
    make_dir();
    write_index(9, "org-1-7.bin", 7, "org-2-3.bin", 3);
    struct snapshot index;
    open_index_file(&index);
    struct snapshot_catalog c;
    struct snapshot_part_file *parts;
    size_t count;
    snapshot_catalog_init(&c);
    ck_assert_int_eq(snapshot_catalog_load(&c, &index, all_but, ORG1, &parts, &count), 0);
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(parts[0].org, ORG2);
    ck_assert_uint_eq(c.org_count, 1);
    ck_assert_ptr_null(snapshot_catalog_find(&c, ORG1));
    /* Not whole: the next read compares every organization and finds 1. */
    ck_assert_uint_eq(c.generation, 0);
    ck_assert_uint_eq(c.env_count, 1);
    ck_assert_uint_eq(c.key_count, 1);
    snapshot_close(&index);
    snapshot_catalog_free(&c);
    free(parts);
    remove_dir();
}
END_TEST

/* ---- the writer's record of parts ---- */

/* Parts of orgs at generations, in the packs named (one per part). */
static struct snapshot_part_file *files(size_t n, const char *const orgs[],
                                        const uint64_t generations[], const char *const packs[])
{
    struct snapshot_part_file *f = calloc(n ? n : 1, sizeof *f);
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++) {
        snprintf(f[i].org, sizeof f[i].org, "%s", orgs[i]);
        f[i].generation = generations[i];
        snprintf(f[i].name, sizeof f[i].name, "%s", packs[i]);
        f[i].length = 4096;
    }
    return f;
}

static void touch(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fclose(fp);
}

static const char *const in_pack1[] = {"pack-1.bin", "pack-1.bin"};

START_TEST(part_names_and_holds)
{
    char name[SNAPSHOT_PART_NAME_MAX];
    snapshot_packs_name(42, name);
    ck_assert_str_eq(name, "pack-42.bin");
    ck_assert_uint_eq(snapshot_packs_number("pack-42.bin"), 42);
    ck_assert_uint_eq(snapshot_packs_number("pack-0.bin"), 0);
    ck_assert_uint_eq(snapshot_packs_number("pack-042.bin"), 0);
    ck_assert_uint_eq(snapshot_packs_number("pack-4.bin.tmp"), 0);
    ck_assert_uint_eq(snapshot_packs_number("pack-99999999999.bin"), 0);
    ck_assert_uint_eq(snapshot_packs_number("org-1-1.bin"), 0);
    struct snapshot_parts parts;
    snapshot_parts_init(&parts, "/nonexistent");
    ck_assert(!snapshot_parts_holds(&parts, ORG1, 42));
    const char *orgs[] = {ORG1, ORG2};
    const uint64_t gens[] = {42, 7};
    snapshot_parts_published(&parts, files(2, orgs, gens, in_pack1), 2, false);
    ck_assert(snapshot_parts_holds(&parts, ORG1, 42));
    ck_assert(!snapshot_parts_holds(&parts, ORG1, 43));
    ck_assert(snapshot_parts_holds(&parts, ORG2, 7));
    ck_assert_ptr_null(snapshot_parts_find(&parts, "30000000-0000-0000-0000-000000000003"));
    snapshot_parts_free(&parts);
}
END_TEST

/* What a refresher reading a lagging replica must not replace. */
START_TEST(a_part_is_newer_only_than_an_older_generation)
{
    struct snapshot_parts parts;
    snapshot_parts_init(&parts, "/nonexistent");
    ck_assert(!snapshot_parts_newer(&parts, ORG1, 1)); /* no part yet: anything goes */
    const char *orgs[] = {ORG1, ORG2};
    const uint64_t gens[] = {42, 7};
    snapshot_parts_published(&parts, files(2, orgs, gens, in_pack1), 2, false);
    ck_assert(snapshot_parts_newer(&parts, ORG1, 41));
    ck_assert(snapshot_parts_newer(&parts, ORG1, 0));
    ck_assert(!snapshot_parts_newer(&parts, ORG1, 42));
    ck_assert(!snapshot_parts_newer(&parts, ORG1, 43));
    ck_assert(snapshot_parts_newer(&parts, ORG2, 6));
    ck_assert(!snapshot_parts_newer(&parts, ORG2, 7));
    ck_assert(!snapshot_parts_newer(&parts, "30000000-0000-0000-0000-000000000003", 1));
    snapshot_parts_free(&parts);
}
END_TEST

START_TEST(superseded_packs_are_deleted_one_publication_later)
{
    make_dir();
    const char *orgs[] = {ORG1, ORG2};
    const uint64_t gens[] = {5, 6};
    const char *const first[] = {"pack-2.bin", "pack-2.bin"},
                      *const second[] = {"pack-3.bin", "pack-2.bin"},
                      *const third[] = {"pack-3.bin", "pack-3.bin"};
    struct snapshot_parts parts;
    snapshot_parts_init(&parts, dir);
    /* Leftovers of an earlier run, and an older ensignd's part files:
     * swept (doomed) by the first publication; the open pack is not. */
    touch("pack-1.bin");
    touch("org-" ORG1 "-1.bin");
    touch("org-" ORG1 "-5.bin.tmp");
    touch("snapshot.bin.tmp");
    touch("unrelated.txt");
    touch("pack-2.bin");
    touch("pack-9.bin");
    snapshot_parts_keep(&parts, "pack-9.bin");
    snapshot_parts_published(&parts, files(2, orgs, gens, first), 2, true);
    ck_assert(scratch_file_exists(dir, "pack-1.bin")); /* still there: doomed */
    touch("pack-3.bin");
    snapshot_parts_published(&parts, files(2, orgs, gens, second), 2, false);
    ck_assert(!scratch_file_exists(dir, "pack-1.bin"));
    ck_assert(!scratch_file_exists(dir, "org-" ORG1 "-1.bin"));
    ck_assert(!scratch_file_exists(dir, "org-" ORG1 "-5.bin.tmp"));
    ck_assert(!scratch_file_exists(dir, "snapshot.bin.tmp"));
    ck_assert(scratch_file_exists(dir, "unrelated.txt"));
    ck_assert(scratch_file_exists(dir, "pack-9.bin")); /* the open pack */
    ck_assert(scratch_file_exists(dir, "pack-2.bin")); /* still named */
    snapshot_parts_published(&parts, files(2, orgs, gens, third), 2, false);
    ck_assert(scratch_file_exists(dir, "pack-2.bin")); /* no longer named: kept for one more */
    snapshot_parts_published(&parts, files(2, orgs, gens, third), 2, false);
    ck_assert(!scratch_file_exists(dir, "pack-2.bin"));
    ck_assert(scratch_file_exists(dir, "pack-3.bin"));
    /* No organization left in it: the pack goes the same way, unless it is
     * the one appended to. */
    snapshot_parts_keep(&parts, "pack-3.bin");
    snapshot_parts_published(&parts, files(0, orgs, gens, third), 0, false);
    snapshot_parts_published(&parts, files(0, orgs, gens, third), 0, false);
    ck_assert(scratch_file_exists(dir, "pack-3.bin"));
    snapshot_parts_keep(&parts, "");
    snapshot_parts_published(&parts, files(1, orgs, gens, third), 1, false);
    snapshot_parts_published(&parts, files(0, orgs, gens, third), 0, false);
    ck_assert(scratch_file_exists(dir, "pack-3.bin"));
    snapshot_parts_published(&parts, files(0, orgs, gens, third), 0, false);
    ck_assert(!scratch_file_exists(dir, "pack-3.bin"));
    snapshot_parts_free(&parts);
    remove_dir();
}
END_TEST

/* A patched publication (snapshot_parts_replaced) deletes what a whole one
 * would: a pack no part is in any more, one publication later; never a
 * named one. */
START_TEST(replaced_parts_are_deleted_one_publication_later)
{
    make_dir();
    const char *orgs[] = {ORG1, ORG2};
    const char *other[] = {"30000000-0000-0000-0000-000000000003"};
    const uint64_t first[] = {5, 6}, second[] = {7}, third[] = {8}, ninth[] = {9};
    const char *const before[] = {"pack-1.bin", "pack-2.bin"}, *const after[] = {"pack-3.bin"},
                      *const both[] = {"pack-3.bin", "pack-3.bin"};
    struct snapshot_parts parts;
    snapshot_parts_init(&parts, dir);
    touch("pack-1.bin");
    touch("pack-2.bin");
    touch("pack-3.bin");
    snapshot_parts_keep(&parts, "pack-3.bin");
    snapshot_parts_published(&parts, files(2, orgs, first, before), 2, false);
    struct snapshot_part_file *changed = files(1, orgs, second, after);
    ck_assert_int_eq(snapshot_parts_replaced(&parts, changed, 1), 0);
    free(changed);
    ck_assert_uint_eq(parts.count, 2);
    ck_assert_str_eq(snapshot_parts_find(&parts, ORG1)->name, "pack-3.bin");
    ck_assert_uint_eq(snapshot_parts_find(&parts, ORG1)->generation, 7);
    ck_assert_uint_eq(snapshot_parts_find(&parts, ORG2)->generation, 6);
    ck_assert(scratch_file_exists(dir, "pack-1.bin")); /* no longer named: kept for one more */
    changed = files(1, orgs, third, after);
    ck_assert_int_eq(snapshot_parts_replaced(&parts, changed, 1), 0);
    free(changed);
    ck_assert(!scratch_file_exists(dir, "pack-1.bin"));
    ck_assert(scratch_file_exists(dir, "pack-2.bin")); /* still named (ORG2) */
    ck_assert(scratch_file_exists(dir, "pack-3.bin"));
    /* An organization without a published part: refused, nothing changes. */
    changed = files(1, other, ninth, after);
    ck_assert_int_eq(snapshot_parts_replaced(&parts, changed, 1), -1);
    free(changed);
    ck_assert_uint_eq(snapshot_parts_find(&parts, ORG1)->generation, 8);
    /* A whole publication after patched ones goes on as usual. */
    snapshot_parts_published(&parts, files(2, orgs, first, both), 2, false);
    ck_assert(scratch_file_exists(dir, "pack-2.bin"));
    snapshot_parts_published(&parts, files(2, orgs, first, both), 2, false);
    ck_assert(!scratch_file_exists(dir, "pack-2.bin"));
    ck_assert(scratch_file_exists(dir, "pack-3.bin"));
    snapshot_parts_free(&parts);
    remove_dir();
}
END_TEST

/* With durability lagging (doc/choices.md "Visible before durable"), a
 * pack a publication stops naming outlives both the next publication and
 * the last durable index that names it. */
START_TEST(superseded_packs_wait_for_the_durable_index)
{
    make_dir();
    const char *orgs[] = {ORG1, ORG2};
    const uint64_t gens[] = {5, 6};
    const char *const first[] = {"pack-1.bin", "pack-1.bin"}, *const second[] = {"pack-2.bin",
                                                                                 "pack-2.bin"};
    struct snapshot_parts parts;
    snapshot_parts_init(&parts, dir);
    snapshot_parts_lag_durability(&parts);
    touch("pack-1.bin");
    touch("pack-2.bin");
    snapshot_parts_published(&parts, files(2, orgs, gens, first), 2, false);
    snapshot_parts_durable(&parts); /* pack-1 is in the restart index */
    snapshot_parts_published(&parts, files(2, orgs, gens, second), 2, false);
    snapshot_parts_published(&parts, files(2, orgs, gens, second), 2, false);
    /* Two publications later, but the restart index still names pack-1. */
    ck_assert(scratch_file_exists(dir, "pack-1.bin"));
    ck_assert(snapshot_parts_doomed(&parts, "pack-1.bin"));
    snapshot_parts_durable(&parts);
    ck_assert(!scratch_file_exists(dir, "pack-1.bin"));
    ck_assert(!snapshot_parts_doomed(&parts, "pack-1.bin"));
    ck_assert(scratch_file_exists(dir, "pack-2.bin"));
    /* Durable at once after the publication that stopped naming it: still
     * kept until the next publication (a worker may be opening it). */
    touch("pack-1.bin");
    snapshot_parts_published(&parts, files(2, orgs, gens, first), 2, false);
    snapshot_parts_durable(&parts);
    ck_assert(scratch_file_exists(dir, "pack-2.bin"));
    snapshot_parts_published(&parts, files(2, orgs, gens, first), 2, false);
    ck_assert(!scratch_file_exists(dir, "pack-2.bin"));
    snapshot_parts_free(&parts);
    remove_dir();
}
END_TEST

Suite *suite_snapshot_parts(void)
{
    Suite *s = suite_create("snapshot_parts");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, index_names_parts_and_finds_keys_across_organizations);
    tcase_add_test(tc, a_file_without_parts_is_its_own_part);
    tcase_add_test(tc, builder_refuses_bad_parts);
    tcase_add_test(tc, builder_refuses_a_second_part_among_many);
    tcase_add_test(tc, view_remaps_only_the_changed_part);
    tcase_add_test(tc, view_opens_only_new_parts);
    tcase_add_test(tc, view_keeps_the_old_part_when_the_new_one_is_bad);
    tcase_add_test(tc, view_without_an_old_part_serves_it_once_it_maps);
    tcase_add_test(tc, view_keeps_everything_when_the_index_is_bad);
    tcase_add_test(tc, view_maps_an_index_once_per_generation);
    tcase_add_test(tc, catalog_loads_an_index_and_fills_the_next);
    tcase_add_test(tc, catalog_leaves_out_a_refused_part);
    tcase_add_test(tc, part_names_and_holds);
    tcase_add_test(tc, a_part_is_newer_only_than_an_older_generation);
    tcase_add_test(tc, superseded_packs_are_deleted_one_publication_later);
    tcase_add_test(tc, replaced_parts_are_deleted_one_publication_later);
    tcase_add_test(tc, superseded_packs_wait_for_the_durable_index);
    suite_add_tcase(s, tc);
    return s;
}
