/* test_rt_span.c — what a 64 MB feed's first apply is kept in: the
 * overlay's head, span and tail entries (an instance keeps its updated span
 * and one entry for each run of equal answers at its ends), and the
 * poller's packed stop_time_updates (rt_stop_pack.h).
 * Edge cases: rows before the first update and after the last (a carried
 * delay, none, a trip-level delay), a skipped stop, negative delays,
 * propagation stopped by a NO_DATA update, a trip delayed past midnight, an
 * update naming only its arrival, uncertainty, a canceled trip, rows at a
 * stale position, at a wrong time or at a stop_sequence the trip lacks; and
 * the same answers for every row from the packed feed as from the full one.
 */
#include "test_support.h"
#include "test_rt_fixture.h"
#include "test_timetable_fixture.h"

#include "live/rt_stop_pack.h"
#include "transit/gtfs.h"
#include "transit/rt_encode.h"
#include "transit/rt_overlay.h"

static char g_dir[512];
static dataset *g_ds;
static int32_t g_monday;   /* 2026-11-02 */

#define H(h, m) ((uint32_t)((h) * 3600 + (m) * 60))

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "rt-span");
    test_rt_write_line(g_dir, 8);
    /* T8 calls at eight stops, every 10 minutes, a minute's dwell; N4 runs past midnight */
    test_write_file(g_dir, "trips.txt", "route_id,service_id,trip_id\nR1,WK,T8\nR1,WK,N4\n");
    char rows[2048];
    size_t at = (size_t)snprintf(rows, sizeof rows, "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n");
    for (int k = 0; k < 8; k++)
        at += (size_t)snprintf(rows + at, sizeof rows - at, "T8,%02d:%02d:00,%02d:%02d:00,S%d,%d\n",
                               8 + 10 * k / 60, 10 * k % 60, 8 + 10 * k / 60, 10 * k % 60 + 1, k + 1, k + 1);
    snprintf(rows + at, sizeof rows - at,
             "N4,23:40:00,23:40:00,S1,1\nN4,23:55:00,23:56:00,S2,2\nN4,24:10:00,24:10:00,S3,3\n"
             "N4,24:30:00,24:30:00,S4,4\n");
    test_write_file(g_dir, "stop_times.txt", rows);
    g_ds = test_rt_open_weekdays(g_dir, &g_monday);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dataset_release(g_ds);
    return 0;
}

static uint32_t trip_of(const char *id) { return dataset_find_trip(g_ds, id, strlen(id)); }

/* The timetable's row of trip_id at pos on Monday (departure or arrival). */
static departure row_at(const char *trip_id, uint32_t pos, bool arrival)
{
    trip_stop_time st;
    assert_true(trip_stop_at(g_ds, trip_of(trip_id), pos, &st));
    departure d = {0};
    d.trip = trip_of(trip_id);
    d.service_date = g_monday;
    d.pos = pos;
    d.stop = st.stop;
    d.stop_sequence = st.stop_sequence;
    d.secs = arrival ? st.arrival_secs : st.departure_secs;
    d.arrival = arrival;
    d.instant = dataset_instant(g_ds, g_monday, d.secs);
    return d;
}

static rt_overlay *build(rt_trip_update *tus, uint32_t n)
{
    rt_feed f = test_rt_feed_of(tus, n);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.matched, n);
    return o;
}

#define NONE INT32_MIN   /* realtime, no prediction */
#define SKIP (INT32_MIN + 1)

/* Each departure row of trip_id, then each arrival row, says `want`. */
static void expect_rows(const rt_overlay *o, const char *trip_id, const int32_t *dep, const int32_t *arr, uint32_t n)
{
    for (int a = 0; a < 2; a++)
        for (uint32_t k = 0; k < n; k++) {
            int32_t want = a ? arr[k] : dep[k];
            departure d = row_at(trip_id, k, a == 1);
            rt_departure r;
            bool found = rt_overlay_lookup(o, &d, &r);
            bool ok = found && r.realtime &&
                      (want == SKIP   ? r.skipped && r.canceled
                       : want == NONE ? !r.has_prediction && !r.canceled
                                      : r.has_prediction && r.delay_s == want && !r.canceled);
            if (!ok)
                fail_msg("%s %s pos %u: found %d prediction %d delay %d skipped %d, expected %d", trip_id,
                         a ? "arrival" : "departure", k, found, r.has_prediction, r.delay_s, r.skipped, want);
            /* the same row at a stale position is found by its stop_sequence */
            d.pos = (k + 3) % n;
            rt_departure again;
            assert_true(rt_overlay_lookup(o, &d, &again));
            assert_memory_equal(&r, &again, sizeof r);
            /* a time the instance does not have at that stop finds nothing */
            d.pos = k;
            d.secs += 7;
            assert_false(rt_overlay_lookup(o, &d, &again));
            assert_false(again.realtime);
        }
}

static rt_stop_update at_seq(uint32_t seq, int32_t delay)
{
    return (rt_stop_update){.has_stop_sequence = true, .stop_sequence = seq, .departure = test_rt_delay(delay)};
}

/* Stops before the first update say nothing, those after the last carry
 * its delay: a head and a tail entry each, the rows between their own. */
static void test_head_span_and_carried_tail(void **state)
{
    (void)state;
    rt_stop_update u[2] = {at_seq(3, 60), at_seq(5, 120)};
    rt_trip_update tu = test_rt_monday_update("T8", g_monday, u, 2);
    rt_overlay *o = build(&tu, 1);
    const int32_t dep[8] = {NONE, NONE, 60, 60, 120, 120, 120, 120};
    expect_rows(o, "T8", dep, dep, 8);
    /* a stop_sequence the trip lacks: nothing, in the head as in the tail */
    departure d = row_at("T8", 0, false);
    d.stop_sequence = 0;
    rt_departure r;
    assert_false(rt_overlay_lookup(o, &d, &r));
    d = row_at("T8", 7, false);
    d.stop_sequence = 99;
    assert_false(rt_overlay_lookup(o, &d, &r));
    assert_int_equal(rt_overlay_trip_late(o, trip_of("T8")), 120);
    rt_overlay_release(o);
}

/* NO_DATA stops the carrying: from there on no prediction (the tail). A
 * trip-level delay fills the head. */
static void test_no_data_tail_and_trip_delay_head(void **state)
{
    (void)state;
    rt_stop_update u[2] = {at_seq(4, 90), {.has_stop_sequence = true, .stop_sequence = 6,
                                           .relationship = RT_STOP_NO_DATA}};
    rt_trip_update tu = test_rt_monday_update("T8", g_monday, u, 2);
    tu.has_delay = true;
    tu.delay = 45;
    rt_overlay *o = build(&tu, 1);
    const int32_t dep[8] = {45, 45, 45, 90, 90, NONE, NONE, NONE};
    expect_rows(o, "T8", dep, dep, 8);
    rt_overlay_release(o);
}

/* A negative delay carried past a skipped stop; the update naming only its
 * arrival gives the departure that delay too. */
static void test_negative_skipped_and_arrival_only(void **state)
{
    (void)state;
    rt_stop_update u[3] = {at_seq(2, -60), {.has_stop_sequence = true, .stop_sequence = 4,
                                            .relationship = RT_STOP_SKIPPED},
                           {.has_stop_sequence = true, .stop_sequence = 6, .arrival = test_rt_delay(-30)}};
    rt_trip_update tu = test_rt_monday_update("T8", g_monday, u, 3);
    rt_overlay *o = build(&tu, 1);
    /* after S6, the carried -30 is held no earlier than the departure before */
    const int32_t dep[8] = {NONE, -60, -60, SKIP, -60, -30, -30, -30};
    expect_rows(o, "T8", dep, dep, 8);
    rt_overlay_release(o);
}

/* A trip delayed past midnight: its rows after midnight carry the delay. */
static void test_delay_past_midnight(void **state)
{
    (void)state;
    rt_stop_update u[1] = {at_seq(2, 1200)};
    rt_trip_update tu = test_rt_monday_update("N4", g_monday, u, 1);
    rt_overlay *o = build(&tu, 1);
    const int32_t dep[4] = {NONE, 1200, 1200, 1200};
    expect_rows(o, "N4", dep, dep, 4);
    rt_overlay_release(o);
}

/* A canceled trip is one entry: every row canceled. */
static void test_canceled_trip_one_entry(void **state)
{
    (void)state;
    rt_trip_update tu = test_rt_monday_update("T8", g_monday, NULL, 0);
    tu.relationship = RT_TRIP_CANCELED;
    rt_overlay *o = build(&tu, 1);
    for (uint32_t k = 0; k < 8; k++) {
        departure d = row_at("T8", k, false);
        rt_departure r;
        assert_true(rt_overlay_lookup(o, &d, &r));
        assert_true(r.realtime && r.canceled && !r.skipped && !r.has_prediction);
    }
    rt_overlay_release(o);
}

/* Packed records read back as they were: every field, at its extremes. */
static void test_stop_pack_round_trip(void **state)
{
    (void)state;
    rt_stop_update in[5] = {
        {.stop_id = "S1", .has_stop_sequence = true, .stop_sequence = UINT32_MAX,
         .arrival = {.present = true, .has_time = true, .time = INT64_MIN + 1},
         .departure = {.present = true, .has_delay = true, .delay = INT32_MIN, .has_uncertainty = true,
                       .uncertainty = -RT_UNCERTAINTY_MAX}},
        {.stop_id = NULL, .assigned_stop_id = "P2", .has_stop_sequence = true, .stop_sequence = 0,
         .relationship = RT_STOP_NO_DATA},
        {.stop_id = "S3", .relationship = RT_STOP_SKIPPED, .departure_occupancy = RT_OCCUPANCY_MAX + 1},
        {.stop_id = "S4", .relationship = RT_STOP_UNSCHEDULED,
         .departure = {.present = true, .has_time = true, .time = INT64_MAX, .has_delay = true, .delay = INT32_MAX,
                       .has_uncertainty = true, .uncertainty = RT_UNCERTAINTY_MAX}},
        {.has_stop_sequence = true, .stop_sequence = 5, .arrival = {.present = true}},   /* an empty event */
    };
    size_t size = rt_stop_pack_size(in, 5);
    uint8_t *buf = malloc(size);
    assert_non_null(buf);
    rt_stop_pack(in, 5, buf);
    rt_stop_update out[5];
    rt_stop_unpack(buf, 5, out);
    for (int i = 0; i < 5; i++) {
        assert_ptr_equal(out[i].stop_id, in[i].stop_id);
        assert_ptr_equal(out[i].assigned_stop_id, in[i].assigned_stop_id);
        assert_int_equal(out[i].has_stop_sequence, in[i].has_stop_sequence);
        assert_int_equal(out[i].stop_sequence, in[i].stop_sequence);
        assert_int_equal(out[i].relationship, in[i].relationship);
        assert_int_equal(out[i].departure_occupancy, in[i].departure_occupancy);
        const rt_event *a[2] = {&in[i].arrival, &in[i].departure}, *b[2] = {&out[i].arrival, &out[i].departure};
        for (int e = 0; e < 2; e++) {
            assert_int_equal(a[e]->present, b[e]->present);
            assert_int_equal(a[e]->has_delay, b[e]->has_delay);
            assert_int_equal(a[e]->delay, b[e]->delay);
            assert_int_equal(a[e]->has_time, b[e]->has_time);
            assert_true(a[e]->time == b[e]->time);
            assert_int_equal(a[e]->has_uncertainty, b[e]->has_uncertainty);
            assert_int_equal(a[e]->uncertainty, b[e]->uncertainty);
        }
    }
    /* the readers' side: an update's array as it is, packed ones unpacked */
    rt_trip_update tu = {.stops = in, .stop_count = 5};
    assert_ptr_equal(rt_trip_update_stops(&tu, out), in);
    rt_trip_update packed = {.packed_stops = buf, .stop_count = 5};
    assert_ptr_equal(rt_trip_update_stops(&packed, out), out);
    assert_string_equal(out[3].stop_id, "S4");
    free(buf);
}

static void rename_to_x(void *ctx, const char **id)
{
    (void)ctx;
    if (strcmp(*id, "S3") == 0) *id = "X3";
}

/* A feed through the export, decoded whole and packed: the same stops,
 * the same ids renamed, and every row of the overlays the same. */
static void test_packed_feed_answers_as_the_full_one(void **state)
{
    (void)state;
    rt_stop_update t8[4] = {at_seq(2, -90), {.has_stop_sequence = true, .stop_sequence = 3, .stop_id = "S3",
                                             .relationship = RT_STOP_SKIPPED},
                            {.has_stop_sequence = true, .stop_sequence = 5, .arrival = test_rt_delay(400),
                             .departure = {.present = true, .has_delay = true, .delay = 420,
                                           .has_uncertainty = true, .uncertainty = 90}},
                            {.has_stop_sequence = true, .stop_sequence = 7, .relationship = RT_STOP_NO_DATA}};
    rt_stop_update n4[1] = {{.stop_id = "S2", .arrival = test_rt_delay(1500)}};
    rt_trip_update tus[2] = {test_rt_monday_update("T8", g_monday, t8, 4),
                             test_rt_monday_update("N4", g_monday, n4, 1)};
    tus[0].entity_id = "e1";
    tus[1].entity_id = "e2";
    rt_feed hand = test_rt_feed_of(tus, 2);
    uint8_t *pb = NULL;
    size_t len = 0;
    assert_int_equal(rt_encode_trip_updates(&hand, 1793624400, &pb, &len), 0);
    char err[256];
    rt_feed *whole = rt_feed_decode(pb, len, err, sizeof err);
    assert_non_null(whole);
    rt_feed *packed = rt_feed_decode_packed(pb, len, err, sizeof err);   /* takes the bytes' pages back */
    free(pb);
    assert_non_null(packed);
    assert_null(packed->trip_updates[0].stops);
    assert_non_null(packed->trip_updates[0].packed_stops);
    rt_overlay *a = rt_overlay_build(whole, g_ds, 0, NULL), *b = rt_overlay_build(packed, g_ds, 0, NULL);
    assert_non_null(a);
    assert_non_null(b);
    const char *trips[2] = {"T8", "N4"};
    uint32_t lens[2] = {8, 4};
    for (int t = 0; t < 2; t++)
        for (uint32_t k = 0; k < lens[t]; k++)
            for (int arr = 0; arr < 2; arr++) {
                departure d = row_at(trips[t], k, arr == 1);
                rt_departure x, y;
                bool fx = rt_overlay_lookup(a, &d, &x), fy = rt_overlay_lookup(b, &d, &y);
                assert_int_equal(fx, fy);
                assert_true(fx);
                assert_memory_equal(&x, &y, sizeof x);
            }
    /* the export of the packed feed is the export of the whole one */
    uint8_t *pa = NULL, *pp = NULL;
    size_t la = 0, lp = 0;
    assert_int_equal(rt_encode_trip_updates(whole, 7, &pa, &la), 0);
    assert_int_equal(rt_encode_trip_updates(packed, 7, &pp, &lp), 0);
    assert_int_equal(la, lp);
    assert_memory_equal(pa, pp, la);
    /* ids renamed in place in the packed records (rt_feed_namespace's way) */
    rt_trip_update_map_stop_ids(&packed->trip_updates[0], rename_to_x, NULL);
    rt_stop_update room[4];
    const rt_stop_update *s = rt_trip_update_stops(&packed->trip_updates[0], room);
    assert_string_equal(s[1].stop_id, "X3");
    assert_int_equal(s[2].departure.uncertainty, 90);
    free(pa);
    free(pp);
    rt_overlay_release(a);
    rt_overlay_release(b);
    rt_feed_free(whole);
    rt_feed_free(packed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_span_and_carried_tail),
        cmocka_unit_test(test_no_data_tail_and_trip_delay_head),
        cmocka_unit_test(test_negative_skipped_and_arrival_only),
        cmocka_unit_test(test_delay_past_midnight),
        cmocka_unit_test(test_canceled_trip_one_entry),
        cmocka_unit_test(test_stop_pack_round_trip),
        cmocka_unit_test(test_packed_feed_answers_as_the_full_one),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
