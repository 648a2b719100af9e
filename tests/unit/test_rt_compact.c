/* test_rt_compact.c — the narrow forms a 64 MB feed is kept in: the
 * overlay's 16-bit delays and dwells (with the full values of a stop that
 * does not fit kept aside, STOP_WIDE), its stop leads built in two passes
 * without a note per late event, and the 16-byte StopTimeEvent (its
 * uncertainty in 28 bits, an entity past that rejected by name).
 * Edge cases: delays at and past the 16-bit bounds, a dwell longer than 18
 * hours, negative delays, a skipped stop, propagation stopped by NO_DATA,
 * a trip delayed past midnight, and uncertainty through the export. And
 * the poller's decode, which gives the bytes back as it goes.
 */
#include "test_support.h"
#include "test_rt_fixture.h"
#include "test_timetable_fixture.h"

#include "gtfs-realtime.pb-c.h"
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
    test_tmpdir(g_dir, sizeof g_dir, "rt-compact");
    test_rt_write_line(g_dir, 4);
    /* L1 waits 19 hours at S2 (a dwell past 16 bits); N1 runs past midnight */
    test_write_file(g_dir, "trips.txt", "route_id,service_id,trip_id\nR1,WK,L1\nR1,WK,N1\n");
    test_write_file(g_dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                    "L1,01:00:00,01:00:00,S1,1\n"
                    "L1,02:00:00,21:00:00,S2,2\n"
                    "L1,21:10:00,21:10:00,S3,3\n"
                    "N1,23:40:00,23:40:00,S1,1\n"
                    "N1,23:55:00,23:56:00,S2,2\n"
                    "N1,24:10:00,24:10:00,S3,3\n"
                    "N1,24:30:00,24:30:00,S4,4\n");
    g_ds = test_rt_open_weekdays(g_dir, &g_monday);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dataset_release(g_ds);
    return 0;
}

static rt_trip_update trip_update(const char *trip_id, rt_stop_update *stops, uint32_t n)
{
    return test_rt_monday_update(trip_id, g_monday, stops, n);
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

/* The departure (or arrival) row of trip_id at its pos-th stop on Monday,
 * at secs. */
static rt_departure row(const rt_overlay *o, const char *trip_id, uint32_t pos, uint32_t secs, bool arrival,
                        bool *found)
{
    departure d = {0};
    d.trip = dataset_find_trip(g_ds, trip_id, strlen(trip_id));
    assert_int_not_equal(d.trip, QUERY_NONE);
    d.service_date = g_monday;
    d.pos = pos;
    d.stop_sequence = pos + 1;
    d.secs = secs;
    d.arrival = arrival;
    d.instant = dataset_instant(g_ds, g_monday, secs);
    rt_departure r;
    *found = rt_overlay_lookup(o, &d, &r);
    return r;
}

static void expect(const rt_overlay *o, const char *trip, uint32_t pos, uint32_t secs, bool arrival, int32_t delay)
{
    bool found;
    rt_departure r = row(o, trip, pos, secs, arrival, &found);
    if (!found || !r.realtime || !r.has_prediction || r.delay_s != delay || r.canceled)
        fail_msg("%s pos %u %s: found %d prediction %d delay %d canceled %d, expected delay %d", trip, pos,
                 arrival ? "arrival" : "departure", found, r.has_prediction, r.delay_s, r.canceled, delay);
}

static void expect_none(const rt_overlay *o, const char *trip, uint32_t pos, uint32_t secs)
{
    bool found;
    rt_departure r = row(o, trip, pos, secs, false, &found);
    if (!found || !r.realtime || r.has_prediction)
        fail_msg("%s pos %u: found %d prediction %d (delay %d), expected realtime without one", trip, pos, found,
                 r.has_prediction, r.delay_s);
}

/* Delays at the 16-bit bounds stay narrow, one past them is kept whole;
 * the rows read the same either way, and a wrong time finds nothing. */
static void test_delays_at_and_past_16_bits(void **state)
{
    (void)state;
    const int32_t delays[] = {32767, 32768, -32768, -32769, 40000, -40000, 200000, 0};
    for (size_t i = 0; i < sizeof delays / sizeof *delays; i++) {
        rt_stop_update u[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(delays[i])}};
        rt_trip_update tu = trip_update("N1", u, 1);
        rt_overlay *o = build(&tu, 1);
        expect(o, "N1", 0, H(23, 40), false, delays[i]);
        expect(o, "N1", 1, H(23, 56), false, delays[i]);   /* carried */
        expect(o, "N1", 3, H(24, 30), true, delays[i]);    /* and to arrivals */
        bool found;
        row(o, "N1", 1, H(23, 55), false, &found);         /* the arrival's time on a departure row */
        assert_false(found);
        uint32_t late = rt_overlay_trip_late(o, dataset_find_trip(g_ds, "N1", 2));
        uint32_t want = delays[i] > 0 ? (uint32_t)delays[i] : 0;
        assert_int_equal(late, want > RT_OVERLAY_SLACK_MAX ? RT_OVERLAY_SLACK_MAX : want);   /* capped */
        rt_overlay_release(o);
    }
}

/* A dwell of 19 hours does not fit 16 bits: the arrival row and the
 * departure row of that stop each find their own time and delay. */
static void test_long_dwell_kept_whole(void **state)
{
    (void)state;
    rt_stop_update u[2] = {
        {.has_stop_sequence = true, .stop_sequence = 2, .arrival = test_rt_delay(120), .departure = test_rt_delay(-60)},
        {.has_stop_sequence = true, .stop_sequence = 3, .departure = test_rt_delay(30)},
    };
    rt_trip_update tu = trip_update("L1", u, 2);
    rt_overlay *o = build(&tu, 1);
    expect_none(o, "L1", 0, H(1, 0));
    expect(o, "L1", 1, H(2, 0), true, 120);
    expect(o, "L1", 1, H(21, 0), false, -60);
    expect(o, "L1", 2, H(21, 10), false, 30);
    expect(o, "L1", 2, H(21, 10), true, 30);
    bool found;
    row(o, "L1", 1, H(20, 0), true, &found);   /* no arrival then */
    assert_false(found);
    rt_overlay_release(o);
}

/* NO_DATA stops the carrying (negative delays too), the next update
 * starts it again; a skipped stop with a wide delay around it stays
 * skipped and carries the delay past it. */
static void test_negative_no_data_and_skipped(void **state)
{
    (void)state;
    rt_stop_update u[3] = {
        {.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(-120)},
        {.has_stop_sequence = true, .stop_sequence = 2, .relationship = RT_STOP_NO_DATA},
        {.has_stop_sequence = true, .stop_sequence = 4, .arrival = test_rt_delay(-45)},
    };
    rt_trip_update tu = trip_update("N1", u, 3);
    rt_overlay *o = build(&tu, 1);
    expect(o, "N1", 0, H(23, 40), false, -120);
    expect_none(o, "N1", 1, H(23, 56));
    expect_none(o, "N1", 2, H(24, 10));
    expect(o, "N1", 3, H(24, 30), true, -45);
    rt_overlay_release(o);

    rt_stop_update w[2] = {
        {.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(50000)},
        {.has_stop_sequence = true, .stop_sequence = 2, .relationship = RT_STOP_SKIPPED},
    };
    tu = trip_update("N1", w, 2);
    o = build(&tu, 1);
    bool found;
    rt_departure r = row(o, "N1", 1, H(23, 56), false, &found);
    assert_true(found && r.realtime && r.skipped && r.canceled && !r.has_prediction);
    expect(o, "N1", 2, H(24, 10), false, 50000);
    rt_overlay_release(o);
}

/* A trip delayed past midnight: its rows keep their service day, and a
 * board from after midnight reads back to them (the lead, built in two
 * passes, reaches every late event predicted in its window). */
static void test_delayed_past_midnight_and_the_lead(void **state)
{
    (void)state;
    rt_stop_update u[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(1500)}};
    rt_trip_update tu = trip_update("N1", u, 1);
    rt_overlay *o = build(&tu, 1);
    expect(o, "N1", 0, H(23, 40), false, 1500);
    expect(o, "N1", 1, H(23, 56), false, 1500);
    uint32_t s2 = dataset_find_stop(g_ds, "S2", 2);
    int64_t sched = dataset_instant(g_ds, g_monday, H(23, 56));
    /* windows from just after the scheduled departure to the predicted one */
    for (int64_t from = sched + 1; from <= sched + 1500; from += 37) {
        uint32_t lead = rt_overlay_stop_lead(o, s2, from);
        if ((int64_t)lead < from - sched) fail_msg("lead %u at +%lld misses the row", lead, (long long)(from - sched));
        assert_true(lead <= 1500);
    }
    assert_int_equal(rt_overlay_stop_lead(o, s2, sched + 1501 + 300), 0);   /* past it: nothing to read back for */
    rt_overlay_release(o);
}

/* Many instances' late events at a stop, some wide: every window start an
 * event is predicted into finds a lead reaching back to it. */
static void test_lead_reaches_every_late_event(void **state)
{
    (void)state;
    static const int32_t delays[] = {30, 299, 300, 301, 900, 3600, 32767, 40000};
    uint32_t s3 = dataset_find_stop(g_ds, "S3", 2);
    for (size_t i = 0; i < sizeof delays / sizeof *delays; i++) {
        rt_stop_update a[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(delays[i])}};
        rt_stop_update b[1] = {
            {.has_stop_sequence = true, .stop_sequence = 3, .departure = test_rt_delay(delays[(i + 3) % 8])}};
        rt_trip_update tus[2] = {trip_update("N1", a, 1), trip_update("L1", b, 1)};
        rt_overlay *o = build(tus, 2);
        const struct { uint32_t secs; int32_t delay; } events[2] = {{H(24, 10), delays[i]},
                                                                    {H(21, 10), delays[(i + 3) % 8]}};
        for (int e = 0; e < 2; e++) {
            int64_t sched = dataset_instant(g_ds, g_monday, events[e].secs);
            for (int64_t from = sched + 1; from <= sched + events[e].delay; from += 97) {
                uint32_t lead = rt_overlay_stop_lead(o, s3, from);
                if ((int64_t)lead < from - sched)
                    fail_msg("delay %d: lead %u at +%lld misses the row", events[e].delay, lead,
                             (long long)(from - sched));
            }
        }
        rt_overlay_release(o);
    }
}

/* An uncertainty within 28 bits decodes and goes out through the export
 * as it came; one past it rejects its entity, by name. */
static void test_uncertainty_in_28_bits(void **state)
{
    (void)state;
    const int32_t values[] = {0, -5, RT_UNCERTAINTY_MAX, -RT_UNCERTAINTY_MAX, RT_UNCERTAINTY_MAX + 1};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        TransitRealtime__FeedHeader header = TRANSIT_REALTIME__FEED_HEADER__INIT;
        header.gtfs_realtime_version = "2.0";
        TransitRealtime__TripDescriptor td = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
        td.trip_id = "N1";
        TransitRealtime__TripUpdate__StopTimeEvent ev = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_EVENT__INIT;
        ev.has_delay = 1;
        ev.delay = -90;
        ev.has_uncertainty = 1;
        ev.uncertainty = values[i];
        TransitRealtime__TripUpdate__StopTimeUpdate u = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__INIT;
        u.has_stop_sequence = 1;
        u.stop_sequence = 2;
        u.arrival = &ev;
        TransitRealtime__TripUpdate__StopTimeUpdate *stus[] = {&u};
        TransitRealtime__TripUpdate tu = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
        tu.trip = &td;
        tu.n_stop_time_update = 1;
        tu.stop_time_update = stus;
        TransitRealtime__FeedEntity e = TRANSIT_REALTIME__FEED_ENTITY__INIT;
        e.id = "far";
        e.trip_update = &tu;
        TransitRealtime__FeedEntity *es[] = {&e};
        TransitRealtime__FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
        msg.header = &header;
        msg.n_entity = 1;
        msg.entity = es;
        size_t len = transit_realtime__feed_message__get_packed_size(&msg);
        uint8_t *buf = malloc(len);
        assert_non_null(buf);
        transit_realtime__feed_message__pack(&msg, buf);
        char err[256];
        rt_feed *f = rt_feed_decode(buf, len, err, sizeof err);
        free(buf);
        assert_non_null(f);
        if (values[i] > RT_UNCERTAINTY_MAX) {
            assert_int_equal(f->trip_update_count, 0);
            assert_int_equal(f->rejected, 1);
            assert_non_null(strstr(f->first_rejection, "\"far\""));
            assert_non_null(strstr(f->first_rejection, "uncertainty 134217728 is out of range"));
            rt_feed_free(f);
            continue;
        }
        assert_int_equal(f->trip_update_count, 1);
        const rt_event *a = &f->trip_updates[0].stops[0].arrival;
        assert_true(a->present && a->has_delay && a->has_uncertainty && !a->has_time);
        assert_int_equal(a->delay, -90);
        assert_int_equal(a->uncertainty, values[i]);
        assert_false(f->trip_updates[0].stops[0].departure.present);
        uint8_t *out;
        size_t out_len;
        assert_int_equal(rt_encode_trip_updates(f, 1793000000, &out, &out_len), 0);
        rt_feed *back = rt_feed_decode(out, out_len, err, sizeof err);
        free(out);
        assert_non_null(back);
        const rt_event *b = &back->trip_updates[0].stops[0].arrival;
        assert_true(b->present && b->has_delay && b->has_uncertainty && !b->has_time);
        assert_int_equal(b->uncertainty, values[i]);
        assert_int_equal(b->delay, -90);
        rt_feed_free(back);
        rt_feed_free(f);
    }
}

/* The poller's decode gives the bytes' pages back as it goes (past a MiB):
 * a feed of 2.5 MB decodes to the same as rt_feed_decode's, field by field. */
static void test_consuming_decode_reads_the_same(void **state)
{
    (void)state;
    enum { N = 60000 };
    TransitRealtime__FeedHeader header = TRANSIT_REALTIME__FEED_HEADER__INIT;
    header.gtfs_realtime_version = "2.0";
    TransitRealtime__FeedEntity *entities = calloc(N, sizeof *entities);
    TransitRealtime__FeedEntity **es = calloc(N, sizeof *es);
    TransitRealtime__TripUpdate *tus = calloc(N, sizeof *tus);
    TransitRealtime__TripDescriptor *tds = calloc(N, sizeof *tds);
    TransitRealtime__TripUpdate__StopTimeUpdate *us = calloc(3 * N, sizeof *us);
    TransitRealtime__TripUpdate__StopTimeUpdate **ups = calloc(3 * N, sizeof *ups);
    TransitRealtime__TripUpdate__StopTimeEvent *evs = calloc(3 * N, sizeof *evs);
    char(*ids)[16] = calloc(N, sizeof *ids);
    assert_true(entities && es && tus && tds && us && ups && evs && ids);
    for (uint32_t i = 0; i < N; i++) {
        snprintf(ids[i], sizeof ids[i], "e%u", i);
        tds[i] = (TransitRealtime__TripDescriptor)TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
        tds[i].trip_id = i % 2 ? "N1" : "L1";
        tds[i].start_date = "20261102";
        for (uint32_t k = 0; k < 3; k++) {
            uint32_t j = 3 * i + k;
            evs[j] = (TransitRealtime__TripUpdate__StopTimeEvent)TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_EVENT__INIT;
            evs[j].has_delay = 1;
            evs[j].delay = (int32_t)(i % 600) - 300 + (int32_t)k;
            evs[j].has_uncertainty = k == 1;
            evs[j].uncertainty = (int32_t)i;
            us[j] = (TransitRealtime__TripUpdate__StopTimeUpdate)TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__INIT;
            us[j].has_stop_sequence = 1;
            us[j].stop_sequence = k + 1;
            us[j].stop_id = k == 2 ? "S3" : NULL;
            if (k == 2 && i % 7 == 0) {
                us[j].has_schedule_relationship = 1;
                us[j].schedule_relationship =
                    TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__SCHEDULE_RELATIONSHIP__SKIPPED;
            } else {
                us[j].departure = &evs[j];
            }
            ups[j] = &us[j];
        }
        tus[i] = (TransitRealtime__TripUpdate)TRANSIT_REALTIME__TRIP_UPDATE__INIT;
        tus[i].trip = &tds[i];
        tus[i].n_stop_time_update = 3;
        tus[i].stop_time_update = &ups[3 * i];
        entities[i] = (TransitRealtime__FeedEntity)TRANSIT_REALTIME__FEED_ENTITY__INIT;
        entities[i].id = ids[i];
        entities[i].trip_update = &tus[i];
        es[i] = &entities[i];
    }
    TransitRealtime__FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    msg.n_entity = N;
    msg.entity = es;
    size_t len = transit_realtime__feed_message__get_packed_size(&msg);
    assert_true(len > 2u << 20);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    transit_realtime__feed_message__pack(&msg, buf);
    char err[256];
    rt_feed *a = rt_feed_decode(buf, len, err, sizeof err);
    assert_non_null(a);
    rt_feed *b = rt_feed_decode_consuming(buf, len, err, sizeof err);
    free(buf);
    assert_non_null(b);
    assert_int_equal(a->trip_update_count, N);
    assert_int_equal(b->trip_update_count, N);
    for (uint32_t i = 0; i < N; i++) {
        const rt_trip_update *x = &a->trip_updates[i], *y = &b->trip_updates[i];
        assert_string_equal(x->entity_id, y->entity_id);
        assert_string_equal(x->trip_id, y->trip_id);
        assert_int_equal(x->start_day, y->start_day);
        assert_int_equal(y->stop_count, 3);
        for (uint32_t k = 0; k < 3; k++) {
            const rt_stop_update *u = &x->stops[k], *v = &y->stops[k];
            assert_int_equal(u->stop_sequence, v->stop_sequence);
            assert_int_equal(u->relationship, v->relationship);
            assert_true((u->stop_id == NULL) == (v->stop_id == NULL));
            if (u->stop_id) assert_string_equal(u->stop_id, v->stop_id);
            assert_int_equal(u->departure.present, v->departure.present);
            assert_int_equal(u->departure.delay, v->departure.delay);
            assert_int_equal(u->departure.has_uncertainty, v->departure.has_uncertainty);
            assert_int_equal(u->departure.uncertainty, v->departure.uncertainty);
        }
        assert_int_equal(y->stops[0].departure.delay, (int32_t)(i % 600) - 300);
        assert_int_equal(y->stops[1].departure.uncertainty, (int32_t)i);
        assert_int_equal(y->stops[2].relationship, i % 7 == 0 ? RT_STOP_SKIPPED : RT_STOP_SCHEDULED);
    }
    rt_feed_free(a);
    rt_feed_free(b);
    free(entities);
    free(es);
    free(tus);
    free(tds);
    free(us);
    free(ups);
    free(evs);
    free(ids);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delays_at_and_past_16_bits),
        cmocka_unit_test(test_long_dwell_kept_whole),
        cmocka_unit_test(test_negative_no_data_and_skipped),
        cmocka_unit_test(test_delayed_past_midnight_and_the_lead),
        cmocka_unit_test(test_lead_reaches_every_late_event),
        cmocka_unit_test(test_uncertainty_in_28_bits),
        cmocka_unit_test(test_consuming_decode_reads_the_same),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
