/* fd_io.h — all of a buffer to a file descriptor.
 *
 * Why it exists: write(2) may write less than it was given, or be
 * interrupted by a signal before writing anything; every file the stores,
 * the snapshot patches and the kept indexes write needs the same loop.
 */
#ifndef TRANSIT_FD_IO_H
#define TRANSIT_FD_IO_H

#include <stddef.h>

/* Writes len bytes of data to fd, retrying short and interrupted writes.
 * 0, or -1 with errno set (EIO when write returned 0). */
int fd_write_all(int fd, const void *data, size_t len);

#endif
