/* test_rt_row_index.c — the overlay's row index answers every row as the
 * overlay's look-up does.
 *
 * A small timetable and a feed with what a slot must keep apart: delays
 * carried and stopped (NO_DATA), a skipped stop, negative delays, an
 * occupancy, a canceled and a DELETED trip, a trip with instances on two
 * dates, a frequency-based trip (no slot: its runs differ by their times)
 * and a trip whose delay changes at every stop (more runs than a slot
 * holds). Every departure and arrival row of every stop over three days,
 * as the departures query gives them, is looked up both ways. Boards by
 * predicted time read the index as they drain their merge (board_predicted.c
 * keeps what it said of a row packed in the row's key): each row of theirs
 * must be a row of the schedule, carry what the look-up says of it, and
 * come in predicted order.
 */
#include "test_support.h"
#include "test_rt_fixture.h"
#include "test_timetable_fixture.h"

#include "engine/board_predicted.h"
#include "live/rt_row_index.h"
#include "transit/gtfs.h"
#include "transit/rt_overlay.h"

static char g_dir[512];
static dataset *g_ds;
static int32_t g_monday;   /* 2026-11-02 */

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "rt-row-index");
    test_rt_write_line(g_dir, 8);
    test_write_file(g_dir, "trips.txt",
                    "route_id,service_id,trip_id\nR1,WK,T1\nR1,WK,T2\nR1,WK,T3\nR1,WK,T4\nR1,WK,T5\n"
                    "R1,WK,F1\n");
    char st[4096];
    size_t o = (size_t)snprintf(st, sizeof st, "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n");
    const char *trips[] = {"T1", "T2", "T3", "T4", "T5"};
    for (int t = 0; t < 5; t++)
        for (int k = 0; k < 8; k++)
            o += (size_t)snprintf(st + o, sizeof st - o, "%s,%02d:%02d:00,%02d:%02d:30,S%d,%d\n", trips[t], 8 + t,
                                  k * 5, 8 + t, k * 5, k + 1, 10 * (k + 1));
    snprintf(st + o, sizeof st - o,
             "F1,06:00:00,06:00:00,S1,1\nF1,06:05:00,06:05:00,S2,2\nF1,06:10:00,06:10:00,S3,3\n");
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

/* Every row of every stop on three days, both kinds, looked up both ways. */
static uint32_t compare_all_rows(const rt_overlay *o)
{
    const rt_row_index *ix = rt_overlay_row_index(o);
    assert_non_null(ix);
    query_scratch *s = query_scratch_new();
    departure deps[64];
    uint32_t rows = 0;
    for (uint32_t stop = 0; stop < dataset_stop_count(g_ds); stop++)
        for (int32_t day = g_monday - 1; day <= g_monday + 2; day++) {
            uint32_t count;
            bool truncated;
            query_error err;
            assert_int_equal(stop_events(g_ds, s, QUERY_BOTH, stop, dataset_instant(g_ds, day, 0), 1440 * 60, 64,
                                         deps, &count, &truncated, &err),
                             QUERY_OK);
            for (uint32_t i = 0; i < count; i++) {
                rt_departure a, b;
                memset(&a, 0x5a, sizeof a);
                memset(&b, 0xa5, sizeof b);
                rt_row_index_prefetch(ix, o, &deps[i]);
                rt_row_index_prefetch_entry(ix, o, &deps[i]);
                bool fa = rt_overlay_lookup(o, &deps[i], &a), fb = rt_row_index_lookup(ix, o, &deps[i], &b);
                if (fa != fb || a.realtime != b.realtime || a.canceled != b.canceled || a.skipped != b.skipped ||
                    a.hidden != b.hidden || a.has_prediction != b.has_prediction || a.delay_s != b.delay_s ||
                    a.occupancy != b.occupancy || a.moved != b.moved || a.has_properties != b.has_properties)
                    fail_msg("trip %u seq %u day %d arrival %d: overlay %d/%d/%d/%d, index %d/%d/%d/%d", deps[i].trip,
                             deps[i].stop_sequence, deps[i].service_date, deps[i].arrival, fa, a.has_prediction,
                             a.delay_s, a.canceled, fb, b.has_prediction, b.delay_s, b.canceled);
                assert_int_equal(rt_overlay_trip_late(o, deps[i].trip),
                                 rt_row_index_trip_late(ix, o, deps[i].trip));
                rows++;
            }
        }
    query_scratch_free(s);
    return rows;
}

static bool same_row(const departure *a, const departure *b)
{
    return a->instant == b->instant && a->utc_offset == b->utc_offset && a->service_date == b->service_date &&
           a->secs == b->secs && a->stop == b->stop && a->trip == b->trip && a->stop_sequence == b->stop_sequence &&
           a->pos == b->pos && a->arrival == b->arrival && a->distance_m == b->distance_m;
}

/* Every stop's board by predicted time over each of three days, each kind:
 * its rows are the schedule's (as stop_events gives them over the days
 * around), each with the look-up's answer, in predicted order. */
static uint32_t compare_predicted_boards(const rt_overlay *o)
{
    query_scratch *s = query_scratch_new();
    predicted_scratch *p = predicted_scratch_new();
    static departure all[4096], deps[64];
    static rt_departure rts[64];
    uint32_t rows = 0;
    const query_kind kinds[] = {QUERY_DEPARTURES, QUERY_ARRIVALS, QUERY_BOTH};
    for (int k = 0; k < 3; k++)
        for (uint32_t stop = 0; stop < dataset_stop_count(g_ds); stop++) {
            uint32_t nall;
            bool truncated;
            query_error err;
            assert_int_equal(stop_events(g_ds, s, kinds[k], stop, dataset_instant(g_ds, g_monday - 2, 0), 1440 * 60,
                                         QUERY_LIMIT_MAX, all, &nall, &truncated, &err),
                             QUERY_OK);
            uint32_t more;
            for (int32_t d = g_monday - 1; d <= g_monday + 3; d++) {
                assert_int_equal(stop_events(g_ds, s, kinds[k], stop, dataset_instant(g_ds, d, 0), 1440 * 60,
                                             QUERY_LIMIT_MAX, all + nall, &more, &truncated, &err),
                                 QUERY_OK);
                nall += more;
            }
            for (int32_t day = g_monday - 1; day <= g_monday + 2; day++) {
                uint32_t count;
                assert_int_equal(board_predicted_stop(p, g_ds, s, o, kinds[k], stop, dataset_instant(g_ds, day, 0),
                                                      1440 * 60, 64, false, deps, rts, &count, &truncated, &err),
                                 QUERY_OK);
                int64_t last = INT64_MIN;
                for (uint32_t i = 0; i < count; i++) {
                    uint32_t j = 0;
                    while (j < nall && !same_row(&all[j], &deps[i])) j++;
                    if (j == nall)
                        fail_msg("kind %d stop %u day %d: row %u (trip %u pos %u) is no row of the schedule", k, stop,
                                 day, i, deps[i].trip, deps[i].pos);
                    rt_departure a;
                    memset(&a, 0x5a, sizeof a);
                    rt_overlay_lookup(o, &deps[i], &a);
                    const rt_departure *b = &rts[i];
                    if (a.realtime != b->realtime || a.canceled != b->canceled || a.skipped != b->skipped ||
                        a.hidden != b->hidden || a.has_prediction != b->has_prediction || a.delay_s != b->delay_s ||
                        a.occupancy != b->occupancy || a.moved != b->moved || a.has_properties != b->has_properties)
                        fail_msg("kind %d stop %u day %d: row %u (trip %u pos %u) carries another answer", k, stop,
                                 day, i, deps[i].trip, deps[i].pos);
                    int64_t at = deps[i].instant + (b->has_prediction && !b->canceled ? b->delay_s : 0);
                    assert_true(at >= last);
                    last = at;
                    rows++;
                }
            }
        }
    predicted_scratch_free(p);
    query_scratch_free(s);
    return rows;
}

static void test_index_answers_as_the_overlay(void **state)
{
    (void)state;
    /* T1: no prediction before 20, +120 and an occupancy at 20 (the
     * occupancy is that stop's only), -40 from 30 */
    rt_stop_update t1[2] = {
        {.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(120), .departure_occupancy = 3},
        {.has_stop_sequence = true, .stop_sequence = 30, .departure = test_rt_delay(-40)},
    };
    /* T2: a skipped stop inside a carried delay on Monday; on Tuesday a
     * NO_DATA stop too (only the earliest instance has a slot: the other's
     * rows ask the look-up) */
    rt_stop_update t2[3] = {
        {.has_stop_sequence = true, .stop_sequence = 10, .departure = test_rt_delay(300)},
        {.has_stop_sequence = true, .stop_sequence = 30, .relationship = RT_STOP_SKIPPED},
        {.has_stop_sequence = true, .stop_sequence = 60, .relationship = RT_STOP_NO_DATA},
    };
    /* T3: a new delay at every stop (more runs than a slot holds) */
    rt_stop_update t3[8];
    for (int k = 0; k < 8; k++)
        t3[k] = (rt_stop_update){.has_stop_sequence = true, .stop_sequence = (uint32_t)(10 * (k + 1)),
                                 .departure = test_rt_delay(60 * k)};
    rt_stop_update f1[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(90)}};
    rt_trip_update tus[7] = {
        update("T1", g_monday, t1, 2),
        update("T2", g_monday, t2, 2),
        update("T2", g_monday + 1, t2, 3),
        update("T3", g_monday, t3, 8),
        update("T4", g_monday + 1, NULL, 0),
        update("T5", g_monday, NULL, 0),
        update("F1", g_monday, f1, 1),
    };
    tus[4].relationship = RT_TRIP_CANCELED;
    tus[5].relationship = RT_TRIP_DELETED;
    tus[6].start_time = "07:30:00";
    tus[6].start_secs = 7 * 3600 + 1800;
    rt_feed f = {.version = "2.0", .trip_updates = tus, .trip_update_count = 7};
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.matched, 7);
    /* T1, T2, T4 and T5 fit a slot; T3 has eight runs, F1 is frequency-based */
    assert_int_equal(rt_row_index_kept(rt_overlay_row_index(o)), 4);
    assert_true(rt_row_index_bytes(rt_overlay_row_index(o)) >= 4 * 64);
    uint32_t rows = compare_all_rows(o);
    assert_true(rows > 100);
    assert_true(compare_predicted_boards(o) > 100);
    rt_overlay_release(o);
}

static void test_empty_overlay_has_an_empty_index(void **state)
{
    (void)state;
    rt_overlay *o = rt_overlay_build(NULL, g_ds, 0, NULL);
    assert_non_null(o);
    assert_int_equal(rt_row_index_kept(rt_overlay_row_index(o)), 0);
    compare_all_rows(o);
    compare_predicted_boards(o);
    rt_overlay_release(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_answers_as_the_overlay),
        cmocka_unit_test(test_empty_overlay_has_an_empty_index),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
