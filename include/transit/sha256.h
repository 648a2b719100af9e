/* sha256.h — SHA-256 (FIPS 180-4), incremental.
 *
 * Why it exists: a feed's version is named by the SHA-256 of its bytes, so an
 * import of the same feed lands in the same version directory. Hashing runs
 * over the whole feed (tens of MB) once per import; it streams.
 */
#ifndef TRANSIT_SHA256_H
#define TRANSIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
    uint32_t state[8];
    uint64_t total;          /* bytes hashed so far */
    uint8_t block[64];       /* a partial block */
    size_t nblock;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t digest[32]);
/* Lower-case hex of a digest: 64 chars + NUL. */
void sha256_hex(const uint8_t digest[32], char out[65]);
/* One-shot convenience. */
void sha256(const void *data, size_t len, uint8_t digest[32]);

#endif
