/* bench_hash.c — how fast the SHA-256 that names a dataset version runs, next
 * to nettle's and OpenSSL's.
 *
 * Why it exists: an import hashes every byte of the feed (2.9 GB for 16 copies
 * of the Brooklyn feed, issue #28), so the SHA-256 behind transit/sha256.h is
 * chosen by this number, not by reputation.
 *
 *   bench_hash [MiB] [repeats]     (default 256 MiB, 7 repeats; the median is reported)
 *
 * The same warm buffer in memory, hashed whole by:
 * (a) transit/sha256.h as this build has it, fed 1 MiB at a time as feed_stream
 *     hands bytes over;
 * (b) nettle's sha256_update, the same chunks (a fat build picks SHA-NI at run
 *     time where the CPU has it; NETTLE_FAT_OVERRIDE=none shows it without);
 * (c) OpenSSL libcrypto's EVP_DigestUpdate with EVP_sha256(), the same chunks.
 * All three must agree on the digest, or it exits 1. The last three lines are
 * JSON, one per implementation:
 * {"bench":"hash","impl":...,"mb_s":...,"seconds":...,"vs_transit":...}.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/opensslv.h>

#include "transit/sha256.h"

#define CHUNK ((size_t)1 << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void hash_transit(const uint8_t *p, size_t len, uint8_t out[32])
{
    sha256_ctx c;
    sha256_init(&c);
    for (size_t at = 0; at < len; at += CHUNK)
        sha256_update(&c, p + at, len - at < CHUNK ? len - at : CHUNK);
    sha256_final(&c, out);
}

/* nettle maps sha256_init and sha256_update to its own functions by macro,
 * the names transit/sha256.h uses: transit's are called above this point. */
#include <nettle/sha2.h>
#include <nettle/version.h>

static void hash_nettle(const uint8_t *p, size_t len, uint8_t out[32])
{
    struct sha256_ctx c;
    sha256_init(&c);
    for (size_t at = 0; at < len; at += CHUNK)
        sha256_update(&c, len - at < CHUNK ? len - at : CHUNK, p + at);
    sha256_digest(&c, SHA256_DIGEST_SIZE, out);
}

static void hash_openssl(const uint8_t *p, size_t len, uint8_t out[32])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned n = 0;
    if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
        fprintf(stderr, "bench_hash: EVP_DigestInit_ex failed\n");
        exit(1);
    }
    for (size_t at = 0; at < len; at += CHUNK)
        EVP_DigestUpdate(c, p + at, len - at < CHUNK ? len - at : CHUNK);
    EVP_DigestFinal_ex(c, out, &n);
    EVP_MD_CTX_free(c);
}

typedef void (*hash_fn)(const uint8_t *, size_t, uint8_t[32]);

int main(int argc, char **argv)
{
    long mib = argc > 1 ? atol(argv[1]) : 256;
    int repeats = argc > 2 ? atoi(argv[2]) : 7;
    if (mib <= 0 || repeats <= 0 || repeats > 101) {
        fprintf(stderr, "usage: bench_hash [MiB] [repeats]\n");
        return 2;
    }
    size_t len = (size_t)mib << 20;
    uint8_t *buf = malloc(len);
    if (!buf) {
        fprintf(stderr, "bench_hash: out of memory (%ld MiB)\n", mib);
        return 1;
    }
    uint64_t x = 0x9e3779b97f4a7c15u;   /* xorshift: bytes no compressor or cache trick helps */
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)x;
    }

    static const struct {
        const char *name, *label;
        hash_fn fn;
    } impls[] = {
        { "transit", "transit/sha256.h (this build)", hash_transit },
        { "nettle", "nettle " "sha256_update", hash_nettle },
        { "openssl", "OpenSSL EVP_sha256", hash_openssl },
    };
    enum { N = sizeof impls / sizeof *impls };
    double secs[N][101], med[N];
    uint8_t digest[N][32];
    /* interleaved, so a noisy neighbour on the shared cores hits all alike */
    for (int r = 0; r < repeats + 1; r++)
        for (int i = 0; i < N; i++) {
            double t = now();
            impls[i].fn(buf, len, digest[i]);
            if (r > 0)   /* the first round warms the buffer and the code */
                secs[i][r - 1] = now() - t;
        }
    for (int i = 1; i < N; i++)
        if (memcmp(digest[0], digest[i], 32) != 0) {
            fprintf(stderr, "bench_hash: %s disagrees with %s\n", impls[i].name, impls[0].name);
            return 1;
        }
    char hex[65];
    sha256_hex(digest[0], hex);
    double mb = (double)len / 1e6;
    printf("buffer: %ld MiB, warm, hashed in 1 MiB updates; median of %d runs; digest %.16s...\n", mib,
           repeats, hex);
    printf("nettle %d.%d, %s\n", NETTLE_VERSION_MAJOR, NETTLE_VERSION_MINOR, OPENSSL_VERSION_TEXT);
    printf("  %-34s %8s %8s %11s\n", "implementation", "s", "MB/s", "vs transit");
    for (int i = 0; i < N; i++)
        med[i] = median(secs[i], repeats);
    for (int i = 0; i < N; i++)
        printf("  %-34s %8.3f %8.0f %10.2fx\n", impls[i].label, med[i], mb / med[i], med[0] / med[i]);
    for (int i = 0; i < N; i++)
        printf("{\"bench\":\"hash\",\"impl\":\"%s\",\"bytes\":%zu,\"repeats\":%d,\"seconds\":%.4f,"
               "\"mb_s\":%.1f,\"vs_transit\":%.3f}\n",
               impls[i].name, len, repeats, med[i], mb / med[i], med[0] / med[i]);
    free(buf);
    return 0;
}
