/*
 * snapshot_fixture.c - snapshot files for the unit tests (see
 * snapshot_fixture.h).
 */
#include "snapshot_fixture.h"

#include <check.h>
#include <stdio.h>
#include <sys/stat.h>

struct snapshot_builder *snapshot_fixture_builder(uint64_t generation, const char *org,
                                                  const char *env)
{
    struct snapshot_builder *b = snapshot_builder_new(generation);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(snapshot_builder_add_environment(b, env, org, "production"), 0);
    return b;
}

void snapshot_fixture_add_flag(struct snapshot_builder *b, const char *env, const char *key,
                               bool enabled, const char *serve_json)
{
    static const struct snapshot_variant_input variants[] = {{"a", "\"A\""}, {"b", "\"B\""}};
    struct snapshot_flag_input flag = {env, key,        key,      "string", enabled,
                                       "b", serve_json, variants, 2};
    ck_assert_msg(snapshot_builder_add_flag(b, &flag) == 0, "%s", snapshot_builder_error(b));
}

void snapshot_fixture_add_flag_serving(struct snapshot_builder *b, const char *env, const char *key,
                                       const char *variant)
{
    char serve_json[64];
    ck_assert_int_lt(snprintf(serve_json, sizeof serve_json, "{\"variant\": \"%s\"}", variant),
                     (int)sizeof serve_json);
    snapshot_fixture_add_flag(b, env, key, true, serve_json);
}

struct snapshot_builder *snapshot_fixture_two_orgs(uint64_t generation)
{
    struct snapshot_builder *b = snapshot_fixture_builder(generation, ORG1, ENV1);
    ck_assert_int_eq(snapshot_builder_add_environment(b, ENV2, ORG2, "production"), 0);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, KEY1, ENV1), 0);
    ck_assert_int_eq(snapshot_builder_add_sdk_key(b, KEY2, ENV2), 0);
    return b;
}

void snapshot_fixture_add_file_part(struct snapshot_builder *b, const char *dir, const char *org,
                                    const char *name, uint64_t generation)
{
    uint64_t length = snapshot_fixture_size(dir, name);
    ck_assert_msg(length != UINT64_MAX, "%s/%s: no such file", dir, name);
    ck_assert_int_eq(snapshot_builder_add_part(b, org, name, 0, length, generation), 0);
}

uint64_t snapshot_fixture_write(struct snapshot_builder *b, const char *dir, const char *name)
{
    char path[512], err[256];
    ck_assert_int_lt(snprintf(path, sizeof path, "%s/%s", dir, name), (int)sizeof path);
    ck_assert_msg(snapshot_builder_write(b, path, err, sizeof err) == 0, "%s", err);
    snapshot_builder_free(b);
    uint64_t length = snapshot_fixture_size(dir, name);
    ck_assert_uint_ne(length, UINT64_MAX);
    return length;
}

uint64_t snapshot_fixture_size(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    ck_assert_int_lt(snprintf(path, sizeof path, "%s/%s", dir, name), (int)sizeof path);
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

void snapshot_fixture_flip_byte(const char *dir, const char *name, uint64_t offset)
{
    char path[512];
    ck_assert_int_lt(snprintf(path, sizeof path, "%s/%s", dir, name), (int)sizeof path);
    FILE *fp = fopen(path, "r+b");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_eq(fseek(fp, (long)offset, SEEK_SET), 0);
    int c = fgetc(fp);
    ck_assert_int_ne(c, EOF);
    ck_assert_int_eq(fseek(fp, (long)offset, SEEK_SET), 0);
    ck_assert_int_ne(fputc(c ^ 0xFF, fp), EOF);
    ck_assert_int_eq(fclose(fp), 0);
}
