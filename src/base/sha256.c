/* sha256.c — transit/sha256.h on nettle's SHA-256.
 *
 * Why nettle: an import hashes every byte of the feed (2.9 GB for 16 copies
 * of Brooklyn), and the hand-written FIPS 180-4 code this replaces did
 * 252 MB/s. Debian's nettle 3.8 is a fat build that picks the SHA-NI
 * instructions at run time where the CPU has them (1,629 MB/s here, 349 without
 * them); OpenSSL 3.0's EVP SHA-256 measured 1,804 MB/s (489 without SHA-NI),
 * 11 % more, but needs a heap-allocated context that can fail, where nettle's
 * is a plain struct, and it would be a new library to link where nettle is
 * not: libmicrohttpd links gnutls, which is built on nettle, on Debian and in
 * Homebrew alike. `make bench-hash` (bench/bench_hash.c) measures all three.
 * On Apple systems CommonCrypto's SHA-256 is used instead: it is part of the
 * OS on macOS and iOS alike, so the phone's client library (which verifies
 * every file it receives) needs no nettle there.
 */
#if defined(__APPLE__)
#include <CommonCrypto/CommonDigest.h>

#include "transit/sha256.h"

_Static_assert(sizeof(CC_SHA256_CTX) <= sizeof(((sha256_ctx *)0)->opaque),
               "CommonCrypto's SHA-256 context outgrew transit's sha256_ctx");

static CC_SHA256_CTX *lib(sha256_ctx *c) { return (CC_SHA256_CTX *)(void *)c->opaque.bytes; }

void sha256_init(sha256_ctx *c) { CC_SHA256_Init(lib(c)); }

void sha256_update(sha256_ctx *c, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0) {   /* CC_LONG is 32 bits */
        CC_LONG n = len > (1u << 30) ? (1u << 30) : (CC_LONG)len;
        CC_SHA256_Update(lib(c), p, n);
        p += n;
        len -= n;
    }
}

void sha256_final(sha256_ctx *c, uint8_t digest[32]) { CC_SHA256_Final(digest, lib(c)); }

#else
#include <nettle/sha2.h>

/* nettle maps sha256_init, sha256_update and sha256_digest to its own
 * functions by macro; this file defines transit's functions of those names
 * and calls nettle's by their real ones. */
#undef sha256_init
#undef sha256_update
#undef sha256_digest

#include "transit/sha256.h"

_Static_assert(sizeof(struct sha256_ctx) <= sizeof(((sha256_ctx *)0)->opaque),
               "nettle's sha256 context outgrew transit's sha256_ctx");
_Static_assert(_Alignof(struct sha256_ctx) <= _Alignof(uint64_t),
               "nettle's sha256 context needs more alignment than transit's sha256_ctx has");

static struct sha256_ctx *lib(sha256_ctx *c) { return (struct sha256_ctx *)(void *)c->opaque.bytes; }

void sha256_init(sha256_ctx *c) { nettle_sha256_init(lib(c)); }

void sha256_update(sha256_ctx *c, const void *data, size_t len)
{
    if (len)
        nettle_sha256_update(lib(c), len, data);
}

void sha256_final(sha256_ctx *c, uint8_t digest[32]) { nettle_sha256_digest(lib(c), SHA256_DIGEST_SIZE, digest); }

#endif

void sha256_hex(const uint8_t digest[32], char out[65])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = 0;
}

void sha256(const void *data, size_t len, uint8_t digest[32])
{
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, data, len);
    sha256_final(&c, digest);
}
