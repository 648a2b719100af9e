/* test_merge_cache.c — the merge cache's index (src/import/merge_cache.c):
 * what is written reads back the same, and an index that is not whole and
 * intact (a byte changed, cut short, written for other files) is refused,
 * so the merge never copies rows on its word. */
#include "test_support.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import/merge_cache.h"
#include "transit/sha256.h"
#include "transit/share_dir.h"

static void test_id_lists_sort_by_table_then_id_each_once(void **state)
{
    (void)state;
    mc_buf b = {0};
    assert_int_equal(mc_ids_add(&b, 3, "T2", 2), 0);
    assert_int_equal(mc_ids_add(&b, 1, "S10", 3), 0);
    assert_int_equal(mc_ids_add(&b, 3, "T1", 2), 0);
    assert_int_equal(mc_ids_add(&b, 1, "S1", 2), 0);
    assert_int_equal(mc_ids_add(&b, 3, "T2", 2), 0);
    assert_int_equal(mc_ids_add(&b, 1, "S1", 2), 0);
    assert_int_equal(mc_ids_sort_unique(&b), 0);
    const char *want[] = {"S1", "S10", "T1", "T2"};
    const int tables[] = {1, 1, 3, 3};
    size_t pos = 0, len;
    int t, n = 0;
    const char *id;
    while (mc_ids_next(&b, &pos, &t, &id, &len)) {
        assert_true(n < 4);
        assert_int_equal(t, tables[n]);
        assert_int_equal(len, strlen(want[n]));
        assert_memory_equal(id, want[n], len);
        n++;
    }
    assert_int_equal(n, 4);
    assert_int_equal(pos, b.len);
    mc_buf_free(&b);
}

static void one_feed(mc_feed *f, int k)
{
    memset(f, 0, sizeof *f);
    memset(f->key, 'a' + k, 64);
    memset(f->context, 'c' + k, 64);
    for (int i = 0; i < MERGE_CACHE_COUNTS; i++)
        f->counts[i] = (uint64_t)(k * 100 + i);
    snprintf(f->timezone, sizeof f->timezone, "America/New_York");
    snprintf(f->first_date, sizeof f->first_date, "20260101");
    snprintf(f->last_date, sizeof f->last_date, "20261231");
    assert_int_equal(mc_ids_add(&f->defined, 1, "S1", 2), 0);
    assert_int_equal(mc_ids_add(&f->foreign, 2, "R9", 2), 0);
    f->part[4] = (mc_range){.off = 40, .len = 1000, .lines = 20};
    f->part[4].crc = 0x07070707u;
    f->records[1] = (mc_range){.off = 19, .len = 30, .lines = 0};
    f->nsegs[4] = 2;
    f->segs[4] = calloc(2, sizeof *f->segs[4]);
    f->segs[4][0] = (mc_seg){.out_line = 0, .src_line = 2};
    f->segs[4][1] = (mc_seg){.out_line = 7, .src_line = 12};
}

static void write_two(const char *dir)
{
    mc_feed feeds[2];
    one_feed(&feeds[0], 0);
    one_feed(&feeds[1], 1);
    mc_index idx = {.nfiles = 12, .nfeeds = 2, .feeds = feeds};
    char err[256];
    assert_int_equal(mc_index_write(dir, &idx, err, sizeof err), 0);
    mc_feed_free(&feeds[0]);
    mc_feed_free(&feeds[1]);
}

static void test_an_index_reads_back_as_written(void **state)
{
    (void)state;
    char dir[1024];
    test_tmpdir(dir, sizeof dir, "merge-cache-roundtrip");
    write_two(dir);
    mc_index back;
    assert_int_equal(mc_index_read(dir, 12, &back), 0);
    assert_int_equal(back.nfeeds, 2);
    const mc_feed *f = &back.feeds[1];
    assert_memory_equal(f->key, "bbbbbbbb", 8);
    assert_memory_equal(f->context, "dddddddd", 8);
    assert_int_equal(f->counts[5], 105);
    assert_string_equal(f->timezone, "America/New_York");
    assert_string_equal(f->last_date, "20261231");
    assert_int_equal(f->part[4].off, 40);
    assert_int_equal(f->part[4].len, 1000);
    assert_int_equal(f->part[4].lines, 20);
    assert_int_equal(f->part[4].crc, 0x07070707u);
    assert_int_equal(f->records[1].len, 30);
    assert_int_equal(f->nsegs[4], 2);
    assert_int_equal(f->segs[4][1].src_line, 12);
    assert_int_equal(f->defined.len, 7);
    assert_int_equal(f->foreign.len, 7);
    mc_index_free(&back);
    /* written for another number of merged files: not this merge's */
    assert_int_equal(mc_index_read(dir, 11, &back), -1);
}

static void test_a_changed_or_cut_index_is_refused(void **state)
{
    (void)state;
    char dir[1024], path[1200];
    test_tmpdir(dir, sizeof dir, "merge-cache-corrupt");
    write_two(dir);
    snprintf(path, sizeof path, "%s/%s", dir, MERGE_CACHE_INDEX);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char buf[8192];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 200 && n < sizeof buf);
    mc_index idx;
    for (size_t at = 0; at < n; at += 37) {   /* one byte changed anywhere */
        unsigned char copy[8192];
        memcpy(copy, buf, n);
        copy[at] ^= 0x01;
        assert_int_equal(mc_index_parse(copy, n, 12, &idx), -1);
    }
    for (size_t cut = 0; cut < n; cut += 41)    /* cut short anywhere */
        assert_int_equal(mc_index_parse(buf, cut, 12, &idx), -1);
    assert_int_equal(mc_index_parse(buf, n, 12, &idx), 0);
    mc_index_free(&idx);
    /* a partial file on disk */
    assert_int_equal(truncate(path, (off_t)(n / 2)), 0);
    assert_int_equal(mc_index_read(dir, 12, &idx), -1);
    unlink(path);
    assert_int_equal(mc_index_read(dir, 12, &idx), -1);
}

static void test_the_build_is_named_by_the_executable(void **state)
{
    (void)state;
    char a[65], b[65];
    assert_int_equal(mc_build_id(a), 0);
    assert_int_equal(mc_build_id(b), 0);
    assert_int_equal(strlen(a), 64);
    assert_string_equal(a, b);
    /* the bytes hashed are this test binary's, found the same way on Linux
     * and macOS (share_executable_path), and its directory is the one the
     * shipped files are looked for beside */
    char exe[SHARE_PATH_MAX], dir[SHARE_PATH_MAX];
    assert_true(share_executable_path(exe, sizeof exe));
    assert_true(share_executable_dir(dir, sizeof dir));
    const char *base = strrchr(exe, '/');
    assert_non_null(base);
    assert_string_equal(base + 1, "test_merge_cache");
    assert_int_equal((size_t)(base - exe), strlen(dir));
    assert_memory_equal(exe, dir, strlen(dir));
    FILE *f = fopen(exe, "rb");
    assert_non_null(f);
    sha256_ctx c;
    sha256_init(&c);
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sha256_update(&c, buf, n);
    fclose(f);
    uint8_t d[32];
    char hex[65];
    sha256_final(&c, d);
    sha256_hex(d, hex);
    assert_string_equal(a, hex);
    /* too small a buffer is refused, not cut */
    char tiny[4];
    assert_false(share_executable_path(tiny, sizeof tiny));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_lists_sort_by_table_then_id_each_once),
        cmocka_unit_test(test_an_index_reads_back_as_written),
        cmocka_unit_test(test_a_changed_or_cut_index_is_refused),
        cmocka_unit_test(test_the_build_is_named_by_the_executable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
