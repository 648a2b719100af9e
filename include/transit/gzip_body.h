/* gzip_body.h — gzip for HTTP response bodies, with a reusable compressor.
 *
 * Why it exists: JSON answers over ~1 KB shrink ten-fold with gzip, and the
 * compressor is the largest cost of a compressed answer. One gzip_body per
 * server thread keeps its libdeflate compressor and output buffer across
 * responses, so compressing allocates nothing once the buffer has grown to the
 * largest body seen. Pure C (libdeflate), used by the HTTP layer.
 *
 * libdeflate, not zlib: measured by bench/bench_compress on Brooklyn's
 * /v1/departures answers (16 KB on average), libdeflate level 1 takes 22 µs a body
 * for 9.7 % of the size where zlib level 1 takes 41 µs for 10.4 % and zlib level 5
 * (what the server used before) 81 µs for 8.4 % (bench/README.md, "Compression").
 */
#ifndef TRANSIT_GZIP_BODY_H
#define TRANSIT_GZIP_BODY_H

#include <stddef.h>

/* The level the server compresses at: libdeflate's fastest (see above). */
#define GZIP_BODY_LEVEL 1

typedef struct gzip_body gzip_body;

/* level 1..12 (libdeflate; out of range: GZIP_BODY_LEVEL); NULL when out of memory. */
gzip_body *gzip_body_new(int level);
void gzip_body_free(gzip_body *g);

/* Compresses in[0..len) into one gzip member. Returns 0 and points *out at
 * the object's own buffer (valid until the next call on g), or -1 when out of
 * memory. */
int gzip_body_compress(gzip_body *g, const void *in, size_t len, const unsigned char **out,
                       size_t *out_len);

#endif
