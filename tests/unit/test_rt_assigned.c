/* test_rt_assigned.c — platform changes and TripProperties of timetable
 * instances in the overlay: a stop_time_update's assigned_stop_id moves the
 * stop time's rows to the assigned stop (indexed there by scheduled
 * instant, the row's look-up saying moved and where), an unknown assigned
 * stop is skipped and described by entity id and field, one assigned where
 * it is scheduled moves nothing, a second update of an instance brings no
 * moves of its own, and an overlay without platform changes has none to
 * offer; TripProperties reach the instance's rows and no other instance's.
 * Realtime-only trips (NEW, DUPLICATED) take platform changes on their calls:
 * their events are at the assigned stop, the rows naming the call's stop;
 * a copy's change is the copy's only; an unknown stop leaves the call where
 * it is. A REPLACEMENT's NO_DATA and SKIPPED updates are calls too.
 * The feeds are rt_feed structs written by hand (decoding has its own test).
 */
#include "test_support.h"
#include "test_rt_fixture.h"
#include "test_timetable_fixture.h"

#include "transit/gtfs.h"
#include "transit/rt_overlay.h"

static char g_dir[512];
static dataset *g_ds;
static int32_t g_monday;   /* 2026-11-02 */

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "rt-assigned");
    test_rt_write_line(g_dir, 5);
    test_write_file(g_dir, "trips.txt", "route_id,service_id,trip_id,trip_headsign\nR1,WK,T1,Five\nR1,WK,T2,Two\n");
    test_write_file(g_dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                    "T1,08:00:00,08:00:00,S1,10\n"
                    "T1,08:10:00,08:10:00,S2,20\n"
                    "T1,08:20:00,08:20:00,S3,30\n"
                    "T1,08:30:00,08:30:00,S4,40\n"
                    "T1,08:40:00,08:40:00,S5,50\n"
                    "T2,09:00:00,09:00:00,S1,1\n"
                    "T2,09:10:00,09:10:00,S2,2\n");
    g_ds = test_rt_open_weekdays(g_dir, &g_monday);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dataset_release(g_ds);
    return 0;
}

#define H(h, m) ((uint32_t)((h) * 3600 + (m) * 60))

static rt_trip_update trip_update(const char *entity_id, const char *trip_id, rt_stop_update *stops, uint32_t n)
{
    return (rt_trip_update){.entity_id = entity_id, .trip_id = trip_id, .start_date = "20261102",
                            .start_day = g_monday, .start_secs = -1, .direction_id = -1, .new_start_day = INT32_MIN,
                            .new_start_secs = -1, .stops = stops, .stop_count = n};
}

static uint32_t stop_index(const char *id)
{
    uint32_t s = dataset_find_stop(g_ds, id, strlen(id));
    assert_int_not_equal(s, QUERY_NONE);
    return s;
}

/* The departure row of trip_id at stop_sequence (position pos) on Monday. */
static departure row_of(const char *trip_id, uint32_t seq, uint32_t pos, uint32_t secs)
{
    departure d = {.trip = dataset_find_trip(g_ds, trip_id, strlen(trip_id)), .service_date = g_monday,
                   .stop_sequence = seq, .pos = pos, .secs = secs};
    d.instant = dataset_instant(g_ds, g_monday, secs);
    return d;
}

static bool lookup(const rt_overlay *o, const char *trip_id, uint32_t seq, uint32_t pos, uint32_t secs,
                   rt_departure *out)
{
    departure d = row_of(trip_id, seq, pos, secs);
    return rt_overlay_lookup(o, &d, out);
}

static void test_moved_rows_are_served_at_the_assigned_stop(void **state)
{
    (void)state;
    rt_stop_update u[3] = {
        {.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(60), .assigned_stop_id = "S5"},
        {.has_stop_sequence = true, .stop_sequence = 30, .departure = test_rt_delay(60), .assigned_stop_id = "NOPE"},
        {.has_stop_sequence = true, .stop_sequence = 40, .relationship = RT_STOP_NO_DATA, .assigned_stop_id = "S4"},
    };
    rt_trip_update tus[1] = {trip_update("e1", "T1", u, 3)};
    rt_feed f = test_rt_feed_of(tus, 1);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    /* seq 20 moves (a departure and an arrival event); seq 40 is assigned where it is scheduled */
    assert_int_equal(stats.assigned, 2);
    assert_int_equal(rt_overlay_moved_count(o), 2);
    assert_int_equal(stats.unknown_assigned_stop, 1);
    assert_non_null(strstr(stats.problem, "entity \"e1\": stop_time_update 1: "
                                          "stop_time_properties.assigned_stop_id \"NOPE\" is not a stop"));
    assert_true(rt_overlay_moved_at_stop(o, stop_index("S5")));
    assert_false(rt_overlay_moved_at_stop(o, stop_index("S2")));
    assert_false(rt_overlay_moved_at_stop(o, stop_index("S4")));
    uint32_t late, early;
    rt_overlay_moved_slack(o, &late, &early);
    assert_int_equal(late, 60);
    assert_int_equal(early, 0);

    /* at S5: the row of seq 20, naming its scheduled stop, by scheduled instant */
    departure rows[4];
    int64_t from = dataset_instant(g_ds, g_monday, H(8, 0)), to = dataset_instant(g_ds, g_monday, H(9, 0));
    assert_int_equal(rt_overlay_moved_events(o, QUERY_DEPARTURES, stop_index("S5"), from, to, rows, 4), 1);
    assert_int_equal(rows[0].stop, stop_index("S2"));
    assert_int_equal(rows[0].stop_sequence, 20);
    assert_int_equal(rows[0].pos, 1);
    assert_int_equal(rows[0].secs, H(8, 10));
    assert_false(rows[0].arrival);
    assert_int_equal(rt_overlay_moved_events(o, QUERY_ARRIVALS, stop_index("S5"), from, to, rows, 4), 1);
    assert_true(rows[0].arrival);
    assert_int_equal(rt_overlay_moved_events(o, QUERY_BOTH, stop_index("S5"), from, to, rows, 4), 1);
    assert_false(rows[0].arrival);   /* both: the call's departure */
    /* outside the window, or counted past max */
    assert_int_equal(rt_overlay_moved_events(o, QUERY_DEPARTURES, stop_index("S5"), from, from + 600, rows, 4), 0);
    assert_int_equal(rt_overlay_moved_events(o, QUERY_DEPARTURES, stop_index("S5"), from, to, rows, 0), 1);

    /* the row's own look-up says where it is served, with its prediction */
    rt_departure r;
    assert_true(lookup(o, "T1", 20, 1, H(8, 10), &r));
    assert_true(r.moved);
    departure moved = row_of("T1", 20, 1, H(8, 10));
    assert_int_equal(rt_overlay_assigned_stop(o, &moved), stop_index("S5"));
    assert_int_equal(rt_overlay_assigned_stop(o, &rows[0]), stop_index("S5"));   /* the row the index gave */
    departure not_moved = row_of("T1", 30, 2, H(8, 20));
    assert_int_equal(rt_overlay_assigned_stop(o, &not_moved), QUERY_NONE);
    assert_true(r.has_prediction);
    assert_int_equal(r.delay_s, 60);
    /* the unknown assignment is skipped, its delay kept; the own-stop one moves nothing */
    assert_true(lookup(o, "T1", 30, 2, H(8, 20), &r));
    assert_false(r.moved);
    assert_int_equal(r.delay_s, 60);
    assert_true(lookup(o, "T1", 40, 3, H(8, 30), &r));
    assert_false(r.moved);
    rt_overlay_release(o);
}

static void test_a_second_update_of_an_instance_moves_nothing(void **state)
{
    (void)state;
    rt_stop_update first[1] = {{.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(0)}};
    rt_stop_update second[1] = {
        {.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(0), .assigned_stop_id = "S5"}};
    rt_trip_update tus[2] = {trip_update("a", "T1", first, 1), trip_update("b", "T1", second, 1)};
    rt_feed f = test_rt_feed_of(tus, 2);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.duplicate, 1);
    assert_int_equal(rt_overlay_moved_count(o), 0);
    assert_false(rt_overlay_moved_at_stop(o, stop_index("S5")));
    rt_departure r;
    assert_true(lookup(o, "T1", 20, 1, H(8, 10), &r));
    assert_false(r.moved);
    rt_overlay_release(o);
}

static void test_trip_properties_reach_their_instance_only(void **state)
{
    (void)state;
    rt_stop_update u1[1] = {{.has_stop_sequence = true, .stop_sequence = 10, .departure = test_rt_delay(30)}};
    rt_stop_update u2[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(0)}};
    rt_trip_update tus[2] = {trip_update("p", "T2", u2, 1), trip_update("q", "T1", u1, 1)};
    tus[0].headsign = "Short";
    tus[0].short_name = "S";
    tus[0].shape_id = "SH9";
    rt_feed f = test_rt_feed_of(tus, 2);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.properties, 1);
    assert_int_equal(rt_overlay_moved_count(o), 0);   /* no platform change: nothing to merge */
    rt_departure r;
    assert_true(lookup(o, "T2", 1, 0, H(9, 0), &r));
    assert_true(r.has_properties);
    departure t2 = row_of("T2", 1, 0, H(9, 0));
    const rt_trip_properties *p = rt_overlay_row_properties(o, &t2);
    assert_non_null(p);
    assert_string_equal(p->headsign, "Short");
    assert_string_equal(p->short_name, "S");
    assert_string_equal(p->shape_id, "SH9");
    assert_true(lookup(o, "T1", 10, 0, H(8, 0), &r));
    assert_false(r.has_properties);
    departure t1 = row_of("T1", 10, 0, H(8, 0));
    assert_null(rt_overlay_row_properties(o, &t1));
    /* every stop time of the instance, and no other day's */
    departure t2_last = row_of("T2", 2, 1, H(9, 10));
    assert_ptr_equal(rt_overlay_row_properties(o, &t2_last), p);
    t2.service_date = g_monday + 1;
    assert_null(rt_overlay_row_properties(o, &t2));
    rt_overlay_release(o);
}

static rt_event time_event(uint32_t secs)
{
    return (rt_event){.present = true, .has_time = true, .time = dataset_instant(g_ds, g_monday, secs)};
}

static void test_realtime_only_trips_are_served_at_their_assigned_stops(void **state)
{
    (void)state;
    rt_stop_update n[3] = {
        {.stop_id = "S1", .departure = time_event(H(10, 0)), .assigned_stop_id = "S4"},
        {.stop_id = "S2", .departure = time_event(H(10, 10)), .assigned_stop_id = "NOPE"},
        {.stop_id = "S3", .arrival = time_event(H(10, 20)), .assigned_stop_id = "S3"},   /* its own stop */
    };
    rt_stop_update d[1] = {
        {.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(0), .assigned_stop_id = "S5"}};
    rt_trip_update tus[2] = {trip_update("new", "N1", n, 3), trip_update("dup", "T2", d, 1)};
    tus[0].relationship = RT_TRIP_NEW;
    tus[0].route_id = "R1";
    tus[1].relationship = RT_TRIP_DUPLICATED;
    tus[1].new_trip_id = "T2-dup";
    tus[1].new_start_day = g_monday;
    tus[1].new_start_secs = (int32_t)H(11, 0);
    rt_feed f = test_rt_feed_of(tus, 2);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.added, 2);
    assert_int_equal(stats.assigned, 2);   /* N1's departure at S4, the copy's at S5 */
    assert_int_equal(stats.unknown_assigned_stop, 1);
    assert_non_null(strstr(stats.problem, "entity \"new\": stop_time_update 1: "
                                          "stop_time_properties.assigned_stop_id \"NOPE\""));
    assert_int_equal(rt_overlay_moved_count(o), 0);   /* no timetable row moved */
    int64_t from = dataset_instant(g_ds, g_monday, H(9, 0)), to = dataset_instant(g_ds, g_monday, H(12, 0));
    departure rows[4];
    /* N1 leaves from S4, naming S1; nothing of it at S1 */
    assert_int_equal(rt_overlay_added_events(o, QUERY_DEPARTURES, stop_index("S1"), from, to, rows, 4), 0);
    assert_int_equal(rt_overlay_added_events(o, QUERY_DEPARTURES, stop_index("S4"), from, to, rows, 4), 1);
    assert_int_equal(rows[0].stop, stop_index("S1"));
    assert_int_equal(rows[0].pos, 0);
    assert_int_equal(rt_overlay_added_assigned_stop(o, &rows[0]), stop_index("S4"));
    /* the unknown assignment leaves the call at S2; the own-stop one moves nothing */
    assert_int_equal(rt_overlay_added_events(o, QUERY_DEPARTURES, stop_index("S2"), from, to, rows, 4), 1);
    assert_int_equal(rows[0].pos, 1);
    assert_int_equal(rt_overlay_added_assigned_stop(o, &rows[0]), QUERY_NONE);
    assert_int_equal(rt_overlay_added_events(o, QUERY_ARRIVALS, stop_index("S3"), from, to, rows, 4), 1);
    assert_int_equal(rt_overlay_added_assigned_stop(o, &rows[0]), QUERY_NONE);
    /* the copy leaves from S5 at 11:00; the original T2 is not moved */
    assert_int_equal(rt_overlay_added_events(o, QUERY_DEPARTURES, stop_index("S5"), from, to, rows, 4), 1);
    assert_int_equal(rows[0].stop, stop_index("S1"));
    assert_int_equal(rows[0].instant, dataset_instant(g_ds, g_monday, H(11, 0)));
    assert_string_equal(rt_overlay_added_trip(o, &rows[0])->trip_id, "T2-dup");
    const rt_added_trip *copy = rt_overlay_find_added(o, "T2-dup", g_monday);
    assert_non_null(copy);
    const rt_added_call *calls = rt_overlay_added_calls(o, copy);
    assert_int_equal(calls[0].assigned_stop, stop_index("S5"));
    assert_int_equal(calls[1].assigned_stop, QUERY_NONE);
    rt_departure r;
    assert_false(lookup(o, "T2", 1, 0, H(9, 0), &r));   /* the original has no update of its own */
    rt_overlay_release(o);
}

/* A REPLACEMENT's calls are its updates only: a NO_DATA one (the spec's way
 * to assign a stop without a prediction) is a call at the scheduled time,
 * served at its assigned stop; a SKIPPED one a skipped call; and a
 * REPLACEMENT after another update of the same instance goes whole. */
static void test_replacement_calls_of_no_data_and_skipped_updates(void **state)
{
    (void)state;
    rt_stop_update r[3] = {
        {.has_stop_sequence = true, .stop_sequence = 10, .relationship = RT_STOP_NO_DATA, .assigned_stop_id = "S4"},
        {.has_stop_sequence = true, .stop_sequence = 20, .relationship = RT_STOP_SKIPPED},
        {.has_stop_sequence = true, .stop_sequence = 30, .departure = test_rt_delay(60)},
    };
    rt_stop_update later[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(0)}};
    rt_trip_update tus[3] = {trip_update("rep", "T1", r, 3), trip_update("can", "T2", NULL, 0),
                             trip_update("rep-after", "T2", later, 1)};
    tus[0].relationship = RT_TRIP_REPLACEMENT;
    tus[1].relationship = RT_TRIP_CANCELED;
    tus[2].relationship = RT_TRIP_REPLACEMENT;
    rt_feed f = test_rt_feed_of(tus, 3);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.replaced, 1);   /* T2's comes after its CANCELED update: gone */
    assert_int_equal(stats.duplicate, 1);
    assert_null(rt_overlay_find_added(o, "T2", g_monday));
    const rt_added_trip *a = rt_overlay_find_added(o, "T1", g_monday);
    assert_non_null(a);
    assert_int_equal(a->call_count, 3);
    const rt_added_call *calls = rt_overlay_added_calls(o, a);
    assert_int_equal(calls[0].stop, stop_index("S1"));
    assert_int_equal(calls[0].assigned_stop, stop_index("S4"));
    assert_int_equal(calls[0].departure, dataset_instant(g_ds, g_monday, H(8, 0)));
    assert_int_equal(calls[0].flags, RT_CALL_SCHEDULED_TIME);
    assert_int_equal(calls[1].flags, RT_CALL_SKIPPED | RT_CALL_SCHEDULED_TIME);
    assert_int_equal(calls[1].departure, dataset_instant(g_ds, g_monday, H(8, 10)));
    assert_int_equal(calls[2].flags, 0);
    assert_int_equal(calls[2].arrival, dataset_instant(g_ds, g_monday, H(8, 21)));   /* the last: no departure */
    int64_t from = dataset_instant(g_ds, g_monday, H(7, 0)), to = dataset_instant(g_ds, g_monday, H(10, 0));
    departure rows[4];
    assert_int_equal(rt_overlay_added_events(o, QUERY_DEPARTURES, stop_index("S4"), from, to, rows, 4), 1);
    assert_ptr_equal(rt_overlay_added_call(o, &rows[0]), &calls[0]);
    assert_int_equal(rt_overlay_added_events(o, QUERY_DEPARTURES, stop_index("S1"), from, to, rows, 4), 0);
    rt_departure r0;
    assert_true(lookup(o, "T2", 1, 0, H(9, 0), &r0));   /* T2 is canceled, not hidden */
    assert_true(r0.canceled && !r0.hidden);
    rt_overlay_release(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moved_rows_are_served_at_the_assigned_stop),
        cmocka_unit_test(test_a_second_update_of_an_instance_moves_nothing),
        cmocka_unit_test(test_trip_properties_reach_their_instance_only),
        cmocka_unit_test(test_realtime_only_trips_are_served_at_their_assigned_stops),
        cmocka_unit_test(test_replacement_calls_of_no_data_and_skipped_updates),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
