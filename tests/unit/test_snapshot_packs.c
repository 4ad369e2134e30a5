/*
 * test_snapshot_packs.c - parts stored in pack files (doc/choices.md,
 * "Pack files"): the writer's appends, roll-over, rollback, durability
 * failures, reclaim and restart (src/eval/snapshot_packs.c), and the
 * reader's one mapping per pack with its extent checks
 * (src/eval/pack_maps.c), and a worker's view serving every organization
 * from one mapping (src/eval/served_snapshot.c), and the refresher's read
 * of a published part back from its pack. Files live in a temporary
 * directory, removed at the end.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eval/pack_maps.h"
#include "eval/served_snapshot.h"
#include "eval/shm.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_packs.h"
#include "eval/snapshot_parts.h"
#include "scratch_dir.h"
#include "snapshot_fixture.h"
#include "suites.h"

static char dir[64];

static void make_dir(void)
{
    scratch_dir_make(dir, sizeof dir, "packs");
}

static void remove_dir(void)
{
    scratch_dir_remove(dir);
}

static uint64_t size_of(const char *name)
{
    return snapshot_fixture_size(dir, name);
}

/* The organization id of number i. */
static void org_of(int i, char *org, size_t len)
{
    snprintf(org, len, "%08d-0000-0000-0000-000000000000", i);
}

/* The part of organization i: one environment, `flags` flags serving
 * variant serve, at generation. */
static struct snapshot_builder *part_of(int i, int flags, const char *serve, uint64_t generation)
{
    char org[64], env[64], key[32];
    org_of(i, org, sizeof org);
    snprintf(env, sizeof env, "%08d-eeee-0000-0000-000000000000", i);
    struct snapshot_builder *b = snapshot_fixture_builder(generation, org, env);
    for (int f = 0; f < flags; f++) {
        snprintf(key, sizeof key, "flag-%05d", f);
        snapshot_fixture_add_flag_serving(b, env, key, serve);
    }
    return b;
}

/* Appends organization i's part; f names it. */
static void append(struct snapshot_packs *packs, int i, int flags, const char *serve,
                   uint64_t generation, struct snapshot_part_file *f)
{
    char err[256];
    memset(f, 0, sizeof *f);
    org_of(i, f->org, sizeof f->org);
    f->generation = generation;
    struct snapshot_builder *b = part_of(i, flags, serve, generation);
    ck_assert_msg(snapshot_packs_append(packs, b, f, err, sizeof err) == 0, "%s", err);
    snapshot_builder_free(b);
}

/* The variant the part at f serves for flag-00000, read through maps. */
static const char *serves(struct pack_maps *maps, const struct snapshot_part_file *f, int *slot)
{
    struct snapshot s;
    char err[256];
    ck_assert_msg(pack_maps_open(maps, f->name, f->offset, f->length, &s, slot, err, sizeof err) ==
                      PACK_EXTENT_OK,
                  "%s", err);
    ck_assert_uint_eq(snapshot_generation(&s), f->generation);
    const struct snapshot_flag *flag = snapshot_flag_by_key(&s, &s.envs[0], "flag-00000", 10);
    ck_assert_ptr_nonnull(flag);
    const struct snapshot_serve *serve = &s.serves[flag->default_serve];
    const char *variant = snapshot_string(&s, s.variants[flag->variant_first + serve->variant].key);
    const char *answer = strcmp(variant, "a") == 0 ? "a" : "b";
    snapshot_close(&s);
    pack_maps_release(maps, *slot);
    return answer;
}

START_TEST(parts_are_appended_to_one_pack_and_read_through_one_mapping)
{
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 1 << 20);
    struct snapshot_part_file f[3];
    append(&packs, 1, 3, "a", 5, &f[0]);
    append(&packs, 2, 3, "b", 6, &f[1]);
    ck_assert_str_eq(f[0].name, "pack-1.bin");
    ck_assert_str_eq(f[1].name, "pack-1.bin");
    ck_assert_uint_eq(f[0].offset, 0);
    ck_assert_uint_eq(f[1].offset % 8, 0);
    ck_assert_uint_ge(f[1].offset, f[0].offset + f[0].length);
    char err[256];
    ck_assert_msg(snapshot_packs_sync(&packs, err, sizeof err) == 0, "%s", err);
    snapshot_packs_published(&packs, f, 2);

    struct pack_maps *maps = pack_maps_new(dir, false);
    int s0, s1, s2;
    ck_assert_str_eq(serves(maps, &f[0], &s0), "a");
    ck_assert_str_eq(serves(maps, &f[1], &s1), "b");
    /* A part appended after the pack was mapped: readable through the
     * same mapping (it is longer than the file). */
    struct snapshot part;
    ck_assert_int_eq(
        pack_maps_open(maps, f[0].name, f[0].offset, f[0].length, &part, &s0, err, sizeof err),
        PACK_EXTENT_OK);
    ck_assert_uint_eq(pack_maps_count(maps), 1);
    append(&packs, 1, 3, "b", 7, &f[2]);
    ck_assert_msg(snapshot_packs_sync(&packs, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(serves(maps, &f[2], &s2), "b");
    ck_assert_int_eq(s2, s0);
    ck_assert_uint_eq(pack_maps_count(maps), 1);
    snapshot_close(&part);
    pack_maps_release(maps, s0);
    ck_assert_uint_eq(pack_maps_count(maps), 0); /* unmapped with its last part */
    pack_maps_free(maps);
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

START_TEST(an_extent_outside_the_file_or_damaged_is_refused)
{
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 1 << 20);
    struct snapshot_part_file f;
    append(&packs, 1, 3, "a", 5, &f);
    struct pack_maps *maps = pack_maps_new(dir, false);
    struct snapshot s;
    char err[256];
    int slot;
    /* past the file's end (never touched: that would be SIGBUS) */
    ck_assert_int_eq(
        pack_maps_open(maps, f.name, f.offset, f.length + 4096, &s, &slot, err, sizeof err),
        PACK_EXTENT_BAD);
    ck_assert_ptr_nonnull(strstr(err, "passes the file's end"));
    ck_assert_int_eq(pack_maps_open(maps, f.name, UINT64_MAX - 8, 16, &s, &slot, err, sizeof err),
                     PACK_EXTENT_BAD);
    ck_assert_int_eq(pack_maps_open(maps, "pack-9.bin", 0, f.length, &s, &slot, err, sizeof err),
                     PACK_EXTENT_GONE);
    /* a byte flipped inside it: the checksum fails */
    snapshot_fixture_flip_byte(dir, f.name, f.offset + f.length / 2);
    ck_assert_int_eq(pack_maps_open(maps, f.name, f.offset, f.length, &s, &slot, err, sizeof err),
                     PACK_EXTENT_BAD);
    ck_assert_ptr_nonnull(strstr(err, "checksum"));
    ck_assert_uint_eq(pack_maps_count(maps), 0);
    /* and the writer will not copy it out either */
    struct snapshot_part_file to;
    ck_assert_int_eq(snapshot_packs_copy(&packs, &f, &to, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "checksum"));
    pack_maps_free(maps);
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

/* A pack file replaced under the same name (state_dir made again) is
 * mapped afresh, not read through the old mapping. */
START_TEST(a_replaced_pack_is_mapped_afresh)
{
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 1 << 20);
    struct snapshot_part_file old, fresh;
    append(&packs, 1, 3, "a", 5, &old);
    struct pack_maps *maps = pack_maps_new(dir, false);
    int s_old, s_new;
    ck_assert_str_eq(serves(maps, &old, &s_old), "a");
    struct snapshot held;
    char err[256], path[512];
    ck_assert_int_eq(
        pack_maps_open(maps, old.name, old.offset, old.length, &held, &s_old, err, sizeof err),
        PACK_EXTENT_OK);
    snapshot_packs_free(&packs);
    snprintf(path, sizeof path, "%s/%s", dir, old.name);
    ck_assert_int_eq(unlink(path), 0);
    snapshot_packs_init(&packs, dir, 1 << 20);
    append(&packs, 1, 3, "b", 5, &fresh);
    ck_assert_str_eq(fresh.name, old.name);
    ck_assert_str_eq(serves(maps, &fresh, &s_new), "b");
    ck_assert_int_ne(s_new, s_old);
    snapshot_close(&held);
    pack_maps_release(maps, s_old);
    pack_maps_free(maps);
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

START_TEST(a_full_pack_is_sealed_and_the_next_one_started)
{
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 8192); /* a few small parts each */
    struct snapshot_part_file f[8];
    for (int i = 0; i < 8; i++)
        append(&packs, i, 10, "a", 1, &f[i]);
    ck_assert_str_eq(f[0].name, "pack-1.bin");
    ck_assert_str_eq(f[7].name, "pack-2.bin");
    uint64_t in_first = 0;
    for (int i = 0; i < 8; i++) {
        ck_assert(strcmp(f[i].name, "pack-1.bin") == 0 || strcmp(f[i].name, "pack-2.bin") == 0);
        if (strcmp(f[i].name, "pack-1.bin") == 0)
            ck_assert_uint_le(f[i].offset + f[i].length, 8192);
        else if (in_first == 0)
            in_first = (uint64_t)i;
    }
    ck_assert_uint_le(size_of("pack-1.bin"), 8192); /* the part that did not fit was cut off */
    /* A part larger than the pack size alone starts a pack of its own. */
    struct snapshot_part_file big;
    append(&packs, 9, 200, "a", 1, &big);
    ck_assert_uint_gt(big.length, 8192);
    ck_assert_str_eq(big.name, "pack-3.bin");
    ck_assert_uint_eq(big.offset, 0);
    struct snapshot_part_file after; /* that pack is full: the next starts one */
    append(&packs, 10, 2, "a", 1, &after);
    ck_assert_str_eq(after.name, "pack-4.bin");
    ck_assert_uint_eq(after.offset, 0);
    struct pack_maps *maps = pack_maps_new(dir, false);
    int slot;
    char err[256];
    ck_assert_msg(snapshot_packs_sync(&packs, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < 8; i++)
        ck_assert_str_eq(serves(maps, &f[i], &slot), "a");
    ck_assert_str_eq(serves(maps, &big, &slot), "a");
    pack_maps_free(maps);
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

START_TEST(a_failed_build_is_cut_back_to_the_last_publication)
{
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 1 << 20);
    struct snapshot_part_file f[3];
    append(&packs, 1, 3, "a", 5, &f[0]);
    snapshot_packs_published(&packs, f, 1);
    uint64_t committed = size_of("pack-1.bin");
    append(&packs, 2, 3, "a", 6, &f[1]);
    ck_assert_uint_gt(size_of("pack-1.bin"), committed);
    snapshot_packs_rollback(&packs);
    append(&packs, 2, 3, "a", 6, &f[2]);
    ck_assert_uint_eq(f[2].offset, f[1].offset); /* the same place again */
    ck_assert_str_eq(snapshot_packs_open_name(&packs), "pack-1.bin");
    /* The open pack removed (state_dir gone): let go, the next part starts
     * a new one. */
    char path[512];
    snprintf(path, sizeof path, "%s/pack-1.bin", dir);
    ck_assert_int_eq(unlink(path), 0);
    snapshot_packs_rollback(&packs);
    ck_assert_str_eq(snapshot_packs_open_name(&packs), "");
    append(&packs, 2, 3, "a", 6, &f[2]);
    ck_assert_str_eq(f[2].name, "pack-2.bin");
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

/* A write that stops short (here the file size limit; a full disk the
 * same): the append fails, nothing is named, the build fails. In a child,
 * since the limit is the process's. */
START_TEST(a_short_write_fails_the_append)
{
    make_dir();
    struct snapshot_builder *b = part_of(1, 50, "a", 1); /* no Check calls in the child */
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit limit = {.rlim_cur = 2048, .rlim_max = RLIM_INFINITY};
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0)
            _exit(2);
        struct snapshot_packs packs;
        snapshot_packs_init(&packs, dir, 1 << 20);
        struct snapshot_part_file f = {.generation = 1};
        char err[256] = "";
        int rc = snapshot_packs_append(&packs, b, &f, err, sizeof err);
        snapshot_packs_rollback(&packs);
        _exit(rc == -1 && strstr(err, "write") != NULL && f.length == 0 ? 0 : 1);
    }
    snapshot_builder_free(b);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    remove_dir();
}
END_TEST

START_TEST(a_mostly_dead_pack_is_reclaimed_and_deleted)
{
    make_dir();
    struct snapshot_packs packs;
    struct snapshot_parts parts;
    snapshot_packs_init(&packs, dir, 16384);
    snapshot_parts_init(&parts, dir);
    char err[256];
    /* Organization 1 (small) and 2 (changing, large) in pack 1. */
    struct snapshot_part_file *pub = calloc(2, sizeof *pub);
    append(&packs, 1, 2, "a", 1, &pub[0]);
    append(&packs, 2, 30, "a", 1, &pub[1]);
    snapshot_packs_published(&packs, pub, 2);
    snapshot_parts_keep(&parts, snapshot_packs_open_name(&packs));
    snapshot_parts_published(&parts, pub, 2, true);
    /* Organization 2 changes until pack 1 is sealed (full, or less than
     * half live) and holds only organization 1's small part. */
    uint64_t generation = 1;
    while (packs.victim == 0) {
        struct snapshot_part_file *next = calloc(2, sizeof *next);
        snapshot_packs_begin(&packs);
        next[0] = parts.published[0];
        ck_assert(!snapshot_packs_should_move(&packs, &next[0]));
        append(&packs, 2, 30, "b", ++generation, &next[1]);
        ck_assert_uint_lt(generation, 20);
        snapshot_packs_published(&packs, next, 2);
        snapshot_parts_keep(&parts, snapshot_packs_open_name(&packs));
        snapshot_parts_published(&parts, next, 2, false);
    }
    ck_assert_uint_eq(packs.victim, 1);
    /* The next build (nothing changed) moves the parts still in it
     * (verified) to the open pack. */
    struct snapshot_part_file *moved = calloc(2, sizeof *moved);
    snapshot_packs_begin(&packs);
    ck_assert(snapshot_packs_should_move(&packs, &parts.published[0]));
    for (int k = 0; k < 2; k++) {
        const struct snapshot_part_file *held = &parts.published[k];
        moved[k] = *held;
        if (snapshot_packs_should_move(&packs, held))
            ck_assert_msg(snapshot_packs_copy(&packs, held, &moved[k], err, sizeof err) == 0, "%s",
                          err);
        ck_assert_str_ne(moved[k].name, "pack-1.bin");
        ck_assert_uint_eq(moved[k].generation, held->generation);
        ck_assert_str_eq(moved[k].org, held->org);
    }
    ck_assert_msg(snapshot_packs_sync(&packs, err, sizeof err) == 0, "%s", err);
    snapshot_packs_published(&packs, moved, 2);
    ck_assert_uint_eq(packs.victim, 0);
    snapshot_parts_keep(&parts, snapshot_packs_open_name(&packs));
    snapshot_parts_published(&parts, moved, 2, false);
    ck_assert(scratch_file_exists(
        dir, "pack-1.bin")); /* the previous index names it: one more publication */
    struct snapshot_part_file *again = calloc(2, sizeof *again);
    memcpy(again, moved, 2 * sizeof *again);
    snapshot_packs_published(&packs, again, 2);
    snapshot_parts_published(&parts, again, 2, false);
    ck_assert(!scratch_file_exists(dir, "pack-1.bin"));
    struct pack_maps *maps = pack_maps_new(dir, false);
    int slot;
    ck_assert_str_eq(serves(maps, &parts.published[0], &slot), "a");
    ck_assert_str_eq(serves(maps, &parts.published[1], &slot), "b");
    pack_maps_free(maps);
    snapshot_parts_free(&parts);
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

/* The index naming parts f (n), written to the directory and opened. */
static void index_naming(const struct snapshot_part_file *f, size_t n, struct snapshot *out)
{
    char path[512], err[256];
    struct snapshot_builder *b = snapshot_builder_new(1);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(snapshot_builder_add_part(b, f[i].org, f[i].name, f[i].offset, f[i].length,
                                                   f[i].generation),
                         0);
    snapshot_fixture_write(b, dir, SNAPSHOT_FILE_NAME);
    snprintf(path, sizeof path, "%s/%s", dir, SNAPSHOT_FILE_NAME);
    ck_assert_msg(snapshot_open(path, out, err, sizeof err) == 0, "%s", err);
}

/* At start: the open pack is the highest named; bytes past its last named
 * extent (a build that crashed before its index) are cut off when no
 * worker may map them, kept (and skipped) otherwise; new packs are
 * numbered above every pack file on disk. */
START_TEST(a_restart_cuts_the_garbage_tail_and_appends_after_it)
{
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 1 << 20);
    struct snapshot_part_file f[2], crashed;
    append(&packs, 1, 3, "a", 5, &f[0]);
    append(&packs, 2, 3, "a", 6, &f[1]);
    append(&packs, 2, 3, "b", 7, &crashed); /* never named: the crash */
    snapshot_packs_free(&packs);
    char path[512];
    snprintf(path, sizeof path, "%s/pack-5.bin", dir);
    FILE *fp = fopen(path, "w"); /* an unnamed leftover */
    ck_assert_ptr_nonnull(fp);
    fclose(fp);
    uint64_t named_end = f[1].offset + f[1].length;
    struct snapshot index;
    index_naming(f, 2, &index);

    snapshot_packs_init(&packs, dir, 1 << 20);
    snapshot_packs_adopt(&packs, &index, f, 2, false); /* workers may be mapping it */
    ck_assert_uint_eq(size_of("pack-1.bin"), crashed.offset + crashed.length);
    struct snapshot_part_file next;
    append(&packs, 2, 3, "b", 8, &next);
    ck_assert_str_eq(next.name, "pack-1.bin");
    ck_assert_uint_ge(next.offset, crashed.offset + crashed.length);
    snapshot_packs_free(&packs);

    /* A part the index names but that failed its check (not taken) is
     * still named: workers may read it, it is not cut off. */
    snapshot_packs_init(&packs, dir, 1 << 20);
    snapshot_packs_adopt(&packs, &index, f, 1, true);
    ck_assert_uint_ge(size_of("pack-1.bin"), named_end);
    snapshot_packs_free(&packs);

    snapshot_packs_init(&packs, dir, 1 << 20);
    snapshot_packs_adopt(&packs, &index, f, 2, true);
    ck_assert_uint_ge(size_of("pack-1.bin"), named_end);
    ck_assert_uint_lt(size_of("pack-1.bin"), named_end + 64);
    append(&packs, 2, 3, "b", 8, &next);
    ck_assert_str_eq(next.name, "pack-1.bin");
    ck_assert_uint_lt(next.offset, crashed.offset + 64);
    snapshot_packs_free(&packs);

    /* A full open pack is not appended to again: the next is above 5. */
    snapshot_packs_init(&packs, dir, named_end - 1);
    snapshot_packs_adopt(&packs, &index, f, 2, true);
    append(&packs, 2, 3, "b", 9, &next);
    ck_assert_str_eq(next.name, "pack-6.bin");
    snapshot_packs_free(&packs);
    snapshot_close(&index);
    remove_dir();
}
END_TEST

/* ---- a worker's view: every organization from one mapping ---- */

START_TEST(a_view_maps_one_pack_for_many_organizations)
{
    enum { ORGS = 300 };
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 1 << 20);
    struct snapshot_part_file *f = calloc(ORGS, sizeof *f);
    struct snapshot_builder *index = snapshot_builder_new(9);
    char err[256], key[65], env[64];
    for (int i = 0; i < ORGS; i++) {
        append(&packs, i, 2, i % 2 ? "b" : "a", 9, &f[i]);
        snprintf(env, sizeof env, "%08d-eeee-0000-0000-000000000000", i);
        snprintf(key, sizeof key, "%064d", i);
        ck_assert_int_eq(snapshot_builder_add_environment(index, env, f[i].org, "production"), 0);
        ck_assert_int_eq(snapshot_builder_add_sdk_key(index, key, env), 0);
        ck_assert_int_eq(snapshot_builder_add_part(index, f[i].org, f[i].name, f[i].offset,
                                                   f[i].length, f[i].generation),
                         0);
    }
    ck_assert_msg(snapshot_packs_sync(&packs, err, sizeof err) == 0, "%s", err);
    snapshot_fixture_write(index, dir, SNAPSHOT_FILE_NAME);
    struct shm_header header;
    memset(&header, 0, sizeof header);
    struct shm_region shm = {.header = &header};
    struct served_snapshot *view = served_snapshot_new(dir, &shm, NULL);
    atomic_store(&header.snapshot_generation, 9);
    const struct snapshot *current = served_snapshot_current(view);
    ck_assert_ptr_nonnull(current);
    for (int i = 0; i < ORGS; i += 37) {
        snprintf(key, sizeof key, "%064d", i);
        const struct snapshot_env *e = snapshot_env_by_sdk_digest(current, key), *pe;
        ck_assert_ptr_nonnull(e);
        const struct snapshot *part = served_snapshot_part(view, e, &pe);
        ck_assert_ptr_nonnull(part);
        ck_assert_ptr_nonnull(snapshot_flag_by_key(part, pe, "flag-00001", 10));
    }
    /* One mapping for the pack (and one for the index) in /proc/self/maps. */
    FILE *maps = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(maps);
    char line[1024];
    int pack_lines = 0;
    while (fgets(line, sizeof line, maps) != NULL)
        pack_lines += strstr(line, dir) != NULL && strstr(line, "pack-") != NULL;
    fclose(maps);
    ck_assert_int_eq(pack_lines, 1);
    served_snapshot_free(view);
    free(f);
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

/* The index of generation naming organization i's part f, with its
 * environment and SDK key ("%064d" of i). */
static void write_index_of(int i, const struct snapshot_part_file *f, uint64_t generation)
{
    char env[64], key[65];
    snprintf(env, sizeof env, "%08d-eeee-0000-0000-000000000000", i);
    snprintf(key, sizeof key, "%064d", i);
    struct snapshot_builder *b = snapshot_fixture_builder(generation, f->org, env);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, key, env), 0);
    ck_assert_int_eq(
        snapshot_builder_add_part(b, f->org, f->name, f->offset, f->length, f->generation), 0);
    snapshot_fixture_write(b, dir, SNAPSHOT_FILE_NAME);
}

/* The part a view serves for organization i's key, or NULL. */
static const struct snapshot *view_part(struct served_snapshot *view, int i)
{
    char key[65];
    snprintf(key, sizeof key, "%064d", i);
    const struct snapshot *index = served_snapshot_current(view);
    ck_assert_ptr_nonnull(index);
    const struct snapshot_env *e = snapshot_env_by_sdk_digest(index, key), *pe;
    ck_assert_ptr_nonnull(e);
    return served_snapshot_part(view, e, &pe);
}

/* A damaged extent is written again by the refresher at the same
 * generation, elsewhere: a view that refused it maps the new extent at its
 * next retry, keeping the index mapping of that generation. */
START_TEST(a_part_written_again_at_the_same_generation_is_served)
{
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 1 << 20);
    struct snapshot_part_file bad, good;
    append(&packs, 1, 3, "a", 5, &bad);
    snapshot_fixture_flip_byte(dir, bad.name, bad.offset + bad.length / 2);
    write_index_of(1, &bad, 9);
    struct shm_header header;
    memset(&header, 0, sizeof header);
    struct shm_region shm = {.header = &header};
    struct served_snapshot *view = served_snapshot_new(dir, &shm, NULL);
    atomic_store(&header.snapshot_generation, 9);
    ck_assert_ptr_null(view_part(view, 1)); /* refused */
    const unsigned char *index_base = served_snapshot_current(view)->base;

    append(&packs, 1, 3, "a", 5, &good); /* written again: same generation */
    ck_assert_uint_gt(good.offset, bad.offset);
    write_index_of(1, &good, 9);
    ck_assert_ptr_null(view_part(view, 1)); /* not before the retry */
    usleep(1100 * 1000);
    const struct snapshot *part = view_part(view, 1);
    ck_assert_ptr_nonnull(part);
    ck_assert_uint_eq(snapshot_generation(part), 5);
    ck_assert_ptr_eq(served_snapshot_current(view)->base, index_base);
    served_snapshot_free(view);
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

/* The refresher reads a published part (a chunked organization's header)
 * back from its pack: the extent's bytes, checked, of its generation. */
START_TEST(a_published_part_is_read_back_from_its_pack)
{
    make_dir();
    struct snapshot_packs packs;
    snapshot_packs_init(&packs, dir, 1 << 20);
    struct snapshot_part_file f[2];
    append(&packs, 1, 3, "a", 5, &f[0]);
    append(&packs, 2, 4, "b", 6, &f[1]);
    char err[256];
    ck_assert_msg(snapshot_packs_sync(&packs, err, sizeof err) == 0, "%s", err);
    struct snapshot s;
    unsigned char *bytes = NULL;
    ck_assert_msg(snapshot_packs_open_part(&packs, &f[1], &s, &bytes, err, sizeof err) == 0, "%s",
                  err);
    ck_assert_ptr_nonnull(bytes);
    ck_assert_uint_eq(snapshot_generation(&s), 6);
    ck_assert_uint_eq(s.counts[SNAPSHOT_SEC_FLAGS], 4);
    snapshot_close(&s);
    free(bytes);
    /* another generation than the index names, or an extent cut short:
     * refused, nothing to free */
    struct snapshot_part_file wrong = f[0];
    wrong.generation = 4;
    ck_assert_int_eq(snapshot_packs_open_part(&packs, &wrong, &s, &bytes, err, sizeof err), -1);
    ck_assert_ptr_null(bytes);
    ck_assert_msg(strstr(err, "generation 5, not 4") != NULL, "%s", err);
    struct snapshot_part_file cut = f[0];
    cut.length -= 8;
    ck_assert_int_eq(snapshot_packs_open_part(&packs, &cut, &s, &bytes, err, sizeof err), -1);
    ck_assert_ptr_null(bytes);
    struct snapshot_part_file gone = f[0];
    snprintf(gone.name, sizeof gone.name, "pack-9.bin");
    ck_assert_int_eq(snapshot_packs_open_part(&packs, &gone, &s, &bytes, err, sizeof err), -1);
    ck_assert_ptr_null(bytes);
    snapshot_packs_free(&packs);
    remove_dir();
}
END_TEST

Suite *suite_snapshot_packs(void)
{
    Suite *s = suite_create("snapshot_packs");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, parts_are_appended_to_one_pack_and_read_through_one_mapping);
    tcase_add_test(tc, an_extent_outside_the_file_or_damaged_is_refused);
    tcase_add_test(tc, a_replaced_pack_is_mapped_afresh);
    tcase_add_test(tc, a_full_pack_is_sealed_and_the_next_one_started);
    tcase_add_test(tc, a_failed_build_is_cut_back_to_the_last_publication);
    tcase_add_test(tc, a_short_write_fails_the_append);
    tcase_add_test(tc, a_mostly_dead_pack_is_reclaimed_and_deleted);
    tcase_add_test(tc, a_restart_cuts_the_garbage_tail_and_appends_after_it);
    tcase_add_test(tc, a_view_maps_one_pack_for_many_organizations);
    tcase_add_test(tc, a_part_written_again_at_the_same_generation_is_served);
    tcase_add_test(tc, a_published_part_is_read_back_from_its_pack);
    suite_add_tcase(s, tc);
    return s;
}
