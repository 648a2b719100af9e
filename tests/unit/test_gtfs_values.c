/* test_gtfs_values.c — the GTFS value parsers (src/base/gtfs.c) at their limits,
 * with the inputs the fuzzer (tests/fuzz/fuzz_gtfs_time.c) found. */
#include "test_support.h"

#include <stdint.h>
#include <stdio.h>

#include "transit/gtfs.h"

static int parse_int(const char *s, int64_t *v)
{
    return gtfs_parse_int(s, strlen(s), v);
}

/* fuzz_gtfs_time: " 9999999999999999990" overflowed int64_t (UBSan). */
static void test_int_past_int64_is_rejected_not_wrapped(void **state)
{
    (void)state;
    int64_t v = 42;
    assert_int_equal(parse_int(" 9999999999999999990", &v), -1);
    assert_int_equal(parse_int("9223372036854775808", &v), -1);
    assert_int_equal(parse_int("-9223372036854775809", &v), -1);
    assert_int_equal(v, 42);   /* untouched on failure */
    assert_int_equal(parse_int("9223372036854775807", &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(parse_int("-999999999999999999", &v), 0);   /* 19 characters: the cap */
    assert_true(v == -999999999999999999);
    assert_int_equal(parse_int("+17", &v), 0);
    assert_int_equal(v, 17);
    assert_int_equal(parse_int("-0", &v), 0);
    assert_int_equal(v, 0);
}

/* gtfs_parse_date_memo answers as gtfs_parse_date, whatever month it holds:
 * every day 0..39 of months 0..13 around two leap years, in order (the memo
 * hit) and each after a date of another month (the memo missed), and
 * malformed ones inside a held month. */
static void test_date_memo_answers_as_the_parser(void **state)
{
    (void)state;
    gtfs_date_memo memo = {0};
    int checked = 0;
    for (int y = 1999; y <= 2001; y++)
        for (int m = 0; m <= 13; m++)
            for (int d = 0; d <= 39; d++)
                for (int twice = 0; twice < 2; twice++) {
                    char s[16];
                    snprintf(s, sizeof s, "%04d%02d%02d", twice ? 2099 : y, m, d);
                    int32_t a = -7, b = -7;
                    int ra = gtfs_parse_date(s, 8, &a), rb = gtfs_parse_date_memo(s, 8, &b, &memo);
                    assert_int_equal(ra, rb);
                    if (ra == 0)
                        assert_int_equal(a, b);
                    if (twice) {   /* back to y-m, after another month */
                        snprintf(s, sizeof s, "%04d%02d%02d", y, m, d);
                        ra = gtfs_parse_date(s, 8, &a);
                        rb = gtfs_parse_date_memo(s, 8, &b, &memo);
                        assert_int_equal(ra, rb);
                        if (ra == 0)
                            assert_int_equal(a, b);
                    }
                    checked++;
                }
    assert_true(checked > 3000);
    int32_t v;
    assert_int_equal(gtfs_parse_date_memo("20000215", 8, &v, &memo), 0);
    assert_int_equal(gtfs_parse_date_memo("200002x5", 8, &v, &memo), -1);
    assert_int_equal(gtfs_parse_date_memo("2000021", 7, &v, &memo), -1);
    assert_int_equal(gtfs_parse_date_memo("20000229", 8, &v, &memo), 0);   /* 2000 is a leap year */
    assert_int_equal(gtfs_parse_date_memo("20000230", 8, &v, &memo), -1);
    assert_int_equal(gtfs_parse_date_memo(" 20000228 ", 10, &v, &memo), 0);   /* trimmed, as the parser does */
    assert_int_equal(v, days_from_civil(2000, 2, 28));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_past_int64_is_rejected_not_wrapped),
        cmocka_unit_test(test_date_memo_answers_as_the_parser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
