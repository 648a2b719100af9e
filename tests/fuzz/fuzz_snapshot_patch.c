/* fuzz_snapshot_patch.c — libFuzzer target for what a phone reads from the
 * network when it updates its snapshot: the manifest (snapshot_manifest_parse)
 * and a zstd patch applied to its held file (snapshot_patcher_*).
 *
 * Why it exists: both come from a server the phone does not control the
 * path to. Every input must parse or apply, or fail with a message; never
 * crash, overrun or leak. The first byte picks the parser: even, the rest is
 * a manifest; odd, the rest is a patch against a fixed 64 KB "held file"
 * (bytes of a fixed LCG, with repeats so that real patches have matches),
 * fed in pieces of the sizes a network delivers.
 * Seeds: tests/fuzz/seeds/snapshot_patch (a manifest, a real patch made with
 * `zstd --patch-from` against the held file, and an empty patch).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transit/snapshot.h"
#include "transit/snapshot_delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HELD_SIZE (64 * 1024)

static char g_held[512], g_out[512];

static void remove_held(void) { unlink(g_held); }

static void make_held(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(g_held, sizeof g_held, "%s/fuzz-patch-held-%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    snprintf(g_out, sizeof g_out, "%s/fuzz-patch-out-%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
    unsigned char *b = malloc(HELD_SIZE);
    uint32_t x = 12345;
    for (size_t i = 0; b && i < HELD_SIZE; i++) {
        if (i >= 4096 && i % 1024 < 512) {   /* repeats: what a store file has */
            b[i] = b[i - 4096];
            continue;
        }
        x = x * 1103515245u + 12345u;
        b[i] = (unsigned char)(x >> 16);
    }
    FILE *f = b ? fopen(g_held, "wb") : NULL;
    if (!f || fwrite(b, 1, HELD_SIZE, f) != HELD_SIZE || fclose(f) != 0) {
        fprintf(stderr, "fuzz_snapshot_patch: cannot write %s\n", g_held);
        exit(1);
    }
    free(b);
    if (!getenv("FUZZ_KEEP_HELD"))
        atexit(remove_held);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        make_held();
        if (getenv("FUZZ_KEEP_HELD"))   /* for making seeds with the zstd CLI: $TMPDIR/fuzz-patch-held-PID */
            fprintf(stderr, "fuzz_snapshot_patch: the held file is %s\n", g_held);
        ready = 1;
    }
    if (size == 0)
        return 0;
    char err[300];
    if ((data[0] & 1) == 0) {
        snapshot_manifest m;
        if (snapshot_manifest_parse((const char *)data + 1, size - 1, &m, err, sizeof err) == 0) {
            if (m.nfiles == 0 || m.nfiles > SNAPSHOT_MAX_FILES || !snapshot_find(&m, "COMPLETE"))
                abort();
            for (uint32_t i = 0; i < m.nfiles; i++)
                if (!snapshot_file_name_ok(m.files[i].name) || strlen(m.files[i].sha256) != 64)
                    abort();
        } else if (!err[0]) {
            abort();   /* a refusal must say why */
        }
        return 0;
    }
    FILE *out = fopen(g_out, "wb");
    if (!out)
        return 0;
    snapshot_patcher *p = snapshot_patcher_new(g_held, HELD_SIZE + 4096, fileno(out), err, sizeof err);
    if (p) {
        /* pieces of 1, 7, 300 and 4096 bytes, in turn */
        static const size_t pieces[] = {1, 7, 300, 4096};
        size_t at = 1, k = 0;
        int rc = 0;
        while (rc == 0 && at < size) {
            size_t n = pieces[k++ % 4];
            if (n > size - at)
                n = size - at;
            rc = snapshot_patcher_write(p, data + at, n, err, sizeof err);
            at += n;
        }
        uint64_t written = 0;
        if (rc == 0)
            snapshot_patcher_finish(p, &written, err, sizeof err);
        snapshot_patcher_free(p);
    }
    fclose(out);
    unlink(g_out);
    return 0;
}
