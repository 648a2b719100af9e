/* fd_io.c — transit/fd_io.h.
 *
 * Why it exists: see transit/fd_io.h.
 */
#include "transit/fd_io.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int fd_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int file_link_or_copy(const char *from, const char *to)
{
    unlink(to);
    if (link(from, to) == 0)
        return 0;
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        close(in);
        errno = e;
        return -1;
    }
    char buf[1 << 16];
    int rc = 0;
    for (;;) {
        ssize_t got = read(in, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 || (got > 0 && fd_write_all(out, buf, (size_t)got) != 0)) {
            rc = -1;
            break;
        }
        if (got == 0)
            break;
    }
    if (rc == 0 && fsync(out) != 0)
        rc = -1;
    int e = errno;
    if (close(out) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    close(in);
    if (rc != 0)
        unlink(to);
    errno = e;
    return rc;
}
