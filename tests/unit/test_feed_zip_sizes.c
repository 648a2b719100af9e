/* test_feed_zip_sizes.c — a zip entry that claims an uncompressed size its
 * compression cannot produce is refused by feed_open, before any reader
 * allocates what it claims, and so is one whose compression method cannot be
 * read. Regressions for fuzz_feed_zip (a 1.8 KB zip whose directory said
 * 2,499,805,429 bytes made feed_read_all malloc 2.5 GB; a 2.1 KB one with
 * method 8200 and 2.6 GB claimed did the same). */
#include "test_support.h"

#include <stdbool.h>
#include <stdint.h>

#include "transit/feed.h"

/* Zips dir/stops.txt (zip -0 when stored) and sets the uncompressed size of
 * its entry, in the local header and the central directory, to `claim`
 * (0: leave it), and its compression method to `method` (0: leave it).
 * Returns the zip's path in out. */
static void make_zip(const char *dir, bool stored, uint32_t claim, uint16_t method, char *out,
                     size_t outlen)
{
    char cmd[1400];
    test_write_file(dir, "stops.txt", "stop_id,stop_name,stop_lat,stop_lon\n"
                                      "S1,One,1,2\nS2,Two,1,2\nS3,Three,1,2\nS4,Four,1,2\n");
    snprintf(out, outlen, "%s/%s.zip", dir, stored ? "stored" : "deflated");
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f '%s' && zip -q -X %s '%s' stops.txt", dir, out,
             stored ? "-0" : "", out);
    assert_int_equal(system(cmd), 0);
    if (!claim && !method)
        return;
    FILE *f = fopen(out, "r+b");
    assert_non_null(f);
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    int patched = 0;
    for (size_t i = 0; i + 46 <= n; i++) {
        size_t at = 0, how = 0;
        if (memcmp(buf + i, "PK\x03\x04", 4) == 0)
            at = i + 22, how = i + 8;    /* local header: uncompressed size, method */
        else if (memcmp(buf + i, "PK\x01\x02", 4) == 0)
            at = i + 24, how = i + 10;   /* central directory: the same */
        if (!at)
            continue;
        for (int b = 0; claim && b < 4; b++)
            buf[at + (size_t)b] = (unsigned char)(claim >> (8 * b));
        if (method) {
            buf[how] = (unsigned char)method;
            buf[how + 1] = (unsigned char)(method >> 8);
        }
        patched++;
    }
    assert_int_equal(patched, 2);
    rewind(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
}

static void test_honest_zips_open(void **state)
{
    (void)state;
    char dir[512], zip[1024], err[512];
    test_tmpdir(dir, sizeof dir, "zip-sizes-ok");
    for (int stored = 0; stored < 2; stored++) {
        make_zip(dir, stored, 0, 0, zip, sizeof zip);
        feed_t *f = feed_open(zip, err, sizeof err);
        assert_non_null(f);
        assert_int_equal(feed_size(f, "stops.txt"), 83);
        feed_close(f);
    }
}

static void test_deflated_entry_claiming_gigabytes_is_refused(void **state)
{
    (void)state;
    char dir[512], zip[1024], err[512] = "";
    test_tmpdir(dir, sizeof dir, "zip-sizes-deflate");
    make_zip(dir, false, 2499805429u, 0, zip, sizeof zip);
    assert_null(feed_open(zip, err, sizeof err));
    assert_non_null(strstr(err, "the entry stops.txt claims 2499805429 bytes from"));
    assert_non_null(strstr(err, "the zip is damaged"));
}

static void test_stored_entry_larger_than_its_bytes_is_refused(void **state)
{
    (void)state;
    char dir[512], zip[1024], err[512] = "";
    test_tmpdir(dir, sizeof dir, "zip-sizes-stored");
    make_zip(dir, true, 84, 0, zip, sizeof zip);   /* one byte more than stored */
    assert_null(feed_open(zip, err, sizeof err));
    assert_non_null(strstr(err, "claims 84 bytes from 83 compressed"));
}

/* fuzz_feed_zip, second find: method 8200 and 2,617,246,087 bytes claimed;
 * the size bound applies to stored and deflated entries only, so the method
 * itself must be refused. */
static void test_unreadable_compression_method_is_refused(void **state)
{
    (void)state;
    char dir[512], zip[1024], err[512] = "";
    test_tmpdir(dir, sizeof dir, "zip-sizes-method");
    make_zip(dir, false, 2617246087u, 8200, zip, sizeof zip);
    assert_null(feed_open(zip, err, sizeof err));
    assert_non_null(strstr(err, "the entry stops.txt uses compression method 8200, which this build cannot read"));
}

/* fuzz_feed_zip, third find: a deflated entry claiming 4,294,967,008
 * compressed bytes (and so up to 4 TB by the ratio) in a 12 KB zip. */
static void test_compressed_size_past_the_zip_is_refused(void **state)
{
    (void)state;
    char dir[512], zip[1024], err[512] = "";
    test_tmpdir(dir, sizeof dir, "zip-sizes-comp");
    make_zip(dir, false, 0, 0, zip, sizeof zip);
    FILE *f = fopen(zip, "r+b");
    assert_non_null(f);
    unsigned char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    for (size_t i = 0; i + 46 <= n; i++) {   /* compressed size: local +18, central +20 */
        size_t at = memcmp(buf + i, "PK\x03\x04", 4) == 0   ? i + 18
                    : memcmp(buf + i, "PK\x01\x02", 4) == 0 ? i + 20
                                                             : 0;
        if (at)
            memcpy(buf + at, "\xe0\xfe\xff\xff", 4);   /* 4294967008 */
    }
    rewind(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    assert_null(feed_open(zip, err, sizeof err));
    assert_non_null(strstr(err, "the entry stops.txt claims 4294967008 compressed bytes, more than the zip's"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_honest_zips_open),
        cmocka_unit_test(test_deflated_entry_claiming_gigabytes_is_refused),
        cmocka_unit_test(test_stored_entry_larger_than_its_bytes_is_refused),
        cmocka_unit_test(test_unreadable_compression_method_is_refused),
        cmocka_unit_test(test_compressed_size_past_the_zip_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
