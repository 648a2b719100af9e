/* datadir_prune.c — removing old versions and leftovers of a data
 * directory.
 *
 * Why it exists: each import adds a version; pruning keeps the active one
 * and the newest others, removes incomplete versions and what interrupted
 * imports left (by the dead pid in their names), and leaves a version a
 * reader still pins marked .retired, for datadir_collect_retired once the
 * reader lets go. See datadir.h.
 */
#include "store/datadir_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Marks a version the pruner had to leave to its readers (see datadir.h). */
static void set_retired(int versions_fd, const char *name, bool retired)
{
    char rel[512];
    if (snprintf(rel, sizeof rel, "%s/" DATADIR_RETIRED, name) >= (int)sizeof rel)
        return;
    if (retired) {
        int fd = openat(versions_fd, rel, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0)
            close(fd);
    } else {
        unlinkat(versions_fd, rel, 0);
    }
}

/* The pid at the end of ".tmp-<v>-<pid>", ".old-<v>-<pid>", ".current-<pid>",
 * ".merge-<pid>". */
static pid_t trailing_pid(const char *name)
{
    const char *dash = strrchr(name, '-');
    if (!dash || !dash[1])
        return 0;
    char *end;
    long pid = strtol(dash + 1, &end, 10);
    if (*end != '\0' || pid <= 0)
        return 0;
    return (pid_t)pid;
}

static bool process_alive(pid_t pid)
{
    if (pid <= 0)
        return false;
    if (pid == getpid())
        return true;
    return kill(pid, 0) == 0 || errno == EPERM;
}

static bool is_stale_leftover(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0)
        return false;
    pid_t pid = trailing_pid(name);
    return pid > 0 && !process_alive(pid);
}

typedef struct version_entry {
    char name[DATADIR_VERSION_LEN + 1];
    uint64_t sequence;
} version_entry;

static int by_sequence_desc(const void *a, const void *b)
{
    const version_entry *x = a, *y = b;
    if (x->sequence != y->sequence)
        return x->sequence > y->sequence ? -1 : 1;
    return strcmp(x->name, y->name);
}

int datadir_remove_stale(const char *data_dir, int *removed, char *err, size_t errlen)
{
    char versions[4096], path[4096];
    int count = 0;
    if (datadir_versions_dir(data_dir, versions, sizeof versions, err, errlen) != 0)
        return -1;
    DIR *d = opendir(versions);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if ((is_stale_leftover(e->d_name, TMP_PREFIX) ||
                 is_stale_leftover(e->d_name, OLD_PREFIX)) &&
                datadir_remove_unpinned(dirfd(d), e->d_name, false) == 0)
                count++;
        }
        closedir(d);
    }
    d = opendir(data_dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (is_stale_leftover(e->d_name, LINK_PREFIX) &&
                datadir_path_join(path, sizeof path, data_dir, e->d_name) == 0 && unlink(path) == 0)
                count++;
            else if (e->d_type != DT_LNK && is_stale_leftover(e->d_name, DATADIR_MERGE_PREFIX) &&
                     datadir_path_join(path, sizeof path, data_dir, e->d_name) == 0 &&
                     datadir_remove_tree(path) == 0)
                count++;
        }
        closedir(d);
    }
    if (removed)
        *removed = count;
    return 0;
}

int datadir_prune(const char *data_dir, int keep, datadir_prune_result *res, char *err,
                  size_t errlen)
{
    datadir_prune_result r = {0, 0, 0};
    char versions[4096], path[4096];
    char active[DATADIR_VERSION_LEN + 1] = "";
    if (keep < 1)
        keep = 1;
    if (datadir_versions_dir(data_dir, versions, sizeof versions, err, errlen) != 0)
        return -1;
    bool have_active = datadir_current(data_dir, active) == 0;

    if (datadir_remove_stale(data_dir, &r.leftovers_removed, err, errlen) != 0)
        return -1;

    DIR *d = opendir(versions);
    if (!d) {
        datadir_set_err(err, errlen, "cannot open directory %s", versions, errno);
        return -1;
    }
    int vfd = dirfd(d);
    version_entry *list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (!datadir_is_version_name(e->d_name))
            continue;
        if (have_active && strcmp(e->d_name, active) == 0) {
            set_retired(vfd, e->d_name, false);
            continue;
        }
        if (datadir_path_join(path, sizeof path, versions, e->d_name) != 0)
            continue;
        datadir_marker m;
        if (datadir_read_marker(path, &m) != 0) {
            if (datadir_remove_unpinned(vfd, e->d_name, true) == 0)
                r.leftovers_removed++;
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            version_entry *grown = realloc(list, ncap * sizeof *list);
            if (!grown) {
                datadir_set_err(err, errlen, "out of memory listing %s", versions, 0);
                rc = -1;
                break;
            }
            list = grown;
            cap = ncap;
        }
        memcpy(list[n].name, e->d_name, DATADIR_VERSION_LEN + 1);
        list[n].sequence = m.sequence;
        n++;
    }
    if (rc == 0) {
        if (n > 1)
            qsort(list, n, sizeof *list, by_sequence_desc);
        size_t others_kept = (size_t)(keep - (have_active ? 1 : 0));
        for (size_t i = 0; i < n; i++) {
            if (i < others_kept) {
                set_retired(vfd, list[i].name, false);
                continue;
            }
            int removed = datadir_remove_unpinned(vfd, list[i].name, true);
            if (removed == 0) {
                r.versions_removed++;
            } else if (removed == 1) {
                /* a server or query still maps it: it goes when they let go */
                set_retired(vfd, list[i].name, true);
                r.versions_in_use++;
            }
        }
        if (datadir_fsync_path(versions, true, err, errlen) != 0)
            rc = -1;
    }
    closedir(d);
    free(list);
    if (res)
        *res = r;
    return rc;
}

int datadir_collect_retired(const char *data_dir, int *removed, int *still_pinned, char *err,
                            size_t errlen)
{
    int count = 0, pinned = 0, lock_fd = -1;
    if (removed)
        *removed = 0;
    if (still_pinned)
        *still_pinned = 0;
    int locked = datadir_lock(data_dir, false, &lock_fd, err, errlen);
    if (locked != 0)
        return locked;   /* 1: an import runs, and prunes itself */
    char versions[4096], active[DATADIR_VERSION_LEN + 1] = "";
    bool have_active = datadir_current(data_dir, active) == 0;
    int rc = 0, leftovers = 0;
    if (datadir_versions_dir(data_dir, versions, sizeof versions, err, errlen) != 0) {
        rc = -1;
    } else if (datadir_remove_stale(data_dir, &leftovers, err, errlen) != 0) {
        rc = -1;
    }
    DIR *d = rc == 0 ? opendir(versions) : NULL;
    if (rc == 0 && !d) {
        datadir_set_err(err, errlen, "cannot open directory %s", versions, errno);
        rc = -1;
    }
    if (d) {
        struct dirent *e;
        char rel[64];
        while ((e = readdir(d))) {
            if (!datadir_is_version_name(e->d_name) ||
                (have_active && strcmp(e->d_name, active) == 0))
                continue;
            snprintf(rel, sizeof rel, "%s/" DATADIR_RETIRED, e->d_name);
            struct stat st;
            if (fstatat(dirfd(d), rel, &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            int gone = datadir_remove_unpinned(dirfd(d), e->d_name, true);
            if (gone == 0)
                count++;
            else if (gone == 1)
                pinned++;
        }
        closedir(d);
        if (count + leftovers > 0 && datadir_fsync_path(versions, true, err, errlen) != 0)
            rc = -1;
    }
    datadir_unlock(lock_fd);
    if (removed)
        *removed = count + leftovers;
    if (still_pinned)
        *still_pinned = pinned;
    return rc;
}

