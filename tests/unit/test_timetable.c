/* test_timetable.c — pins the departure semantics of the query contract on a
 * small hand-made feed: parsing of times and dates, interpolation (by
 * distance and by position), frequencies, calendars with exceptions, trips
 * past midnight, DST, stations, the ordering of ties, exclusions, limits, and
 * the refusal of damaged timetable files.
 */
#include "test_support.h"
#include "test_timetable_fixture.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>

#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/gtfs.h"
#include "transit/query.h"
#include "transit/timetable.h"
#include "store/timetable_format.h"

static char g_dir[512];
static dataset *g_ds;
static query_scratch *g_s;

static void write_feed(const char *dir)
{
    test_write_file(dir, "agency.txt",
               "agency_id,agency_name,agency_url,agency_timezone\n"
               "A1,Test Transit,http://example.com,America/New_York\n");
    test_write_file(dir, "stops.txt",
               "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station,stop_code,stop_desc,platform_code,wheelchair_boarding\n"
               "A,Alpha,40.7000,-74.0000,0,,,,,7\n"
               "B,Beta,40.7010,-74.0000,0,,,,,\n"
               "C,Gamma,40.7020,-74.0000,,,,,,\n"
               "D,Delta,40.7030,-74.0000,0,,,,,\n"
               "S,Station,40.7100,-74.0100,1,,,South station,,\n"
               "P1,Platform 1,40.7101,-74.0100,0,S,101,,1,2\n"
               "P2,Platform 2,40.7102,-74.0100,0,S,,,,\n");
    test_write_file(dir, "routes.txt",
               "route_id,agency_id,route_short_name,route_long_name,route_type\n"
               "R1,A1,1,One,3\n"
               "R2,A1,2,Two,1\n");
    test_write_file(dir, "calendar.txt",
               "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
               "WK,1,1,1,1,1,0,0,20261001,20261231\n"
               "SU,0,0,0,0,0,0,1,20261001,20261231\n");
    test_write_file(dir, "calendar_dates.txt",
               "service_id,date,exception_type\n"
               "WK,20261126,2\n"
               "SU,20261126,1\n");
    test_write_file(dir, "trips.txt",
               "route_id,service_id,trip_id,trip_headsign,direction_id\n"
               "R1,WK,T1,To Delta,0\n"
               "R1,WK,T2,To Delta,0\n"
               "R1,WK,T3,Night,0\n"
               "R1,WK,T4,NoPick,0\n"
               "R2,WK,F1,Freq,1\n"
               "R2,SU,T5,Sun,0\n"
               "R2,WK,T6,Station,0\n"
               "R2,SU,T8,Dst,0\n"
               "R2,WK,T9,Tie,0\n"
               "R1,WK,T10,Tie,0\n");
    test_write_file(dir, "stop_times.txt",
               "trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type,drop_off_type,shape_dist_traveled\n"
               "T1,08:00:00,08:00:00,A,1,0,0,\n"
               "T1,,,B,2,0,0,\n"
               "T1,,,C,3,0,0,\n"
               "T1,08:30:00,08:30:00,D,4,0,0,\n"
               "T2,09:00:00,09:00:00,A,10,0,0,0\n"
               "T2,,,B,20,0,0,100\n"
               "T2,,,C,30,0,0,400\n"
               "T2,09:10:00,09:10:00,D,40,0,0,1000\n"
               "T3,24:30:00,24:30:00,A,1,0,0,\n"
               "T3,25:10:00,25:10:00,D,2,0,0,\n"
               "T4,10:00:00,10:00:00,A,1,0,0,\n"
               "T4,10:05:00,10:06:00,B,2,1,0,\n"
               "T4,10:10:00,10:10:00,D,3,0,0,\n"
               "F1,06:00:00,06:00:00,A,1,0,0,\n"
               "F1,06:05:00,06:05:00,B,2,0,0,\n"
               "T5,08:00:00,08:00:00,A,1,0,0,\n"
               "T5,08:30:00,08:30:00,D,2,0,0,\n"
               "T6,07:00:00,07:00:00,P1,1,0,0,\n"
               "T6,07:10:00,07:10:00,P2,2,0,0,\n"
               "T6,07:20:00,07:20:00,A,3,0,0,\n"
               "T8,01:30:00,01:30:00,A,1,0,0,\n"
               "T8,01:40:00,01:40:00,D,2,0,0,\n"
               "T9,08:00:00,08:00:00,A,1,0,0,\n"
               "T9,08:30:00,08:30:00,D,2,0,0,\n"
               "T10,08:00:00,08:00:00,A,1,0,0,\n"
               "T10,08:05:00,08:05:00,B,2,0,0,\n"
               "T10,8:6:00,08:06:00,C,3,0,0,\n"
               "GHOST,08:00:00,08:00:00,A,1,0,0,\n");
    test_write_file(dir, "frequencies.txt",
               "trip_id,start_time,end_time,headway_secs\n"
               "F1,06:00:00,07:00:00,1200\n");
}

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "timetable");
    write_feed(g_dir);
    diag d;
    diag_init(&d);
    timetable_stats st;
    g_ds = test_build_timetable(g_dir, &d, &st);
    /* the malformed time "8:6:00" and the unknown trip GHOST are counted, not fatal */
    assert_int_equal(d.count[DIAG_BAD_TIME], 1);
    assert_int_equal(d.count[DIAG_UNKNOWN_TRIP], 1);
    assert_int_equal(st.stop_times, 28);
    diag_destroy(&d);
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

/* Unix seconds of a UTC date-time */
static int64_t utc(int y, unsigned m, unsigned d, int hh, int mm)
{
    return (int64_t)days_from_civil(y, m, d) * 86400 + hh * 3600 + mm * 60;
}

static const char *trip_id(uint32_t trip)
{
    trip_info ti;
    dataset_trip(g_ds, trip, &ti);
    return ti.id;
}

static const char *stop_id(uint32_t stop)
{
    stop_info si;
    dataset_stop(g_ds, stop, &si);
    return si.id;
}

static uint32_t deps_at(const char *stop, int64_t from, uint32_t window, uint32_t limit, departure *out, bool *trunc)
{
    uint32_t n = 0;
    query_error qe;
    uint32_t s = dataset_find_stop(g_ds, stop, strlen(stop));
    assert_int_not_equal(s, QUERY_NONE);
    assert_int_equal(stop_departures(g_ds, g_s, s, from, window, limit, out, &n, trunc, &qe), QUERY_OK);
    return n;
}

/* ------------------------------------------------------------ values */

static void test_parse_time(void **state)
{
    (void)state;
    uint32_t s;
    assert_int_equal(gtfs_parse_time("7:05:00", 7, &s), 0);
    assert_int_equal(s, 7 * 3600 + 300);
    assert_int_equal(gtfs_parse_time("24:30:00", 8, &s), 0);
    assert_int_equal(s, 88200);
    assert_int_equal(gtfs_parse_time("99:59:59", 8, &s), 0);
    assert_int_equal(s, GTFS_MAX_SECS);
    assert_int_equal(gtfs_parse_time(" 08:00:00 ", 10, &s), 0);
    assert_int_equal(s, 28800);
    assert_int_equal(gtfs_parse_time("", 0, &s), 0);
    assert_int_equal(s, GTFS_TIME_NONE);
    assert_int_equal(gtfs_parse_time("25:61:00", 8, &s), -1);
    assert_int_equal(gtfs_parse_time("08:00:60", 8, &s), -1);
    assert_int_equal(gtfs_parse_time("100:00:00", 9, &s), -1);
    assert_int_equal(gtfs_parse_time("8:6:00", 6, &s), -1);
    assert_int_equal(gtfs_parse_time("ab:cd:ef", 8, &s), -1);
    assert_int_equal(gtfs_parse_time("08-00-00", 8, &s), -1);
}

static void test_dates(void **state)
{
    (void)state;
    assert_int_equal(days_from_civil(1970, 1, 1), 0);
    assert_int_equal(days_from_civil(2000, 3, 1), 11017);
    assert_int_equal(weekday_from_days(days_from_civil(2026, 11, 21)), 5); /* a Saturday */
    assert_int_equal(weekday_from_days(days_from_civil(1969, 12, 29)), 0); /* a Monday before the epoch */
    for (int32_t d = -800000; d < 800000; d += 97) {
        int y;
        unsigned m, dd;
        civil_from_days(d, &y, &m, &dd);
        assert_int_equal(days_from_civil(y, m, dd), d);
    }
    int32_t days;
    assert_int_equal(gtfs_parse_date("20240229", 8, &days), 0);
    assert_int_equal(days, days_from_civil(2024, 2, 29));
    assert_int_equal(gtfs_parse_date("20230229", 8, &days), -1);
    assert_int_equal(gtfs_parse_date("20261301", 8, &days), -1);
    assert_int_equal(gtfs_parse_date("2026-11-21", 10, &days), -1);
    assert_int_equal(parse_iso_date("2026-11-21", 10, &days), 0);
    char buf[11];
    format_date(days, buf);
    assert_string_equal(buf, "2026-11-21");
}

/* ------------------------------------------------------------ import semantics */

static void check_stop_time(const trip_stop_time *st, const char *stop, uint32_t seq, uint32_t arr, uint32_t dep)
{
    assert_string_equal(stop_id(st->stop), stop);
    assert_int_equal(st->stop_sequence, seq);
    assert_int_equal(st->arrival_secs, arr);
    assert_int_equal(st->departure_secs, dep);
}

static void test_interpolation_by_position(void **state)
{
    (void)state;
    trip_stop_time st[8];
    uint32_t n;
    query_error qe;
    assert_int_equal(trip_detail(g_ds, dataset_find_trip(g_ds, "T1", 2), st, 8, &n, &qe), QUERY_OK);
    assert_int_equal(n, 4);
    check_stop_time(&st[0], "A", 1, 28800, 28800);
    check_stop_time(&st[1], "B", 2, 29400, 29400); /* 08:00 + 1800 * 1/3 */
    check_stop_time(&st[2], "C", 3, 30000, 30000); /* 08:00 + 1800 * 2/3 */
    check_stop_time(&st[3], "D", 4, 30600, 30600);
}

static void test_interpolation_by_distance(void **state)
{
    (void)state;
    trip_stop_time st[8];
    uint32_t n;
    query_error qe;
    assert_int_equal(trip_detail(g_ds, dataset_find_trip(g_ds, "T2", 2), st, 8, &n, &qe), QUERY_OK);
    assert_int_equal(n, 4);
    check_stop_time(&st[1], "B", 20, 32460, 32460); /* 09:00 + 600 * 100/1000 */
    check_stop_time(&st[2], "C", 30, 32640, 32640); /* 09:00 + 600 * 400/1000 */
}

static void test_dwell_kept(void **state)
{
    (void)state;
    trip_stop_time st[8];
    uint32_t n;
    query_error qe;
    assert_int_equal(trip_detail(g_ds, dataset_find_trip(g_ds, "T4", 2), st, 8, &n, &qe), QUERY_OK);
    check_stop_time(&st[1], "B", 2, 36300, 36360);
    assert_int_equal(st[1].pickup_type, 1);
}

/* Monday 2026-11-02, EST: service day base is 05:00Z */
static void test_order_frequencies_and_ties(void **state)
{
    (void)state;
    departure out[32];
    bool trunc;
    int64_t from = utc(2026, 11, 2, 10, 59); /* 05:59 local */
    uint32_t n = deps_at("A", from, 6 * 3600, 32, out, &trunc);
    const char *want[] = {"F1", "F1", "F1", "T1", "T10", "T9", "T2", "T4"};
    const uint32_t secs[] = {21600, 22800, 24000, 28800, 28800, 28800, 32400, 36000};
    assert_int_equal(n, 8);
    assert_false(trunc);
    for (uint32_t i = 0; i < n; i++) {
        assert_string_equal(trip_id(out[i].trip), want[i]);
        assert_int_equal(out[i].secs, secs[i]);
        assert_int_equal(out[i].instant, utc(2026, 11, 2, 5, 0) + secs[i]);
        assert_int_equal(out[i].utc_offset, -5 * 3600);
        assert_int_equal(out[i].service_date, days_from_civil(2026, 11, 2));
        assert_string_equal(stop_id(out[i].stop), "A");
    }
    assert_int_equal(out[6].stop_sequence, 10);
    /* the limit cuts and says so */
    n = deps_at("A", from, 6 * 3600, 4, out, &trunc);
    assert_int_equal(n, 4);
    assert_true(trunc);
    assert_string_equal(trip_id(out[3].trip), "T1");
    /* exactly the limit is not truncated */
    n = deps_at("A", from, 6 * 3600, 8, out, &trunc);
    assert_int_equal(n, 8);
    assert_false(trunc);
    /* the window is half-open: [06:00, 06:20) holds one instance */
    n = deps_at("A", utc(2026, 11, 2, 11, 0), 1200, 32, out, &trunc);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].secs, 21600);
}

static void test_exclusions(void **state)
{
    (void)state;
    departure out[32];
    bool trunc;
    int64_t day = utc(2026, 11, 2, 5, 0);
    /* B: T4 has pickup_type=1 there; B is the last stop of F1 and of T10
     * (whose row at C had a malformed time and was dropped) */
    uint32_t n = deps_at("B", day, 86400, 32, out, &trunc);
    assert_int_equal(n, 2);
    assert_string_equal(trip_id(out[0].trip), "T1");
    assert_int_equal(out[0].secs, 29400);
    assert_string_equal(trip_id(out[1].trip), "T2");
    assert_int_equal(out[1].secs, 32460);
    /* D is the last stop of every trip: nobody departs there */
    n = deps_at("D", day, 86400, 32, out, &trunc);
    assert_int_equal(n, 0);
}

static void test_after_midnight(void **state)
{
    (void)state;
    departure out[8];
    bool trunc;
    /* Tuesday 00:00-02:00 local holds Monday's T3 at 24:30 */
    uint32_t n = deps_at("A", utc(2026, 11, 3, 5, 0), 7200, 8, out, &trunc);
    assert_int_equal(n, 1);
    assert_string_equal(trip_id(out[0].trip), "T3");
    assert_int_equal(out[0].secs, 88200);
    assert_int_equal(out[0].service_date, days_from_civil(2026, 11, 2));
    assert_int_equal(out[0].instant, utc(2026, 11, 3, 5, 30));
}

static void test_calendar_exceptions(void **state)
{
    (void)state;
    departure out[8];
    bool trunc;
    /* Thanksgiving 2026-11-26: weekday service removed, Sunday service added */
    uint32_t n = deps_at("A", utc(2026, 11, 26, 10, 0), 6 * 3600, 8, out, &trunc);
    assert_int_equal(n, 1);
    assert_string_equal(trip_id(out[0].trip), "T5");
    assert_true(trip_runs_on(g_ds, out[0].trip, days_from_civil(2026, 11, 26)));
    assert_false(trip_runs_on(g_ds, dataset_find_trip(g_ds, "T1", 2), days_from_civil(2026, 11, 26)));
    /* Saturday: only Friday's T3 at 24:30 (00:30 local); then nothing */
    n = deps_at("A", utc(2026, 11, 21, 5, 0), 86400, 8, out, &trunc);
    assert_int_equal(n, 1);
    assert_string_equal(trip_id(out[0].trip), "T3");
    assert_int_equal(out[0].service_date, days_from_civil(2026, 11, 20));
    n = deps_at("A", utc(2026, 11, 21, 6, 0), 20 * 3600, 8, out, &trunc);
    assert_int_equal(n, 0);
    /* before the feed's first date: nothing, and no error */
    n = deps_at("A", utc(2025, 1, 6, 5, 0), 86400, 8, out, &trunc);
    assert_int_equal(n, 0);
}

static void test_dst_fall_back(void **state)
{
    (void)state;
    departure out[8];
    bool trunc;
    /* Sunday 2026-11-01: 01:30 happens twice; GTFS noon-minus-12h puts the
     * service day's origin at 00:00 EST = 05:00Z, so 01:30:00 is 06:30Z
     * (the second, EST, occurrence). */
    uint32_t n = deps_at("A", utc(2026, 11, 1, 4, 0), 4 * 3600, 8, out, &trunc);
    assert_int_equal(n, 1);
    assert_string_equal(trip_id(out[0].trip), "T8");
    assert_int_equal(out[0].instant, utc(2026, 11, 1, 6, 30));
    assert_int_equal(out[0].utc_offset, -5 * 3600);
    assert_int_equal(dataset_instant(g_ds, days_from_civil(2026, 11, 1), 0), utc(2026, 11, 1, 5, 0));
    /* the day before starts at 00:00 EDT = 04:00Z */
    assert_int_equal(dataset_instant(g_ds, days_from_civil(2026, 10, 31), 0), utc(2026, 10, 31, 4, 0));
    assert_int_equal(dataset_utc_offset(g_ds, utc(2026, 11, 1, 5, 59)), -4 * 3600);
    assert_int_equal(dataset_utc_offset(g_ds, utc(2026, 11, 1, 6, 0)), -5 * 3600);
    /* local times without offset: fold=0 */
    int64_t local = (int64_t)days_from_civil(2026, 11, 1) * 86400 + 5400; /* 01:30 ambiguous */
    assert_int_equal(dataset_local_to_instant(g_ds, local), utc(2026, 11, 1, 5, 30));
    local = (int64_t)days_from_civil(2026, 3, 8) * 86400 + 9000; /* 02:30 does not exist */
    assert_int_equal(dataset_local_to_instant(g_ds, local), utc(2026, 3, 8, 7, 30));
    local = (int64_t)days_from_civil(2026, 11, 21) * 86400 + 18 * 3600 + 900; /* plain */
    assert_int_equal(dataset_local_to_instant(g_ds, local), utc(2026, 11, 21, 23, 15));
}

static void test_station_children(void **state)
{
    (void)state;
    departure out[8];
    bool trunc;
    uint32_t n = deps_at("S", utc(2026, 11, 2, 5, 0), 86400, 8, out, &trunc);
    assert_int_equal(n, 2);
    assert_string_equal(stop_id(out[0].stop), "P1");
    assert_string_equal(stop_id(out[1].stop), "P2");
    assert_int_equal(out[1].secs, 7 * 3600 + 600);
    /* stop detail comes from the timetable: code, desc, platform, wheelchair (an invalid 7 reads as 0) */
    stop_info si;
    dataset_stop(g_ds, dataset_find_stop(g_ds, "P1", 2), &si);
    assert_string_equal(si.code, "101");
    assert_string_equal(si.platform_code, "1");
    assert_string_equal(si.desc, "");
    assert_int_equal(si.wheelchair_boarding, 2);
    dataset_stop(g_ds, dataset_find_stop(g_ds, "S", 1), &si);
    assert_string_equal(si.desc, "South station");
    dataset_stop(g_ds, dataset_find_stop(g_ds, "A", 1), &si);
    assert_int_equal(si.wheelchair_boarding, 0);
    uint32_t kids[4], total;
    uint32_t s = dataset_find_stop(g_ds, "S", 1);
    assert_int_equal(dataset_stop_children(g_ds, s, kids, 4, &total), 2);
    assert_string_equal(stop_id(kids[0]), "P1");
    uint32_t routes[4];
    assert_int_equal(dataset_stop_routes(g_ds, s, routes, 4, &total), 1);
    route_info ri;
    dataset_route(g_ds, routes[0], &ri);
    assert_string_equal(ri.short_name, "2");
    /* A is served by both routes */
    assert_int_equal(dataset_stop_routes(g_ds, dataset_find_stop(g_ds, "A", 1), routes, 4, &total), 2);
}

/* Every stop, route and trip is found by its own id (the id hash of
 * dataset.c); near misses are not: prefixes, extensions, an embedded NUL,
 * the empty id. The length, not a NUL, ends the id looked for. */
static void test_find_by_id(void **state)
{
    (void)state;
    for (uint32_t i = 0; i < dataset_stop_count(g_ds); i++) {
        stop_info si;
        dataset_stop(g_ds, i, &si);
        assert_int_equal(dataset_find_stop(g_ds, si.id, strlen(si.id)), i);
    }
    for (uint32_t i = 0; i < dataset_route_count(g_ds); i++) {
        route_info ri;
        dataset_route(g_ds, i, &ri);
        assert_int_equal(dataset_find_route(g_ds, ri.id, strlen(ri.id)), i);
    }
    uint32_t t1 = dataset_find_trip(g_ds, "T1", 2);
    assert_int_not_equal(t1, QUERY_NONE);
    trip_info ti;
    dataset_trip(g_ds, t1, &ti);
    assert_string_equal(ti.id, "T1");
    assert_int_equal(dataset_find_trip(g_ds, "T1xyz", 2), t1);   /* only len bytes count */
    assert_int_equal(dataset_find_trip(g_ds, "T", 1), QUERY_NONE);
    assert_int_equal(dataset_find_trip(g_ds, "T1x", 3), QUERY_NONE);
    assert_int_equal(dataset_find_trip(g_ds, "T1\0", 3), QUERY_NONE);
    assert_int_equal(dataset_find_stop(g_ds, "P", 1), QUERY_NONE);
    assert_int_equal(dataset_find_stop(g_ds, "", 0), QUERY_NONE);
    assert_int_equal(dataset_find_stop(g_ds, "nope", 4), QUERY_NONE);
    assert_int_equal(dataset_find_route(g_ds, "nope", 4), QUERY_NONE);
}

static void test_nearby(void **state)
{
    (void)state;
    nearby_stop ns[8];
    uint32_t n;
    bool trunc;
    query_error qe;
    assert_int_equal(nearby_stops(g_ds, g_s, 40.7000, -74.0000, 150, 8, ns, &n, &trunc, &qe), QUERY_OK);
    assert_int_equal(n, 2);
    assert_false(trunc);
    assert_string_equal(stop_id(ns[0].stop), "A");
    assert_true(ns[0].distance_m < 0.001);
    assert_string_equal(stop_id(ns[1].stop), "B");
    assert_true(fabs(ns[1].distance_m - 111.195) < 0.01);
    assert_int_equal(nearby_stops(g_ds, g_s, 40.7000, -74.0000, 150, 1, ns, &n, &trunc, &qe), QUERY_OK);
    assert_int_equal(n, 1);
    assert_true(trunc);
    /* stations are listed by nearby stops */
    assert_int_equal(nearby_stops(g_ds, g_s, 40.7100, -74.0100, 50, 8, ns, &n, &trunc, &qe), QUERY_OK);
    assert_int_equal(n, 3);
    assert_string_equal(stop_id(ns[0].stop), "S");
    /* nearby departures take platforms only, with their distance */
    departure out[32];
    assert_int_equal(nearby_departures(g_ds, g_s, 40.7000, -74.0000, 120, utc(2026, 11, 2, 10, 59), 6 * 3600, 32,
                                       out, &n, &trunc, &qe),
                     QUERY_OK);
    assert_int_equal(n, 10); /* 8 at A, 2 at B */
    assert_string_equal(stop_id(out[3].stop), "A");   /* 08:00 T1 at A */
    assert_string_equal(stop_id(out[6].stop), "B");   /* 08:10 T1 at B */
    assert_string_equal(trip_id(out[6].trip), "T1");
    assert_true(out[6].distance_m == 111);   /* 111.195 m, in whole metres */
    assert_string_equal(stop_id(out[8].stop), "B");   /* 09:01 T2 at B */
}

/* A stop exactly on the circle is inside, and outside when the radius is
 * one double smaller, for nearby stops and nearby departures alike: the
 * planar shortcut in collect_near must defer to the haversine there. A
 * departure's distance is the stop's haversine distance rounded half up to
 * the whole metre, whether the shortcut or the haversine settled it. */
static void test_nearby_radius_boundary(void **state)
{
    (void)state;
    nearby_stop ns[8];
    uint32_t n;
    bool trunc;
    query_error qe;
    assert_int_equal(nearby_stops(g_ds, g_s, 40.7003, -74.0002, 400, 8, ns, &n, &trunc, &qe), QUERY_OK);
    assert_true(n >= 3);
    int departing_at_the_edge = 0;
    for (uint32_t k = 0; k < 3; k++) {
        double d = ns[k].distance_m;
        uint32_t stop = ns[k].stop;
        double radii[] = {d, nextafter(d, 0)};
        for (int r = 0; r < 2; r++) {
            if (radii[r] < 1) continue;   /* below the smallest radius taken */
            nearby_stop got[8];
            uint32_t m;
            assert_int_equal(nearby_stops(g_ds, g_s, 40.7003, -74.0002, radii[r], 8, got, &m, &trunc, &qe), QUERY_OK);
            bool listed = false;
            for (uint32_t i = 0; i < m; i++)
                listed |= got[i].stop == stop;
            assert_int_equal(listed, r == 0);
            departure out[64];
            assert_int_equal(nearby_departures(g_ds, g_s, 40.7003, -74.0002, radii[r], utc(2026, 11, 2, 7, 0),
                                               12 * 3600, 64, out, &m, &trunc, &qe),
                             QUERY_OK);
            bool departs = false;
            for (uint32_t i = 0; i < m; i++)
                if (out[i].stop == stop) {
                    departs = true;
                    assert_true(out[i].distance_m == floor(d + 0.5));
                }
            if (r == 1) assert_false(departs);
            else departing_at_the_edge += departs;
        }
    }
    assert_true(departing_at_the_edge >= 2);
    /* well inside the radius, where the planar distance settles the metre, it is the same metre */
    departure out[64];
    assert_int_equal(nearby_departures(g_ds, g_s, 40.7003, -74.0002, 1000, utc(2026, 11, 2, 7, 0), 12 * 3600, 64,
                                       out, &n, &trunc, &qe),
                     QUERY_OK);
    assert_true(n > 0);
    uint32_t compared = 0;
    for (uint32_t i = 0; i < n; i++) {
        bool found = false;
        for (uint32_t k = 0; k < 8 && !found; k++)
            if (ns[k].stop == out[i].stop) {
                assert_true(out[i].distance_m == floor(ns[k].distance_m + 0.5));
                found = true;
                compared++;
            }
    }
    assert_true(compared > 0);
}

/* A fresh directory under g_dir for a test's own small feed, with its one
 * agency (New York time) and a weekday service WK through 2026 written. */
static void own_feed_dir(const char *name, char *dir, size_t cap)
{
    char cmd[700];
    snprintf(dir, cap, "%s/%s", g_dir, name);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    test_write_file(dir, "agency.txt",
                    "agency_id,agency_name,agency_url,agency_timezone\n"
                    "A1,Test Transit,http://example.com,America/New_York\n");
    test_write_file(dir, "calendar.txt",
                    "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
                    "WK,1,1,1,1,1,0,0,20261001,20261231\n");
}

/* The timetable of a test's own feed. */
static dataset *own_feed_open(const char *dir)
{
    diag d;
    diag_init(&d);
    timetable_stats st;
    dataset *ds = test_build_timetable(dir, &d, &st);
    diag_destroy(&d);
    assert_non_null(ds);
    return ds;
}

/* Departures at the same instant from two nearby stops come in stop_id
 * byte order, even when every later key (route_short_name, trip_id) and
 * the order of the stops in the file and on the grid say the opposite:
 * the search takes each nearby stop's id rank from grid_visits, and this
 * fails if that rank is wrong. */
static void test_nearby_ties_by_stop_id(void **state)
{
    (void)state;
    char dir[600];
    own_feed_dir("ties", dir, sizeof dir);
    test_write_file(dir, "stops.txt",
                    "stop_id,stop_name,stop_lat,stop_lon\n"
                    "Z2,Second,41.0000,-73.0000\n"
                    "Z1,First,41.0002,-73.0000\n"
                    "FAR,Far,41.1000,-73.0000\n");
    test_write_file(dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                    "R1,A1,1,One,3\n"
                    "R9,A1,9,Nine,3\n");
    test_write_file(dir, "trips.txt",
                    "route_id,service_id,trip_id\n"
                    "R1,WK,TA\n"
                    "R9,WK,TB\n");
    test_write_file(dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                    "TA,08:00:00,08:00:00,Z2,1\n"
                    "TA,08:30:00,08:30:00,FAR,2\n"
                    "TB,08:00:00,08:00:00,Z1,1\n"
                    "TB,08:30:00,08:30:00,FAR,2\n");
    dataset *ds = own_feed_open(dir);
    departure out[8];
    uint32_t n;
    bool trunc;
    query_error qe;
    assert_int_equal(nearby_departures(ds, g_s, 41.0, -73.0, 100, utc(2026, 11, 2, 12, 59), 3600, 8, out, &n,
                                       &trunc, &qe),
                     QUERY_OK);
    assert_int_equal(n, 2);
    stop_info first, second;
    dataset_stop(ds, out[0].stop, &first);
    dataset_stop(ds, out[1].stop, &second);
    assert_string_equal(first.id, "Z1");
    assert_string_equal(second.id, "Z2");
    assert_int_equal(out[0].instant, out[1].instant);
    dataset_close(ds);
}

/* A departure's distance is its stop's haversine rounded half up to the
 * whole metre, also where the planar shortcut cannot settle the metre: the
 * stops here lie half a metre past a whole one (up to the 1e-12 degrees
 * stops.txt keeps), due north, due east and in between, so the haversine
 * must decide each. */
static void test_nearby_distance_at_half_metres(void **state)
{
    (void)state;
    char dir[600];
    own_feed_dir("halves", dir, sizeof dir);
    const double lat0 = 41.0, lon0 = -73.0, R = 6371008.8, deg = 180 / M_PI;
    const double metres[] = {20.5, 99.5, 150.5, 333.5, 480.5, 250.5};
    enum { NSTOPS = sizeof metres / sizeof metres[0] };
    char stops[2048] = "stop_id,stop_name,stop_lat,stop_lon\n", times[4096] =
        "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n";
    for (int i = 0; i < NSTOPS; i++) {
        double lat = lat0, lon = lon0, a = metres[i] / (2 * R);
        if (i % 3 == 0) {
            lat = lat0 + 2 * a * deg;   /* due north: the haversine is R times the angle */
        } else if (i % 3 == 1) {         /* due east: sin(d/2R) = cos(lat) sin(dlon/2) */
            lon = lon0 + 2 * asin(sin(a) / cos(lat0 / deg)) * deg;
        } else {                         /* north-east: half the haversine term each way */
            double h = sin(a) * sin(a) / 2;
            lat = lat0 + 2 * asin(sqrt(h)) * deg;
            lon = lon0 + 2 * asin(sqrt(h / (cos(lat0 / deg) * cos(lat / deg)))) * deg;
        }
        char line[160];
        snprintf(line, sizeof line, "H%d,Half %d,%.12f,%.12f\n", i, i, lat, lon);
        strcat(stops, line);
        snprintf(line, sizeof line, "T,08:%02d:00,08:%02d:00,H%d,%d\n", i, i, i, i + 1);
        strcat(times, line);
    }
    strcat(stops, "END,End,41.1,-73.0\n");
    strcat(times, "T,08:30:00,08:30:00,END,99\n");
    test_write_file(dir, "stops.txt", stops);
    test_write_file(dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                    "R1,A1,1,One,3\n");
    test_write_file(dir, "trips.txt", "route_id,service_id,trip_id\nR1,WK,T\n");
    test_write_file(dir, "stop_times.txt", times);
    dataset *ds = own_feed_open(dir);
    nearby_stop ns[8];
    departure out[8];
    uint32_t n, m;
    bool trunc;
    query_error qe;
    assert_int_equal(nearby_stops(ds, g_s, lat0, lon0, 500, 8, ns, &n, &trunc, &qe), QUERY_OK);
    assert_int_equal(n, NSTOPS);
    assert_int_equal(nearby_departures(ds, g_s, lat0, lon0, 500, utc(2026, 11, 2, 12, 59), 3600, 8, out, &m,
                                       &trunc, &qe),
                     QUERY_OK);
    assert_int_equal(m, NSTOPS);
    for (uint32_t i = 0; i < m; i++) {
        double exact = NAN;
        for (uint32_t k = 0; k < n; k++)
            if (ns[k].stop == out[i].stop) exact = ns[k].distance_m;
        assert_true(fabs(exact - floor(exact) - 0.5) < 1e-6);   /* a half, so the haversine decided */
        assert_true(out[i].distance_m == floor(exact + 0.5));
    }
    dataset_close(ds);
}

static void test_limits(void **state)
{
    (void)state;
    nearby_stop ns[8];
    departure out[8];
    uint32_t n;
    bool trunc;
    query_error qe;
    assert_int_equal(nearby_stops(g_ds, g_s, 91, 0, 100, 8, ns, &n, &trunc, &qe), QUERY_EINVAL);
    assert_string_equal(qe.param, "lat");
    assert_string_equal(qe.message, "lat must be between -90 and 90");
    assert_int_equal(nearby_stops(g_ds, g_s, 40, -181, 100, 8, ns, &n, &trunc, &qe), QUERY_EINVAL);
    assert_string_equal(qe.param, "lon");
    assert_int_equal(nearby_stops(g_ds, g_s, 40, -74, 0, 8, ns, &n, &trunc, &qe), QUERY_EINVAL);
    assert_string_equal(qe.param, "radius");
    assert_int_equal(nearby_stops(g_ds, g_s, 40, -74, 5001, 8, ns, &n, &trunc, &qe), QUERY_EINVAL);
    assert_int_equal(nearby_stops(g_ds, g_s, 40, -74, NAN, 8, ns, &n, &trunc, &qe), QUERY_EINVAL);
    assert_int_equal(nearby_stops(g_ds, g_s, 40, -74, 100, 0, ns, &n, &trunc, &qe), QUERY_EINVAL);
    assert_string_equal(qe.param, "limit");
    assert_int_equal(nearby_stops(g_ds, g_s, 40, -74, 100, 501, ns, &n, &trunc, &qe), QUERY_EINVAL);
    uint32_t a = dataset_find_stop(g_ds, "A", 1);
    assert_int_equal(stop_departures(g_ds, g_s, a, 0, 59, 8, out, &n, &trunc, &qe), QUERY_EINVAL);
    assert_string_equal(qe.param, "window");
    assert_int_equal(stop_departures(g_ds, g_s, a, 0, 86401, 8, out, &n, &trunc, &qe), QUERY_EINVAL);
    assert_int_equal(stop_departures(g_ds, g_s, 9999, 0, 3600, 8, out, &n, &trunc, &qe), QUERY_ENOTFOUND);
    assert_int_equal(dataset_find_stop(g_ds, "Z", 1), QUERY_NONE);
    assert_int_equal(dataset_find_trip(g_ds, "T", 1), QUERY_NONE);
    assert_int_not_equal(dataset_find_route(g_ds, "R2", 2), QUERY_NONE);
}

static void copy_file(const char *from, const char *to, long flip_at, long truncate_to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    int c;
    long i = 0;
    while ((c = fgetc(in)) != EOF) {
        if (truncate_to >= 0 && i >= truncate_to) break;
        fputc(i == flip_at ? c ^ 0x40 : c, out);
        i++;
    }
    fclose(in);
    fclose(out);
}

static void test_damaged_files(void **state)
{
    (void)state;
    char src[700], dir[600], dst[800], err[512];
    snprintf(src, sizeof src, "%s/timetable.bin", g_dir);
    snprintf(dir, sizeof dir, "%s/damaged", g_dir);
    snprintf(dst, sizeof dst, "%s/timetable.bin", dir);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);

    copy_file(src, dst, 3000, -1);
    assert_null(dataset_open(dir, err, sizeof err));
    assert_non_null(strstr(err, "checksum mismatch"));

    copy_file(src, dst, -1, 2000);
    assert_null(dataset_open(dir, err, sizeof err));
    assert_non_null(strstr(err, "truncated"));

    copy_file(src, dst, 0, -1);
    assert_null(dataset_open(dir, err, sizeof err));
    assert_non_null(strstr(err, "not a transitd timetable"));

    test_write_file(dir, "timetable.bin", "");
    assert_null(dataset_open(dir, err, sizeof err));

    snprintf(cmd, sizeof cmd, "%s/none", g_dir);
    assert_null(dataset_open(cmd, err, sizeof err));
    assert_non_null(strstr(err, "no dataset"));
}

/* A file whose checksum is right but whose indexes are out of the order the
 * engine relies on (a crafted or buggy file) is refused with a message, as
 * the fuzzer found it had to be, not trusted or asserted on. */
static void test_indexes_out_of_order(void **state)
{
    (void)state;
    char src[700], dir[600], dst[800], err[512];
    snprintf(src, sizeof src, "%s/timetable.bin", g_dir);
    snprintf(dir, sizeof dir, "%s/unordered", g_dir);
    snprintf(dst, sizeof dst, "%s/timetable.bin", dir);
    assert_int_equal(mkdir(dir, 0755) == 0 || errno == EEXIST, 1);
    for (int which = 0; which < 2; which++) {
        copy_file(src, dst, -1, -1);
        FILE *f = fopen(dst, "r+b");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        unsigned char *buf = malloc((size_t)size);
        assert_non_null(buf);
        fseek(f, 0, SEEK_SET);
        assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
        tt_header h;
        memcpy(&h, buf, sizeof h);
        const tt_section *sec = &h.sections[which == 0 ? TT_SEC_ROUTE_BY_ID : TT_SEC_STOP_BY_ID];
        assert_true(sec->size >= 2 * sizeof(uint32_t));
        uint32_t *ix = (uint32_t *)(buf + sec->offset), first = ix[0];
        ix[0] = ix[1];   /* two ids swapped: the index no longer ascends */
        ix[1] = first;
        h.checksum = tt_crc32(tt_crc32_init(), buf + sizeof h, (size_t)size - sizeof h);
        memcpy(buf, &h, sizeof h);
        fseek(f, 0, SEEK_SET);
        assert_int_equal(fwrite(buf, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        free(buf);
        assert_null(dataset_open(dir, err, sizeof err));
        assert_non_null(strstr(err, which == 0 ? "damaged: route ids out of order" : "damaged: stop ids out of order"));
    }
}

static void test_missing_required(void **state)
{
    (void)state;
    char dir[600], err[512], path[700];
    snprintf(dir, sizeof dir, "%s/bad", g_dir);
    snprintf(path, sizeof path, "mkdir -p '%s'", dir);
    assert_int_equal(system(path), 0);
    write_feed(dir);
    test_write_file(dir, "stop_times.txt", "trip_id,arrival_time,departure_time,stop_sequence\nT1,08:00:00,08:00:00,1\n");
    feed_t *f = feed_open(dir, err, sizeof err);
    assert_non_null(f);
    diag d;
    diag_init(&d);
    timetable_stats st;
    snprintf(path, sizeof path, "%s/timetable.bin", dir);
    assert_int_equal(timetable_build(f, path, NULL, &d, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, "stop_times.txt: missing required column 'stop_id'"));
    assert_int_not_equal(access(path, F_OK), 0);
    /* stop_lat is required for stops */
    write_feed(dir);
    test_write_file(dir, "stops.txt", "stop_id,stop_name,stop_lon\nA,Alpha,-74.0\n");
    assert_int_equal(timetable_build(f, path, NULL, &d, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, "stops.txt: missing required column 'stop_lat'"));
    /* an unknown timezone is fatal and named */
    write_feed(dir);
    test_write_file(dir, "agency.txt", "agency_name,agency_url,agency_timezone\nX,http://x,Mars/Olympus\n");
    assert_int_equal(timetable_build(f, path, NULL, &d, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, "Mars/Olympus"));
    diag_destroy(&d);
    feed_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_time),
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_interpolation_by_position),
        cmocka_unit_test(test_interpolation_by_distance),
        cmocka_unit_test(test_dwell_kept),
        cmocka_unit_test(test_order_frequencies_and_ties),
        cmocka_unit_test(test_exclusions),
        cmocka_unit_test(test_after_midnight),
        cmocka_unit_test(test_calendar_exceptions),
        cmocka_unit_test(test_dst_fall_back),
        cmocka_unit_test(test_station_children),
        cmocka_unit_test(test_find_by_id),
        cmocka_unit_test(test_nearby),
        cmocka_unit_test(test_nearby_radius_boundary),
        cmocka_unit_test(test_nearby_ties_by_stop_id),
        cmocka_unit_test(test_nearby_distance_at_half_metres),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_damaged_files),
        cmocka_unit_test(test_indexes_out_of_order),
        cmocka_unit_test(test_missing_required),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
