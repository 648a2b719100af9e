/* bench_compress.c — what each compressor the server could use costs on real answers.
 *
 * Why it exists: the HTTP layer compresses JSON answers of a few KB to a few tens
 * of KB (issue #23: a 19 KB /v1/departures answer). Which library and level to use
 * is a measured choice, so this measures it: zlib levels 1..6 (gzip framing, one
 * reused stream as gzip_body.c had), libdeflate levels 1..9 (one reused
 * compressor) and Brotli qualities 0..6 (one-shot, as brotli_body.c does), each on
 * the same bodies, reporting the µs per body and the compressed share of the size.
 *
 *     build/release/bench/bench_compress BODY_FILE... [--ms 300]
 *
 * Each body file holds one uncompressed response body (e.g. saved with curl).
 */
#include <brotli/encode.h>
#include <libdeflate.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

typedef struct body {
    unsigned char *bytes;
    size_t len;
} body;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int read_body(const char *path, body *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16;
    b->bytes = malloc(cap);
    b->len = 0;
    size_t n;
    while (b->bytes && (n = fread(b->bytes + b->len, 1, cap - b->len, f)) > 0) {
        b->len += n;
        if (b->len == cap) {
            cap *= 2;
            unsigned char *grown = realloc(b->bytes, cap);
            if (!grown) {
                free(b->bytes);
                b->bytes = NULL;
            }
            b->bytes = grown;
        }
    }
    fclose(f);
    return b->bytes ? 0 : -1;
}

enum library { ZLIB, LIBDEFLATE, BROTLI };

typedef struct coder {
    enum library library;
    int level;
    z_stream zs;
    struct libdeflate_compressor *ld;
    unsigned char *out;
    size_t cap;
} coder;

/* Compresses one body; returns the compressed size, 0 on failure. */
static size_t compress_once(coder *c, const body *b)
{
    switch (c->library) {
    case ZLIB:
        if (deflateReset(&c->zs) != Z_OK)
            return 0;
        c->zs.next_in = b->bytes;
        c->zs.avail_in = (uInt)b->len;
        c->zs.next_out = c->out;
        c->zs.avail_out = (uInt)c->cap;
        if (deflate(&c->zs, Z_FINISH) != Z_STREAM_END)
            return 0;
        return c->cap - c->zs.avail_out;
    case LIBDEFLATE:
        return libdeflate_gzip_compress(c->ld, b->bytes, b->len, c->out, c->cap);
    case BROTLI: {
        size_t out_len = c->cap;
        if (!BrotliEncoderCompress(c->level, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, b->len,
                                   b->bytes, &out_len, c->out))
            return 0;
        return out_len;
    }
    }
    return 0;
}

/* Runs the coder over the bodies, round robin, for about `seconds`. */
static void measure(coder *c, const body *bodies, int n, double seconds, const char *name)
{
    size_t plain = 0, packed = 0;
    for (int i = 0; i < n; i++) {
        plain += bodies[i].len;
        size_t z = compress_once(c, &bodies[i]);
        if (z == 0) {
            printf("%-16s failed\n", name);
            return;
        }
        packed += z;
    }
    long rounds = 0;
    double start = now_s(), elapsed = 0;
    while (elapsed < seconds && rounds < 1000000) {
        for (int i = 0; i < n; i++)
            (void)compress_once(c, &bodies[i]);
        rounds++;
        elapsed = now_s() - start;
    }
    printf("%-16s %9.1f µs/body %7.1f %% of %zu bytes (%zu)\n", name,
           elapsed / (double)(rounds * n) * 1e6, 100.0 * (double)packed / (double)plain,
           plain / (size_t)n, packed / (size_t)n);
}

int main(int argc, char **argv)
{
    double seconds = 0.3;
    body bodies[64];
    int n = 0;
    size_t largest = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]) / 1000.0;
        } else if (n < 64) {
            if (read_body(argv[i], &bodies[n]) != 0) {
                fprintf(stderr, "cannot read %s\n", argv[i]);
                return 1;
            }
            if (bodies[n].len > largest)
                largest = bodies[n].len;
            n++;
        }
    }
    if (n == 0) {
        fprintf(stderr, "usage: bench_compress BODY_FILE... [--ms 300]\n");
        return 2;
    }
    coder c = {0};
    c.cap = largest * 2 + 1024;
    c.out = malloc(c.cap);
    if (!c.out)
        return 1;
    char name[32];
    for (int level = 1; level <= 6; level++) {
        c.library = ZLIB;
        if (deflateInit2(&c.zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            return 1;
        snprintf(name, sizeof name, "zlib %d", level);
        measure(&c, bodies, n, seconds, name);
        deflateEnd(&c.zs);
    }
    for (int level = 1; level <= 9; level++) {
        c.library = LIBDEFLATE;
        c.ld = libdeflate_alloc_compressor(level);
        if (!c.ld)
            return 1;
        snprintf(name, sizeof name, "libdeflate %d", level);
        measure(&c, bodies, n, seconds, name);
        libdeflate_free_compressor(c.ld);
    }
    for (int quality = 0; quality <= 6; quality++) {
        c.library = BROTLI;
        c.level = quality;
        snprintf(name, sizeof name, "brotli %d", quality);
        measure(&c, bodies, n, seconds, name);
    }
    free(c.out);
    for (int i = 0; i < n; i++)
        free(bodies[i].bytes);
    return 0;
}
