/* test_rt_grid_leads.c — the stops' leads in grid order reach every row a
 * board by predicted time needs.
 *
 * A small timetable (two trips crossing the same stops, one of them on two
 * dates) and a feed of delays carried and changed, a negative one, a
 * skipped stop, a canceled trip and a delay of five hours (past what a
 * bucket's byte holds). For every departure row the overlay moves later,
 * and every window start that row can reach (its scheduled instant, then
 * every 20 seconds to its predicted one, both ends exact), the lead at its
 * stop's grid point must reach back to it; for every row moved earlier, the
 * early slack must cover it. A frequency-based trip with realtime leaves no
 * table (its instances differ by their times: boards ask the overlay).
 */
#include "test_support.h"
#include "test_rt_fixture.h"
#include "test_timetable_fixture.h"

#include "live/rt_grid_leads.h"
#include "live/rt_row_index.h"
#include "store/dataset_internal.h"
#include "transit/gtfs.h"
#include "transit/rt_overlay.h"

static char g_dir[512];
static dataset *g_ds;
static int32_t g_monday;   /* 2026-11-02 */

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "rt-grid-leads");
    test_rt_write_line(g_dir, 6);
    test_write_file(g_dir, "trips.txt",
                    "route_id,service_id,trip_id\nR1,WK,T1\nR1,WK,T2\nR1,WK,T3\nR1,WK,T4\nR1,WK,F1\n");
    char st[4096];
    size_t o = (size_t)snprintf(st, sizeof st, "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n");
    const char *trips[] = {"T1", "T2", "T3", "T4"};
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 6; k++)
            o += (size_t)snprintf(st + o, sizeof st - o, "%s,%02d:%02d:00,%02d:%02d:30,S%d,%d\n", trips[t],
                                  8 + 2 * t, k * 7, 8 + 2 * t, k * 7, k + 1, 10 * (k + 1));
    snprintf(st + o, sizeof st - o, "F1,06:00:00,06:00:00,S1,1\nF1,06:05:00,06:05:00,S2,2\n");
    test_write_file(g_dir, "stop_times.txt", st);
    test_write_file(g_dir, "frequencies.txt",
                    "trip_id,start_time,end_time,headway_secs\nF1,07:00:00,08:00:00,1800\n");
    g_ds = test_rt_open_weekdays(g_dir, &g_monday);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dataset_release(g_ds);
    return 0;
}

static rt_trip_update update(const char *trip_id, int32_t day, rt_stop_update *stops, uint32_t n)
{
    return test_rt_update_on(trip_id, day, stops, n);
}

static uint32_t point_of(uint32_t stop)
{
    for (uint32_t p = 0; p < g_ds->ngrid_stops; p++)
        if (g_ds->grid_points[p].stop == stop) return p;
    fail_msg("stop %u has no grid point", stop);
    return 0;
}

/* Every departure row on the fixture's days checked against the leads;
 * returns how many rows the overlay moves later. */
/* The lead and early slack at one point: a board's batch of one. */
static void slack_at(const rt_grid_leads *g, uint32_t point, int64_t from, uint32_t *lead, uint32_t *early)
{
    rt_grid_leads_slack_points(g, &point, 1, from, lead, early);
}

static uint32_t check_every_row(const rt_overlay *o, const rt_grid_leads *g)
{
    query_scratch *s = query_scratch_new();
    departure deps[64];
    uint32_t late_rows = 0;
    for (uint32_t stop = 0; stop < dataset_stop_count(g_ds); stop++) {
        uint32_t point = point_of(stop);
        for (int32_t day = g_monday - 1; day <= g_monday + 2; day++) {
            uint32_t count;
            bool truncated;
            query_error err;
            assert_int_equal(stop_events(g_ds, s, QUERY_DEPARTURES, stop, dataset_instant(g_ds, day, 0), 1440 * 60,
                                         64, deps, &count, &truncated, &err),
                             QUERY_OK);
            for (uint32_t i = 0; i < count; i++) {
                rt_departure r;
                if (!rt_overlay_lookup(o, &deps[i], &r) || !r.has_prediction || r.canceled || r.delay_s == 0)
                    continue;
                int64_t sched = deps[i].instant;
                uint32_t lead, early;
                if (r.delay_s < 0) {
                    slack_at(g, point, sched, &lead, &early);
                    assert_true(early >= (uint32_t)-r.delay_s);
                    continue;
                }
                late_rows++;
                /* every window start the row reaches: after its schedule, up to its prediction */
                int64_t end = sched + r.delay_s;
                for (int64_t from = sched + 1; from <= end; from = from < end && from + 20 > end ? end : from + 20) {
                    slack_at(g, point, from, &lead, &early);
                    /* the batch a nearby board asks: the same answers, none for a point past the grid */
                    uint32_t points[3] = {point, UINT32_MAX, point}, leads[3], earlies[3];
                    rt_grid_leads_slack_points(g, points, 3, from, leads, earlies);
                    assert_int_equal(leads[0], lead);
                    assert_int_equal(earlies[0], early);
                    assert_int_equal(leads[1], 0);
                    assert_int_equal(earlies[1], 0);
                    assert_int_equal(leads[2], lead);
                    assert_int_equal(earlies[2], early);
                    if ((int64_t)lead < from - sched)
                        fail_msg("stop %u, row scheduled %lld delayed %d: a window from %lld reads back %u s, "
                                 "needs %lld", stop, (long long)sched, r.delay_s, (long long)from, lead,
                                 (long long)(from - sched));
                }
            }
        }
    }
    query_scratch_free(s);
    return late_rows;
}

static void test_leads_reach_every_row_predicted_into_a_window(void **state)
{
    (void)state;
    /* T1: +3 min from S2, then -40 s from S4 */
    rt_stop_update t1[2] = {
        {.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(180)},
        {.has_stop_sequence = true, .stop_sequence = 40, .departure = test_rt_delay(-40)},
    };
    /* T2: +11 min, a skipped stop; the same trip on Tuesday +1 min */
    rt_stop_update t2[2] = {
        {.has_stop_sequence = true, .stop_sequence = 10, .departure = test_rt_delay(660)},
        {.has_stop_sequence = true, .stop_sequence = 30, .relationship = RT_STOP_SKIPPED},
    };
    rt_stop_update t2b[1] = {{.has_stop_sequence = true, .stop_sequence = 10, .departure = test_rt_delay(61)}};
    /* T3: five hours late from S3 (past what a bucket's byte holds) */
    rt_stop_update t3[1] = {{.has_stop_sequence = true, .stop_sequence = 30, .departure = test_rt_delay(5 * 3600)}};
    rt_trip_update tus[5] = {
        update("T1", g_monday, t1, 2),
        update("T2", g_monday, t2, 2),
        update("T2", g_monday + 1, t2b, 1),
        update("T3", g_monday, t3, 1),
        update("T4", g_monday, NULL, 0),
    };
    tus[4].relationship = RT_TRIP_CANCELED;
    rt_feed f = test_rt_feed_of(tus, 5);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.matched, 5);
    const rt_grid_leads *g = rt_row_index_leads(rt_overlay_row_index(o));
    assert_non_null(g);
    assert_true(rt_grid_leads_bytes(g) > 0);
    assert_true(check_every_row(o, g) >= 10);
    /* before the rows' first day and long after the last, nothing to read back */
    uint32_t lead, early;
    slack_at(g, point_of(0), dataset_instant(g_ds, g_monday - 3, 0), &lead, &early);
    assert_int_equal(lead, 0);
    slack_at(g, point_of(5), dataset_instant(g_ds, g_monday + 9, 0), &lead, &early);
    assert_int_equal(lead, 0);
    uint32_t points[2] = {point_of(0), point_of(5)}, leads[2] = {7, 7}, earlies[2];
    rt_grid_leads_slack_points(g, points, 2, dataset_instant(g_ds, g_monday + 9, 0), leads, earlies);
    assert_int_equal(leads[0], 0);
    assert_int_equal(leads[1], 0);
    rt_overlay_release(o);
}

static void test_frequency_trip_leaves_no_table(void **state)
{
    (void)state;
    rt_stop_update f1[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(90)}};
    rt_trip_update tus[1] = {update("F1", g_monday, f1, 1)};
    tus[0].start_time = "07:30:00";
    tus[0].start_secs = 7 * 3600 + 1800;
    rt_feed f = test_rt_feed_of(tus, 1);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.matched, 1);
    assert_null(rt_row_index_leads(rt_overlay_row_index(o)));
    rt_overlay_release(o);
}

static void test_empty_overlay_has_no_table(void **state)
{
    (void)state;
    rt_overlay *o = rt_overlay_build(NULL, g_ds, 0, NULL);
    assert_non_null(o);
    assert_null(rt_row_index_leads(rt_overlay_row_index(o)));
    rt_overlay_release(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leads_reach_every_row_predicted_into_a_window),
        cmocka_unit_test(test_frequency_trip_leaves_no_table),
        cmocka_unit_test(test_empty_overlay_has_no_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
