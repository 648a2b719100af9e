/* test_rt_fixture.h — the realtime values the overlay's unit tests build by
 * hand: a delay, a trip update of the fixture's Monday, a feed of them.
 *
 * Why it exists: test_rt_overlay, test_rt_compact, test_rt_assigned,
 * test_rt_row_index, test_rt_span and test_rt_grid_leads each wrote the same
 * small constructors and the same one-route line of stops; one copy here.
 */
#ifndef TRANSIT_TEST_RT_FIXTURE_H
#define TRANSIT_TEST_RT_FIXTURE_H

#include <stdint.h>
#include <stdio.h>

#include "test_support.h"
#include "test_timetable_fixture.h"
#include "transit/gtfs.h"
#include "transit/rt_overlay.h"

/* agency.txt (A1, New York's time), routes.txt (R1, a bus) and stops.txt:
 * S1 .. S<nstops> (at most 8) a little over 100 m apart due north. */
static inline void test_rt_write_line(const char *dir, int nstops)
{
    static const char *const names[8] = {"One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight"};
    char stops[512];
    size_t at = (size_t)snprintf(stops, sizeof stops, "stop_id,stop_name,stop_lat,stop_lon\n");
    for (int k = 0; k < nstops && k < 8; k++)
        at += (size_t)snprintf(stops + at, sizeof stops - at, "S%d,%s,%s,-74.0\n", k + 1, names[k],
                               (const char *[]){"40.0", "40.001", "40.002", "40.003", "40.004", "40.005",
                                                "40.006", "40.007"}[k]);
    test_write_file(dir, "agency.txt",
                    "agency_id,agency_name,agency_url,agency_timezone\n"
                    "A1,Tiny,https://example.com,America/New_York\n");
    test_write_file(dir, "stops.txt", stops);
    test_write_file(dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                    "R1,A1,1,Main,3\n");
}

/* The fixture's feed in `dir` opened, with its weekday calendar written
 * first; *monday is 2026-11-02's day number, the updates' usual day. */
static inline dataset *test_rt_open_weekdays(const char *dir, int32_t *monday)
{
    test_write_weekday_calendar(dir);
    *monday = days_from_civil(2026, 11, 2);
    return test_open_fixture(dir);
}

/* A stop time event with a delay (no absolute time). */
static inline rt_event test_rt_delay(int32_t delay)
{
    return (rt_event){.present = true, .has_delay = true, .delay = delay};
}

/* A scheduled trip's update for the instance starting on 2026-11-02
 * (`monday`: that day's number, days_from_civil(2026, 11, 2)). */
static inline rt_trip_update test_rt_monday_update(const char *trip_id, int32_t monday, rt_stop_update *stops,
                                                   uint32_t n)
{
    return (rt_trip_update){.trip_id = trip_id, .start_date = "20261102", .start_day = monday,
                            .start_secs = -1, .direction_id = -1, .stops = stops, .stop_count = n};
}

/* A scheduled trip's update for its instance starting on `day` (the
 * start_date text from a ring of eight, so that a test's feed may hold
 * eight days at once). */
static inline rt_trip_update test_rt_update_on(const char *trip_id, int32_t day, rt_stop_update *stops, uint32_t n)
{
    static char dates[8][9];
    static int next;
    char *date = dates[next++ % 8];
    int y;
    unsigned m, d;
    civil_from_days(day, &y, &m, &d);
    snprintf(date, 9, "%04d%02u%02u", y, m, d);
    return (rt_trip_update){.trip_id = trip_id, .start_date = date, .start_day = day, .start_secs = -1,
                            .direction_id = -1, .stops = stops, .stop_count = n};
}

/* A GTFS-Realtime 2.0 feed of those updates, nothing else. */
static inline rt_feed test_rt_feed_of(rt_trip_update *tus, uint32_t n)
{
    return (rt_feed){.version = "2.0", .trip_updates = tus, .trip_update_count = n};
}

#endif
