/*
 * scratch_dir.c - a throwaway directory for unit tests (see scratch_dir.h).
 */
#include "scratch_dir.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void scratch_dir_make(char *dir, size_t len, const char *name)
{
    ck_assert_int_lt(snprintf(dir, len, "/tmp/ensign-%s-XXXXXX", name), (int)len);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

void scratch_dir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    char path[512];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

bool scratch_file_exists(const char *dir, const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

void scratch_file_write(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_int_ge(fputs(text, fp), 0);
    ck_assert_int_eq(fclose(fp), 0);
}
