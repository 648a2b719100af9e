/* gzip_body.c — one reusable libdeflate compressor per thread for HTTP bodies.
 *
 * Why it exists: see include/transit/gzip_body.h. libdeflate compresses a
 * whole buffer at once into a buffer it never grows, so the output buffer is
 * sized from libdeflate_gzip_compress_bound first and kept for the next body.
 */
#include "transit/gzip_body.h"

#include <libdeflate.h>
#include <stdlib.h>

struct gzip_body {
    struct libdeflate_compressor *compressor;
    unsigned char *buf;
    size_t cap;
};

gzip_body *gzip_body_new(int level)
{
    gzip_body *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    if (level < 1 || level > 12)
        level = GZIP_BODY_LEVEL;
    g->compressor = libdeflate_alloc_compressor(level);
    if (!g->compressor) {
        free(g);
        return NULL;
    }
    return g;
}

void gzip_body_free(gzip_body *g)
{
    if (!g)
        return;
    libdeflate_free_compressor(g->compressor);
    free(g->buf);
    free(g);
}

int gzip_body_compress(gzip_body *g, const void *in, size_t len, const unsigned char **out,
                       size_t *out_len)
{
    size_t need = libdeflate_gzip_compress_bound(g->compressor, len);
    if (need > g->cap) {
        size_t cap = g->cap ? g->cap : 4096;
        while (cap < need)
            cap *= 2;
        unsigned char *grown = realloc(g->buf, cap);
        if (!grown)
            return -1;
        g->buf = grown;
        g->cap = cap;
    }
    /* with the bound's room the compression cannot run out of space */
    size_t n = libdeflate_gzip_compress(g->compressor, in, len, g->buf, g->cap);
    if (n == 0)
        return -1;
    *out = g->buf;
    *out_len = n;
    return 0;
}
