/* test_board_accessible.c — pins the accessibility fields and the
 * wheelchair filter of the boards (engine/board_accessible.h) on a small
 * hand-made feed: trips.txt's wheelchair_accessible and bikes_allowed as
 * trip_info gives them (empty and invalid read as 0), the rule for a row
 * (trip 1 and stop 1, a platform with 0 or none taking its station's, a
 * stop outside a station with 0 not accessible), and filtered boards that
 * fill their limit (a stop's, a station's, near a point, of arrivals),
 * while an unfiltered board is unchanged.
 */
#include "test_support.h"
#include "test_timetable_fixture.h"

#include "engine/board_accessible.h"
#include "transit/board.h"
#include "transit/gtfs.h"

static char g_dir[512];
static dataset *g_ds;
static query_scratch *g_s;
static board_scratch *g_b;

/* Monday 2026-11-02, America/New_York (UTC-5). Station S says 1: its
 * platform P1 says 0 and P3 nothing (both take S's 1), P2 says 2. Station
 * N says 2: its platform Q says 0 (takes 2). L says 1, Z 0 (no station).
 * Trips A* have wheelchair_accessible 1, B* 2, C* nothing, D* an invalid
 * value; each leaves P1, P2, P3, Q, L and Z in turn, one a minute. */
static void write_feed(const char *dir)
{
    test_write_file(dir, "agency.txt",
                    "agency_id,agency_name,agency_url,agency_timezone\n"
                    "A1,Test Transit,http://example.com,America/New_York\n");
    test_write_file(dir, "stops.txt",
                    "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station,wheelchair_boarding\n"
                    "S,Station,40.7000,-74.0000,1,,1\n"
                    "P1,Platform 1,40.7001,-74.0000,0,S,0\n"
                    "P2,Platform 2,40.7002,-74.0000,0,S,2\n"
                    "P3,Platform 3,40.7003,-74.0000,0,S,\n"
                    "N,North,40.7100,-74.0000,1,,2\n"
                    "Q,North platform,40.7101,-74.0000,0,N,0\n"
                    "L,Lone,40.7200,-74.0000,0,,1\n"
                    "Z,Zero,40.7300,-74.0000,0,,0\n");
    test_write_file(dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                    "R1,A1,1,One,3\n");
    test_write_file(dir, "calendar.txt",
                    "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
                    "WK,1,1,1,1,1,0,0,20261001,20261231\n");
    test_write_file(dir, "trips.txt",
                    "route_id,service_id,trip_id,wheelchair_accessible,bikes_allowed\n"
                    "R1,WK,A1,1,2\n"
                    "R1,WK,A2,1,1\n"
                    "R1,WK,B1,2,\n"
                    "R1,WK,C1,,1\n"
                    "R1,WK,D1,x,9\n");
    /* every trip: P1 08:0k, P2 08:1k, P3 08:2k, Q 08:3k, L 08:4k, Z 08:5k, k its index */
    static const char *const trips[] = {"A1", "B1", "C1", "D1", "A2"};
    static const char *const stops[] = {"P1", "P2", "P3", "Q", "L", "Z"};
    char text[4096] = "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n";
    for (int t = 0; t < 5; t++)
        for (int s = 0; s < 6; s++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s,08:%d%d:00,08:%d%d:00,%s,%d\n", trips[t],
                     s, t, s, t, stops[s], s + 1);
    test_write_file(dir, "stop_times.txt", text);
}

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "board-accessible");
    write_feed(g_dir);
    g_ds = test_open_fixture(g_dir);
    g_s = query_scratch_new();
    g_b = board_scratch_new();
    return g_s && g_b ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    board_scratch_free(g_b);
    query_scratch_free(g_s);
    dataset_close(g_ds);
    return 0;
}

/* Unix seconds of 2026-11-02 at local hh:mm (UTC-5). */
static int64_t at(int hh, int mm)
{
    return (int64_t)days_from_civil(2026, 11, 2) * 86400 + (hh + 5) * 3600 + mm * 60;
}

static uint32_t trip(const char *id) { return dataset_find_trip(g_ds, id, strlen(id)); }
static uint32_t stop(const char *id) { return dataset_find_stop(g_ds, id, strlen(id)); }

static void test_trip_flags(void **state)
{
    (void)state;
    static const struct { const char *id; int wheelchair, bikes; } want[] = {
        {"A1", 1, 2}, {"A2", 1, 1}, {"B1", 2, 0}, {"C1", 0, 1}, {"D1", 0, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        trip_info t;
        dataset_trip(g_ds, trip(want[i].id), &t);
        assert_int_equal(t.wheelchair_accessible, want[i].wheelchair);
        assert_int_equal(t.bikes_allowed, want[i].bikes);
    }
}

static bool row_ok(const char *trip_id, const char *stop_id)
{
    departure d = {.trip = trip(trip_id), .stop = stop(stop_id)};
    return board_row_accessible(g_ds, &d);
}

static void test_the_rule(void **state)
{
    (void)state;
    /* the stop half: own 1, or 0/none under a station with 1 */
    assert_true(row_ok("A1", "P1"));
    assert_false(row_ok("A1", "P2"));
    assert_true(row_ok("A1", "P3"));
    assert_false(row_ok("A1", "Q"));
    assert_true(row_ok("A1", "L"));
    assert_false(row_ok("A1", "Z"));
    /* the trip half: only 1 */
    for (const char *const *t = (const char *const[]){"B1", "C1", "D1", NULL}; *t; t++) {
        assert_false(row_ok(*t, "P1"));
        assert_false(row_ok(*t, "L"));
    }
}

/* The board as "TRIP@STOP" words, space-separated. */
static void board_text(const board *b, char *out, size_t cap)
{
    out[0] = '\0';
    for (uint32_t i = 0; i < b->count; i++) {
        trip_info t;
        stop_info s;
        dataset_trip(g_ds, b->deps[i].trip, &t);
        dataset_stop(g_ds, b->deps[i].stop, &s);
        snprintf(out + strlen(out), cap - strlen(out), "%s%s@%s", i ? " " : "", t.id, s.id);
    }
}

static void check_stop_board(const char *stop_id, query_kind kind, bool wheelchair, uint32_t limit,
                             const char *want, bool truncated)
{
    board_sources src = {NULL, NULL, BOARD_BY_PREDICTION, wheelchair};
    board b;
    query_error qe;
    char got[1024];
    assert_int_equal(board_stop(g_b, g_ds, g_s, kind, stop(stop_id), at(8, 0), 3600, limit, &src, &b, &qe),
                     QUERY_OK);
    board_text(&b, got, sizeof got);
    assert_string_equal(got, want);
    assert_int_equal(b.truncated, truncated);
}

static void test_filtered_boards_fill_their_limit(void **state)
{
    (void)state;
    check_stop_board("P1", QUERY_DEPARTURES, false, 10, "A1@P1 B1@P1 C1@P1 D1@P1 A2@P1", false);
    check_stop_board("P1", QUERY_DEPARTURES, true, 10, "A1@P1 A2@P1", false);
    /* the second accessible row is the fifth of the board: still found */
    check_stop_board("P1", QUERY_DEPARTURES, true, 1, "A1@P1", true);
    check_stop_board("P1", QUERY_DEPARTURES, true, 2, "A1@P1 A2@P1", false);
    check_stop_board("P2", QUERY_DEPARTURES, true, 10, "", false);
    check_stop_board("Q", QUERY_DEPARTURES, true, 10, "", false);
    /* the station: P1 and P3 (taking its 1), not P2 */
    check_stop_board("S", QUERY_DEPARTURES, true, 10, "A1@P1 A2@P1 A1@P3 A2@P3", false);
    check_stop_board("S", QUERY_DEPARTURES, true, 3, "A1@P1 A2@P1 A1@P3", true);
    /* arrivals: where the rider alights (Z ends every trip, and says 0) */
    check_stop_board("L", QUERY_ARRIVALS, true, 10, "A1@L A2@L", false);
    check_stop_board("Z", QUERY_ARRIVALS, true, 10, "", false);
    check_stop_board("Z", QUERY_ARRIVALS, false, 2, "A1@Z B1@Z", true);
}

static void test_nearby_and_bad_limits(void **state)
{
    (void)state;
    board_sources src = {NULL, NULL, BOARD_BY_PREDICTION, true};
    board b;
    query_error qe;
    char got[1024];
    /* within 400 m of S: P1, P2, P3 (N's Q is 1.1 km away) */
    assert_int_equal(board_nearby(g_b, g_ds, g_s, QUERY_DEPARTURES, 40.7000, -74.0, 400, at(8, 0), 3600, 3, &src,
                                  &b, &qe),
                     QUERY_OK);
    board_text(&b, got, sizeof got);
    assert_string_equal(got, "A1@P1 A2@P1 A1@P3");
    assert_true(b.truncated);
    /* a bad limit is named as without the filter */
    assert_int_equal(board_stop(g_b, g_ds, g_s, QUERY_DEPARTURES, stop("P1"), at(8, 0), 3600, 0, &src, &b, &qe),
                     QUERY_EINVAL);
    assert_string_equal(qe.param, "limit");
    assert_int_equal(board_nearby(g_b, g_ds, g_s, QUERY_DEPARTURES, 40.7, -74.0, 400, at(8, 0), 3600, 0, &src, &b,
                                  &qe),
                     QUERY_EINVAL);
    assert_string_equal(qe.param, "limit");
    assert_int_equal(board_stop(g_b, g_ds, g_s, QUERY_DEPARTURES, stop("P1"), at(8, 0), 10, 5, &src, &b, &qe),
                     QUERY_EINVAL);
    assert_string_equal(qe.param, "window");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trip_flags),
        cmocka_unit_test(test_the_rule),
        cmocka_unit_test(test_filtered_boards_fill_their_limit),
        cmocka_unit_test(test_nearby_and_bad_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
