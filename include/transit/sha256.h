/* sha256.h — SHA-256 (FIPS 180-4), incremental.
 *
 * Why it exists: a feed's version is named by the SHA-256 of its bytes, so an
 * import of the same feed lands in the same version directory; API tokens are
 * stored as their SHA-256. Hashing runs over the whole feed (up to GBs) once
 * per import; it streams. src/base/sha256.c puts nettle's SHA-256 behind these
 * few names, so no other file sees the library.
 */
#ifndef TRANSIT_SHA256_H
#define TRANSIT_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Room for the library's context (nettle's struct sha256_ctx, 112 bytes on
 * x86_64 and arm64; sha256.c checks that it fits). The tag is not
 * `sha256_ctx`, which nettle's struct has. */
typedef struct transit_sha256_ctx {
    union {
        uint64_t align;
        uint8_t bytes[128];
    } opaque;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t digest[32]);
/* Lower-case hex of a digest: 64 chars + NUL. */
void sha256_hex(const uint8_t digest[32], char out[65]);
/* One-shot convenience. */
void sha256(const void *data, size_t len, uint8_t digest[32]);

#endif
