/* datadir.c — versions and atomic activation of a data directory.
 *
 * Why it exists: the importer's crash-safety rests on three POSIX facts used
 * here and nowhere else: rename() of a directory is atomic, rename() of a
 * symlink over another is atomic, and nothing is durable until it and its
 * directory are fsynced. See datadir.h for the layout. Readers pinning a
 * version are in datadir_readers.c, pruning old versions in datadir_prune.c.
 */
#define _GNU_SOURCE /* renameat2 (RENAME_EXCHANGE) on Linux */
#include "store/datadir_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void datadir_set_err(char *err, size_t errlen, const char *fmt, const char *a, int e)
{
    if (!err || errlen == 0)
        return;
    char msg[256];
    snprintf(msg, sizeof msg, fmt, a);
    if (e)
        snprintf(err, errlen, "%s: %s", msg, strerror(e));
    else
        snprintf(err, errlen, "%s", msg);
}

bool datadir_is_version_name(const char *name)
{
    size_t i = 0;
    for (; name[i]; i++) {
        char c = name[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return i == DATADIR_VERSION_LEN;
}

int datadir_path_join(char *out, size_t outlen, const char *a, const char *b)
{
    int n = snprintf(out, outlen, "%s/%s", a, b);
    return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

int datadir_versions_dir(const char *data_dir, char *out, size_t outlen, char *err, size_t errlen)
{
    if (datadir_path_join(out, outlen, data_dir, "versions") == 0)
        return 0;
    datadir_set_err(err, errlen, "data directory path too long: %s", data_dir, 0);
    return -1;
}

int datadir_version_path(const char *data_dir, const char *version, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/versions/%s", data_dir, version);
    return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

int datadir_tmp_path(const char *data_dir, const char *version, pid_t pid, char *out,
                     size_t outlen)
{
    int n = snprintf(out, outlen, "%s/versions/" TMP_PREFIX "%s-%ld", data_dir, version,
                     (long)pid);
    return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

static int mkdir_if_absent(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0755) == 0)
        return 0;
    int e = errno;
    struct stat st;
    if (e == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    datadir_set_err(err, errlen, "cannot create directory %s", path, e == EEXIST ? ENOTDIR : e);
    return -1;
}

int datadir_fsync_path(const char *path, bool directory, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | (directory ? O_DIRECTORY : 0) | O_CLOEXEC);
    if (fd < 0) {
        datadir_set_err(err, errlen, "cannot open %s to fsync it", path, errno);
        return -1;
    }
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0) {
        datadir_set_err(err, errlen, "fsync %s failed", path, e);
        return -1;
    }
    return 0;
}

int datadir_prepare(const char *data_dir, char *err, size_t errlen)
{
    char versions[4096];
    if (datadir_versions_dir(data_dir, versions, sizeof versions, err, errlen) != 0)
        return -1;
    /* mkdir -p: create missing parents of the data directory too */
    char partial[4096];
    snprintf(partial, sizeof partial, "%s", data_dir);
    for (char *p = partial + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(partial, 0755) != 0 && errno != EEXIST) {
            datadir_set_err(err, errlen, "cannot create directory %s", partial, errno);
            return -1;
        }
        *p = '/';
    }
    if (mkdir_if_absent(data_dir, err, errlen) != 0)
        return -1;
    return mkdir_if_absent(versions, err, errlen);
}

int datadir_lock(const char *data_dir, bool wait, int *fd_out, char *err, size_t errlen)
{
    char path[4096];
    if (datadir_path_join(path, sizeof path, data_dir, ".import.lock") != 0) {
        datadir_set_err(err, errlen, "data directory path too long: %s", data_dir, 0);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        datadir_set_err(err, errlen, "cannot open lock file %s", path, errno);
        return -1;
    }
    for (;;) {
        if (flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) == 0)
            break;
        if (errno == EINTR)
            continue;
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return 1;
        datadir_set_err(err, errlen, "cannot lock %s", path, e);
        return -1;
    }
    *fd_out = fd;
    return 0;
}

void datadir_unlock(int fd)
{
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
}

int datadir_current(const char *data_dir, char version[DATADIR_VERSION_LEN + 1])
{
    char path[4096], target[4096];
    if (datadir_path_join(path, sizeof path, data_dir, "current") != 0)
        return -1;
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0)
        return -1;
    target[n] = '\0';
    while (n > 1 && target[n - 1] == '/')
        target[--n] = '\0';
    const char *base = strrchr(target, '/');
    if (!base)
        return -1;
    size_t dirlen = (size_t)(base - target);
    const char *parent = target;
    for (const char *p = target; p < base; p++)
        if (*p == '/')
            parent = p + 1;
    if ((size_t)(base - parent) != strlen("versions") || strncmp(parent, "versions", 8) != 0 ||
        dirlen < 8)
        return -1;
    base++;
    if (!datadir_is_version_name(base))
        return -1;
    memcpy(version, base, DATADIR_VERSION_LEN + 1);
    return 0;
}

/* ---------------------------------------------------------------- marker */

int datadir_read_marker(const char *version_dir, datadir_marker *m)
{
    char path[4096];
    if (datadir_path_join(path, sizeof path, version_dir, DATADIR_MARKER) != 0)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    memset(m, 0, sizeof *m);
    char line[256];
    int have_magic = 0, have_version = 0, have_sequence = 0;
    while (fgets(line, sizeof line, f)) {
        char key[32], value[128];
        if (sscanf(line, "%31s %127s", key, value) != 2)
            continue;
        if (strcmp(key, "transitd-version-dir") == 0)
            have_magic = 1;
        else if (strcmp(key, "version") == 0 && datadir_is_version_name(value)) {
            memcpy(m->version, value, DATADIR_VERSION_LEN + 1);
            have_version = 1;
        } else if (strcmp(key, "sequence") == 0) {
            char *end;
            m->sequence = strtoull(value, &end, 10);
            have_sequence = (*end == '\0');
        } else if (strcmp(key, "imported_at") == 0)
            m->imported_at = strtoll(value, NULL, 10);
        else if (strcmp(key, "builder") == 0)
            snprintf(m->builder, sizeof m->builder, "%s", value);
        else if (strcmp(key, "feed_bytes") == 0)
            m->feed_bytes = strtoull(value, NULL, 10);
        else if (strcmp(key, "shapes_input") == 0 && strlen(value) == 64)
            memcpy(m->shapes_input, value, 65);
        else if (strcmp(key, "shapes_rows") == 0)
            m->shapes_rows = strtoull(value, NULL, 10);
    }
    fclose(f);
    return (have_magic && have_version && have_sequence) ? 0 : -1;
}

int datadir_write_marker(const char *version_dir, const datadir_marker *m, char *err,
                         size_t errlen)
{
    char tmp[4096], path[4096];
    if (datadir_path_join(tmp, sizeof tmp, version_dir, DATADIR_MARKER ".tmp") != 0 ||
        datadir_path_join(path, sizeof path, version_dir, DATADIR_MARKER) != 0) {
        datadir_set_err(err, errlen, "path too long: %s", version_dir, 0);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        datadir_set_err(err, errlen, "cannot create %s", tmp, errno);
        return -1;
    }
    char text[512];
    int n = snprintf(text, sizeof text,
                     "transitd-version-dir 1\nversion %s\nsequence %llu\nimported_at %lld\n"
                     "builder %s\nfeed_bytes %llu\n",
                     m->version, (unsigned long long)m->sequence, (long long)m->imported_at,
                     m->builder[0] ? m->builder : "unknown", (unsigned long long)m->feed_bytes);
    if (m->shapes_input[0] && n > 0 && (size_t)n < sizeof text)
        n += snprintf(text + n, sizeof text - (size_t)n, "shapes_input %s\nshapes_rows %llu\n", m->shapes_input,
                      (unsigned long long)m->shapes_rows);
    ssize_t w = write(fd, text, (size_t)n);
    int e = errno;
    if (w != n || fsync(fd) != 0) {
        if (w == n)
            e = errno;
        close(fd);
        unlink(tmp);
        datadir_set_err(err, errlen, "cannot write %s", tmp, w >= 0 && w != n ? EIO : e);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        datadir_set_err(err, errlen, "cannot rename marker into %s", path, e);
        return -1;
    }
    return datadir_fsync_path(version_dir, true, err, errlen);
}

uint64_t datadir_next_sequence(const char *data_dir)
{
    char versions[4096], dir[4096];
    if (datadir_versions_dir(data_dir, versions, sizeof versions, NULL, 0) != 0)
        return 1;
    DIR *d = opendir(versions);
    if (!d)
        return 1;
    uint64_t max = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!datadir_is_version_name(e->d_name))
            continue;
        datadir_marker m;
        if (datadir_path_join(dir, sizeof dir, versions, e->d_name) == 0 &&
            datadir_read_marker(dir, &m) == 0 && m.sequence > max)
            max = m.sequence;
    }
    closedir(d);
    return max + 1;
}

bool datadir_may_hold_feed(const char *data_dir, const char *builder, uint64_t feed_bytes)
{
    char versions[4096], dir[4096];
    if (datadir_versions_dir(data_dir, versions, sizeof versions, NULL, 0) != 0)
        return false;
    DIR *d = opendir(versions);
    if (!d)
        return false;
    bool may = false;
    struct dirent *e;
    while (!may && (e = readdir(d))) {
        datadir_marker m;
        may = datadir_is_version_name(e->d_name) &&
              datadir_path_join(dir, sizeof dir, versions, e->d_name) == 0 &&
              datadir_read_marker(dir, &m) == 0 && strcmp(m.builder, builder) == 0 &&
              (m.feed_bytes == 0 || m.feed_bytes == feed_bytes);
    }
    closedir(d);
    return may;
}

/* ---------------------------------------------------------------- files */

int datadir_sync_dir(const char *dir, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        datadir_set_err(err, errlen, "cannot open directory %s", dir, errno);
        return -1;
    }
    int dfd = dirfd(d);
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        int fd = openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            datadir_set_err(err, errlen, "cannot fsync %s", path, errno);
            rc = -1;
        }
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
    if (rc != 0)
        return rc;
    return datadir_fsync_path(dir, true, err, errlen);
}

int datadir_remove_at(int parent_fd, const char *name)
{
    if (unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (datadir_remove_at(fd, e->d_name) != 0)
            rc = -1;
    }
    closedir(d);
    if (unlinkat(parent_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        rc = -1;
    return rc;
}

int datadir_remove_tree(const char *path)
{
    return datadir_remove_at(AT_FDCWD, path);
}

uint64_t datadir_dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    uint64_t total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

/* ---------------------------------------------------------------- install, activate */

/* Swaps two paths atomically where the platform can; -1 with errno else. */
static int exchange_paths(const char *a, const char *b)
{
#if defined(__linux__) && defined(RENAME_EXCHANGE)
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
#elif defined(__APPLE__) && defined(RENAME_SWAP)
    return renamex_np(a, b, RENAME_SWAP);
#else
    (void)a;
    (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

/* Removes the directory a re-installed version replaced, now at `path`
 * inside `versions`; one a reader still pins becomes .old-<v>-<pid>, which
 * datadir_remove_stale takes once this process is gone and the reader let
 * go of it. */
static void remove_replaced(const char *versions, const char *path, const char *version)
{
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    int vfd = open(versions, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (vfd < 0)
        return;
    int lock_fd;
    if (datadir_lock_for_removal(vfd, name, &lock_fd) == 1) {
        char aside[256];
        int n = snprintf(aside, sizeof aside, OLD_PREFIX "%s-%ld", version, (long)getpid());
        if (n > 0 && (size_t)n < sizeof aside && strcmp(aside, name) != 0)
            renameat(vfd, name, vfd, aside);
    } else {
        datadir_remove_at(vfd, name);
        if (lock_fd >= 0)
            close(lock_fd);
    }
    close(vfd);
}

int datadir_install(const char *data_dir, const char *tmp_dir, const char *version, char *err,
                    size_t errlen)
{
    char versions[4096], target[4096];
    if (datadir_path_join(versions, sizeof versions, data_dir, "versions") != 0 ||
        datadir_version_path(data_dir, version, target, sizeof target) != 0) {
        datadir_set_err(err, errlen, "data directory path too long: %s", data_dir, 0);
        return -1;
    }
    /* the lock file readers pin the version with, there from the start so
     * that readers without write access can pin it too */
    char lock_path[4096];
    if (datadir_path_join(lock_path, sizeof lock_path, tmp_dir, DATADIR_READERS_LOCK) == 0) {
        int lfd = open(lock_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (lfd >= 0)
            close(lfd);
    }
    struct stat st;
    if (lstat(target, &st) != 0) {
        if (rename(tmp_dir, target) != 0) {
            datadir_set_err(err, errlen, "cannot rename the new version into %s", target, errno);
            return -1;
        }
    } else if (exchange_paths(tmp_dir, target) == 0) {
        /* tmp_dir now holds the replaced directory */
        if (datadir_fsync_path(versions, true, err, errlen) != 0)
            return -1;
        remove_replaced(versions, tmp_dir, version);
    } else {
        /* No atomic exchange here: move the old one aside first. */
        char aside[4096];
        int n = snprintf(aside, sizeof aside, "%s/" OLD_PREFIX "%s-%ld", versions, version,
                         (long)getpid());
        if (n < 0 || (size_t)n >= sizeof aside || rename(target, aside) != 0) {
            datadir_set_err(err, errlen, "cannot move the old %s aside", target, errno);
            return -1;
        }
        if (rename(tmp_dir, target) != 0) {
            int e = errno;
            rename(aside, target);
            datadir_set_err(err, errlen, "cannot rename the new version into %s", target, e);
            return -1;
        }
        if (datadir_fsync_path(versions, true, err, errlen) != 0)
            return -1;
        remove_replaced(versions, aside, version);
    }
    return datadir_fsync_path(versions, true, err, errlen);
}

int datadir_activate(const char *data_dir, const char *version, char *err, size_t errlen)
{
    char link[4096], current[4096], target[64];
    int n = snprintf(link, sizeof link, "%s/" LINK_PREFIX "%ld", data_dir, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof link ||
        datadir_path_join(current, sizeof current, data_dir, "current") != 0) {
        datadir_set_err(err, errlen, "data directory path too long: %s", data_dir, 0);
        return -1;
    }
    if (!datadir_is_version_name(version)) {
        datadir_set_err(err, errlen, "not a version name: %s", version, 0);
        return -1;
    }
    snprintf(target, sizeof target, "versions/%s", version);
    /* a version the pruner left to its readers is wanted again */
    char retired[4096];
    if (snprintf(retired, sizeof retired, "%s/versions/%s/" DATADIR_RETIRED, data_dir, version) <
        (int)sizeof retired)
        unlink(retired);
    if (unlink(link) != 0 && errno != ENOENT) {
        datadir_set_err(err, errlen, "cannot remove %s", link, errno);
        return -1;
    }
    if (symlink(target, link) != 0) {
        datadir_set_err(err, errlen, "cannot create symlink %s", link, errno);
        return -1;
    }
    if (rename(link, current) != 0) {
        int e = errno;
        unlink(link);
        if (e == EISDIR || e == ENOTEMPTY || e == EEXIST)
            datadir_set_err(err, errlen,
                            "%s is a directory, not the symlink transitd manages; move it away",
                            current, 0);
        else
            datadir_set_err(err, errlen, "cannot switch %s", current, e);
        return -1;
    }
    return datadir_fsync_path(data_dir, true, err, errlen);
}

