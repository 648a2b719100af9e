/* test_store_reuse.c — the digest of a store's inputs (src/import/store_reuse.c):
 * it changes with the input's bytes, its presence and the store's format,
 * and a store is only taken from a version whose marker records it. */
#include "test_support.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "import/store_reuse.h"
#include "transit/datadir.h"
#include "transit/feed.h"
#include "transit/version.h"

static void digest_of(const char *dir, int format, char out[65])
{
    char err[512];
    feed_t *f = feed_open(dir, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(store_reuse_shapes_digest(f, format, out, err, sizeof err), 0);
    assert_int_equal((int)strlen(out), 64);
    feed_close(f);
}

static void test_digest_follows_bytes_presence_and_format(void **state)
{
    (void)state;
    char dir[1024], a[65], b[65], c[65], d[65], e[65], again[65];
    test_tmpdir(dir, sizeof dir, "store-reuse-digest");
    test_write_file(dir, "agency.txt", "agency_name,agency_url,agency_timezone\nA,http://a,America/New_York\n");
    digest_of(dir, 2, a);   /* no shapes.txt */
    test_write_file(dir, "shapes.txt", "");
    digest_of(dir, 2, b);   /* an empty one */
    test_write_file(dir, "shapes.txt", "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\nS,1,2,1\n");
    digest_of(dir, 2, c);
    digest_of(dir, 2, again);
    test_write_file(dir, "shapes.txt", "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\nS,1,3,1\n");
    digest_of(dir, 2, d);   /* one byte changed */
    digest_of(dir, 3, e);   /* another store format */
    assert_string_equal(c, again);
    assert_string_not_equal(a, b);
    assert_string_not_equal(b, c);
    assert_string_not_equal(c, d);
    assert_string_not_equal(d, e);
    /* another file of the feed is not an input */
    test_write_file(dir, "agency.txt", "agency_name,agency_url,agency_timezone\nB,http://b,America/New_York\n");
    digest_of(dir, 3, again);
    assert_string_equal(e, again);
}

/* A version whose marker records the digest (and this build) gives its
 * file; another digest, another builder or no marker gives nothing. */
static void test_taken_only_from_a_matching_marker(void **state)
{
    (void)state;
    char data[1024], err[512], vdir[1200], into[1200], cmd[2600];
    test_tmpdir(data, sizeof data, "store-reuse-take");
    assert_int_equal(datadir_prepare(data, err, sizeof err), 0);
    const char *version = "0123456789ab";
    assert_int_equal(datadir_version_path(data, version, vdir, sizeof vdir), 0);
    assert_int_equal(mkdir(vdir, 0755), 0);
    test_write_file(vdir, "shapes.sqlite", "not really a database, but bytes to take");
    snprintf(cmd, sizeof cmd, "ln -sfn 'versions/%s' '%s/current'", version, data);
    assert_int_equal(system(cmd), 0);
    char digest[65];
    memset(digest, 'a', 64);
    digest[64] = '\0';
    snprintf(into, sizeof into, "%s/new", data);
    assert_int_equal(mkdir(into, 0755), 0);
    uint64_t rows = 0;
    /* no marker */
    assert_false(store_reuse_from_active(data, "shapes.sqlite", digest, into, &rows));
    datadir_marker m;
    memset(&m, 0, sizeof m);
    memcpy(m.version, version, 13);
    m.sequence = 1;
    snprintf(m.builder, sizeof m.builder, "%s", TRANSITD_VERSION);
    memcpy(m.shapes_input, digest, 65);
    m.shapes_rows = 42;
    assert_int_equal(datadir_write_marker(vdir, &m, err, sizeof err), 0);
    datadir_marker back;
    assert_int_equal(datadir_read_marker(vdir, &back), 0);
    assert_string_equal(back.shapes_input, digest);
    assert_int_equal(back.shapes_rows, 42);
    char other[65];
    memcpy(other, digest, 65);
    other[0] = 'b';
    assert_false(store_reuse_from_active(data, "shapes.sqlite", other, into, &rows));
    assert_false(store_reuse_from_active(data, "shapes.sqlite", "", into, &rows));
    assert_false(store_reuse_from_active(data, "schedule.sqlite", digest, into, &rows));
    assert_true(store_reuse_from_active(data, "shapes.sqlite", digest, into, &rows));
    assert_int_equal(rows, 42);
    char taken[1300];
    snprintf(taken, sizeof taken, "%s/shapes.sqlite", into);
    struct stat st;
    assert_int_equal(stat(taken, &st), 0);
    assert_int_equal(st.st_size, (off_t)strlen("not really a database, but bytes to take"));
    /* a marker of another build is not trusted */
    unlink(taken);
    snprintf(m.builder, sizeof m.builder, "%s", "0.0.0-other");
    assert_int_equal(datadir_write_marker(vdir, &m, err, sizeof err), 0);
    assert_false(store_reuse_from_active(data, "shapes.sqlite", digest, into, &rows));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest_follows_bytes_presence_and_format),
        cmocka_unit_test(test_taken_only_from_a_matching_marker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
