/* brotli_body.h — Brotli (RFC 7932, Content-Encoding: br) for HTTP response bodies.
 *
 * Why it exists: browsers and Apple's URLSession ask for br on every request, and
 * at its fastest qualities Brotli compresses the server's JSON about as small as
 * gzip for less CPU. Measured by bench/bench_compress on Brooklyn's
 * /v1/departures answers (16 KB on average): quality 1 takes 18 µs a body for
 * 9.9 % of the size, gzip (libdeflate level 1) 22 µs for 9.7 %; quality 2 already
 * takes 56 µs (bench/README.md, "Compression"). One brotli_body per server thread
 * keeps its output buffer. Pure C (the system libbrotlienc), used by the HTTP layer.
 */
#ifndef TRANSIT_BROTLI_BODY_H
#define TRANSIT_BROTLI_BODY_H

#include <stddef.h>

/* The quality the server compresses at (see above). */
#define BROTLI_BODY_QUALITY 1

typedef struct brotli_body brotli_body;

/* quality 0..11 (out of range: BROTLI_BODY_QUALITY); NULL when out of memory. */
brotli_body *brotli_body_new(int quality);
void brotli_body_free(brotli_body *b);

/* Compresses in[0..len) into one Brotli stream. Returns 0 and points *out at
 * the object's own buffer (valid until the next call on b), or -1 when out of
 * memory or when the encoder fails. */
int brotli_body_compress(brotli_body *b, const void *in, size_t len, const unsigned char **out,
                         size_t *out_len);

#endif
