/* fd_io.h — all of a buffer to a file descriptor; a version's file linked
 * or copied.
 *
 * Why it exists: write(2) may write less than it was given, or be
 * interrupted by a signal before writing anything; every file the stores,
 * the snapshot patches and the kept indexes write needs the same loop. And
 * a version's files are never written again once complete, so another
 * place that needs one (an export, a store reused by the next import)
 * links it, or copies it across file systems.
 */
#ifndef TRANSIT_FD_IO_H
#define TRANSIT_FD_IO_H

#include <stddef.h>

/* Writes len bytes of data to fd, retrying short and interrupted writes.
 * 0, or -1 with errno set (EIO when write returned 0). */
int fd_write_all(int fd, const void *data, size_t len);

/* Makes `to` (removed first if it exists) a hard link to `from`, or, where
 * linking fails (another file system), a copy written and fsynced. 0, or -1
 * with errno set (a partial copy is removed). */
int file_link_or_copy(const char *from, const char *to);

#endif
