/*
 * snapshot_index_files.c - visible index names, their removal, and the
 * promotion of one to the restart index (see snapshot_index_files.h).
 *
 * Invariant: snapshot.bin changes only by the rename of a complete,
 * fsynced file over it.
 */
#include "eval/snapshot_index_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/served_snapshot.h"

#define INDEX_SUFFIX ".bin"

bool snapshot_index_path(const char *dir, uint64_t generation, char *buf, size_t len)
{
    int n =
        snprintf(buf, len, "%s/" SNAPSHOT_INDEX_PREFIX "%" PRIu64 INDEX_SUFFIX, dir, generation);
    return n > 0 && (size_t)n < len;
}

bool snapshot_index_parse(const char *name, uint64_t *generation)
{
    size_t prefix = strlen(SNAPSHOT_INDEX_PREFIX);
    if (strncmp(name, SNAPSHOT_INDEX_PREFIX, prefix) != 0)
        return false;
    const char *digits = name + prefix;
    if (*digits < '0' || *digits > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long g = strtoull(digits, &end, 10);
    if (errno != 0 || strcmp(end, INDEX_SUFFIX) != 0)
        return false;
    *generation = (uint64_t)g;
    return true;
}

bool snapshot_index_removable(const char *name, uint64_t keep, uint64_t previous)
{
    if (strncmp(name, SNAPSHOT_INDEX_PREFIX, strlen(SNAPSHOT_INDEX_PREFIX)) != 0)
        return false;
    uint64_t g;
    if (!snapshot_index_parse(name, &g))
        return true; /* a temporary file or an odd name of ours */
    return !((keep != 0 && g == keep) || (previous != 0 && g == previous));
}

size_t snapshot_index_remove(const char *dir, uint64_t keep, uint64_t previous)
{
    DIR *d = opendir(dir);
    size_t removed = 0;
    char path[4096 + 256 + 2];
    if (d == NULL)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!snapshot_index_removable(e->d_name, keep, previous))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int snapshot_index_make_durable(const char *dir, uint64_t generation, char *err, size_t errlen)
{
    char visible[4096 + 64], tmp[4096 + 64], restart[4096 + 64];
    if (!snapshot_index_path(dir, generation, visible, sizeof visible) ||
        (size_t)snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, SNAPSHOT_FILE_NAME) >= sizeof tmp ||
        (size_t)snprintf(restart, sizeof restart, "%s/%s", dir, SNAPSHOT_FILE_NAME) >=
            sizeof restart) {
        snprintf(err, errlen, "snapshot path too long");
        return -1;
    }
    if (fsync_path(visible, O_RDONLY) != 0) {
        snprintf(err, errlen, "fsync %s: %s", visible, strerror(errno));
        return -1;
    }
    unlink(tmp); /* a leftover of a crash between link and rename */
    if (link(visible, tmp) != 0) {
        snprintf(err, errlen, "link %s: %s", tmp, strerror(errno));
        return -1;
    }
    if (rename(tmp, restart) != 0) {
        snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (fsync_path(dir, O_RDONLY | O_DIRECTORY) != 0) {
        snprintf(err, errlen, "fsync %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}
