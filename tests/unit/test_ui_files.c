/*
 * test_ui_files.c - the dashboard's files (http/ui_files.h) and the
 * request-side checks of their route (http/ui_route.h): loading a tree
 * (names kept, hidden files, symbolic links and other characters left
 * out, gzip only when smaller, strong ETags that follow the bytes),
 * finding by name, the limits, and the Accept-Encoding and If-None-Match
 * rules.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "http/ui_files.h"
#include "http/ui_route.h"
#include "scratch_dir.h"
#include "suites.h"

static char root[64];

static void make_tree(void)
{
    snprintf(root, sizeof root, "/tmp/ensign-ui-test.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    char path[256];
    snprintf(path, sizeof path, "%s/lib", root);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    char big[4096];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    scratch_file_write(root, "index.html", "<!doctype html><title>x</title>");
    scratch_file_write(root, "app.js", big);
    scratch_file_write(root, "lib/view.js", "export const x = 1;\n");
    scratch_file_write(root, ".hidden", "secret");
    scratch_file_write(root, "bad name.js", "no");
    snprintf(path, sizeof path, "%s/link.js", root);
    ck_assert_int_eq(symlink("/etc/passwd", path), 0);
}

static void remove_tree(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_load_and_find)
{
    make_tree();
    char err[256] = "";
    struct ui_files *ui = ui_files_load(root, err, sizeof err);
    ck_assert_msg(ui != NULL, "%s", err);
    ck_assert_uint_eq(ui->count, 3); /* no hidden file, no odd name, no link */
    const struct ui_file *index = ui_files_find(ui, "index.html", 10);
    ck_assert_ptr_nonnull(index);
    ck_assert_str_eq(index->content_type, "text/html; charset=utf-8");
    ck_assert_ptr_null(index->gz); /* too small to gain */
    const struct ui_file *app = ui_files_find(ui, "app.js", 6);
    ck_assert_ptr_nonnull(app);
    ck_assert_ptr_nonnull(app->gz);
    ck_assert_uint_lt(app->gz_len, app->len);
    char plain[4096];
    uLongf plain_len = sizeof plain;
    z_stream z = {0};
    ck_assert_int_eq(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (Bytef *)app->gz;
    z.avail_in = (uInt)app->gz_len;
    z.next_out = (Bytef *)plain;
    z.avail_out = (uInt)plain_len;
    ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
    ck_assert_uint_eq(z.total_out, app->len);
    ck_assert_int_eq(memcmp(plain, app->body, app->len), 0);
    inflateEnd(&z);
    ck_assert_str_eq(ui_files_find(ui, "lib/view.js", 11)->name, "lib/view.js");
    ck_assert_int_eq(strlen(app->etag), 34);
    ck_assert_int_eq(app->etag[0], '"');
    ck_assert_str_ne(app->etag, app->etag_gz);
    ck_assert_ptr_null(ui_files_find(ui, ".hidden", 7));
    ck_assert_ptr_null(ui_files_find(ui, "link.js", 7));
    ck_assert_ptr_null(ui_files_find(ui, "app.j", 5));
    ck_assert_ptr_null(ui_files_find(ui, "app.jsx", 7));
    ck_assert_ptr_null(ui_files_find(ui, "../app.js", 9));
    ck_assert_ptr_null(ui_files_find(ui, "lib", 3));
    ck_assert_ptr_null(ui_files_find(ui, "", 0));
    ck_assert_ptr_nonnull(ui_files_find(ui, "app.js?x", 6)); /* the length decides */
    char etag[UI_ETAG_MAX];
    snprintf(etag, sizeof etag, "%s", app->etag);
    ui_files_free(ui);
    scratch_file_write(root, "app.js", "changed");
    ui = ui_files_load(root, err, sizeof err);
    ck_assert_ptr_nonnull(ui);
    ck_assert_str_ne(ui_files_find(ui, "app.js", 6)->etag, etag);
    ui_files_free(ui);
    remove_tree();
}
END_TEST

START_TEST(test_missing_directory)
{
    char err[256] = "";
    ck_assert_ptr_null(ui_files_load("/nonexistent/ensign-ui", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/ensign-ui"));
    ui_files_free(NULL);
    ck_assert_ptr_null(ui_files_find(NULL, "index.html", 10));
}
END_TEST

START_TEST(test_accepts_gzip)
{
    ck_assert(ui_accepts_gzip("gzip"));
    ck_assert(ui_accepts_gzip("gzip, deflate, br"));
    ck_assert(ui_accepts_gzip("br;q=1.0, GZIP;q=0.5"));
    ck_assert(ui_accepts_gzip("*"));
    ck_assert(ui_accepts_gzip("deflate, gzip ; q=0.001"));
    ck_assert(!ui_accepts_gzip(NULL));
    ck_assert(!ui_accepts_gzip(""));
    ck_assert(!ui_accepts_gzip("gzip;q=0"));
    ck_assert(!ui_accepts_gzip("gzip;q=0.000"));
    ck_assert(!ui_accepts_gzip("deflate, br"));
    ck_assert(!ui_accepts_gzip("x-gzip"));
    ck_assert(!ui_accepts_gzip("gzipx"));
    ck_assert(!ui_accepts_gzip("identity, *;q=0"));
}
END_TEST

START_TEST(test_etag_matches)
{
    const char *tag = "\"0123abcd\"";
    ck_assert(ui_etag_matches("\"0123abcd\"", tag));
    ck_assert(ui_etag_matches("W/\"0123abcd\"", tag));
    ck_assert(ui_etag_matches("\"x\", \"0123abcd\"", tag));
    ck_assert(ui_etag_matches("*", tag));
    ck_assert(!ui_etag_matches("\"0123abc\"", tag));
    ck_assert(!ui_etag_matches("\"0123abcd-gz\"", tag));
    ck_assert(!ui_etag_matches("", tag));
    ck_assert(!ui_etag_matches(NULL, tag));
}
END_TEST

START_TEST(test_csp_is_the_contract)
{
    ck_assert_str_eq(ui_content_security_policy,
                     "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' "
                     "data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
                     "form-action 'self'");
}
END_TEST

/* Each form's header lines: the ETag of its bytes, the caching and
 * security headers, Content-Encoding only on the gzip bytes. */
START_TEST(test_head_lines_of_each_form)
{
    make_tree();
    char err[256];
    struct ui_files *ui = ui_files_load(root, err, sizeof err);
    ck_assert_msg(ui != NULL, "%s", err);
    for (size_t i = 0; i < ui->count; i++) {
        const struct ui_file *f = &ui->files[i];
        const char *etags[UI_HEAD_FORMS] = {f->etag, f->etag_gz, f->etag_gz};
        for (int form = 0; form < UI_HEAD_FORMS; form++) {
            char want[1024];
            snprintf(want, sizeof want,
                     "ETag: %s\r\nCache-Control: no-cache\r\nVary: Accept-Encoding\r\n"
                     "Content-Security-Policy: %s\r\nX-Content-Type-Options: nosniff\r\n"
                     "Referrer-Policy: no-referrer\r\n%s",
                     etags[form], ui_content_security_policy,
                     form == UI_HEAD_GZIP ? "Content-Encoding: gzip\r\n" : "");
            ck_assert_uint_eq(f->head_len[form], strlen(want));
            ck_assert_mem_eq(f->head[form], want, strlen(want));
        }
    }
    ui_files_free(ui);
    remove_tree();
}
END_TEST

Suite *suite_ui_files(void)
{
    Suite *s = suite_create("ui_files");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_load_and_find);
    tcase_add_test(tc, test_missing_directory);
    tcase_add_test(tc, test_accepts_gzip);
    tcase_add_test(tc, test_etag_matches);
    tcase_add_test(tc, test_csp_is_the_contract);
    tcase_add_test(tc, test_head_lines_of_each_form);
    suite_add_tcase(s, tc);
    return s;
}
