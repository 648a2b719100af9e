/* test_network.c — a route's stop patterns and a stop's departing headsigns
 * (network.h) on a hand-made feed: trips whose stops and direction agree
 * make one pattern whatever their stop_sequence numbers and pickup types;
 * direction and order of the patterns; headsign counts (a frequency-based
 * trip counts its runs); a stop's headsigns leave out trips that end there
 * or let riders only alight; a station gathers its platforms'.
 */
#include "test_support.h"
#include "test_timetable_fixture.h"

#include "transit/network.h"

static char g_dir[512];
static dataset *g_ds;
static network_scratch *g_s;

static void write_feed(const char *dir)
{
    test_write_file(dir, "agency.txt",
                    "agency_id,agency_name,agency_url,agency_timezone\nA1,T,http://x,America/New_York\n");
    test_write_file(dir, "stops.txt",
                    "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station\n"
                    "A,Alpha,40.0,-74.0,0,\nB,Beta,40.001,-74.0,0,\nC,Gamma,40.002,-74.0,0,\n"
                    "S,Station,40.01,-74.0,1,\nP1,Platform 1,40.01,-74.0,0,S\nP2,Platform 2,40.01,-74.0,0,S\n");
    test_write_file(dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                    "R1,A1,1,One,3\nR2,A1,2,Two,3\nR3,A1,3,Unused,3\n");
    test_write_weekday_calendar(dir);
    /* R1: X, Y and Z run A-B-C in direction 0 (Y numbers its stops 10, 20,
     * 30; Z does not let riders board at B); W runs C-B-A in direction 1;
     * V runs A-B in direction 0. F (R2, frequency-based, 3 runs) and G (R2)
     * leave from the station's platforms. */
    test_write_file(dir, "trips.txt",
                    "route_id,service_id,trip_id,trip_headsign,direction_id\n"
                    "R1,WK,X,To Gamma,0\nR1,WK,Y,To Gamma,0\nR1,WK,Z,Gamma express,0\n"
                    "R1,WK,W,To Alpha,1\nR1,WK,V,,0\nR2,WK,F,Loop,\nR2,WK,G,Via P2,\n");
    test_write_file(dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence,pickup_type\n"
                    "X,08:00:00,08:00:00,A,1,0\nX,08:05:00,08:05:00,B,2,0\nX,08:10:00,08:10:00,C,3,0\n"
                    "Y,09:00:00,09:00:00,A,10,0\nY,09:05:00,09:05:00,B,20,0\nY,09:10:00,09:10:00,C,30,0\n"
                    "Z,10:00:00,10:00:00,A,1,0\nZ,10:05:00,10:05:00,B,2,1\nZ,10:10:00,10:10:00,C,3,0\n"
                    "W,11:00:00,11:00:00,C,1,0\nW,11:05:00,11:05:00,B,2,0\nW,11:10:00,11:10:00,A,3,0\n"
                    "V,12:00:00,12:00:00,A,1,0\nV,12:05:00,12:05:00,B,2,0\n"
                    "F,06:00:00,06:00:00,P1,1,0\nF,06:05:00,06:05:00,A,2,0\n"
                    "G,07:00:00,07:00:00,P2,1,0\nG,07:05:00,07:05:00,A,2,0\n");
    test_write_file(dir, "frequencies.txt",
                    "trip_id,start_time,end_time,headway_secs\nF,06:00:00,07:30:00,1800\n");
}

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "network");
    write_feed(g_dir);
    g_ds = test_open_fixture(g_dir);
    g_s = network_scratch_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    network_scratch_free(g_s);
    dataset_close(g_ds);
    return 0;
}

static uint32_t find(bool route, const char *id)
{
    uint32_t i = route ? dataset_find_route(g_ds, id, strlen(id)) : dataset_find_stop(g_ds, id, strlen(id));
    assert_int_not_equal(i, QUERY_NONE);
    return i;
}

/* A pattern as "dir:trips:STOPS:headsign|headsign". */
static const char *pattern_text(const network_route *r, uint32_t i)
{
    static char text[256];
    const route_pattern *p = &r->patterns[i];
    size_t o = (size_t)snprintf(text, sizeof text, "%d:%u:", p->direction_id, p->trips);
    for (uint32_t k = 0; k < p->nstops; k++) {
        stop_info st;
        dataset_stop(g_ds, r->stops[p->stops_first + k], &st);
        o += (size_t)snprintf(text + o, sizeof text - o, "%s", st.id);
    }
    for (uint32_t k = 0; k < p->nheadsigns; k++)
        o += (size_t)snprintf(text + o, sizeof text - o, "%s%s", k ? "|" : ":", r->headsigns[p->headsigns_first + k]);
    return text;
}

static void test_route_patterns(void **state)
{
    (void)state;
    network_route r;
    query_error err;
    assert_int_equal(route_patterns(g_ds, g_s, find(true, "R1"), &r, &err), QUERY_OK);
    assert_int_equal(r.npatterns, 3);
    assert_string_equal(pattern_text(&r, 0), "0:3:ABC:To Gamma|Gamma express");
    assert_string_equal(pattern_text(&r, 1), "0:1:AB");
    assert_string_equal(pattern_text(&r, 2), "1:1:CBA:To Alpha");
    assert_int_equal(route_patterns(g_ds, g_s, find(true, "R2"), &r, &err), QUERY_OK);
    assert_int_equal(r.npatterns, 2);
    assert_string_equal(pattern_text(&r, 0), "-1:1:P1A:Loop");   /* a frequency-based trip counts once */
    assert_string_equal(pattern_text(&r, 1), "-1:1:P2A:Via P2");
    assert_int_equal(route_patterns(g_ds, g_s, find(true, "R3"), &r, &err), QUERY_OK);
    assert_int_equal(r.npatterns, 0);
    assert_int_equal(route_patterns(g_ds, g_s, 99, &r, &err), QUERY_ENOTFOUND);
}

static const char *headsigns_text(const char *stop)
{
    static char text[256];
    const stop_headsign *h;
    uint32_t n;
    query_error err;
    assert_int_equal(stop_headsigns(g_ds, g_s, find(false, stop), &h, &n, &err), QUERY_OK);
    size_t o = 0;
    text[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        route_info r;
        dataset_route(g_ds, h[i].route, &r);
        o += (size_t)snprintf(text + o, sizeof text - o, "%s%s:%s:%u", i ? " " : "", r.id, h[i].headsign, h[i].runs);
    }
    return text;
}

static void test_stop_headsigns(void **state)
{
    (void)state;
    /* A: X, Y, Z, V (no headsign) leave; W ends there; F and G end there */
    assert_string_equal(headsigns_text("A"), "R1:To Gamma:2 R1:Gamma express:1");
    /* B: Z lets riders only alight; V ends there */
    assert_string_equal(headsigns_text("B"), "R1:To Gamma:2 R1:To Alpha:1");
    assert_string_equal(headsigns_text("C"), "R1:To Alpha:1");
    /* the station: its platforms' departures, F's three runs first */
    assert_string_equal(headsigns_text("S"), "R2:Loop:3 R2:Via P2:1");
    assert_string_equal(headsigns_text("P2"), "R2:Via P2:1");
    assert_int_equal(network_prepare(g_ds, (char[64]){0}, 64), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_patterns),
        cmocka_unit_test(test_stop_headsigns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
