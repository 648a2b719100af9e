/* test_feed_zip_sizes.c — a zip entry that claims an uncompressed size its
 * compression cannot produce is refused by feed_open, before any reader
 * allocates what it claims, and so is one whose compression method cannot be
 * read. Regressions for fuzz_feed_zip (a 1.8 KB zip whose directory said
 * 2,499,805,429 bytes made feed_read_all malloc 2.5 GB; a 2.1 KB one with
 * method 8200 and 2.6 GB claimed did the same). bzip2 entries cannot be
 * bounded that way, so feed_read_all grows its buffer with the bytes read. */
#include "test_support.h"

#include <stdbool.h>
#include <stdint.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "transit/feed.h"

/* Sets the uncompressed size of the zip's one entry, in the local header and
 * the central directory, to `claim` (0: leave it), and its compression
 * method to `method` (0: leave it). */
static void patch_entry(const char *zip, uint32_t claim, uint16_t method)
{
    FILE *f = fopen(zip, "r+b");
    assert_non_null(f);
    unsigned char buf[8192];
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

/* Zips dir/stops.txt (zip -0 when stored) and patches its entry (see
 * patch_entry). Returns the zip's path in out. */
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
    if (claim || method)
        patch_entry(out, claim, method);
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

/* fuzz_feed_zip, fourth find: a bzip2 entry (method 12) claiming
 * 2,332,035,824 bytes in a 12 KB zip. bzip2 expands far beyond deflate's
 * 1032:1, so feed_open cannot bound the claim; feed_read_all must not
 * allocate it before the bytes arrive, and says how many did. */
static void test_bzip2_entry_claiming_gigabytes_reads_what_is_there(void **state)
{
    (void)state;
    char dir[512], zip[1024], cmd[1400], err[512] = "";
    test_tmpdir(dir, sizeof dir, "zip-sizes-bzip2");
    char rows[4096] = "stop_id,stop_name,stop_lat,stop_lon\n";
    for (int i = 0; i < 100; i++)
        strcat(rows, "S1,One,1,2\n");   /* repeats, so bzip2 beats storing */
    test_write_file(dir, "stops.txt", rows);
    snprintf(zip, sizeof zip, "%s/bzip2.zip", dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f '%s' && zip -q -X -Z bzip2 '%s' stops.txt", dir, zip, zip);
    assert_int_equal(system(cmd), 0);
    patch_entry(zip, 2332035824u, 0);
    feed_t *f = feed_open(zip, err, sizeof err);
    if (!f) {   /* a libzip without bzip2 refuses the method: as good */
        assert_non_null(strstr(err, "uses compression method 12"));
        return;
    }
    assert_int_equal(feed_size(f, "stops.txt"), 2332035824);
#ifdef __linux__
    /* in a child whose address space can grow by 512 MB at most: allocating
     * the claim fails there ("out of memory"), reading what is there does not */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsigned long long vm_kb = 0;
        char line[256];
        FILE *st = fopen("/proc/self/status", "r");
        while (st && fgets(line, sizeof line, st))
            if (sscanf(line, "VmSize: %llu kB", &vm_kb) == 1)
                break;
        if (st)
            fclose(st);
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = (rlim_t)(vm_kb + 512 * 1024) * 1024;
        if (!vm_kb || setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(3);
        feed_buffer b;
        int rc = feed_read_all(f, "stops.txt", &b, err, sizeof err);
        if (getenv("TEST_FEED_SHOW"))
            fprintf(stderr, "feed_read_all: %s\n", err);
        _exit(rc != -1 ? 2 : strstr(err, "out of memory") ? 1 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("feed_read_all within 512 MB more address space: %s %d",
                 WIFEXITED(status) ? "exit status" : "killed by signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
#endif
    feed_buffer b;
    assert_int_equal(feed_read_all(f, "stops.txt", &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "stops.txt"));
    feed_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_honest_zips_open),
        cmocka_unit_test(test_deflated_entry_claiming_gigabytes_is_refused),
        cmocka_unit_test(test_stored_entry_larger_than_its_bytes_is_refused),
        cmocka_unit_test(test_unreadable_compression_method_is_refused),
        cmocka_unit_test(test_compressed_size_past_the_zip_is_refused),
        cmocka_unit_test(test_bzip2_entry_claiming_gigabytes_reads_what_is_there),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
