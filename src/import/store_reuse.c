/* store_reuse.c — a store taken from the active version when its inputs are
 * unchanged (see store_reuse.h).
 *
 * Why it exists: the one place that decides whether a store may be reused:
 * the digest of its inputs and the check against the active version's
 * marker, so import.c only asks and links.
 */
#include "import/store_reuse.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transit/datadir.h"
#include "transit/sha256.h"
#include "transit/version.h"

static int digest_chunk(void *ctx, const char *buf, size_t len)
{
    sha256_update(ctx, buf, len);
    return 0;
}

int store_reuse_shapes_digest(const feed_t *feed, int format, char out[65], char *err, size_t errlen)
{
    sha256_ctx c;
    sha256_init(&c);
    char head[160];
    int n = snprintf(head, sizeof head, "transitd store inputs 1\nshapes.sqlite format %d\nsqlite %d\n", format,
                     sqlite3_libversion_number());
    sha256_update(&c, head, (size_t)n);
    if (!feed_has(feed, "shapes.txt")) {
        sha256_update(&c, "shapes.txt absent\n", 18);
    } else {
        n = snprintf(head, sizeof head, "shapes.txt %lld\n", (long long)feed_size(feed, "shapes.txt"));
        sha256_update(&c, head, (size_t)n);
        if (feed_stream(feed, "shapes.txt", digest_chunk, &c, err, errlen) != 0)
            return -1;
    }
    uint8_t d[32];
    sha256_final(&c, d);
    sha256_hex(d, out);
    return 0;
}

/* Copies from to to (a new file), when a link cannot be made. */
static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[1 << 16];
    int rc = 0;
    for (;;) {
        ssize_t got = read(in, buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = got < 0 ? -1 : 0;
            break;
        }
        for (ssize_t done = 0; done < got;) {
            ssize_t w = write(out, buf + done, (size_t)(got - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rc = -1;
                break;
            }
            done += w;
        }
        if (rc != 0)
            break;
    }
    close(in);
    if (close(out) != 0)
        rc = -1;
    if (rc != 0)
        unlink(to);
    return rc;
}

bool store_reuse_from_active(const char *data_dir, const char *store, const char *digest, const char *dir,
                             uint64_t *rows)
{
    char active[DATADIR_VERSION_LEN + 1], vdir[4096], from[4200], to[4200];
    datadir_marker m;
    if (!digest[0] || strcmp(store, "shapes.sqlite") != 0 || datadir_current(data_dir, active) != 0 ||
        datadir_version_path(data_dir, active, vdir, sizeof vdir) != 0 || datadir_read_marker(vdir, &m) != 0 ||
        strcmp(m.builder, TRANSITD_VERSION) != 0 || strcmp(m.shapes_input, digest) != 0)
        return false;
    snprintf(from, sizeof from, "%s/%s", vdir, store);
    snprintf(to, sizeof to, "%s/%s", dir, store);
    if (link(from, to) != 0 && copy_file(from, to) != 0)
        return false;
    *rows = m.shapes_rows;
    return true;
}
