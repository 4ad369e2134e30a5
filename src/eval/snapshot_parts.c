/*
 * snapshot_parts.c - the writer's record of published part files (see
 * snapshot_parts.h).
 *
 * Invariant: no file that the last published index names is ever doomed,
 * and a doomed file outlives the publication that superseded it.
 */
#include "eval/snapshot_parts.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

#define PART_PREFIX "org-"
#define PART_SUFFIX ".bin"
#define TEMP_SUFFIX ".tmp"

void snapshot_parts_init(struct snapshot_parts *parts, const char *dir)
{
    memset(parts, 0, sizeof *parts);
    snprintf(parts->dir, sizeof parts->dir, "%s", dir);
}

void snapshot_parts_free(struct snapshot_parts *parts)
{
    free(parts->published);
    free(parts->doomed);
    parts->published = NULL;
    parts->doomed = NULL;
    parts->count = parts->doomed_count = 0;
}

bool snapshot_parts_name(struct snapshot_part_file *f)
{
    if (f->org[0] == '\0' || f->org[strcspn(f->org, "/.")] != '\0')
        return false;
    int n = snprintf(f->name, sizeof f->name, PART_PREFIX "%s-%" PRIu64 PART_SUFFIX, f->org,
                     f->generation);
    return n > 0 && (size_t)n < sizeof f->name;
}

static int compare_org(const void *key, const void *item)
{
    return strcmp(key, ((const struct snapshot_part_file *)item)->org);
}

const struct snapshot_part_file *snapshot_parts_find(const struct snapshot_parts *parts,
                                                     const char *org)
{
    if (parts->count == 0)
        return NULL;
    return bsearch(org, parts->published, parts->count, sizeof *parts->published, compare_org);
}

bool snapshot_parts_holds(void *ctx, const char *org, uint64_t generation)
{
    const struct snapshot_part_file *f = snapshot_parts_find(ctx, org);
    return f != NULL && f->generation == generation;
}

bool snapshot_parts_newer(const struct snapshot_parts *parts, const char *org, uint64_t generation)
{
    const struct snapshot_part_file *f = snapshot_parts_find(parts, org);
    return f != NULL && f->generation > generation;
}

/* True when name is the file of one of files (count, sorted by org). */
static bool named_in(const struct snapshot_part_file *files, size_t count, const char *name)
{
    const char *org = name + strlen(PART_PREFIX), *dash = strrchr(name, '-');
    char key[SNAPSHOT_PART_ORG_MAX];
    if (strncmp(name, PART_PREFIX, strlen(PART_PREFIX)) != 0 || dash == NULL || dash < org ||
        (size_t)(dash - org) >= sizeof key || count == 0)
        return false;
    memcpy(key, org, (size_t)(dash - org));
    key[dash - org] = '\0';
    const struct snapshot_part_file *f = bsearch(key, files, count, sizeof *files, compare_org);
    return f != NULL && strcmp(f->name, name) == 0;
}

static void doom(struct snapshot_parts *parts, const char *name)
{
    void *grown = realloc(parts->doomed, (parts->doomed_count + 1) * sizeof *parts->doomed);
    if (grown == NULL)
        return; /* the file stays: a leftover, swept at the next start */
    parts->doomed = grown;
    snprintf(parts->doomed[parts->doomed_count++], SNAPSHOT_PART_NAME_MAX, "%s", name);
}

void snapshot_parts_doom(struct snapshot_parts *parts, const char *name)
{
    doom(parts, name);
}

static void delete_doomed(struct snapshot_parts *parts, const struct snapshot_part_file *fresh,
                          size_t count)
{
    char path[4096 + SNAPSHOT_PART_NAME_MAX + 1];
    for (size_t i = 0; i < parts->doomed_count; i++) {
        if (named_in(fresh, count, parts->doomed[i]))
            continue;
        snprintf(path, sizeof path, "%s/%s", parts->dir, parts->doomed[i]);
        if (unlink(path) == 0)
            log_debug("removed the superseded snapshot part %s", parts->doomed[i]);
    }
    parts->doomed_count = 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Part files, and temporary files of any snapshot file, that fresh does
 * not name. */
static void doom_leftovers(struct snapshot_parts *parts, const struct snapshot_part_file *fresh,
                           size_t count)
{
    DIR *dir = opendir(parts->dir);
    if (dir == NULL)
        return;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        bool part = strncmp(e->d_name, PART_PREFIX, strlen(PART_PREFIX)) == 0 &&
                    ends_with(e->d_name, PART_SUFFIX);
        bool temp = (strncmp(e->d_name, PART_PREFIX, strlen(PART_PREFIX)) == 0 ||
                     strncmp(e->d_name, "snapshot", strlen("snapshot")) == 0) &&
                    ends_with(e->d_name, TEMP_SUFFIX);
        if ((part || temp) && !named_in(fresh, count, e->d_name) &&
            strlen(e->d_name) < SNAPSHOT_PART_NAME_MAX)
            doom(parts, e->d_name);
    }
    closedir(dir);
}

void snapshot_parts_published(struct snapshot_parts *parts, struct snapshot_part_file *fresh,
                              size_t count, bool sweep)
{
    delete_doomed(parts, fresh, count);
    for (size_t i = 0; i < parts->count; i++)
        if (!named_in(fresh, count, parts->published[i].name))
            doom(parts, parts->published[i].name);
    if (sweep)
        doom_leftovers(parts, fresh, count);
    free(parts->published);
    parts->published = fresh;
    parts->count = count;
}

int snapshot_parts_replaced(struct snapshot_parts *parts, const struct snapshot_part_file *changed,
                            size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (snapshot_parts_find(parts, changed[i].org) == NULL)
            return -1;
    char(*old)[SNAPSHOT_PART_NAME_MAX] = malloc((count ? count : 1) * sizeof *old);
    if (old == NULL)
        return -1;
    for (size_t i = 0; i < count; i++) {
        struct snapshot_part_file *f =
            (struct snapshot_part_file *)snapshot_parts_find(parts, changed[i].org);
        snprintf(old[i], sizeof old[i], "%s", f->name);
        *f = changed[i];
    }
    delete_doomed(parts, parts->published, parts->count);
    for (size_t i = 0; i < count; i++)
        if (!named_in(parts->published, parts->count, old[i]))
            doom(parts, old[i]);
    free(old);
    return 0;
}
