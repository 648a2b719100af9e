/* test_arrivals.c — pins the arrival semantics of the query contract on a
 * small hand-made feed: which calls are arrivals (not a trip's first stop,
 * not drop_off_type 1, at the arrival time), the trip's last stop shown as
 * an arrival, boards of both kinds (one row per call: its departure, else
 * its arrival), arrivals that overtake inside one departure group (a run
 * that dwells longer), frequency instances, stations, nearby boards, and
 * that a board of departures is what stop_departures gives.
 */
#include "test_support.h"
#include "test_timetable_fixture.h"

#include "transit/gtfs.h"
#include "transit/query.h"

static char g_dir[512];
static dataset *g_ds;
static query_scratch *g_s;

/* Monday 2026-11-02, America/New_York (UTC-5). */
static void write_feed(const char *dir)
{
    test_write_file(dir, "agency.txt",
                    "agency_id,agency_name,agency_url,agency_timezone\n"
                    "A1,Test Transit,http://example.com,America/New_York\n");
    test_write_file(dir, "stops.txt",
                    "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station\n"
                    "A,Alpha,40.7000,-74.0000,0,\n"
                    "B,Beta,40.7010,-74.0000,0,\n"
                    "C,Gamma,40.7020,-74.0000,0,\n"
                    "S,Station,40.7100,-74.0100,1,\n"
                    "P1,Platform 1,40.7101,-74.0100,0,S\n"
                    "P2,Platform 2,40.7102,-74.0100,0,S\n");
    test_write_file(dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                    "R1,A1,1,One,3\n");
    test_write_file(dir, "calendar.txt",
                    "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
                    "WK,1,1,1,1,1,0,0,20261001,20261231\n");
    /* X and Y run the same stops with the same service: Y departs after X
     * everywhere (one departure group), but X dwells at B, so Y arrives at
     * B first. N: pickup_type 1 at B (an arrival only), drop_off_type 1 at
     * C (no arrival there). F: frequency-based, 10:00 and 10:30. */
    test_write_file(dir, "trips.txt",
                    "route_id,service_id,trip_id,trip_headsign\n"
                    "R1,WK,X,To Gamma\n"
                    "R1,WK,Y,To Gamma\n"
                    "R1,WK,N,Odd\n"
                    "R1,WK,F,Freq\n"
                    "R1,WK,P,Station\n");
    test_write_file(dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type,drop_off_type\n"
                    "X,08:00:00,08:00:00,A,1,0,0\n"
                    "X,08:10:00,08:20:00,B,2,0,0\n"
                    "X,08:30:00,08:30:00,C,3,0,0\n"
                    "Y,08:01:00,08:01:00,A,1,0,0\n"
                    "Y,08:09:00,08:21:00,B,2,0,0\n"
                    "Y,08:31:00,08:31:00,C,3,0,0\n"
                    "N,09:00:00,09:00:00,A,1,0,0\n"
                    "N,09:05:00,09:06:00,B,2,1,0\n"
                    "N,09:10:00,09:10:00,C,3,0,1\n"
                    "N,09:15:00,09:15:00,A,4,0,0\n"
                    "F,10:00:00,10:00:00,A,1,0,0\n"
                    "F,10:04:00,10:05:00,B,2,0,0\n"
                    "F,10:09:00,10:09:00,C,3,0,0\n"
                    "P,11:00:00,11:00:00,P1,1,0,0\n"
                    "P,11:10:00,11:11:00,P2,2,0,0\n"
                    "P,11:20:00,11:20:00,A,3,0,0\n");
    test_write_file(dir, "frequencies.txt",
                    "trip_id,start_time,end_time,headway_secs\n"
                    "F,10:00:00,11:00:00,1800\n");
}

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "arrivals");
    write_feed(g_dir);
    g_ds = test_open_fixture(g_dir);
    g_s = query_scratch_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    query_scratch_free(g_s);
    dataset_close(g_ds);
    return 0;
}

/* Unix seconds of 2026-11-02 at local hh:mm (UTC-5). */
static int64_t at(int hh, int mm)
{
    return (int64_t)days_from_civil(2026, 11, 2) * 86400 + (hh + 5) * 3600 + mm * 60;
}

/* The board of `kind` at a stop as "TRIP@HH:MM:SS" (an arrival "TRIP<HH:MM:SS"),
 * space-separated, in order. */
static const char *board_text(query_kind kind, const char *stop, int64_t from, uint32_t window, uint32_t limit)
{
    static char text[2048];
    departure out[64];
    uint32_t n = 0;
    bool trunc;
    query_error qe;
    uint32_t s = dataset_find_stop(g_ds, stop, strlen(stop));
    assert_int_not_equal(s, QUERY_NONE);
    assert_int_equal(stop_events(g_ds, g_s, kind, s, from, window, limit, out, &n, &trunc, &qe), QUERY_OK);
    size_t o = 0;
    text[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        trip_info ti;
        dataset_trip(g_ds, out[i].trip, &ti);
        uint32_t secs = out[i].secs;
        assert_int_equal(out[i].instant, dataset_instant(g_ds, out[i].service_date, secs));
        o += (size_t)snprintf(text + o, sizeof text - o, "%s%s%c%02u:%02u:%02u", i ? " " : "", ti.id,
                              out[i].arrival ? '<' : '@', secs / 3600, secs / 60 % 60, secs % 60);
    }
    return text;
}

static void test_arrivals_at_the_last_stop(void **state)
{
    (void)state;
    /* C is the last stop of X, Y and F: no departures, every arrival */
    assert_string_equal(board_text(QUERY_DEPARTURES, "C", at(8, 0), 3600, 20), "");
    assert_string_equal(board_text(QUERY_ARRIVALS, "C", at(8, 0), 3600, 20), "X<08:30:00 Y<08:31:00");
    assert_string_equal(board_text(QUERY_BOTH, "C", at(8, 0), 3600, 20), "X<08:30:00 Y<08:31:00");
}

static void test_no_arrival_at_the_first_stop(void **state)
{
    (void)state;
    assert_string_equal(board_text(QUERY_ARRIVALS, "A", at(7, 0), 3600 * 2 - 60, 20), "");
    assert_string_equal(board_text(QUERY_DEPARTURES, "A", at(8, 0), 120, 20), "X@08:00:00 Y@08:01:00");
    /* N comes back to A at its end: an arrival there */
    assert_string_equal(board_text(QUERY_ARRIVALS, "A", at(9, 0), 3600, 20), "N<09:15:00");
    assert_string_equal(board_text(QUERY_BOTH, "A", at(9, 0), 3600, 20), "N@09:00:00 N<09:15:00");
}

static void test_arrivals_that_overtake(void **state)
{
    (void)state;
    /* Y arrives at B before X, though it departs after it */
    assert_string_equal(board_text(QUERY_ARRIVALS, "B", at(8, 0), 3600, 20), "Y<08:09:00 X<08:10:00");
    assert_string_equal(board_text(QUERY_ARRIVALS, "B", at(8, 9) + 30, 600, 20), "X<08:10:00");
    assert_string_equal(board_text(QUERY_ARRIVALS, "B", at(8, 0), 3600, 1), "Y<08:09:00");
    assert_string_equal(board_text(QUERY_DEPARTURES, "B", at(8, 0), 3600, 20), "X@08:20:00 Y@08:21:00");
    /* both: X and Y depart from B, so their departures stand for the calls */
    assert_string_equal(board_text(QUERY_BOTH, "B", at(8, 0), 3600, 20), "X@08:20:00 Y@08:21:00");
}

static void test_pickup_and_drop_off_types(void **state)
{
    (void)state;
    /* N at B: pickup_type 1, so an arrival only; at C: drop_off_type 1, nothing */
    assert_string_equal(board_text(QUERY_DEPARTURES, "B", at(9, 0), 600, 20), "");
    assert_string_equal(board_text(QUERY_ARRIVALS, "B", at(9, 0), 600, 20), "N<09:05:00");
    assert_string_equal(board_text(QUERY_BOTH, "B", at(9, 0), 600, 20), "N<09:05:00");
    assert_string_equal(board_text(QUERY_ARRIVALS, "C", at(9, 0), 900, 20), "");
    assert_string_equal(board_text(QUERY_DEPARTURES, "C", at(9, 0), 900, 20), "N@09:10:00");
    assert_string_equal(board_text(QUERY_BOTH, "C", at(9, 0), 900, 20), "N@09:10:00");
}

static void test_frequencies_and_stations(void **state)
{
    (void)state;
    assert_string_equal(board_text(QUERY_ARRIVALS, "B", at(10, 0), 3600, 20), "F<10:04:00 F<10:34:00");
    assert_string_equal(board_text(QUERY_BOTH, "C", at(10, 0), 3600, 20), "F<10:09:00 F<10:39:00");
    /* a station answers with its platforms' events */
    assert_string_equal(board_text(QUERY_ARRIVALS, "S", at(11, 0), 3600, 20), "P<11:10:00");
    assert_string_equal(board_text(QUERY_BOTH, "S", at(11, 0), 3600, 20), "P@11:00:00 P@11:11:00");
}

static void test_departures_kind_is_stop_departures(void **state)
{
    (void)state;
    const char *stops[] = {"A", "B", "C", "S", "P1", "P2"};
    for (size_t i = 0; i < sizeof stops / sizeof *stops; i++) {
        departure a[64], b[64];
        uint32_t na = 0, nb = 0;
        bool ta, tb;
        query_error qe;
        uint32_t s = dataset_find_stop(g_ds, stops[i], strlen(stops[i]));
        assert_int_equal(stop_departures(g_ds, g_s, s, at(6, 0), 86400, 64, a, &na, &ta, &qe), QUERY_OK);
        assert_int_equal(stop_events(g_ds, g_s, QUERY_DEPARTURES, s, at(6, 0), 86400, 64, b, &nb, &tb, &qe),
                         QUERY_OK);
        assert_int_equal(na, nb);
        for (uint32_t k = 0; k < na; k++) {
            assert_int_equal(a[k].instant, b[k].instant);
            assert_int_equal(a[k].trip, b[k].trip);
            assert_int_equal(a[k].stop, b[k].stop);
            assert_int_equal(a[k].secs, b[k].secs);
            assert_int_equal(a[k].pos, b[k].pos);
            assert_false(a[k].arrival || b[k].arrival);
        }
    }
}

static void test_nearby_arrivals(void **state)
{
    (void)state;
    departure out[64];
    uint32_t n = 0;
    bool trunc;
    query_error qe;
    /* A, B and C lie within 300 m of (40.7010, -74.0000) */
    assert_int_equal(nearby_events(g_ds, g_s, QUERY_ARRIVALS, 40.7010, -74.0000, 300, at(8, 0), 3600, 64, out, &n,
                                   &trunc, &qe),
                     QUERY_OK);
    assert_int_equal(n, 4);   /* Y and X at B, X and Y at C */
    for (uint32_t i = 0; i < n; i++) {
        assert_true(out[i].arrival);
        assert_true(i == 0 || out[i - 1].instant <= out[i].instant);
    }
    assert_int_equal(out[0].instant, at(8, 9));
    assert_int_equal(out[3].instant, at(8, 31));
    assert_int_equal(out[2].distance_m, 111);   /* C is 0.001° of latitude away */
    /* an unknown kind is refused, naming the parameter */
    assert_int_equal(nearby_events(g_ds, g_s, (query_kind)7, 40.7010, -74.0000, 300, at(8, 0), 3600, 64, out, &n,
                                   &trunc, &qe),
                     QUERY_EINVAL);
    assert_string_equal(qe.param, "kind");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arrivals_at_the_last_stop),
        cmocka_unit_test(test_no_arrival_at_the_first_stop),
        cmocka_unit_test(test_arrivals_that_overtake),
        cmocka_unit_test(test_pickup_and_drop_off_types),
        cmocka_unit_test(test_frequencies_and_stations),
        cmocka_unit_test(test_departures_kind_is_stop_departures),
        cmocka_unit_test(test_nearby_arrivals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
