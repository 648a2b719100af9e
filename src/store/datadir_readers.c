/* datadir_readers.c — readers pinning a version, and removal that respects
 * them.
 *
 * Why it exists: a server or a query maps a version's files for as long as
 * it runs, while imports prune old versions. A shared flock on the version's
 * .readers.lock pins it; whoever removes a version first takes that lock
 * exclusively, so a pinned version is never taken away, and a version being
 * removed cannot be pinned. See datadir.h.
 */
#include "store/datadir_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int flock_retrying(int fd, int op)
{
    int rc;
    do
        rc = flock(fd, op);
    while (rc != 0 && errno == EINTR);
    return rc;
}

int datadir_pin(const char *version_dir, int *fd_out, char *err, size_t errlen)
{
    char path[4096];
    *fd_out = -1;
    if (datadir_path_join(path, sizeof path, version_dir, DATADIR_READERS_LOCK) != 0) {
        datadir_set_err(err, errlen, "path too long: %s", version_dir, 0);
        return -1;
    }
    /* read-only first: a reader without write access can pin a version
     * whose lock file the importer created */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if (stat(version_dir, &st) != 0) {
            datadir_set_err(err, errlen, "%s was removed", version_dir, 0);
            return -1;
        }
        datadir_set_err(err, errlen, "cannot open %s, so the version is not protected from pruning",
                        path, e);
        return 1;
    }
    if (flock_retrying(fd, LOCK_SH | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK) {
            datadir_set_err(err, errlen, "%s is being removed", version_dir, 0);
            return -1;
        }
        datadir_set_err(err, errlen, "cannot lock %s, so the version is not protected from pruning",
                        path, e);
        return 1;
    }
    /* A pruner may have taken the directory away between the open and the
     * lock: the lock only counts if its file is still the one at path. */
    struct stat held, linked;
    if (fstat(fd, &held) != 0 || stat(path, &linked) != 0 || held.st_dev != linked.st_dev ||
        held.st_ino != linked.st_ino) {
        close(fd);
        datadir_set_err(err, errlen, "%s was removed", version_dir, 0);
        return -1;
    }
    *fd_out = fd;
    return 0;
}

void datadir_unpin(int fd)
{
    if (fd >= 0)
        close(fd);   /* drops the shared lock */
}

/* Takes the exclusive lock of a directory about to be removed. 1 when a
 * reader pins it (nothing held); else 0, with the lock in *fd (-1 when no
 * lock file can be opened: the directory is then removed unguarded, as
 * whoever cannot create a file there cannot pin it either). The lock file is
 * created when absent, so that a reader creating it at the same moment
 * meets this lock instead of a file of its own. */
int datadir_lock_for_removal(int parent_fd, const char *name, int *fd)
{
    char rel[512];
    *fd = -1;
    if (snprintf(rel, sizeof rel, "%s/" DATADIR_READERS_LOCK, name) >= (int)sizeof rel)
        return 0;
    int lfd = openat(parent_fd, rel, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (lfd < 0)
        lfd = openat(parent_fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (lfd < 0)
        return 0;
    if (flock_retrying(lfd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(lfd);
        return e == EWOULDBLOCK ? 1 : 0;
    }
    *fd = lfd;
    return 0;
}

/* Removes the directory versions/<name> unless a reader pins it: 0 removed,
 * 1 in use (left alone), -1 failed. A version (`aside`) is first renamed to
 * .old-<name>-<pid> while the lock is held, so that no reader finds it, and
 * pins it, while its files go one by one. */
int datadir_remove_unpinned(int versions_fd, const char *name, bool aside)
{
    int lock_fd;
    if (datadir_lock_for_removal(versions_fd, name, &lock_fd) == 1)
        return 1;
    char moved[256];
    const char *victim = name;
    if (aside) {
        int n = snprintf(moved, sizeof moved, OLD_PREFIX "%s-%ld", name, (long)getpid());
        if (n > 0 && (size_t)n < sizeof moved && renameat(versions_fd, name, versions_fd, moved) == 0)
            victim = moved;
    }
    int rc = datadir_remove_at(versions_fd, victim);
    if (lock_fd >= 0)
        close(lock_fd);
    return rc;
}

