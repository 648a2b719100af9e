/* sqlite_write.c — the build sequence and small helpers shared by the SQLite
 * store writers (see sqlite_write.h).
 *
 * Why it exists: schedule.sqlite and shapes.sqlite are both built in a
 * scratch file and written by VACUUM INTO, then fsynced; this is that
 * sequence once.
 */
#include "import/sqlite_write.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fsync_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open for fsync", path);
        return -1;
    }
    int rc = fsync(fd);
    close(fd);
    if (rc != 0) {
        snprintf(err, errlen, "%s: fsync failed", path);
        return -1;
    }
    return 0;
}

store_stats *store_stats_reset(store_stats *st, store_stats *local)
{
    if (!st)
        st = local;
    memset(st, 0, sizeof *st);
    return st;
}

/* SQLite's page cache while a store is built, in KiB (its cache_size). */
#define STORE_BUILD_CACHE_KB "16384"

int store_build_file(const char *path, const char *store_name, store_fill_fn fill, void *ctx,
                     store_stats *st, char *err, size_t errlen)
{
    double started = now_seconds();
    if (access(path, F_OK) == 0) {
        snprintf(err, errlen, "%s: already exists (%s is written only once)", path, store_name);
        return -1;
    }
    /* The database is built in a scratch file beside the store, not in
     * memory: at national size the stores are hundreds of MB (schedule.sqlite
     * 412 MB at 64x Brooklyn's size), which would all be heap, on top of the
     * timetable's builder, while the page cache holds a file's pages for free
     * and lets them go under pressure. SQLite's own cache is bounded
     * (STORE_BUILD_CACHE_KB). VACUUM INTO writes the same bytes from either. */
    char scratch[4200];
    snprintf(scratch, sizeof scratch, "%s.build-%ld", path, (long)getpid());
    unlink(scratch);
    sqlite3 *db = NULL;
    int rc = -1;
    if (sqlite3_open_v2(scratch, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot create: %s", scratch, db ? sqlite3_errmsg(db) : "out of memory");
    } else if (sqlite3_exec(db, "PRAGMA synchronous=OFF; PRAGMA cache_size=-" STORE_BUILD_CACHE_KB ";", NULL,
                            NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot set up: %s", scratch, sqlite3_errmsg(db));
    } else {
        sqlite3_extended_result_codes(db, 1);
        rc = fill(ctx, db, path);
    }
    if (sqlite3_close(db) != SQLITE_OK && rc == 0) {
        snprintf(err, errlen, "%s: close failed", path);
        rc = -1;
    }
    unlink(scratch);
    if (rc == 0)
        rc = fsync_file(path, err, errlen);
    if (rc != 0) {
        unlink(path);
        return -1;
    }
    struct stat sb;
    if (stat(path, &sb) == 0)
        st->bytes = (uint64_t)sb.st_size;
    st->seconds = now_seconds() - started;
    return 0;
}

/* VACUUM INTO copies every B-tree with SQLite's bulk-load path, so pages
 * come out full (about 9% smaller than even key-ordered inserts leave them). */
int store_build_vacuum_into(sqlite3 *db, const char *path, const char **step)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "VACUUM INTO ?1", -1, &s, NULL);
    if (rc != SQLITE_OK) {
        *step = "prepare";
        return rc;
    }
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        *step = "write";
        return rc;
    }
    return SQLITE_OK;
}

csv_field store_field_trimmed(csv_field f)
{
    if (!f.ptr) {
        f.ptr = "";
        f.len = 0;
    }
    while (f.len && (f.ptr[0] == ' ' || f.ptr[0] == '\t')) {
        f.ptr++;
        f.len--;
    }
    while (f.len && (f.ptr[f.len - 1] == ' ' || f.ptr[f.len - 1] == '\t'))
        f.len--;
    return f;
}

int store_binary_order(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c)
        return c;
    if (alen != blen)
        return alen < blen ? -1 : 1;
    return 0;
}

void *store_grow(void *buf, size_t *cap, size_t need, size_t first, size_t elem)
{
    if (need <= *cap)
        return buf;
    size_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *p = realloc(buf, n * elem);
    if (p)
        *cap = n;
    return p;
}
