/*
 * test_served_chunks.c - a chunked organization served by a worker
 * (snapshot.h "Chunks", src/eval/served_chunks.c, served_snapshot.c):
 * the header names its chunks, a key is looked up in the chunk covering
 * it, walking the chunks gives the flags in key order as one part would,
 * the bulk ETag over chunks, an unchanged chunk's mapping kept across
 * generations, and a bad or missing chunk keeping the organization's
 * previous header and chunks whole, and a chunk extent outside its pack
 * refused. Files live in a temporary directory; each part (a header or
 * org1's flags) is a file of its own that the index names as a one-extent
 * pack, and the chunks are appended to one pack file, pack-1.bin, as the
 * refresher appends them (doc/choices.md "Chunks stored in packs").
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/eval.h"
#include "eval/served_snapshot.h"
#include "eval/shm.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_packs.h"
#include "scratch_dir.h"
#include "snapshot_fixture.h"
#include "suites.h"

/* ORG1 (snapshot_fixture.h) is served from one part, ORG2 in chunks. */

static char dir[64];

static void make_dir(void)
{
    scratch_dir_make(dir, sizeof dir, "chunks");
}

static void remove_dir(void)
{
    scratch_dir_remove(dir);
}

/* The nine flag keys, in byte order, and the variant each serves. */
static const char *const keys[] = {"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"};
static const char *serve_of(size_t i, const char *tweak)
{
    return tweak != NULL && strcmp(keys[i], tweak) == 0 ? "b" : (i % 2 ? "b" : "a");
}

/* Writes a part of org (environment env) with keys [first, last), key
 * `tweak` (may be NULL) serving "b", at generation, as file name. */
static void write_flags_file(const char *org, const char *env, size_t first, size_t last,
                             const char *tweak, uint64_t generation, const char *name)
{
    struct snapshot_builder *b = snapshot_fixture_builder(generation, org, env);
    for (size_t i = first; i < last; i++)
        snapshot_fixture_add_flag_serving(b, env, keys[i], serve_of(i, tweak));
    snapshot_fixture_write(b, dir, name);
}

/* A chunk's extent in pack-1.bin (pack 1; a pack number 9: no such file). */
struct ext {
    uint32_t pack;
    uint64_t offset, length;
};

/* Appends the part write_flags_file would write to pack-1.bin, on a
 * 64-byte boundary; its extent. */
static struct ext append_flags(const char *org, const char *env, size_t first, size_t last,
                               const char *tweak, uint64_t generation)
{
    char path[512], pack[512];
    write_flags_file(org, env, first, last, tweak, generation, "chunk.tmp");
    snprintf(path, sizeof path, "%s/chunk.tmp", dir);
    snprintf(pack, sizeof pack, "%s/pack-1.bin", dir);
    FILE *in = fopen(path, "rb"), *out = fopen(pack, "ab");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    fseek(out, 0, SEEK_END);
    long at = ftell(out);
    for (; at % 64 != 0; at++)
        fputc(0, out);
    struct ext e = {1, (uint64_t)at, 0};
    for (int c; (c = fgetc(in)) != EOF; e.length++)
        fputc(c, out);
    fclose(in);
    fclose(out);
    unlink(path);
    return e;
}

/* Writes org2's header at generation naming three chunks: exts[i] of
 * generations gens[i], from "", "k4" and "k7". */
static void write_header(uint64_t generation, const struct ext exts[3], const uint64_t gens[3],
                         const char *name)
{
    static const char *const firsts[] = {"", "k4", "k7"};
    struct snapshot_builder *b = snapshot_fixture_builder(generation, ORG2, ENV2);
    for (size_t i = 0; i < 3; i++) {
        struct snapshot_chunk c = {.pack = exts[i].pack,
                                   .offset = exts[i].offset,
                                   .length = exts[i].length,
                                   .generation = gens[i]};
        ck_assert_int_eq(snapshot_builder_add_chunk(b, firsts[i], &c), 0);
    }
    snapshot_fixture_write(b, dir, name);
}

static void write_index(uint64_t generation, const char *header, uint64_t header_gen)
{
    struct snapshot_builder *b = snapshot_fixture_two_orgs(generation);
    snapshot_fixture_add_file_part(b, dir, ORG1, "org-1-1.bin", 1);
    snapshot_fixture_add_file_part(b, dir, ORG2, header, header_gen);
    snapshot_fixture_write(b, dir, SNAPSHOT_FILE_NAME);
}

struct fixture {
    struct shm_header header;
    struct shm_region shm;
    struct served_snapshot *view;
    struct ext c[3]; /* org2's chunks of generation 1 */
};

/* Generation 1: org1 whole, org2 in three chunks of generation 1; both
 * with the same flags. Published and viewed. */
static void setup(struct fixture *f)
{
    make_dir();
    memset(f, 0, sizeof *f);
    write_flags_file(ORG1, ENV1, 0, 9, NULL, 1, "org-1-1.bin");
    f->c[0] = append_flags(ORG2, ENV2, 0, 3, NULL, 1);
    f->c[1] = append_flags(ORG2, ENV2, 3, 6, NULL, 1);
    f->c[2] = append_flags(ORG2, ENV2, 6, 9, NULL, 1);
    const uint64_t gens[] = {1, 1, 1};
    write_header(1, f->c, gens, "org-2-1.bin");
    write_index(1, "org-2-1.bin", 1);
    f->shm.header = &f->header;
    f->view = served_snapshot_new(dir, &f->shm, NULL);
    ck_assert_ptr_nonnull(f->view);
    atomic_store(&f->header.snapshot_generation, 1);
}

static void teardown(struct fixture *f)
{
    served_snapshot_free(f->view);
    remove_dir();
}

/* Generation g: org2's header org-2-<g>.bin naming exts at gens, an index
 * naming it, and g published. */
static void publish(struct fixture *f, uint64_t g, const struct ext exts[3], const uint64_t gens[3])
{
    char header[32];
    snprintf(header, sizeof header, "org-2-%" PRIu64 ".bin", g);
    write_header(g, exts, gens, header);
    write_index(g, header, g);
    atomic_store(&f->header.snapshot_generation, g);
}

static const struct snapshot_env *index_env(struct fixture *f, const char *digest)
{
    const struct snapshot *index = served_snapshot_current(f->view);
    ck_assert_ptr_nonnull(index);
    const struct snapshot_env *env = snapshot_env_by_sdk_digest(index, digest);
    ck_assert_ptr_nonnull(env);
    return env;
}

/* The variant key flag `key` serves by default in the view (NULL when the
 * flag is not there). */
static const char *served(struct fixture *f, const char *digest, const char *key)
{
    const struct snapshot_env *env;
    const struct snapshot *s =
        served_snapshot_flag_part(f->view, index_env(f, digest), key, strlen(key), &env);
    ck_assert_ptr_nonnull(s);
    const struct snapshot_flag *flag = snapshot_flag_by_key(s, env, key, strlen(key));
    if (flag == NULL)
        return NULL;
    const struct snapshot_serve *serve = &s->serves[flag->default_serve];
    return snapshot_string(s, s->variants[flag->variant_first + serve->variant].key);
}

/* "key=variant,..." of every flag, walking the chunks in order. */
static void walk(struct fixture *f, const char *digest, char *out, size_t outlen)
{
    const struct snapshot_env *ienv = index_env(f, digest), *env;
    const struct snapshot *s;
    out[0] = '\0';
    for (size_t i = 0; (s = served_snapshot_chunk(f->view, ienv, i, &env)) != NULL; i++) {
        size_t count;
        const struct snapshot_flag *flags = snapshot_env_flags(s, env, &count);
        for (size_t j = 0; j < count; j++) {
            const struct snapshot_serve *serve = &s->serves[flags[j].default_serve];
            size_t at = strlen(out);
            snprintf(out + at, outlen - at, "%s=%s,", snapshot_string(s, flags[j].key),
                     snapshot_string(s, s->variants[flags[j].variant_first + serve->variant].key));
        }
    }
}

START_TEST(chunks_answer_as_one_part)
{
    struct fixture f;
    setup(&f);
    char whole[256], chunked[256];
    walk(&f, KEY1, whole, sizeof whole);
    walk(&f, KEY2, chunked, sizeof chunked);
    ck_assert_str_eq(whole, "k1=a,k2=b,k3=a,k4=b,k5=a,k6=b,k7=a,k8=b,k9=a,");
    ck_assert_str_eq(chunked, whole);
    for (size_t i = 0; i < 9; i++)
        ck_assert_str_eq(served(&f, KEY2, keys[i]), served(&f, KEY1, keys[i]));
    /* between boundaries, below and above every flag: the chunk covering
     * it, which does not hold it */
    ck_assert_ptr_null(served(&f, KEY2, "k35"));
    ck_assert_ptr_null(served(&f, KEY2, "a"));
    ck_assert_ptr_null(served(&f, KEY2, "z"));
    /* the header holds no flags; its chunks are found by key */
    const struct snapshot_env *env;
    const struct snapshot *header = served_snapshot_part(f.view, index_env(&f, KEY2), &env);
    ck_assert_ptr_nonnull(header);
    ck_assert_uint_eq(header->counts[SNAPSHOT_SEC_FLAGS], 0);
    ck_assert_uint_eq(header->counts[SNAPSHOT_SEC_CHUNKS], 3);
    ck_assert_uint_eq(snapshot_chunk_find(header, "k3", 2), 0);
    ck_assert_uint_eq(snapshot_chunk_find(header, "k4", 2), 1);
    ck_assert_uint_eq(snapshot_chunk_find(header, "k65", 3), 1);
    ck_assert_uint_eq(snapshot_chunk_find(header, "k7", 2), 2);
    teardown(&f);
}
END_TEST

/* eval_chunk_fn over the view (ctx: the fixture; the chunked org). */
static struct fixture *etag_fixture;
static const struct snapshot *view_chunk(void *ctx, size_t i, const struct snapshot_env **env)
{
    (void)ctx;
    return served_snapshot_chunk(etag_fixture->view, index_env(etag_fixture, KEY2), i, env);
}

static const struct snapshot *first_only(void *ctx, size_t i, const struct snapshot_env **env)
{
    return i == 0 ? view_chunk(ctx, 0, env) : NULL;
}

START_TEST(bulk_etag_over_chunks)
{
    struct fixture f;
    setup(&f);
    etag_fixture = &f;
    char over_chunks[EVAL_ETAG_SIZE], one[EVAL_ETAG_SIZE], first[EVAL_ETAG_SIZE];
    eval_bulk_etag_chunks(7, ENV2, strlen(ENV2), view_chunk, NULL, NULL, 0, over_chunks);
    ck_assert_msg(strncmp(over_chunks, "\"7-0-", 5) == 0, "%s", over_chunks);
    /* with one chunk, the same tag as eval_bulk_etag of that part */
    const struct snapshot_env *env;
    const struct snapshot *chunk0 = view_chunk(NULL, 0, &env);
    eval_bulk_etag(chunk0, env, NULL, 0, one);
    eval_bulk_etag_chunks(snapshot_generation(chunk0), ENV2, strlen(ENV2), first_only, NULL, NULL,
                          0, first);
    ck_assert_str_eq(first, one);
    teardown(&f);
}
END_TEST

START_TEST(a_new_generation_maps_only_new_chunks)
{
    struct fixture f;
    setup(&f);
    const struct snapshot_env *env;
    const struct snapshot *c0 = served_snapshot_chunk(f.view, index_env(&f, KEY2), 0, &env);
    const unsigned char *base0 = c0->base;
    /* generation 2: k5 changed, only the middle chunk rewritten */
    const struct ext exts[] = {f.c[0], append_flags(ORG2, ENV2, 3, 6, "k5", 2), f.c[2]};
    const uint64_t gens[] = {1, 2, 1};
    publish(&f, 2, exts, gens);
    ck_assert_str_eq(served(&f, KEY2, "k5"), "b");
    ck_assert_str_eq(served(&f, KEY2, "k1"), "a");
    c0 = served_snapshot_chunk(f.view, index_env(&f, KEY2), 0, &env);
    ck_assert_ptr_eq(c0->base, base0); /* the unchanged chunk's mapping kept */
    teardown(&f);
}
END_TEST

START_TEST(a_bad_or_missing_chunk_keeps_the_previous_set_whole)
{
    struct fixture f;
    setup(&f);
    ck_assert_str_eq(served(&f, KEY2, "k5"), "a");
    /* generation 2 changes k1 and k5; its middle chunk is damaged */
    const struct ext exts[] = {append_flags(ORG2, ENV2, 0, 3, "k1", 2),
                               append_flags(ORG2, ENV2, 3, 6, "k5", 2), f.c[2]};
    char path[512];
    snprintf(path, sizeof path, "%s/pack-1.bin", dir);
    FILE *fp = fopen(path, "r+b");
    ck_assert_ptr_nonnull(fp);
    fseek(fp, (long)(exts[1].offset + exts[1].length - 3), SEEK_SET);
    fputc('#', fp);
    fclose(fp);
    const uint64_t gens[] = {2, 2, 1};
    publish(&f, 2, exts, gens);
    /* neither change served: never k1 of generation 2 with k5 of 1 */
    ck_assert_str_eq(served(&f, KEY2, "k1"), "a");
    ck_assert_str_eq(served(&f, KEY2, "k5"), "a");
    const struct snapshot_env *env;
    ck_assert_uint_eq(snapshot_generation(served_snapshot_part(f.view, index_env(&f, KEY2), &env)),
                      1);
    /* generation 3 names a chunk in a pack that is not there: the same */
    const struct ext missing[] = {f.c[0], {9, 0, f.c[1].length}, f.c[2]};
    const uint64_t gens3[] = {1, 3, 1};
    publish(&f, 3, missing, gens3);
    ck_assert_uint_eq(snapshot_generation(served_snapshot_part(f.view, index_env(&f, KEY2), &env)),
                      1);
    ck_assert_str_eq(served(&f, KEY2, "k5"), "a");
    /* org1 (one part) is served at the new index meanwhile */
    ck_assert_str_eq(served(&f, KEY1, "k5"), "a");
    /* a chunk of another generation than its header names is refused */
    const struct ext wrong[] = {f.c[0], append_flags(ORG2, ENV2, 3, 6, "k5", 4), f.c[2]};
    const uint64_t gens4[] = {1, 5, 1};
    publish(&f, 4, wrong, gens4);
    ck_assert_str_eq(served(&f, KEY2, "k5"), "a");
    /* a chunk extent passing its pack's end is refused, never read */
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    const struct ext past[] = {
        f.c[0], {1, ((uint64_t)st.st_size + 63) & ~(uint64_t)63, f.c[1].length}, f.c[2]};
    const uint64_t gens5[] = {1, 5, 1};
    publish(&f, 5, past, gens5);
    ck_assert_uint_eq(snapshot_generation(served_snapshot_part(f.view, index_env(&f, KEY2), &env)),
                      1);
    ck_assert_str_eq(served(&f, KEY2, "k5"), "a");
    teardown(&f);
}
END_TEST

START_TEST(headers_are_checked)
{
    struct snapshot_builder *b = snapshot_builder_new(1);
    ck_assert_int_eq(snapshot_builder_add_environment(b, ENV2, ORG2, "production"), 0);
    const struct snapshot_chunk ok = {.pack = 1, .offset = 64, .length = 4096, .generation = 1};
    struct snapshot_chunk bad = ok;
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "k1", &ok), -1); /* first not "" */
    bad.pack = 0;                                                   /* no pack */
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "", &bad), -1);
    bad = ok, bad.offset = 65; /* unaligned */
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "", &bad), -1);
    bad = ok, bad.offset = SNAPSHOT_PACK_MAP_BYTES - 64; /* past the largest pack */
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "", &bad), -1);
    bad = ok, bad.length = 8; /* shorter than a snapshot */
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "", &bad), -1);
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "", &ok), 0);
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "k5", &ok), 0);
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "k5", &ok), -1); /* not increasing */
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "k4", &ok), -1);
    struct snapshot_flag_input flag = {ENV2, "k1", "k1", "boolean", true, NULL, "{}", NULL, 0};
    ck_assert_int_eq(snapshot_builder_add_flag(b, &flag), -1); /* a header holds no flags */
    snapshot_builder_free(b);
}
END_TEST

Suite *suite_served_chunks(void)
{
    Suite *s = suite_create("served_chunks");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, chunks_answer_as_one_part);
    tcase_add_test(tc, bulk_etag_over_chunks);
    tcase_add_test(tc, a_new_generation_maps_only_new_chunks);
    tcase_add_test(tc, a_bad_or_missing_chunk_keeps_the_previous_set_whole);
    tcase_add_test(tc, headers_are_checked);
    suite_add_tcase(s, tc);
    return s;
}
