/*
 * test_snapshot_kept_index.c - the index kept between builds
 * (src/eval/snapshot_kept_index.c, doc/choices.md "The index kept between
 * builds"): an index patched with organizations' new parts and
 * generations holds, record for record, what the index made again from
 * the same catalog holds; it is a valid file for the reader; a part it
 * does not hold is refused without a change; replaced names wear it out.
 * Files live in a temporary directory, removed at the end.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_catalog.h"
#include "eval/snapshot_kept_index.h"
#include "suites.h"

#define ORGS 5

static char dir[64];

/* Organization o's id, its environment e's id, its key k's digest. */
static void org_id(int o, char *out)
{
    sprintf(out, "%08d-0000-0000-0000-000000000000", o + 1);
}

static void env_id(int o, int e, char *out)
{
    sprintf(out, "%08d-0000-0000-0000-%012d", o + 1, e + 1);
}

static void key_digest(int o, int k, char *out)
{
    sprintf(out, "%08x%056x", (unsigned)(o * 977 + k * 31 + 5), (unsigned)k);
}

/* A catalog of ORGS organizations: organization o at generations[o], with
 * o % 3 + 1 environments (none for the third: a deleted one) and o % 2 + 1
 * keys on its first environment. */
static void make_catalog(struct snapshot_catalog *c, const uint64_t *generations)
{
    char id[64], env[64], digest[65];
    static const char *const keys[] = {"production", "preview", "development"};
    snapshot_catalog_init(c);
    for (int o = 0; o < ORGS; o++) {
        org_id(o, id);
        ck_assert_int_eq(snapshot_catalog_add_org(c, id, generations[o]), 0);
        if (o == 2)
            continue;
        for (int e = 0; e < o % 3 + 1; e++) {
            env_id(o, e, env);
            ck_assert_int_eq(snapshot_catalog_add_env(c, env, keys[e]), 0);
        }
        env_id(o, 0, env);
        for (int k = 0; k < o % 2 + 1; k++) {
            key_digest(o, k, digest);
            ck_assert_int_eq(snapshot_catalog_add_key(c, digest, env), 0);
        }
    }
}

static void part_name(int o, uint64_t generation, char *out)
{
    char id[64];
    org_id(o, id);
    sprintf(out, "org-%s-%" PRIu64 ".bin", id, generation);
}

/* Writes the index of the catalog at generation (as the refresher makes it
 * whole: the catalog filled in, one part per organization with
 * environments) to name, and opens it into *s. */
static void write_whole(const uint64_t *generations, uint64_t generation, const char *name,
                        struct snapshot *s)
{
    struct snapshot_catalog c;
    make_catalog(&c, generations);
    struct snapshot_builder *b = snapshot_builder_new(generation);
    size_t skipped = 0;
    ck_assert_int_eq(snapshot_catalog_fill(&c, b, &skipped), 0);
    ck_assert_uint_eq(skipped, 0);
    char id[64], file[128], path[512], err[256];
    for (int o = 0; o < ORGS; o++) {
        if (o == 2)
            continue;
        org_id(o, id);
        part_name(o, generations[o], file);
        ck_assert_int_eq(snapshot_builder_add_part(b, id, file, generations[o]), 0);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(snapshot_builder_write(b, path, err, sizeof err) == 0, "%s", err);
    snapshot_builder_free(b);
    snapshot_catalog_free(&c);
    ck_assert_msg(snapshot_open(path, s, err, sizeof err) == 0, "%s", err);
}

static void open_file(const char *name, struct snapshot *s)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(snapshot_open(path, s, err, sizeof err) == 0, "%s", err);
}

static void write_kept(const struct snapshot_kept_index *k, const char *name)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(snapshot_kept_index_write(k, path, err, sizeof err) == 0, "%s", err);
}

static void same_str(const struct snapshot *a, struct snapshot_str x, const struct snapshot *b,
                     struct snapshot_str y)
{
    ck_assert_uint_eq(x.len, y.len);
    ck_assert_str_eq(snapshot_string(a, x), snapshot_string(b, y));
}

/* Every record of a and b is the same, strings compared by their text. */
static void same_records(const struct snapshot *a, const struct snapshot *b)
{
    ck_assert_uint_eq(snapshot_generation(a), snapshot_generation(b));
    for (int i = SNAPSHOT_SEC_ENVS; i < SNAPSHOT_SEC_COUNT; i++)
        ck_assert_uint_eq(a->counts[i], b->counts[i]);
    for (uint32_t i = 0; i < a->counts[SNAPSHOT_SEC_ENVS]; i++) {
        const struct snapshot_env *x = &a->envs[i], *y = &b->envs[i];
        same_str(a, x->id, b, y->id);
        same_str(a, x->org, b, y->org);
        same_str(a, x->key, b, y->key);
        ck_assert_uint_eq(x->part, y->part);
        ck_assert_uint_eq(x->generation, y->generation);
        ck_assert_uint_eq(x->flag_count, y->flag_count);
        ck_assert_uint_eq(x->time_count, y->time_count);
        ck_assert_uint_eq(x->clock_opaque, y->clock_opaque);
    }
    ck_assert_int_eq(
        memcmp(a->sdk_keys, b->sdk_keys, a->counts[SNAPSHOT_SEC_SDK_KEYS] * sizeof *a->sdk_keys),
        0);
    for (uint32_t i = 0; i < a->counts[SNAPSHOT_SEC_PARTS]; i++) {
        same_str(a, a->parts[i].org, b, b->parts[i].org);
        same_str(a, a->parts[i].file, b, b->parts[i].file);
        ck_assert_uint_eq(a->parts[i].generation, b->parts[i].generation);
    }
}

START_TEST(a_patched_index_holds_what_a_whole_one_does)
{
    snprintf(dir, sizeof dir, "/tmp/ensign-kept-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    uint64_t generations[ORGS] = {3, 5, 2, 7, 4};
    struct snapshot first, patched, whole;
    write_whole(generations, 7, "first.bin", &first);
    struct snapshot_kept_index k;
    snapshot_kept_index_init(&k);
    ck_assert_int_eq(snapshot_kept_index_load(&k, &first), 0);
    snapshot_close(&first);

    /* Two changes, one organization twice: the file names grow the table. */
    uint64_t steps[][2] = {{1, 8}, {4, 9}, {1, 12}};
    char id[64], file[128], name[32];
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int o = (int)steps[i][0];
        generations[o] = steps[i][1];
        org_id(o, id);
        part_name(o, generations[o], file);
        ck_assert_int_eq(snapshot_kept_index_set_part(&k, id, file, generations[o]), 0);
        snapshot_kept_index_set_generation(&k, steps[i][1]);
        write_kept(&k, "patched.bin");
        open_file("patched.bin", &patched);
        snprintf(name, sizeof name, "whole-%zu.bin", i);
        write_whole(generations, steps[i][1], name, &whole);
        same_records(&patched, &whole);
        /* The reader finds keys and environments as in the whole one. */
        char digest[65];
        key_digest(o, 0, digest);
        const struct snapshot_env *env = snapshot_env_by_sdk_digest(&patched, digest);
        ck_assert_ptr_nonnull(env);
        ck_assert_uint_eq(env->generation, generations[o]);
        ck_assert_str_eq(snapshot_string(&patched, patched.parts[env->part].file), file);
        ck_assert(patched.counts[SNAPSHOT_SEC_STRINGS] > whole.counts[SNAPSHOT_SEC_STRINGS]);
        snapshot_close(&patched);
        snapshot_close(&whole);
    }

    /* An organization without a part (no environments) or unknown: refused,
     * nothing changes. */
    org_id(2, id);
    ck_assert_int_eq(snapshot_kept_index_set_part(&k, id, "org-x-1.bin", 13), -1);
    ck_assert_int_eq(
        snapshot_kept_index_set_part(&k, "ffffffff-0000-0000-0000-000000000000", "org-y-1.bin", 13),
        -1);
    write_kept(&k, "again.bin");
    open_file("again.bin", &patched);
    write_whole(generations, 12, "whole-again.bin", &whole);
    same_records(&patched, &whole);

    /* A patched file loads again (the refresher's restart) and patches on. */
    ck_assert_int_eq(snapshot_kept_index_load(&k, &patched), 0);
    snapshot_close(&patched);
    snapshot_close(&whole);
    org_id(3, id);
    generations[3] = 14;
    part_name(3, 14, file);
    ck_assert_int_eq(snapshot_kept_index_set_part(&k, id, file, 14), 0);
    snapshot_kept_index_set_generation(&k, 14);
    write_kept(&k, "reloaded.bin");
    open_file("reloaded.bin", &patched);
    write_whole(generations, 14, "whole-reloaded.bin", &whole);
    same_records(&patched, &whole);
    snapshot_close(&patched);
    snapshot_close(&whole);
    snapshot_kept_index_free(&k);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(replaced_names_wear_the_index_out)
{
    snprintf(dir, sizeof dir, "/tmp/ensign-kept-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    uint64_t generations[ORGS] = {3, 5, 2, 7, 4};
    struct snapshot first;
    write_whole(generations, 7, "first.bin", &first);
    struct snapshot_kept_index k;
    snapshot_kept_index_init(&k);
    ck_assert_int_eq(snapshot_kept_index_load(&k, &first), 0);
    snapshot_close(&first);
    char id[64], file[128];
    org_id(0, id);
    int changes = 0;
    for (uint64_t g = 8; !snapshot_kept_index_worn(&k); g++, changes++) {
        part_name(0, g, file);
        ck_assert_int_eq(snapshot_kept_index_set_part(&k, id, file, g), 0);
        ck_assert_int_lt(changes, 1000);
    }
    /* A quarter of the table: a few changes for this tiny index. */
    ck_assert_int_gt(changes, 1);
    /* The same name again adds nothing. */
    size_t unused = k.unused;
    ck_assert_int_eq(snapshot_kept_index_set_part(&k, id, file, 99), 0);
    ck_assert_uint_eq(k.unused, unused);
    snapshot_kept_index_free(&k);
    ck_assert(!k.loaded);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/none.bin", dir);
    ck_assert_int_eq(snapshot_kept_index_write(&k, path, err, sizeof err), -1);
    ck_assert_int_ne(access(path, F_OK), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *suite_snapshot_kept_index(void)
{
    Suite *s = suite_create("snapshot_kept_index");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, a_patched_index_holds_what_a_whole_one_does);
    tcase_add_test(tc, replaced_names_wear_the_index_out);
    suite_add_tcase(s, tc);
    return s;
}
