/* slow_wal_sync.c — an LD_PRELOAD shim for tests: every fsync or fdatasync of
 * a file whose name ends in "-wal" (SQLite's write-ahead log) waits
 * $TD_TEST_WAL_SYNC_MS milliseconds first.
 *
 * Why it exists: test_alert_write_queue.py shows that a write's commit, which
 * waits for its fsync (synchronous=FULL), stalls no thread that answers
 * reads. On a fast disk the fsync is too short to see, so this makes it long.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void wait_if_wal(int fd)
{
    const char *ms = getenv("TD_TEST_WAL_SYNC_MS");
    if (!ms)
        return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 4)
        return;
    path[n] = '\0';
    if (strcmp(path + n - 4, "-wal") != 0)
        return;
    long v = atol(ms);
    struct timespec t = {v / 1000, (v % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int fsync(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    wait_if_wal(fd);
    return real(fd);
}

int fdatasync(int fd)
{
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    wait_if_wal(fd);
    return real(fd);
}
