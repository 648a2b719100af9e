/* gzip_body.c — one reusable zlib deflate stream per thread for HTTP bodies.
 *
 * Why it exists: see include/transit/gzip_body.h. deflateReset keeps the
 * stream's window and hash tables, so compressing a response allocates
 * nothing once the output buffer has grown to the largest body seen.
 */
#include "transit/gzip_body.h"

#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

struct gzip_body {
    z_stream zs;
    unsigned char *buf;
    size_t cap;
};

gzip_body *gzip_body_new(int level)
{
    gzip_body *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    if (level < 1 || level > 9)
        level = 5;
    /* windowBits 15 + 16: a gzip header and trailer instead of zlib's. */
    if (deflateInit2(&g->zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(g);
        return NULL;
    }
    return g;
}

void gzip_body_free(gzip_body *g)
{
    if (!g)
        return;
    deflateEnd(&g->zs);
    free(g->buf);
    free(g);
}

int gzip_body_compress(gzip_body *g, const void *in, size_t len, const unsigned char **out,
                       size_t *out_len)
{
    if ((uLong)len != len || deflateReset(&g->zs) != Z_OK)
        return -1;
    size_t need = deflateBound(&g->zs, (uLong)len);
    if (need > g->cap) {
        size_t cap = g->cap ? g->cap : 4096;
        while (cap < need)
            cap *= 2;
        unsigned char *nb = realloc(g->buf, cap);
        if (!nb)
            return -1;
        g->buf = nb;
        g->cap = cap;
    }
    g->zs.next_in = (Bytef *)(uintptr_t)in;
    g->zs.avail_in = (uInt)len;
    g->zs.next_out = g->buf;
    g->zs.avail_out = (uInt)g->cap;
    /* deflateBound guarantees one Z_FINISH call completes. */
    if (deflate(&g->zs, Z_FINISH) != Z_STREAM_END)
        return -1;
    *out = g->buf;
    *out_len = g->cap - g->zs.avail_out;
    return 0;
}
