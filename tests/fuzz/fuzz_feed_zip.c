/* fuzz_feed_zip.c — libFuzzer target for the feed reader (src/import/feed.c) on
 * zip files: the input is written to a temporary .zip and opened as a feed;
 * every member is hashed, streamed and parsed as CSV.
 *
 * Why it exists: a feed is untrusted input from the network, and feed.c is
 * what reads its zip directory (names, folders, sizes) before anything else.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transit/feed.h"

static char zip_path[256];

static int on_row(void *ctx, const csv_field *f, uint64_t line)
{
    (void)f;
    (void)line;
    ++*(uint64_t *)ctx;
    return 0;
}

static int on_chunk(void *ctx, const char *buf, size_t len)
{
    uint64_t *sum = ctx;
    for (size_t i = 0; i < len; i += 4096)
        *sum += (unsigned char)buf[i];
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!zip_path[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(zip_path, sizeof zip_path, "%s/fuzz-feed-%ld.zip", tmp ? tmp : "/tmp", (long)getpid());
    }
    FILE *f = fopen(zip_path, "wb");
    if (!f)
        abort();
    fwrite(data, 1, size, f);
    fclose(f);

    char err[512];
    feed_t *feed = feed_open(zip_path, err, sizeof err);
    if (!feed)
        return 0;
    char sha[65];
    (void)feed_sha256(feed, sha, err, sizeof err);
    int n = 0;
    const char *const *names = feed_members(feed, &n);
    static const char *const keys[] = {"stop_id", "trip_id", "stop_name"};
    for (int i = 0; i < n && i < 16; i++) {
        if (!feed_has(feed, names[i]) || feed_size(feed, names[i]) < 0)
            abort();   /* a listed member must be there */
        uint64_t sum = 0, rows = 0;
        (void)feed_stream(feed, names[i], on_chunk, &sum, err, sizeof err);
        int has[3];
        csv_error cerr;
        (void)feed_parse_csv(feed, names[i], keys, 3, on_row, &rows, has, &cerr);
        feed_buffer b;
        if (feed_read_all(feed, names[i], &b, err, sizeof err) == 0)
            feed_buffer_free(&b);
    }
    feed_close(feed);
    return 0;
}
