/* fd_io.c — transit/fd_io.h.
 *
 * Why it exists: see transit/fd_io.h.
 */
#include "transit/fd_io.h"

#include <errno.h>
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
