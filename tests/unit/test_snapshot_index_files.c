/*
 * test_snapshot_index_files.c - the visible index names, which of them
 * may be removed, and the step that makes one the restart index
 * (src/eval/snapshot_index_files.c; doc/choices.md "Visible before
 * durable"). Files live in a temporary directory, removed at the end.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/served_snapshot.h"
#include "eval/snapshot_index_files.h"
#include "scratch_dir.h"
#include "suites.h"

static char dir[64];

static void read_file(const char *name, char *buf, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "r");
    ck_assert_ptr_nonnull(fp);
    size_t n = fread(buf, 1, len - 1, fp);
    buf[n] = '\0';
    fclose(fp);
}

START_TEST(index_names_parse_back)
{
    char path[128];
    uint64_t g = 0;
    ck_assert(snapshot_index_path("/s", 42, path, sizeof path));
    ck_assert_str_eq(path, "/s/index-42.bin");
    ck_assert(!snapshot_index_path("/s", 42, path, 10));
    ck_assert(snapshot_index_parse("index-42.bin", &g));
    ck_assert_uint_eq(g, 42);
    ck_assert(snapshot_index_parse("index-18446744073709551615.bin", &g));
    ck_assert_uint_eq(g, UINT64_MAX);
    ck_assert(!snapshot_index_parse("index-18446744073709551616.bin", &g));
    ck_assert(!snapshot_index_parse("index-42.bin.tmp", &g));
    ck_assert(!snapshot_index_parse("index-.bin", &g));
    ck_assert(!snapshot_index_parse("index--1.bin", &g));
    ck_assert(!snapshot_index_parse("index-4x.bin", &g));
    ck_assert(!snapshot_index_parse("snapshot.bin", &g));
    ck_assert(!snapshot_index_parse("pack-4.bin", &g));
}
END_TEST

START_TEST(removable_keeps_the_published_and_the_one_before)
{
    ck_assert(!snapshot_index_removable("index-7.bin", 7, 6));
    ck_assert(!snapshot_index_removable("index-6.bin", 7, 6));
    ck_assert(snapshot_index_removable("index-5.bin", 7, 6));
    ck_assert(snapshot_index_removable("index-8.bin", 7, 6)); /* a build that never published */
    ck_assert(snapshot_index_removable("index-7.bin.tmp", 7, 6));
    ck_assert(!snapshot_index_removable("index-7.bin", 7, 0));
    ck_assert(snapshot_index_removable("index-0.bin", 7, 0)); /* 0: no generation kept */
    ck_assert(snapshot_index_removable("index-3.bin", 0, 0));
    /* Never a file that is not a visible index's. */
    ck_assert(!snapshot_index_removable("snapshot.bin", 0, 0));
    ck_assert(!snapshot_index_removable("snapshot.bin.tmp", 0, 0));
    ck_assert(!snapshot_index_removable("pack-1.bin", 0, 0));
    ck_assert(!snapshot_index_removable("chunk-x-1-0.bin", 0, 0));
}
END_TEST

START_TEST(remove_deletes_only_what_no_one_needs)
{
    scratch_dir_make(dir, sizeof dir, "index");
    scratch_file_write(dir, "index-5.bin", "5");
    scratch_file_write(dir, "index-6.bin", "6");
    scratch_file_write(dir, "index-7.bin", "7");
    scratch_file_write(dir, "index-8.bin.tmp", "8");
    scratch_file_write(dir, "snapshot.bin", "4");
    scratch_file_write(dir, "pack-1.bin", "p");
    ck_assert_uint_eq(snapshot_index_remove(dir, 7, 6), 2);
    ck_assert(!scratch_file_exists(dir, "index-5.bin"));
    ck_assert(!scratch_file_exists(dir, "index-8.bin.tmp"));
    ck_assert(scratch_file_exists(dir, "index-6.bin"));
    ck_assert(scratch_file_exists(dir, "index-7.bin"));
    ck_assert(scratch_file_exists(dir, "snapshot.bin"));
    ck_assert(scratch_file_exists(dir, "pack-1.bin"));
    /* At a first start: every visible index is a leftover. */
    ck_assert_uint_eq(snapshot_index_remove(dir, 0, 0), 2);
    ck_assert(!scratch_file_exists(dir, "index-6.bin"));
    ck_assert(!scratch_file_exists(dir, "index-7.bin"));
    ck_assert(scratch_file_exists(dir, "snapshot.bin"));
    scratch_dir_remove(dir);
}
END_TEST

START_TEST(make_durable_renames_a_link_over_the_restart_name)
{
    char err[256], text[16];
    struct stat visible, restart;
    scratch_dir_make(dir, sizeof dir, "index");
    scratch_file_write(dir, "snapshot.bin", "old");
    scratch_file_write(dir, "index-9.bin", "new");
    scratch_file_write(dir, "snapshot.bin.tmp", "crash leftover");
    ck_assert_msg(snapshot_index_make_durable(dir, 9, err, sizeof err) == 0, "%s", err);
    read_file("snapshot.bin", text, sizeof text);
    ck_assert_str_eq(text, "new");
    ck_assert(scratch_file_exists(dir, "index-9.bin")); /* workers may still open it */
    ck_assert(!scratch_file_exists(dir, "snapshot.bin.tmp"));
    char path[512];
    snprintf(path, sizeof path, "%s/index-9.bin", dir);
    ck_assert_int_eq(stat(path, &visible), 0);
    snprintf(path, sizeof path, "%s/snapshot.bin", dir);
    ck_assert_int_eq(stat(path, &restart), 0);
    ck_assert_uint_eq(visible.st_ino, restart.st_ino); /* the same bytes, no copy */
    /* No visible index of that generation: snapshot.bin is left alone. */
    ck_assert_int_eq(snapshot_index_make_durable(dir, 10, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "index-10.bin"));
    read_file("snapshot.bin", text, sizeof text);
    ck_assert_str_eq(text, "new");
    scratch_dir_remove(dir);
}
END_TEST

Suite *suite_snapshot_index_files(void)
{
    Suite *s = suite_create("snapshot_index_files");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, index_names_parse_back);
    tcase_add_test(tc, removable_keeps_the_published_and_the_one_before);
    tcase_add_test(tc, remove_deletes_only_what_no_one_needs);
    tcase_add_test(tc, make_durable_renames_a_link_over_the_restart_name);
    suite_add_tcase(s, tc);
    return s;
}
