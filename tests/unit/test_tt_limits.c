/* test_tt_limits.c — the check that keeps counts from wrapping when the
 * timetable builder narrows them to timetable.bin's uint32_t fields. */
#include "test_support.h"

#include <stdint.h>

#include "import/tt_limits.h"

static void test_limit_leaves_room_for_the_none_marker(void **state)
{
    (void)state;
    assert_true(TT_MAX_COUNT == (size_t)UINT32_MAX - 1);
}

static void test_counts_up_to_the_limit_pass(void **state)
{
    (void)state;
    char err[200] = "";
    assert_int_equal(tt_check_count(0, TT_MAX_COUNT, "stops.txt", "stops", err, sizeof err), 0);
    assert_int_equal(tt_check_count(TT_MAX_COUNT, TT_MAX_COUNT, "stops.txt", "stops", err, sizeof err), 0);
    assert_string_equal(err, "");
}

static void test_a_count_past_the_limit_fails_with_file_and_count(void **state)
{
    (void)state;
    char err[200];
    assert_int_equal(tt_check_count((size_t)UINT32_MAX, TT_MAX_COUNT, "stop_times.txt", "stop times",
                                    err, sizeof err),
                     -1);
    assert_string_equal(err, "stop_times.txt: 4294967295 stop times exceed the timetable format's "
                             "limit of 4294967294");
    assert_int_equal(tt_check_count((size_t)1 << 33, TT_MAX_COUNT, "trips.txt", "trips", err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "trips.txt: 8589934592 trips"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_leaves_room_for_the_none_marker),
        cmocka_unit_test(test_counts_up_to_the_limit_pass),
        cmocka_unit_test(test_a_count_past_the_limit_fails_with_file_and_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
