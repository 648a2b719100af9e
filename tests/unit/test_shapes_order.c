/* test_shapes_order.c — shapes.sqlite written shape by shape while
 * shapes.txt is read, and the same file when it is not in that order.
 *
 * shapes_write.c holds one shape's points when the file lists its shapes
 * one after the other with rising sequences (in any order of ids), and
 * reads the file again buffering every point otherwise. Whatever the order
 * of the rows, the store must be the same bytes, and each problem counted
 * once: a bad row met before the point that forces the second read is not
 * counted twice, and its example is not repeated.
 */
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/store_write.h"

/* Writes shapes.txt (header and rows) into a directory of its own under
 * the test's, builds shapes.sqlite there, and returns its bytes (malloc'ed,
 * *len) with the problems in *d. */
static char *build(const char *root, const char *name, const char *rows, diag *d, size_t *len)
{
    char dir[700], path[800], err[256] = "";
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    assert_int_equal(system(path), 0);
    char text[4096];
    snprintf(text, sizeof text, "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence,shape_dist_traveled\n%s", rows);
    test_write_file(dir, "shapes.txt", text);
    feed_t *feed = feed_open(dir, err, sizeof err);
    assert_non_null(feed);
    store_stats st;
    snprintf(path, sizeof path, "%s/shapes.sqlite", dir);
    if (shapes_store_write(feed, path, d, &st, err, sizeof err) != 0)
        fail_msg("shapes_store_write: %s", err);
    feed_close(feed);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *bytes = malloc(*len);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, *len, f), *len);
    fclose(f);
    return bytes;
}

/* The same points, in the orders a feed may give them. */
static const char SORTED[] = "A,1,1,1,0\nA,1.5,1.5,2,70\nA,2,2,5,140\n"
                             "B,3,3,1,\nB,4,4,2,\n"
                             "C,5,5,10,0\nC,6,6,20,\nC,7,7,30,9\n";
/* grouped, ids not sorted: still read shape by shape */
static const char GROUPED[] = "C,5,5,10,0\nC,6,6,20,\nC,7,7,30,9\n"
                              "A,1,1,1,0\nA,1.5,1.5,2,70\nA,2,2,5,140\n"
                              "B,3,3,1,\nB,4,4,2,\n";
/* A comes back after B: read again, buffered */
static const char COMES_BACK[] = "A,1,1,1,0\nA,1.5,1.5,2,70\n"
                                 "B,3,3,1,\nB,4,4,2,\n"
                                 "A,2,2,5,140\n"
                                 "C,5,5,10,0\nC,6,6,20,\nC,7,7,30,9\n";
/* C's sequences do not rise: read again, buffered */
static const char FALLING[] = "A,1,1,1,0\nA,1.5,1.5,2,70\nA,2,2,5,140\n"
                              "B,3,3,1,\nB,4,4,2,\n"
                              "C,7,7,30,9\nC,6,6,20,\nC,5,5,10,0\n";

static void test_every_order_gives_the_same_bytes(void **state)
{
    (void)state;
    char root[512];
    test_tmpdir(root, sizeof root, "shapes_order");
    const char *names[] = {"sorted", "grouped", "comes_back", "falling"};
    const char *rows[] = {SORTED, GROUPED, COMES_BACK, FALLING};
    size_t len0 = 0;
    char *first = NULL;
    for (int i = 0; i < 4; i++) {
        diag d;
        diag_init(&d);
        size_t len;
        char *bytes = build(root, names[i], rows[i], &d, &len);
        assert_int_equal(diag_total(&d), 0);
        if (!first) {
            first = bytes;
            len0 = len;
            continue;
        }
        assert_int_equal(len, len0);
        if (memcmp(bytes, first, len) != 0) fail_msg("%s: not the bytes of the sorted file", names[i]);
        free(bytes);
        diag_destroy(&d);
    }
    free(first);
}

/* A bad coordinate before the point that forces the second read, and a
 * repeated sequence after it: each counted once, each example once, as in
 * a file read buffered from the start (a repeat of a point first). */
static void test_problems_before_a_second_read_count_once(void **state)
{
    (void)state;
    char root[512];
    test_tmpdir(root, sizeof root, "shapes_order_diag");
    diag streamed, buffered;
    diag_init(&streamed);
    diag_init(&buffered);
    size_t l1, l2;
    char *b1 = build(root, "late", "A,1,1,1,\nA,95,1,2,\nA,2,2,3,\nB,1,1,1,\nA,3,3,4,\nB,1,1,1,\nB,2,2,2,\n", &streamed,
                     &l1);
    char *b2 = build(root, "early", "B,1,1,1,\nA,1,1,1,\nA,95,1,2,\nA,2,2,3,\nB,1,1,1,\nA,3,3,4,\nB,2,2,2,\n",
                     &buffered, &l2);
    assert_int_equal(streamed.count[DIAG_BAD_COORDINATE], 1);
    assert_int_equal(streamed.count[DIAG_DUPLICATE_ID], 1);
    assert_int_equal(diag_total(&streamed), 2);
    assert_int_equal(streamed.nexamples, 2);
    assert_non_null(strstr(streamed.examples[0], "shapes.txt:3: bad shape_pt_lat/lon '95'"));
    assert_non_null(strstr(streamed.examples[1], "duplicate (shape_id, shape_pt_sequence) ('B', 1)"));
    assert_int_equal(buffered.count[DIAG_BAD_COORDINATE], 1);
    assert_int_equal(buffered.count[DIAG_DUPLICATE_ID], 1);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    free(b1);
    free(b2);
    diag_destroy(&streamed);
    diag_destroy(&buffered);
}

/* diag_mark_restore gives back the examples too, not only the counts: an
 * example replaced after the mark (the list full) is restored. */
static void test_a_mark_restores_replaced_examples(void **state)
{
    (void)state;
    diag d;
    diag_init(&d);
    for (int i = 0; i < DIAG_EXAMPLES; i++) diag_add(&d, DIAG_BAD_TIME, "f.txt", (uint64_t)i + 1, "bad %d", i);
    diag_mark m;
    diag_mark_take(&d, &m);
    char last[200];
    memcpy(last, d.examples[DIAG_EXAMPLES - 1], sizeof last);
    diag_add(&d, DIAG_BAD_DATE, "f.txt", 99, "a new kind replaces the last example");
    assert_string_not_equal(d.examples[DIAG_EXAMPLES - 1], last);
    diag_mark_restore(&d, &m);
    assert_string_equal(d.examples[DIAG_EXAMPLES - 1], last);
    assert_int_equal(d.count[DIAG_BAD_DATE], 0);
    assert_int_equal(d.count[DIAG_BAD_TIME], DIAG_EXAMPLES);
    diag_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_order_gives_the_same_bytes),
        cmocka_unit_test(test_problems_before_a_second_read_count_once),
        cmocka_unit_test(test_a_mark_restores_replaced_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
