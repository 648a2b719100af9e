/* test_rt_fixture.h — the realtime values the overlay's unit tests build by
 * hand: a delay, a trip update of the fixture's Monday, a feed of them.
 *
 * Why it exists: test_rt_overlay, test_rt_compact, test_rt_assigned and
 * test_rt_row_index each wrote the same small constructors; one copy here.
 */
#ifndef TRANSIT_TEST_RT_FIXTURE_H
#define TRANSIT_TEST_RT_FIXTURE_H

#include <stdint.h>

#include "transit/rt_overlay.h"

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

/* A GTFS-Realtime 2.0 feed of those updates, nothing else. */
static inline rt_feed test_rt_feed_of(rt_trip_update *tus, uint32_t n)
{
    return (rt_feed){.version = "2.0", .trip_updates = tus, .trip_update_count = n};
}

#endif
