/* test_gtfs_values.c — the GTFS value parsers (src/base/gtfs.c) at their limits,
 * with the inputs the fuzzer (tests/fuzz/fuzz_gtfs_time.c) found. */
#include "test_support.h"

#include <stdint.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_past_int64_is_rejected_not_wrapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
