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
#include "transit/fd_io.h"
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
    if (file_link_or_copy(from, to) != 0)
        return false;
    *rows = m.shapes_rows;
    return true;
}
