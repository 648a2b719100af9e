/* test_feed_validity.c — the feed's validity against the clock, on a small
 * feed in America/New_York whose service runs Monday 2026-10-26 to Friday
 * 2026-11-13, with a trip at 25:30 on its last date. "Today" is the date in
 * the feed timezone (not UTC), the last departure after midnight still
 * counts, and the warning sentences say what clients need.
 */
#include "test_support.h"
#include "test_timetable_fixture.h"

#include "transit/feed_validity.h"
#include "transit/gtfs.h"

static char g_dir[512];
static dataset *g_ds;

/* Unix seconds of a UTC date-time. */
static int64_t utc(int y, unsigned mo, unsigned d, int h, int mi)
{
    return (int64_t)days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "feed-validity");
    test_write_file(g_dir, "agency.txt",
                    "agency_id,agency_name,agency_url,agency_timezone\n"
                    "A1,Tiny,https://example.com,America/New_York\n");
    test_write_file(g_dir, "stops.txt",
                    "stop_id,stop_name,stop_lat,stop_lon\n"
                    "S1,One,40.0,-74.0\n"
                    "S2,Two,40.001,-74.0\n");
    test_write_file(g_dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                    "R1,A1,1,Main,3\n");
    test_write_file(g_dir, "trips.txt",
                    "route_id,service_id,trip_id\n"
                    "R1,WK,T1\n"
                    "R1,WK,T2\n");
    test_write_file(g_dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                    "T1,08:00:00,08:00:00,S1,1\n"
                    "T1,08:10:00,08:10:00,S2,2\n"
                    "T2,25:30:00,25:30:00,S1,1\n"
                    "T2,25:40:00,25:40:00,S2,2\n");
    test_write_weekday_calendar(g_dir);
    g_ds = test_open_fixture(g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dataset_release(g_ds);
    return 0;
}

static void expect(int64_t now, const char *today, int days, bool expired, bool not_yet)
{
    feed_validity v;
    feed_validity_at(g_ds, now, &v);
    char text[11];
    format_date(v.today, text);
    if (strcmp(text, today) != 0)
        fail_msg("at %lld: today %s, expected %s", (long long)now, text, today);
    assert_int_equal(v.start, days_from_civil(2026, 10, 26));
    assert_int_equal(v.end, days_from_civil(2026, 11, 13));
    assert_int_equal(v.days_until_expiry, days);
    assert_int_equal(v.expired, expired);
    assert_int_equal(v.not_yet_valid, not_yet);
}

static void test_today_is_the_feed_timezone_date(void **state)
{
    (void)state;
    /* 03:00Z on the 14th is 22:00 on the 13th in New York (EST, -05:00) */
    expect(utc(2026, 11, 14, 3, 0), "2026-11-13", 0, false, false);
    expect(utc(2026, 11, 14, 4, 59), "2026-11-13", 0, false, false);
    expect(utc(2026, 11, 14, 5, 0), "2026-11-14", -1, true, false);
    expect(utc(2026, 12, 24, 12, 0), "2026-12-24", -41, true, false);
    /* EDT (-04:00) before 2026-11-01: midnight of the first date is 04:00Z */
    expect(utc(2026, 10, 26, 3, 59), "2026-10-25", 19, false, true);
    expect(utc(2026, 10, 26, 4, 0), "2026-10-26", 18, false, false);
}

static void test_validity_json(void **state)
{
    (void)state;
    json_writer w;
    json_init(&w);
    feed_validity v;
    feed_validity_at(g_ds, utc(2026, 11, 20, 12, 0), &v);
    json_object_begin(&w);
    feed_validity_write(&w, &v);
    json_object_end(&w);
    assert_string_equal(w.buf, "{\"feed_validity\":{\"start\":\"2026-10-26\",\"end\":\"2026-11-13\","
                               "\"today\":\"2026-11-20\",\"days_until_expiry\":-7,"
                               "\"expired\":true,\"not_yet_valid\":false}}");
    json_free(&w);
}

static void test_warning_sentences(void **state)
{
    (void)state;
    char text[256];
    feed_validity v;
    feed_validity_at(g_ds, utc(2026, 11, 1, 12, 0), &v);
    assert_false(feed_validity_warning(&v, text, sizeof text));
    assert_string_equal(text, "");
    feed_validity_at(g_ds, utc(2026, 11, 14, 12, 0), &v);
    assert_true(feed_validity_warning(&v, text, sizeof text));
    assert_non_null(strstr(text, "the feed expired 1 day ago: its last service date is 2026-11-13"));
    assert_non_null(strstr(text, "import a newer feed"));
    feed_validity_at(g_ds, utc(2026, 11, 20, 12, 0), &v);
    assert_true(feed_validity_warning(&v, text, sizeof text));
    assert_non_null(strstr(text, "expired 7 days ago"));
    feed_validity_at(g_ds, utc(2026, 10, 1, 12, 0), &v);
    assert_true(feed_validity_warning(&v, text, sizeof text));
    assert_non_null(strstr(text, "not in effect yet: its service runs from 2026-10-26 to 2026-11-13"));
    /* a short buffer is cut, still terminated */
    char small[16];
    assert_true(feed_validity_warning(&v, small, sizeof small));
    assert_int_equal(strlen(small), sizeof small - 1);
}

static void test_departures_warning_bounds(void **state)
{
    (void)state;
    char text[256];
    /* the last departure: 25:40 on 2026-11-13 (EST) = 06:40Z on the 14th */
    int64_t last = utc(2026, 11, 14, 6, 40);
    assert_false(feed_validity_departures_warning(g_ds, last, 60, text, sizeof text));
    assert_string_equal(text, "");
    assert_false(feed_validity_departures_warning(g_ds, utc(2026, 11, 14, 5, 30), 60, text,
                                                  sizeof text));
    assert_true(feed_validity_departures_warning(g_ds, last + 1, 3600, text, sizeof text));
    assert_non_null(strstr(text, "after the feed's service (2026-10-26 to 2026-11-13"));
    assert_non_null(strstr(text, "2026-11-14T01:40:00-05:00"));
    /* the first service date starts at its local midnight (EDT): 04:00Z */
    int64_t first = utc(2026, 10, 26, 4, 0);
    assert_true(feed_validity_departures_warning(g_ds, first - 3600, 3600, text, sizeof text));
    assert_non_null(strstr(text, "before the feed's service (2026-10-26 to 2026-11-13)"));
    assert_false(feed_validity_departures_warning(g_ds, first - 3600, 3601, text, sizeof text));
    assert_false(feed_validity_departures_warning(g_ds, utc(2026, 11, 1, 12, 0), 60, text,
                                                  sizeof text));
    /* a board of arrivals names them */
    assert_true(feed_validity_events_warning(g_ds, last + 1, 3600, "arrivals", text, sizeof text));
    assert_true(strncmp(text, "no arrivals: the time is after", 30) == 0);
    assert_true(feed_validity_departures_warning(g_ds, last + 1, 3600, text, sizeof text));
    assert_true(strncmp(text, "no departures: the time is after", 32) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_today_is_the_feed_timezone_date),
        cmocka_unit_test(test_validity_json),
        cmocka_unit_test(test_warning_sentences),
        cmocka_unit_test(test_departures_warning_bounds),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
