/* cli_files.c — the file steps several subcommands share: a directory with
 * its parents, and a file replaced whole or not at all.
 *
 * Why it exists: `cert new` and `export` both write files that a running
 * server reads on its own schedule (a certificate on SIGHUP, a manifest a
 * mirror serves), so each is written to a temporary name, fsynced and
 * renamed into place: a reader never sees half a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transit/cli.h"

bool cli_make_directories(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return false;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return false;
        buf[i] = saved;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return false;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return false;
    }
    return true;
}

bool cli_write_file_atomically(const char *path, const void *data, size_t len, mode_t mode, char *err,
                               size_t cap)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        snprintf(err, cap, "cannot create %s: %s", tmp, strerror(errno));
        return false;
    }
    const char *p = data;
    size_t done = 0;
    bool ok = true;
    while (ok && done < len) {
        ssize_t w = write(fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        if (ok)
            done += (size_t)w;
    }
    ok = ok && fchmod(fd, mode) == 0 && fsync(fd) == 0;
    if (close(fd) != 0)
        ok = false;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
}
