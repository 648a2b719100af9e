/* brotli_body.c — Brotli for HTTP bodies, with an output buffer kept per thread.
 *
 * Why it exists: see include/transit/brotli_body.h. libbrotlienc has no way to
 * reset an encoder for the next stream, so every body goes through the one-shot
 * BrotliEncoderCompress (at quality 1 its state is small; the measured cost
 * includes it); only the output buffer, sized from BrotliEncoderMaxCompressedSize,
 * is kept. The window is the smallest that holds the body, up to Brotli's
 * default, so a small body never asks for a large window.
 */
#include "transit/brotli_body.h"

#include <brotli/encode.h>
#include <stdlib.h>

struct brotli_body {
    int quality;
    unsigned char *buf;
    size_t cap;
};

brotli_body *brotli_body_new(int quality)
{
    brotli_body *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->quality = quality >= BROTLI_MIN_QUALITY && quality <= BROTLI_MAX_QUALITY ? quality
                                                                                : BROTLI_BODY_QUALITY;
    return b;
}

void brotli_body_free(brotli_body *b)
{
    if (!b)
        return;
    free(b->buf);
    free(b);
}

/* log2 of the smallest window that holds len bytes, within Brotli's bounds */
static int window_bits(size_t len)
{
    int bits = BROTLI_MIN_WINDOW_BITS;
    while (bits < BROTLI_DEFAULT_WINDOW && ((size_t)1 << bits) - 16 < len)
        bits++;
    return bits;
}

int brotli_body_compress(brotli_body *b, const void *in, size_t len, const unsigned char **out,
                         size_t *out_len)
{
    size_t need = BrotliEncoderMaxCompressedSize(len);
    if (need == 0)   /* the input is too large for the bound to be computed */
        return -1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < need)
            cap *= 2;
        unsigned char *grown = realloc(b->buf, cap);
        if (!grown)
            return -1;
        b->buf = grown;
        b->cap = cap;
    }
    size_t n = b->cap;
    if (!BrotliEncoderCompress(b->quality, window_bits(len), BROTLI_MODE_TEXT, len, in, &n, b->buf))
        return -1;
    *out = b->buf;
    *out_len = n;
    return 0;
}
