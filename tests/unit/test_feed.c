/* test_feed.c — the feed reader (zip flat or in a folder, directory), its
 * errors, SHA-256, and feed_parse_csv on the real feeds. Zips are made with
 * the `zip` command in a scratch directory. */
#include "test_support.h"

#include <stdbool.h>
#include <sys/stat.h>

#include "transit/csv.h"
#include "transit/feed.h"
#include "transit/sha256.h"

/* ------------------------------------------------------------ helpers */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("command failed: %s", cmd);
}

static const char STOPS[] = "stop_id,stop_name,stop_lat,stop_lon\r\n"
                            "S1,\"Central, Main Hall\",-16.9,145.7\r\n"
                            "S2,Esplanade,-16.91,145.77\r\n";
static const char TRIPS[] = "route_id,service_id,trip_id\nR1,WK,T1\n";

/* A directory `gtfs` with two members and some things that are not members. */
static void make_feed_dir(const char *base)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/gtfs", base);
    mkdir(dir, 0755);
    test_write_file(dir, "stops.txt", STOPS);
    test_write_file(dir, "trips.txt", TRIPS);
    test_write_file(dir, "README.md", "not a member\n");
    snprintf(dir, sizeof dir, "%s/gtfs/nested", base);
    mkdir(dir, 0755);
    test_write_file(dir, "agency.txt", "agency_id\nA\n");
}

typedef struct counter {
    uint64_t rows;
    uint64_t sum;          /* a checksum of the fields' bytes and lengths */
    char first[2][64];
    int nkeys;
} counter;

static int count_row(void *ctx, const csv_field *f, uint64_t line)
{
    counter *c = ctx;
    (void)line;
    if (c->rows == 0)
        for (int k = 0; k < 2 && k < c->nkeys; k++)
            snprintf(c->first[k], sizeof c->first[k], "%.*s", (int)f[k].len, f[k].ptr);
    for (int k = 0; k < c->nkeys; k++) {
        uint64_t h = f[k].len * 0x9E3779B97F4A7C15ull;
        for (uint32_t i = 0; i < f[k].len; i++)
            h = (h ^ (uint8_t)f[k].ptr[i]) * 0x100000001B3ull;
        c->sum += h;
    }
    c->rows++;
    return 0;
}

static const char *const STOP_KEYS[] = { "stop_id", "stop_name" };

static void check_members(feed_t *f)
{
    int n;
    const char *const *names = feed_members(f, &n);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "stops.txt");
    assert_string_equal(names[1], "trips.txt");
    assert_true(feed_has(f, "stops.txt"));
    assert_false(feed_has(f, "agency.txt"));   /* only in a nested folder */
    assert_false(feed_has(f, "README.md"));
    assert_int_equal(feed_size(f, "stops.txt"), (int64_t)strlen(STOPS));
    assert_int_equal(feed_size(f, "calendar.txt"), -1);

    counter c = { .nkeys = 2 };
    int has[2];
    csv_error err;
    assert_int_equal(feed_parse_csv(f, "stops.txt", STOP_KEYS, 2, count_row, &c, has, &err), 0);
    assert_int_equal(c.rows, 2);
    assert_string_equal(c.first[0], "S1");
    assert_string_equal(c.first[1], "Central, Main Hall");
    assert_true(has[0] && has[1]);

    feed_buffer b;
    char e[256];
    assert_int_equal(feed_read_all(f, "trips.txt", &b, e, sizeof e), 0);
    assert_int_equal(b.len, strlen(TRIPS));
    assert_memory_equal(b.data, TRIPS, b.len);
    feed_buffer_free(&b);
}

/* ------------------------------------------------------------ sha256 */

static void hex_of(const void *data, size_t len, char out[65])
{
    uint8_t d[32];
    sha256(data, len, d);
    sha256_hex(d, out);
}

/* Known answers: FIPS 180-2 appendix B ("abc", the 448-bit message, a
 * million 'a') and the 896-bit message of its SHA-512 examples, whose SHA-256
 * NIST's example values give. */
static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[65];
    hex_of("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(m448, strlen(m448), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* the 896-bit message: two blocks of input, then a block of padding */
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    hex_of(m896, strlen(m896), hex);
    assert_string_equal(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    /* a million 'a', fed in uneven pieces across block boundaries */
    char a[1000];
    memset(a, 'a', sizeof a);
    sha256_ctx c;
    sha256_init(&c);
    size_t left = 1000000, piece = 1;
    while (left) {
        size_t n = piece < left ? piece : left;
        sha256_update(&c, a, n);
        left -= n;
        piece = piece % 977 + 13;   /* 13..989 */
    }
    uint8_t d[32];
    sha256_final(&c, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* lengths around the padding edge (55, 56, 64 bytes) agree one-shot vs bytewise */
    for (size_t len = 50; len <= 130; len++) {
        char one[65], two[65];
        hex_of(a, len, one);
        sha256_init(&c);
        for (size_t i = 0; i < len; i++)
            sha256_update(&c, a + i, 1);
        sha256_final(&c, d);
        sha256_hex(d, two);
        assert_string_equal(one, two);
    }
}

/* ------------------------------------------------------------ layouts */

static void test_directory_feed(void **state)
{
    (void)state;
    char base[1024], dir[1100], err[512];
    test_tmpdir(base, sizeof base, "feed-dir");
    make_feed_dir(base);
    snprintf(dir, sizeof dir, "%s/gtfs", base);
    feed_t *f = feed_open(dir, err, sizeof err);
    assert_non_null(f);
    assert_string_equal(feed_path(f), dir);
    check_members(f);

    /* a directory member is mapped, not copied */
    feed_buffer b;
    assert_int_equal(feed_read_all(f, "stops.txt", &b, err, sizeof err), 0);
    assert_true(b.mapped);
    feed_buffer_free(&b);

    /* the hash of a directory: name, NUL, bytes, in name order */
    char hex[65], want[65];
    assert_int_equal(feed_sha256(f, hex, err, sizeof err), 0);
    char all[512];
    size_t n = 0;
    memcpy(all + n, "stops.txt", 10);
    n += 10;
    memcpy(all + n, STOPS, strlen(STOPS));
    n += strlen(STOPS);
    memcpy(all + n, "trips.txt", 10);
    n += 10;
    memcpy(all + n, TRIPS, strlen(TRIPS));
    n += strlen(TRIPS);
    hex_of(all, n, want);
    assert_string_equal(hex, want);
    feed_close(f);

    /* an empty member streams nothing and parses to no header */
    test_write_file(dir, "frequencies.txt", "");
    f = feed_open(dir, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(feed_size(f, "frequencies.txt"), 0);
    const char *const fk[] = { "trip_id" };
    counter c = { .nkeys = 1 };
    int has[1] = { 1 };
    csv_error cerr;
    assert_int_equal(feed_parse_csv(f, "frequencies.txt", fk, 1, count_row, &c, has, &cerr), 0);
    assert_int_equal(c.rows, 0);
    assert_int_equal(has[0], 0);
    assert_int_equal(feed_read_all(f, "frequencies.txt", &b, err, sizeof err), 0);
    assert_int_equal(b.len, 0);
    feed_buffer_free(&b);
    /* and a changed member changes the hash */
    char hex2[65];
    assert_int_equal(feed_sha256(f, hex2, err, sizeof err), 0);
    assert_string_not_equal(hex, hex2);
    feed_close(f);
}

static void test_zip_flat(void **state)
{
    (void)state;
    char base[1024], zip[1100], err[512];
    test_tmpdir(base, sizeof base, "feed-zip");
    make_feed_dir(base);
    snprintf(zip, sizeof zip, "%s/flat.zip", base);
    sh("cd '%s/gtfs' && zip -q -X ../flat.zip stops.txt trips.txt README.md nested/agency.txt", base);
    feed_t *f = feed_open(zip, err, sizeof err);
    if (!f)
        fail_msg("%s", err);
    check_members(f);

    /* the hash of a zip is the hash of its bytes, and stable */
    char hex[65], again[65], want[65];
    assert_int_equal(feed_sha256(f, hex, err, sizeof err), 0);
    feed_close(f);
    f = feed_open(zip, err, sizeof err);
    assert_int_equal(feed_sha256(f, again, err, sizeof err), 0);
    assert_string_equal(hex, again);
    FILE *fp = fopen(zip, "rb");
    static char bytes[1 << 16];
    size_t n = fread(bytes, 1, sizeof bytes, fp);
    fclose(fp);
    hex_of(bytes, n, want);
    assert_string_equal(hex, want);

    /* a missing member: an error naming it */
    counter c = { .nkeys = 2 };
    csv_error cerr;
    assert_int_equal(feed_parse_csv(f, "calendar.txt", STOP_KEYS, 2, count_row, &c, NULL, &cerr), CSV_ERR_IO);
    assert_string_equal(cerr.file, "calendar.txt");
    assert_non_null(strstr(cerr.message, "not in the feed"));
    feed_buffer b;
    assert_int_equal(feed_read_all(f, "calendar.txt", &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "calendar.txt"));
    feed_close(f);
}

static void test_zip_in_one_folder(void **state)
{
    (void)state;
    char base[1024], zip[1100], err[512];
    test_tmpdir(base, sizeof base, "feed-sub");
    make_feed_dir(base);
    snprintf(zip, sizeof zip, "%s/sub.zip", base);
    /* the folder, a directory entry, and the __MACOSX litter of Finder zips */
    sh("cd '%s' && mkdir -p __MACOSX/gtfs && printf x > __MACOSX/gtfs/._stops.txt && "
       "zip -q -r -X sub.zip gtfs __MACOSX -x gtfs/nested/agency.txt",
       base);
    feed_t *f = feed_open(zip, err, sizeof err);
    if (!f)
        fail_msg("%s", err);
    check_members(f);
    feed_close(f);

    /* .txt files in two folders: which one is the feed? an error */
    snprintf(zip, sizeof zip, "%s/two.zip", base);
    sh("cd '%s' && mkdir -p other && cp gtfs/stops.txt other/ && zip -q -r -X two.zip gtfs/stops.txt other", base);
    f = feed_open(zip, err, sizeof err);
    assert_null(f);
    assert_non_null(strstr(err, "two.zip"));
    assert_non_null(strstr(err, "several folders"));
}

static void test_open_errors(void **state)
{
    (void)state;
    char base[1024], path[1100], err[512];
    test_tmpdir(base, sizeof base, "feed-err");

    snprintf(path, sizeof path, "%s/nowhere", base);
    assert_null(feed_open(path, err, sizeof err));
    assert_non_null(strstr(err, path));

    snprintf(path, sizeof path, "%s/notazip.zip", base);
    test_write_file(base, "notazip.zip", "stop_id\n1\n");
    assert_null(feed_open(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "not a valid zip archive"));

    /* a truncated zip: its directory at the end is gone */
    make_feed_dir(base);
    sh("cd '%s/gtfs' && zip -q -X ../t.zip stops.txt trips.txt && cd .. && "
       "truncate -s $(( $(wc -c < t.zip) / 2 )) t.zip",
       base);
    snprintf(path, sizeof path, "%s/t.zip", base);
    assert_null(feed_open(path, err, sizeof err));
    assert_non_null(strstr(err, "t.zip: not a valid zip archive ("));
}

/* A stored (uncompressed) member with one byte changed: the CRC mismatch is
 * an error, for streaming and for whole reads. */
static void test_zip_crc_error(void **state)
{
    (void)state;
    char base[1024], path[1100], err[512];
    test_tmpdir(base, sizeof base, "feed-crc");
    make_feed_dir(base);
    sh("cd '%s/gtfs' && zip -q -0 -X ../crc.zip stops.txt trips.txt", base);
    snprintf(path, sizeof path, "%s/crc.zip", base);
    FILE *fp = fopen(path, "r+b");
    static char bytes[1 << 16];
    size_t n = fread(bytes, 1, sizeof bytes, fp);
    char *hit = NULL;
    for (size_t i = 0; i + 9 <= n && !hit; i++)
        if (memcmp(bytes + i, "Esplanade", 9) == 0)
            hit = bytes + i;
    assert_non_null(hit);
    fseek(fp, (long)(hit - bytes), SEEK_SET);
    fputc('e', fp);
    fclose(fp);

    feed_t *f = feed_open(path, err, sizeof err);
    assert_non_null(f);
    counter c = { .nkeys = 2 };
    csv_error cerr;
    int rc = feed_parse_csv(f, "stops.txt", STOP_KEYS, 2, count_row, &c, NULL, &cerr);
    assert_int_equal(rc, CSV_ERR_IO);
    assert_string_equal(cerr.file, "stops.txt");
    if (!strstr(cerr.message, "CRC"))
        fail_msg("message without CRC: %s", cerr.message);
    feed_buffer b;
    assert_int_equal(feed_read_all(f, "stops.txt", &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "stops.txt"));
    assert_non_null(strstr(err, "CRC"));
    /* the other member is fine */
    assert_int_equal(feed_read_all(f, "trips.txt", &b, err, sizeof err), 0);
    feed_buffer_free(&b);
    feed_close(f);
}

/* The chunks of a stream, gathered. */
typedef struct gathered {
    char *bytes;
    size_t len, cap;
    int chunks;
} gathered;

static int gather_chunk(void *ctx, const char *buf, size_t len)
{
    gathered *g = ctx;
    if (g->len + len > g->cap) {
        g->cap = (g->len + len) * 2;
        g->bytes = realloc(g->bytes, g->cap);
        assert_non_null(g->bytes);
    }
    memcpy(g->bytes + g->len, buf, len);
    g->len += len;
    g->chunks++;
    return 0;
}

/* A callback that stops at its first chunk with 1 (feed_merge.c's header
 * reader does). */
static int stop_with_one(void *ctx, const char *buf, size_t len)
{
    (void)buf, (void)len;
    ++*(int *)ctx;
    return 1;
}

/* A deflated member (within FEED_WHOLE_MAX, inflated in one call by
 * libdeflate) streams the same bytes as the file, in 1 MiB chunks; damaged
 * deflated data is an error naming the member, never bytes. */
static void test_zip_deflated_whole(void **state)
{
    (void)state;
    char base[1024], dir[1100], path[1100], err[512];
    test_tmpdir(base, sizeof base, "feed-whole");
    make_feed_dir(base);
    snprintf(dir, sizeof dir, "%s/gtfs", base);
    size_t cap = 3u << 20, len = 0;
    char *text = malloc(cap + 64);
    assert_non_null(text);
    len += (size_t)snprintf(text, 64, "stop_id,stop_name\n");
    for (unsigned i = 0; len < cap; i++)
        len += (size_t)snprintf(text + len, 64, "S%u,Stop %u %u\n", i, i * 7919u % 1000u, i);
    FILE *fp = fopen(strcat(strcpy(path, dir), "/stops.txt"), "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    fclose(fp);
    sh("cd '%s/gtfs' && zip -q -X ../big.zip stops.txt trips.txt", base);
    snprintf(path, sizeof path, "%s/big.zip", base);
    feed_t *f = feed_open(path, err, sizeof err);
    assert_non_null(f);
    gathered g = {0};
    assert_int_equal(feed_stream(f, "stops.txt", gather_chunk, &g, err, sizeof err), 0);
    assert_int_equal(g.len, len);
    assert_true(memcmp(g.bytes, text, len) == 0);
    assert_int_equal(g.chunks, 4);   /* 3 MiB and a few bytes: three whole MiBs, then the rest */
    /* a callback's stop, whatever its value, ends the read: the member is
     * not read again the streaming way (that once doubled a header) */
    int calls = 0;
    assert_int_equal(feed_stream(f, "stops.txt", stop_with_one, &calls, err, sizeof err), 1);
    assert_int_equal(calls, 1);
    feed_close(f);

    /* one byte of the deflated data changed, in the middle of the member */
    fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 100000, SEEK_SET), 0);
    int c = fgetc(fp);
    assert_int_equal(fseek(fp, 100000, SEEK_SET), 0);
    fputc(c ^ 0x5a, fp);
    fclose(fp);
    f = feed_open(path, err, sizeof err);
    assert_non_null(f);
    g.len = 0;
    assert_int_equal(feed_stream(f, "stops.txt", gather_chunk, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "stops.txt"));
    assert_non_null(strstr(err, "damaged"));
    assert_int_equal(g.len, 0);     /* nothing handed on before the whole member checked out */
    csv_error cerr;
    counter cnt = { .nkeys = 2 };
    assert_int_equal(feed_parse_csv(f, "stops.txt", STOP_KEYS, 2, count_row, &cnt, NULL, &cerr), CSV_ERR_IO);
    assert_string_equal(cerr.file, "stops.txt");
    feed_close(f);
    free(g.bytes);
    free(text);
}

/* A callback's stop comes back as its own value, not as an I/O error. */
static int stop_at_once(void *ctx, const csv_field *f, uint64_t line)
{
    (void)ctx, (void)f, (void)line;
    return 7;
}

static void test_callback_stop_through_feed(void **state)
{
    (void)state;
    char base[1024], dir[1100], err[512];
    test_tmpdir(base, sizeof base, "feed-stop");
    make_feed_dir(base);
    snprintf(dir, sizeof dir, "%s/gtfs", base);
    feed_t *f = feed_open(dir, err, sizeof err);
    csv_error cerr;
    assert_int_equal(feed_parse_csv(f, "stops.txt", STOP_KEYS, 2, stop_at_once, NULL, NULL, &cerr), 7);
    assert_int_equal(cerr.line, 2);
    /* and a CSV error keeps its line and column */
    test_write_file(dir, "trips.txt", "trip_id,x\nok,1\n\"bad\"x,2\n");
    const char *const tk[] = { "trip_id" };
    counter c = { .nkeys = 1 };
    assert_int_equal(feed_parse_csv(f, "trips.txt", tk, 1, count_row, &c, NULL, &cerr), CSV_ERR_SYNTAX);
    assert_string_equal(cerr.file, "trips.txt");
    assert_int_equal(cerr.line, 3);
    assert_int_equal(cerr.column, 1);
    feed_close(f);
}

/* feed_stop from inside a read: the read ends at its next chunk. */
typedef struct stop_reader {
    feed_t *f;
    int chunks;
} stop_reader;

static int stop_on_first_chunk(void *ctx, const char *buf, size_t len)
{
    (void)buf;
    (void)len;
    stop_reader *s = ctx;
    if (s->chunks++ == 0)
        feed_stop(s->f);
    return 0;
}

static void check_feed_stop(const char *path)
{
    char err[512];
    feed_t *f = feed_open(path, err, sizeof err);
    if (!f)
        fail_msg("%s", err);
    stop_reader s = { .f = f };
    err[0] = 0;
    assert_int_equal(feed_stream(f, "big.txt", stop_on_first_chunk, &s, err, sizeof err), -1);
    assert_int_equal(s.chunks, 1);   /* of 3: the 1 MiB chunks after the stop are not read */
    assert_string_equal(err, "big.txt: reading stopped (feed_stop)");
    /* and every read after it fails at once */
    s.chunks = 0;
    assert_int_equal(feed_stream(f, "stops.txt", stop_on_first_chunk, &s, err, sizeof err), -1);
    assert_int_equal(s.chunks, 0);
    feed_buffer b;
    assert_int_equal(feed_read_all(f, "stops.txt", &b, err, sizeof err), -1);
    assert_string_equal(err, "stops.txt: reading stopped (feed_stop)");
    csv_error cerr;
    counter c = { .nkeys = 2 };
    assert_int_equal(feed_parse_csv(f, "stops.txt", STOP_KEYS, 2, count_row, &c, NULL, &cerr), CSV_ERR_IO);
    assert_int_equal(c.rows, 0);
    feed_close(f);
}

static void test_feed_stop(void **state)
{
    (void)state;
    char base[1024], dir[1100], zip[1100];
    test_tmpdir(base, sizeof base, "feed-stop-reads");
    make_feed_dir(base);
    snprintf(dir, sizeof dir, "%s/gtfs", base);
    size_t len = (size_t)5 << 19;   /* 2.5 MiB: three chunks */
    char *big = malloc(len + 1);
    assert_non_null(big);
    for (size_t i = 0; i < len; i++)
        big[i] = i % 8 == 7 ? '\n' : 'a' + (char)(i % 8);
    big[len] = 0;
    test_write_file(dir, "big.txt", big);
    free(big);
    check_feed_stop(dir);
    snprintf(zip, sizeof zip, "%s/big.zip", base);
    sh("cd '%s' && zip -q -X ../big.zip stops.txt trips.txt big.txt", dir);
    check_feed_stop(zip);
}

/* ------------------------------------------------------------ real feeds */

static const char *const ST_KEYS[] = { "trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence" };

static void count_stop_times(const char *zip, uint64_t want, bool parallel_too)
{
    char path[1024], err[512];
    shared_feed_path(zip, path, sizeof path);
    feed_t *f = feed_open(path, err, sizeof err);
    if (!f)
        fail_msg("%s", err);
    counter c = { .nkeys = 5 };
    int has[5];
    csv_error cerr;
    int rc = feed_parse_csv(f, "stop_times.txt", ST_KEYS, 5, count_row, &c, has, &cerr);
    if (rc)
        fail_msg("%s:%llu: %s", cerr.file, (unsigned long long)cerr.line, cerr.message);
    assert_int_equal(c.rows, want);
    for (int k = 0; k < 5; k++)
        assert_true(has[k]);

    /* the same feed's hash agrees with an independent sha256 tool */
    char hex[65], cmd[1200], tool[100] = "";
    assert_int_equal(feed_sha256(f, hex, err, sizeof err), 0);
    snprintf(cmd, sizeof cmd, "(sha256sum '%s' || shasum -a 256 '%s') 2>/dev/null", path, path);
    FILE *p = popen(cmd, "r");
    if (p && fgets(tool, sizeof tool, p))
        assert_memory_equal(tool, hex, 64);
    if (p)
        pclose(p);

    if (parallel_too) {
        feed_buffer b;
        assert_int_equal(feed_read_all(f, "stop_times.txt", &b, err, sizeof err), 0);
        assert_int_equal((int64_t)b.len, feed_size(f, "stop_times.txt"));
        for (int t = 1; t <= 4; t++) {
            counter parts[4];
            void *ctxs[4];
            for (int i = 0; i < 4; i++) {
                memset(&parts[i], 0, sizeof parts[i]);
                parts[i].nkeys = 5;
                ctxs[i] = &parts[i];
            }
            int n = csv_parse_parallel("stop_times.txt", b.data, b.len, ST_KEYS, 5, count_row, ctxs, t, has,
                                       &cerr);
            assert_int_equal(n, t);
            uint64_t rows = 0, sum = 0;
            for (int i = 0; i < n; i++) {
                rows += parts[i].rows;
                sum += parts[i].sum;
            }
            assert_int_equal(rows, c.rows);
            assert_int_equal(sum, c.sum);
        }
        feed_buffer_free(&b);
    }
    feed_close(f);
}

static void test_cairns_stop_times(void **state)
{
    (void)state;
    count_stop_times("cairns_translink_2014.zip", 37790, true);
}

static void test_nyct_subway_stop_times(void **state)
{
    (void)state;
    count_stop_times("nyct_subway_2026.zip", 565093, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_directory_feed),
        cmocka_unit_test(test_zip_flat),
        cmocka_unit_test(test_zip_in_one_folder),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_zip_crc_error),
        cmocka_unit_test(test_zip_deflated_whole),
        cmocka_unit_test(test_callback_stop_through_feed),
        cmocka_unit_test(test_feed_stop),
        cmocka_unit_test(test_cairns_stop_times),
        cmocka_unit_test(test_nyct_subway_stop_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
