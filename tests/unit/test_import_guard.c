/* test_import_guard.c — the check that refuses to activate a version that
 * lost too many rows or shrank too much: thresholds, the boundary, each
 * reason in the message, and the limits that turn it off. */
#include "test_support.h"

#include "transit/import_guard.h"

static const import_guard_limits DEFAULTS = {IMPORT_GUARD_DEFAULT_MAX_DROP_PCT,
                                             IMPORT_GUARD_DEFAULT_MAX_SHRINK_PCT};

static import_guard_input clean_input(void)
{
    import_guard_input in = {.have_rows = true, .previous_version = "4efd0b76c72a"};
    uint64_t rows[IMPORT_GUARD_FILE_COUNT] = {416, 22, 1339, 37790};
    for (int f = 0; f < IMPORT_GUARD_FILE_COUNT; f++)
        in.read[f] = in.kept[f] = rows[f];
    return in;
}

static void test_clean_feed_passes(void **state)
{
    (void)state;
    import_guard_input in = clean_input();
    char msg[512] = "x";
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 0);
    assert_string_equal(msg, "");
}

static void test_mostly_dropped_file_is_refused(void **state)
{
    (void)state;
    import_guard_input in = clean_input();
    in.kept[IMPORT_GUARD_STOP_TIMES] = 142;
    char msg[512];
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 1);
    assert_string_equal(msg, "stop_times.txt: 37,648 of 37,790 rows dropped (99.6 %) > --max-drop 5 %; "
                             "not activated, current stays 4efd0b76c72a; use --force to activate anyway");
}

static void test_drop_threshold_boundary(void **state)
{
    (void)state;
    import_guard_input in = clean_input();
    in.read[IMPORT_GUARD_STOPS] = 1000;
    in.kept[IMPORT_GUARD_STOPS] = 950;   /* exactly 5 %: allowed */
    char msg[512];
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 0);
    in.kept[IMPORT_GUARD_STOPS] = 949;   /* 5.1 %: refused */
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "stops.txt: 51 of 1,000 rows dropped (5.1 %)"));
    import_guard_limits lax = {100, 100};
    in.kept[IMPORT_GUARD_STOPS] = 0;
    assert_int_equal(import_guard_check(&in, &lax, msg, sizeof msg), 0);
}

static void test_a_few_dropped_rows_never_refuse(void **state)
{
    (void)state;
    import_guard_input in = clean_input();
    in.read[IMPORT_GUARD_STOPS] = 12;
    in.kept[IMPORT_GUARD_STOPS] = 2;    /* 10 rows (83 %): a small feed's typos */
    char msg[512];
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 0);
    in.kept[IMPORT_GUARD_STOPS] = 1;    /* 11 rows: refused */
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "stops.txt: 11 of 12 rows dropped (91.7 %)"));
}

static void test_every_file_is_named(void **state)
{
    (void)state;
    import_guard_input in = clean_input();
    for (int f = 0; f < IMPORT_GUARD_FILE_COUNT; f++)
        in.kept[f] = 0;
    char msg[1024];
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 1);
    for (int f = 0; f < IMPORT_GUARD_FILE_COUNT; f++)
        assert_non_null(strstr(msg, import_guard_file_name((import_guard_file)f)));
}

static void test_shrink_against_active_version(void **state)
{
    (void)state;
    import_guard_input in = clean_input();
    in.have_previous = true;
    in.previous = (import_guard_size){1000, 2000, 50000};
    in.next = (import_guard_size){1000, 1000, 50000};   /* trips -50 %: allowed */
    char msg[512];
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 0);
    in.next.trips = 999;                                /* -50.05 %: refused */
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "trips: 2,000 in the active version, 999 in the new one"));
    assert_null(strstr(msg, "stops:"));
    assert_non_null(strstr(msg, "current stays 4efd0b76c72a"));
    in.next = (import_guard_size){5000, 9000, 90000};   /* growth is never refused */
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 0);
    import_guard_limits tight = {5, 10};
    in.next = (import_guard_size){880, 2000, 50000};    /* stops -12 % > 10 % */
    assert_int_equal(import_guard_check(&in, &tight, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "--max-shrink 10 %"));
}

static void test_reactivation_checks_shrink_only(void **state)
{
    (void)state;
    import_guard_input in = {.have_rows = false, .have_previous = false};
    in.kept[IMPORT_GUARD_STOPS] = 0;   /* ignored without rows */
    char msg[512];
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 0);
    in.previous_version = "";
    in.have_rows = true;
    in.read[IMPORT_GUARD_TRIPS] = 11;
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "there is no active version"));
}

static void test_small_buffer_is_terminated(void **state)
{
    (void)state;
    import_guard_input in = clean_input();
    in.kept[IMPORT_GUARD_STOP_TIMES] = 0;
    char msg[16];
    memset(msg, 'x', sizeof msg);
    assert_int_equal(import_guard_check(&in, &DEFAULTS, msg, sizeof msg), 1);
    assert_int_equal(strlen(msg), sizeof msg - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_feed_passes),
        cmocka_unit_test(test_mostly_dropped_file_is_refused),
        cmocka_unit_test(test_drop_threshold_boundary),
        cmocka_unit_test(test_a_few_dropped_rows_never_refuse),
        cmocka_unit_test(test_every_file_is_named),
        cmocka_unit_test(test_shrink_against_active_version),
        cmocka_unit_test(test_reactivation_checks_shrink_only),
        cmocka_unit_test(test_small_buffer_is_terminated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
