/*
 * test_chunk_packs.c - a chunked organization's chunks stored in pack
 * files (doc/choices.md "Chunks stored in packs"): published (chunks and
 * header appended, named by extent, opened by a reader through the pack
 * maps), patched (one chunk rewritten, the others kept; the superseded
 * chunk counted as dead bytes), and reclaimed (the chunks in the pack
 * being reclaimed copied and the header rewritten at the same generation,
 * src/eval/snapshot_chunk_move.c); the writer's table of published chunks
 * (src/eval/snapshot_chunk_table.c); a header naming a chunk outside the
 * largest pack refused; a pack holding only chunks never deleted, and the
 * chunk files of an older ensignd deleted at start. Files live in a
 * temporary directory, removed at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/pack_maps.h"
#include "eval/served_chunks.h"
#include "eval/snapshot.h"
#include "eval/snapshot_build.h"
#include "eval/snapshot_chunk_move.h"
#include "eval/snapshot_chunk_table.h"
#include "eval/snapshot_packs.h"
#include "eval/snapshot_parts.h"
#include "scratch_dir.h"
#include "snapshot_fixture.h"
#include "suites.h"

#define BIG "00000001-0000-0000-0000-000000000000"    /* chunked */
#define FILLER "00000002-0000-0000-0000-000000000000" /* one part, large then small */
#define ENV "00000001-eeee-0000-0000-000000000000"
#define ENV_FILLER "00000002-eeee-0000-0000-000000000000"

static char dir[64];

static void touch(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("ENSIGNSS", f);
    fclose(f);
}

/* A part of org (environment env) with flags k<first> .. k<last - 1> (two
 * digits) serving serve, at generation. */
static struct snapshot_builder *flags_of(const char *org, const char *env, int first, int last,
                                         const char *serve, uint64_t generation)
{
    char key[16];
    struct snapshot_builder *b = snapshot_fixture_builder(generation, org, env);
    for (int i = first; i < last; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        snapshot_fixture_add_flag_serving(b, env, key, serve);
    }
    return b;
}

/* Appends b (freed) as a part of org at generation; its extent in *f. */
static void append(struct snapshot_packs *packs, struct snapshot_builder *b, const char *org,
                   uint64_t generation, struct snapshot_part_file *f)
{
    char err[256];
    memset(f, 0, sizeof *f);
    snprintf(f->org, sizeof f->org, "%s", org);
    f->generation = generation;
    ck_assert_msg(snapshot_packs_append(packs, b, f, err, sizeof err) == 0, "%s", err);
    snapshot_builder_free(b);
}

static struct snapshot_chunk extent_of(const struct snapshot_part_file *f)
{
    return (struct snapshot_chunk){.pack = snapshot_packs_number(f->name),
                                   .offset = f->offset,
                                   .length = f->length,
                                   .generation = f->generation};
}

static const char *const firsts[] = {"", "k04", "k08"};

/* Appends BIG's header at generation naming chunks (three), stages them
 * in t; the header's extent in *f. */
static void append_header(struct snapshot_packs *packs, struct snapshot_chunk_table *t,
                          const struct snapshot_chunk chunks[3], uint64_t generation,
                          struct snapshot_part_file *f)
{
    struct snapshot_builder *b = snapshot_fixture_builder(generation, BIG, ENV);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(snapshot_builder_add_chunk(b, firsts[i], &chunks[i]), 0);
    append(packs, b, BIG, generation, f);
    ck_assert_int_eq(snapshot_chunk_table_stage(t, BIG, generation, firsts, chunks, 3), 0);
}

/* Publishes parts (two: BIG's header and FILLER's, sorted) as the
 * refresher does: synced, table committed and pruned, packs and parts told. */
static void publish(struct snapshot_packs *packs, struct snapshot_parts *parts,
                    struct snapshot_chunk_table *t, const struct snapshot_part_file published[2])
{
    char err[256];
    ck_assert_msg(snapshot_packs_sync(packs, err, sizeof err) == 0, "%s", err);
    struct snapshot_part_file *fresh = malloc(2 * sizeof *fresh);
    ck_assert_ptr_nonnull(fresh);
    memcpy(fresh, published, 2 * sizeof *fresh);
    snapshot_chunk_table_commit(t);
    snapshot_chunk_table_prune(t, fresh, 2);
    snapshot_packs_set_chunks(packs, t->extents, t->extent_count);
    snapshot_parts_set_chunks(parts, t->extents, t->extent_count);
    snapshot_packs_published(packs, fresh, 2);
    snapshot_parts_keep(parts, snapshot_packs_open_name(packs));
    snapshot_parts_published(parts, fresh, 2, false);
}

/* The variant of each flag k00 .. k11 through header f's chunks, opened
 * as a worker opens them ("abab..."), and the header's generation. */
static uint64_t read_big(const struct snapshot_part_file *f, char out[13])
{
    struct pack_maps *maps = pack_maps_new(dir, false);
    struct snapshot header;
    struct served_chunks none = {0}, chunks = {0};
    char err[256];
    int slot;
    bool gone = false;
    ck_assert_msg(pack_maps_open(maps, f->name, f->offset, f->length, &header, &slot, err,
                                 sizeof err) == PACK_EXTENT_OK,
                  "%s", err);
    ck_assert_int_eq(served_chunks_open(maps, &header, &none, &chunks, &gone), 0);
    ck_assert_uint_eq(chunks.count, 3);
    for (int i = 0; i < 12; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%02d", i);
        const struct snapshot *c = &chunks.maps[snapshot_chunk_find(&header, key, 3)].snap;
        const struct snapshot_flag *flag = snapshot_flag_by_key(c, &c->envs[0], key, 3);
        ck_assert_ptr_nonnull(flag);
        const struct snapshot_serve *serve = &c->serves[flag->default_serve];
        out[i] = snapshot_string(c, c->variants[flag->variant_first + serve->variant].key)[0];
    }
    out[12] = '\0';
    uint64_t generation = snapshot_generation(&header);
    served_chunks_close(maps, &chunks);
    snapshot_close(&header);
    pack_maps_release(maps, slot);
    ck_assert_uint_eq(pack_maps_count(maps), 0); /* every chunk released its pack */
    pack_maps_free(maps);
    return generation;
}

/* The live bytes the packs record for pack number n. */
static uint64_t live_of(const struct snapshot_packs *packs, uint32_t n)
{
    for (size_t i = 0; i < packs->stat_count; i++)
        if (packs->stats[i].number == n)
            return packs->stats[i].live;
    return 0;
}

START_TEST(a_chunked_organization_published_patched_and_reclaimed)
{
    scratch_dir_make(dir, sizeof dir, "chunkpacks");
    struct snapshot_packs packs;
    struct snapshot_parts parts;
    struct snapshot_chunk_table t;
    snapshot_packs_init(&packs, dir, 64 << 10);
    snapshot_parts_init(&parts, dir);
    snapshot_chunk_table_init(&t);
    snapshot_packs_begin(&packs);

    /* generation 1: three chunks of four flags, their header after them;
     * a large part of FILLER */
    struct snapshot_part_file c[3], pub[2];
    struct snapshot_chunk ext[3];
    for (int i = 0; i < 3; i++) {
        append(&packs, flags_of(BIG, ENV, 4 * i, 4 * i + 4, "a", 1), BIG, 1, &c[i]);
        ext[i] = extent_of(&c[i]);
    }
    append_header(&packs, &t, ext, 1, &pub[0]);
    append(&packs, flags_of(FILLER, ENV_FILLER, 0, 99, "a", 1), FILLER, 1, &pub[1]);
    ck_assert_ptr_null(snapshot_chunk_table_find(&t, BIG)); /* staged, not published */
    publish(&packs, &parts, &t, pub);
    char answers[13];
    ck_assert_uint_eq(read_big(&pub[0], answers), 1);
    ck_assert_str_eq(answers, "aaaaaaaaaaaa");
    const struct snapshot_chunked_org *big = snapshot_chunk_table_find(&t, BIG);
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_eq(big->count, 3);
    ck_assert_str_eq(big->first_keys[1], "k04");
    ck_assert_uint_eq(t.extent_count, 3);
    uint64_t chunk_bytes = c[0].length + c[1].length + c[2].length;
    ck_assert_uint_eq(live_of(&packs, 1), pub[0].length + pub[1].length + chunk_bytes);

    /* generation 2: k05 changed, chunk 1 appended again, the others kept;
     * FILLER small: pack 1 is mostly dead, sealed and to be reclaimed */
    struct snapshot_part_file c1;
    struct snapshot_builder *b = flags_of(BIG, ENV, 4, 8, "a", 2);
    append(&packs, b, BIG, 2, &c1);
    ext[1] = extent_of(&c1);
    append_header(&packs, &t, ext, 2, &pub[0]);
    append(&packs, flags_of(FILLER, ENV_FILLER, 0, 1, "b", 2), FILLER, 2, &pub[1]);
    publish(&packs, &parts, &t, pub);
    ck_assert_uint_eq(read_big(&pub[0], answers), 2);
    big = snapshot_chunk_table_find(&t, BIG);
    ck_assert_uint_eq(big->generation, 2);
    ck_assert_uint_eq(big->chunks[0].offset, c[0].offset); /* kept where it was */
    ck_assert_uint_eq(big->chunks[1].offset, c1.offset);
    /* the superseded chunk, header and filler are dead bytes */
    ck_assert_uint_eq(live_of(&packs, 1),
                      pub[0].length + pub[1].length + c[0].length + c1.length + c[2].length);
    ck_assert_int_lt(packs.fd, 0);      /* sealed: less than half live */
    ck_assert_uint_eq(packs.victim, 1); /* and reclaimed next */

    /* build 3: BIG moved (its chunks and a rewritten header), FILLER too */
    snapshot_packs_begin(&packs);
    const struct snapshot_part_file *held = snapshot_parts_find(&parts, BIG);
    ck_assert(snapshot_chunk_move_wanted(&packs, held, big));
    struct snapshot_part_file moved[2];
    char err[256];
    ck_assert_msg(snapshot_chunk_move(&packs, &t, held, big, &moved[0], err, sizeof err) == 0, "%s",
                  err);
    ck_assert_msg(snapshot_packs_copy(&packs, snapshot_parts_find(&parts, FILLER), &moved[1], err,
                                      sizeof err) == 0,
                  "%s", err);
    ck_assert_str_eq(moved[0].name, "pack-2.bin");
    ck_assert_uint_eq(moved[0].generation, 2);
    ck_assert_uint_eq(moved[0].length, pub[0].length);
    publish(&packs, &parts, &t, moved);
    ck_assert_uint_eq(read_big(&moved[0], answers), 2);
    ck_assert_str_eq(answers, "aaaaaaaaaaaa");
    big = snapshot_chunk_table_find(&t, BIG);
    for (size_t i = 0; i < big->count; i++)
        ck_assert_uint_eq(big->chunks[i].pack, 2);
    ck_assert_uint_eq(big->chunks[1].generation, 2);
    ck_assert_uint_eq(big->chunks[0].generation, 1);
    ck_assert_uint_eq(live_of(&packs, 1), 0);
    /* pack 1 is doomed, deleted at the next publication */
    ck_assert(scratch_file_exists(dir, "pack-1.bin"));
    publish(&packs, &parts, &t, moved);
    ck_assert(!scratch_file_exists(dir, "pack-1.bin"));
    ck_assert_uint_eq(read_big(&moved[0], answers), 2);

    /* BIG written again unchunked at generation 3: its entry is removed */
    ck_assert_int_eq(snapshot_chunk_table_stage(&t, BIG, 3, NULL, NULL, 0), 0);
    snapshot_chunk_table_commit(&t);
    ck_assert_ptr_null(snapshot_chunk_table_find(&t, BIG));
    ck_assert_uint_eq(t.extent_count, 0);

    snapshot_chunk_table_free(&t);
    snapshot_parts_free(&parts);
    snapshot_packs_free(&packs);
    scratch_dir_remove(dir);
}
END_TEST

START_TEST(a_failed_build_leaves_the_published_chunks)
{
    struct snapshot_chunk_table t;
    snapshot_chunk_table_init(&t);
    const struct snapshot_chunk ext[3] = {
        {.pack = 1, .offset = 0, .length = 4096, .generation = 1},
        {.pack = 1, .offset = 4096, .length = 4096, .generation = 1},
        {.pack = 1, .offset = 8192, .length = 4096, .generation = 1}};
    ck_assert_int_eq(snapshot_chunk_table_stage(&t, BIG, 1, firsts, ext, 3), 0);
    snapshot_chunk_table_commit(&t);
    ck_assert_int_eq(snapshot_chunk_table_stage(&t, BIG, 2, firsts, ext, 2), 0);
    snapshot_chunk_table_discard(&t);
    ck_assert_uint_eq(snapshot_chunk_table_find(&t, BIG)->count, 3);
    ck_assert_uint_eq(snapshot_chunk_table_find(&t, BIG)->generation, 1);
    /* pruned when the published part of BIG is of another generation */
    struct snapshot_part_file part = {.org = BIG, .generation = 2, .name = "pack-1.bin"};
    snapshot_chunk_table_prune(&t, &part, 1);
    ck_assert_ptr_null(snapshot_chunk_table_find(&t, BIG));
    snapshot_chunk_table_free(&t);
}
END_TEST

START_TEST(a_header_naming_a_chunk_outside_the_largest_pack_is_refused)
{
    const struct snapshot_chunk ok = {.pack = 1, .offset = 64, .length = 4096, .generation = 1};
    struct snapshot_builder *b = snapshot_builder_new(1);
    ck_assert_int_eq(snapshot_builder_add_environment(b, ENV, BIG, "production"), 0);
    ck_assert_int_eq(snapshot_builder_add_chunk(b, "", &ok), 0);
    scratch_dir_make(dir, sizeof dir, "chunkpacks");
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/header.bin", dir);
    ck_assert_msg(snapshot_builder_write(b, path, err, sizeof err) == 0, "%s", err);
    snapshot_builder_free(b);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    unsigned char *bytes = aligned_alloc(64, ((size_t)st.st_size + 63) & ~(size_t)63);
    FILE *f = fopen(path, "rb");
    ck_assert_uint_eq(fread(bytes, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    struct snapshot s;
    ck_assert_msg(snapshot_open_extent(bytes, (size_t)st.st_size, &s, err, sizeof err) == 0, "%s",
                  err);
    size_t at = (size_t)((const unsigned char *)s.chunks - bytes);
    snapshot_close(&s);
    struct snapshot_header *h = (struct snapshot_header *)bytes;
    const uint64_t offsets[] = {SNAPSHOT_PACK_MAP_BYTES, 72 + 1, 0};
    const uint32_t packs[] = {1, 1, 0};
    for (int i = 0; i < 3; i++) {
        struct snapshot_chunk *c = (struct snapshot_chunk *)(bytes + at);
        c->offset = offsets[i];
        c->pack = packs[i];
        h->checksum =
            snapshot_checksum(bytes + h->header_size, (size_t)(h->total_size - h->header_size));
        ck_assert_int_eq(snapshot_open_extent(bytes, (size_t)st.st_size, &s, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "chunks") != NULL, "%s", err);
    }
    free(bytes);
    scratch_dir_remove(dir);
}
END_TEST

START_TEST(packs_of_chunks_stay_and_older_chunk_files_go_at_start)
{
    scratch_dir_make(dir, sizeof dir, "chunkpacks");
    touch("pack-7.bin"); /* only chunks in it */
    touch("pack-8.bin"); /* the parts */
    touch("pack-9.bin"); /* a leftover */
    touch("chunk-" BIG "-3-0.bin");
    touch("chunk-" BIG "-3-1.bin.tmp");
    struct snapshot_parts parts;
    snapshot_parts_init(&parts, dir);
    const struct snapshot_part_file chunk = {.org = BIG, .name = "pack-7.bin", .length = 64};
    for (int publication = 0; publication < 3; publication++) {
        struct snapshot_part_file *fresh = calloc(1, sizeof *fresh);
        ck_assert_ptr_nonnull(fresh);
        *fresh = (struct snapshot_part_file){.org = BIG, .name = "pack-8.bin", .length = 64};
        snapshot_parts_set_chunks(&parts, &chunk, 1);
        snapshot_parts_published(&parts, fresh, 1, publication == 0);
        /* the older ensignd's chunk files at once, a leftover pack one
         * publication later, a pack of chunks never */
        ck_assert(!scratch_file_exists(dir, "chunk-" BIG "-3-0.bin"));
        ck_assert(!scratch_file_exists(dir, "chunk-" BIG "-3-1.bin.tmp"));
        ck_assert(scratch_file_exists(dir, "pack-9.bin") == (publication == 0));
        ck_assert(scratch_file_exists(dir, "pack-7.bin"));
        ck_assert(scratch_file_exists(dir, "pack-8.bin"));
    }
    /* no chunk names pack 7 any more: doomed, then deleted */
    for (int publication = 0; publication < 2; publication++) {
        struct snapshot_part_file *fresh = calloc(1, sizeof *fresh);
        ck_assert_ptr_nonnull(fresh);
        *fresh = (struct snapshot_part_file){.org = BIG, .name = "pack-8.bin", .length = 64};
        snapshot_parts_set_chunks(&parts, NULL, 0);
        snapshot_parts_published(&parts, fresh, 1, false);
    }
    ck_assert(!scratch_file_exists(dir, "pack-7.bin"));
    ck_assert(scratch_file_exists(dir, "pack-8.bin"));
    snapshot_parts_free(&parts);
    scratch_dir_remove(dir);
}
END_TEST

Suite *suite_chunk_packs(void)
{
    Suite *s = suite_create("chunk_packs");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, a_chunked_organization_published_patched_and_reclaimed);
    tcase_add_test(tc, a_failed_build_leaves_the_published_chunks);
    tcase_add_test(tc, a_header_naming_a_chunk_outside_the_largest_pack_is_refused);
    tcase_add_test(tc, packs_of_chunks_stay_and_older_chunk_files_go_at_start);
    suite_add_tcase(s, tc);
    return s;
}
