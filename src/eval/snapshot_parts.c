/*
 * snapshot_parts.c - the writer's record of published part files (see
 * snapshot_parts.h).
 *
 * Invariant: no file that the last published index names (nor the open
 * pack, nor, with durability lagging, the last durable index) is ever
 * deleted, and a doomed file outlives the publication that superseded it.
 */
#include "eval/snapshot_parts.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

#define PART_PREFIX "org-" /* an older ensignd's part files */
#define PACK_PREFIX "pack-"
#define CHUNK_PREFIX "chunk-" /* an older ensignd's chunk files */
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
    free(parts->doomed_at);
    free(parts->chunk_packs);
    free(parts->chunk_packs_before);
    parts->published = NULL;
    parts->doomed = NULL;
    parts->doomed_at = NULL;
    parts->chunk_packs = parts->chunk_packs_before = NULL;
    parts->count = parts->doomed_count = 0;
    parts->chunk_pack_count = parts->chunk_packs_before_count = 0;
}

void snapshot_parts_keep(struct snapshot_parts *parts, const char *keep)
{
    snprintf(parts->keep, sizeof parts->keep, "%s", keep != NULL ? keep : "");
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

/* Distinct pack names: few (a pack holds many parts), so a linear list. */
struct names {
    char (*names)[SNAPSHOT_PART_NAME_MAX];
    size_t count;
    bool partial; /* out of memory: some name is missing */
};

static bool names_has(const struct names *n, const char *name)
{
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->names[i], name) == 0)
            return true;
    return false;
}

static void names_add(struct names *n, const char *name)
{
    if (names_has(n, name))
        return;
    void *grown = realloc(n->names, (n->count + 1) * sizeof *n->names);
    if (grown == NULL) {
        n->partial = true;
        return;
    }
    n->names = grown;
    snprintf(n->names[n->count++], SNAPSHOT_PART_NAME_MAX, "%s", name);
}

/* The packs files (count) are in: a run of parts in one pack costs one
 * comparison each. */
static struct names packs_of(const struct snapshot_part_file *files, size_t count)
{
    struct names n = {0};
    const char *last = NULL;
    for (size_t i = 0; i < count; i++) {
        if (last != NULL && strcmp(last, files[i].name) == 0)
            continue;
        names_add(&n, files[i].name);
        last = files[i].name;
    }
    return n;
}

/* Whether name may be deleted: no fresh part is in it, and it is not the
 * open pack. */
static bool deletable(const struct snapshot_parts *parts, const struct names *fresh,
                      const char *name)
{
    return strcmp(name, parts->keep) != 0 && !names_has(fresh, name);
}

static void doom(struct snapshot_parts *parts, const char *name)
{
    for (size_t i = 0; i < parts->doomed_count; i++)
        if (strcmp(parts->doomed[i], name) == 0)
            return;
    void *grown = realloc(parts->doomed, (parts->doomed_count + 1) * sizeof *parts->doomed);
    if (grown == NULL)
        return; /* the file stays: a leftover, swept at the next start */
    parts->doomed = grown;
    grown = realloc(parts->doomed_at, (parts->doomed_count + 1) * sizeof *parts->doomed_at);
    if (grown == NULL)
        return;
    parts->doomed_at = grown;
    parts->doomed_at[parts->doomed_count] = parts->publications;
    snprintf(parts->doomed[parts->doomed_count++], SNAPSHOT_PART_NAME_MAX, "%s", name);
}

/* Adds the count names of list to n. */
static void names_add_all(struct names *n, const char (*list)[SNAPSHOT_PART_NAME_MAX], size_t count)
{
    for (size_t i = 0; i < count; i++)
        names_add(n, list[i]);
}

void snapshot_parts_set_chunks(struct snapshot_parts *parts,
                               const struct snapshot_part_file *chunks, size_t count)
{
    parts->chunks_unknown = chunks == NULL && count > 0;
    struct names n = packs_of(chunks, chunks != NULL ? count : 0);
    if (parts->chunk_packs_before == NULL) {
        parts->chunk_packs_before = parts->chunk_packs;
        parts->chunk_packs_before_count = parts->chunk_pack_count;
    } else { /* set again before a publication consumed the last: both count as before */
        struct names before = {.names = parts->chunk_packs_before,
                               .count = parts->chunk_packs_before_count};
        names_add_all(&before, parts->chunk_packs, parts->chunk_pack_count);
        free(parts->chunk_packs);
        parts->chunk_packs_before = before.names;
        parts->chunk_packs_before_count = before.count;
    }
    parts->chunk_packs = n.names;
    parts->chunk_pack_count = n.count;
    parts->chunks_unknown |= n.partial; /* a pack of chunks might be taken for unnamed */
}

/* The last publication that is durable. */
static uint64_t durable_publication(const struct snapshot_parts *parts)
{
    return parts->lagging ? parts->durable : parts->publications;
}

/* Deletes the doomed files a later publication superseded and the
 * durable index no longer names; those still waiting stay doomed. */
static void delete_doomed(struct snapshot_parts *parts, const struct names *fresh)
{
    char path[4096 + SNAPSHOT_PART_NAME_MAX + 1];
    size_t kept = 0;
    for (size_t i = 0; i < parts->doomed_count; i++) {
        if (!deletable(parts, fresh, parts->doomed[i]))
            continue; /* named again: not doomed any more */
        uint64_t at = parts->doomed_at[i];
        if (at >= parts->publications || at > durable_publication(parts)) {
            memmove(parts->doomed[kept], parts->doomed[i], sizeof parts->doomed[i]);
            parts->doomed_at[kept++] = at;
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", parts->dir, parts->doomed[i]);
        if (unlink(path) == 0)
            log_debug("removed the superseded snapshot file %s", parts->doomed[i]);
    }
    parts->doomed_count = kept;
}

void snapshot_parts_lag_durability(struct snapshot_parts *parts)
{
    parts->lagging = true;
    parts->durable = parts->publications;
}

void snapshot_parts_durable(struct snapshot_parts *parts)
{
    parts->durable = parts->publications;
    struct names named = packs_of(parts->published, parts->count);
    names_add_all(&named, parts->chunk_packs, parts->chunk_pack_count);
    named.partial |= parts->chunks_unknown;
    if (!named.partial)
        delete_doomed(parts, &named);
    free(named.names);
}

bool snapshot_parts_doomed(const struct snapshot_parts *parts, const char *name)
{
    for (size_t i = 0; i < parts->doomed_count; i++)
        if (strcmp(parts->doomed[i], name) == 0)
            return true;
    return false;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A chunk file of an older ensignd: no index this one writes or reads
 * names it, nor does any worker of it map one, so it goes at once. */
static void delete_now(struct snapshot_parts *parts, const char *name)
{
    char path[4096 + SNAPSHOT_PART_NAME_MAX + 1];
    snprintf(path, sizeof path, "%s/%s", parts->dir, name);
    if (unlink(path) == 0)
        log_info("removed the chunk file %s of an older ensignd", name);
}

/* Pack files, per-organization part and chunk files (an older ensignd's), and
 * temporary files of any snapshot file, that fresh does not name. */
static void doom_leftovers(struct snapshot_parts *parts, const struct names *fresh)
{
    DIR *dir = opendir(parts->dir);
    if (dir == NULL)
        return;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        const char *n = e->d_name;
        bool ours = (starts_with(n, PART_PREFIX) || starts_with(n, PACK_PREFIX) ||
                     starts_with(n, CHUNK_PREFIX)) &&
                    ends_with(n, PART_SUFFIX);
        bool temp = (starts_with(n, PART_PREFIX) || starts_with(n, CHUNK_PREFIX) ||
                     starts_with(n, "snapshot")) &&
                    ends_with(n, TEMP_SUFFIX);
        if ((ours || temp) && deletable(parts, fresh, n) && strlen(n) < SNAPSHOT_PART_NAME_MAX)
            starts_with(n, CHUNK_PREFIX) ? delete_now(parts, n) : doom(parts, n);
    }
    closedir(dir);
}

/* The packs before named (and fresh, the published parts now, no longer
 * do) are doomed; those doomed by the previous publication are deleted. */
static void retire(struct snapshot_parts *parts, struct names *before, bool sweep)
{
    struct names named = packs_of(parts->published, parts->count);
    names_add_all(&named, parts->chunk_packs, parts->chunk_pack_count);
    named.partial |= parts->chunks_unknown;
    names_add_all(before, parts->chunk_packs_before, parts->chunk_packs_before_count);
    free(parts->chunk_packs_before);
    parts->chunk_packs_before = NULL;
    parts->chunk_packs_before_count = 0;
    if (!named.partial) { /* else a pack named might be taken for unnamed: nothing goes */
        delete_doomed(parts, &named);
        for (size_t i = 0; i < before->count; i++)
            if (deletable(parts, &named, before->names[i]))
                doom(parts, before->names[i]);
        if (sweep)
            doom_leftovers(parts, &named);
    }
    free(named.names);
    free(before->names);
}

void snapshot_parts_published(struct snapshot_parts *parts, struct snapshot_part_file *fresh,
                              size_t count, bool sweep)
{
    struct names before = packs_of(parts->published, parts->count);
    parts->publications++;
    free(parts->published);
    parts->published = fresh;
    parts->count = count;
    retire(parts, &before, sweep);
}

int snapshot_parts_replaced(struct snapshot_parts *parts, const struct snapshot_part_file *changed,
                            size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (snapshot_parts_find(parts, changed[i].org) == NULL)
            return -1;
    struct names before = packs_of(parts->published, parts->count);
    parts->publications++;
    for (size_t i = 0; i < count; i++)
        *(struct snapshot_part_file *)snapshot_parts_find(parts, changed[i].org) = changed[i];
    retire(parts, &before, false);
    return 0;
}
