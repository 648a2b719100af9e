/* gzip_body.h — gzip for HTTP response bodies, with a reusable deflate stream.
 *
 * Why it exists: JSON answers over ~1 KB shrink several-fold with gzip, but
 * deflateInit2/deflateEnd per response would allocate ~256 KB each time. One
 * gzip_body per server thread keeps its z_stream and output buffer and resets
 * them between responses. Which coding a client takes is accept_encoding.h's.
 * Pure C (zlib), used by the HTTP layer.
 */
#ifndef TRANSIT_GZIP_BODY_H
#define TRANSIT_GZIP_BODY_H

#include <stddef.h>

typedef struct gzip_body gzip_body;

/* level 1..9 (zlib); NULL when out of memory. */
gzip_body *gzip_body_new(int level);
void gzip_body_free(gzip_body *g);

/* Compresses in[0..len) into one gzip member. Returns 0 and points *out at
 * the object's own buffer (valid until the next call on g), or -1 on a zlib
 * or memory failure. */
int gzip_body_compress(gzip_body *g, const void *in, size_t len, const unsigned char **out,
                       size_t *out_len);

#endif
