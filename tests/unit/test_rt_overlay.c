/* test_rt_overlay.c — TripUpdates over a small timetable: trip instances
 * matched by trip_id and start_date (frequency-based runs by start_time),
 * delays carried and stopped by the GTFS-Realtime rules, SKIPPED stops and
 * CANCELED trips, and what is counted when an update matches nothing;
 * arrivals (their own delays, the same rules with the events' roles swapped)
 * and ADDED trips' arrivals, also in the arrivals endpoint's rows; the
 * slack a board by predicted time reads (and each stop's lead), and rows
 * found by position.
 * The feeds are rt_feed structs written by hand (decoding has its own test).
 */
#include "test_support.h"
#include "test_rt_fixture.h"
#include "test_timetable_fixture.h"

#include "transit/api.h"
#include "transit/gtfs.h"
#include "transit/rt_overlay.h"

static char g_dir[512];
static dataset *g_ds;
static int32_t g_monday;   /* 2026-11-02 */

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "rt-overlay");
    test_rt_write_line(g_dir, 5);
    test_write_file(g_dir, "trips.txt",
                    "route_id,service_id,trip_id\nR1,WK,T1\nR1,WK,T2\nR1,WK,F1\n");
    test_write_file(g_dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                    "T1,08:00:00,08:00:00,S1,10\n"
                    "T1,08:10:00,08:10:00,S2,20\n"
                    "T1,08:20:00,08:20:00,S3,30\n"
                    "T1,08:30:00,08:30:00,S4,40\n"
                    "T1,08:40:00,08:40:00,S5,50\n"
                    "T2,09:00:00,09:00:00,S1,1\n"
                    "T2,09:10:00,09:10:00,S2,2\n"
                    "F1,06:00:00,06:00:00,S1,1\n"
                    "F1,06:05:00,06:05:00,S2,2\n"
                    "F1,06:10:00,06:10:00,S3,3\n");
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

static rt_trip_update trip_update(const char *trip_id, rt_stop_update *stops, uint32_t n)
{
    return test_rt_monday_update(trip_id, g_monday, stops, n);
}

/* The row of trip_id at stop_sequence on `date`, departing at secs. */
static rt_departure row(const rt_overlay *o, const char *trip_id, int32_t date, uint32_t seq, uint32_t secs,
                        bool *found)
{
    departure d = {0};
    d.trip = dataset_find_trip(g_ds, trip_id, strlen(trip_id));
    assert_int_not_equal(d.trip, QUERY_NONE);
    d.service_date = date;
    d.stop_sequence = seq;
    d.secs = secs;
    d.instant = dataset_instant(g_ds, date, secs);
    rt_departure r;
    *found = rt_overlay_lookup(o, &d, &r);
    return r;
}

#define H(h, m) ((uint32_t)((h) * 3600 + (m) * 60))

static void expect_delay(const rt_overlay *o, const char *trip, uint32_t seq, uint32_t secs, int32_t delay)
{
    bool found;
    rt_departure r = row(o, trip, g_monday, seq, secs, &found);
    if (!found || !r.realtime || !r.has_prediction || r.delay_s != delay || r.canceled)
        fail_msg("%s seq %u: found %d prediction %d delay %d canceled %d, expected delay %d", trip, seq, found,
                 r.has_prediction, r.delay_s, r.canceled, delay);
}

static void expect_no_prediction(const rt_overlay *o, const char *trip, uint32_t seq, uint32_t secs)
{
    bool found;
    rt_departure r = row(o, trip, g_monday, seq, secs, &found);
    if (!found || !r.realtime || r.has_prediction)
        fail_msg("%s seq %u: found %d prediction %d (delay %d), expected realtime without one", trip, seq,
                 found, r.has_prediction, r.delay_s);
}

static void test_delay_carries_until_no_data(void **state)
{
    (void)state;
    rt_stop_update u[2] = {
        {.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(120)},
        {.has_stop_sequence = true, .stop_sequence = 40, .relationship = RT_STOP_NO_DATA},
    };
    rt_trip_update tu = trip_update("T1", u, 2);
    rt_feed f = test_rt_feed_of(&tu, 1);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.matched, 1);
    expect_no_prediction(o, "T1", 10, H(8, 0));   /* before the first update */
    expect_delay(o, "T1", 20, H(8, 10), 120);
    expect_delay(o, "T1", 30, H(8, 20), 120);     /* carried */
    expect_no_prediction(o, "T1", 40, H(8, 30));  /* NO_DATA */
    expect_no_prediction(o, "T1", 50, H(8, 40));  /* ... and after it */
    /* another day, or a trip without an update: nothing */
    bool found;
    row(o, "T1", g_monday + 1, 20, H(8, 10), &found);
    assert_false(found);
    row(o, "T2", g_monday, 1, H(9, 0), &found);
    assert_false(found);
    rt_overlay_release(o);
}

static uint32_t stop_index(const char *id)
{
    uint32_t s = dataset_find_stop(g_ds, id, strlen(id));
    assert_int_not_equal(s, QUERY_NONE);
    return s;
}

/* What a board by predicted time reads: how late and how early predictions
 * are at each stop and per trip, and rows found at their position in the
 * trip, of the trip's first instance (its head) and of a later one. */
static void test_slack_trip_late_and_rows_by_position(void **state)
{
    (void)state;
    rt_stop_update mon[1] = {{.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(300)}};
    rt_stop_update tue[1] = {{.has_stop_sequence = true, .stop_sequence = 10, .departure = test_rt_delay(-120)}};
    rt_trip_update tus[2] = {trip_update("T1", mon, 1), trip_update("T1", tue, 1)};
    tus[1].start_date = "20261103";
    tus[1].start_day = g_monday + 1;
    rt_feed f = test_rt_feed_of(tus, 2);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.matched, 2);
    uint32_t late, early;
    rt_overlay_stop_slack(o, stop_index("S1"), &late, &early);
    assert_int_equal(late, 0);      /* Monday's update starts after S1 */
    assert_int_equal(early, 120);   /* Tuesday's runs early from S1 on */
    rt_overlay_stop_slack(o, stop_index("S3"), &late, &early);
    assert_int_equal(late, 300);
    assert_int_equal(early, 120);
    rt_overlay_slack(o, &late, &early);
    assert_int_equal(late, 300);
    assert_int_equal(early, 120);
    rt_overlay_stop_slack(o, QUERY_NONE, &late, &early);   /* no such stop: nothing */
    assert_int_equal(late + early, 0);
    assert_int_equal(rt_overlay_trip_late(o, dataset_find_trip(g_ds, "T1", 2)), 300);
    assert_int_equal(rt_overlay_trip_late(o, dataset_find_trip(g_ds, "T2", 2)), 0);
    /* rows at their position (S3 is T1's third stop): Monday's instance is
     * the trip's head, Tuesday's is found past it */
    for (int32_t day = 0; day < 2; day++) {
        departure d = {.trip = dataset_find_trip(g_ds, "T1", 2), .service_date = g_monday + day,
                       .stop_sequence = 30, .secs = H(8, 20), .pos = 2, .stop = stop_index("S3")};
        d.instant = dataset_instant(g_ds, d.service_date, d.secs);
        rt_departure r;
        rt_overlay_prefetch_trip(o, &d);
        rt_overlay_prefetch(o, &d);
        assert_true(rt_overlay_lookup(o, &d, &r));
        assert_true(r.realtime && r.has_prediction);
        assert_int_equal(r.delay_s, day == 0 ? 300 : -120);
        d.pos = 1;   /* a stale position: found by stop_sequence */
        assert_true(rt_overlay_lookup(o, &d, &r));
        assert_int_equal(r.delay_s, day == 0 ? 300 : -120);
        d.secs = H(8, 21);   /* another time at that stop: not this instance */
        assert_false(rt_overlay_lookup(o, &d, &r));
        assert_false(r.realtime);
    }
    rt_overlay_release(o);
}

/* A stop's lead: back to its earliest event scheduled before the window
 * and predicted in it, not its largest delay (at most 5 minutes more: the
 * window starts are bucketed from the earliest late event, T1 at S2 08:10).
 * T1 is 5 minutes late from S2 (S3 08:20 -> 08:25), T2 10 minutes late from
 * S1 (S1 09:00 -> 09:10); a canceled trip and a negative delay never lead. */
static void test_stop_lead_reaches_the_rows_delayed_into_the_window(void **state)
{
    (void)state;
    rt_stop_update t1[1] = {{.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(300)}};
    rt_stop_update t2[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(600)}};
    rt_stop_update early[1] = {{.has_stop_sequence = true, .stop_sequence = 10, .departure = test_rt_delay(-120)}};
    rt_trip_update tus[3] = {trip_update("T1", t1, 1), trip_update("T2", t2, 1), trip_update("T1", early, 1)};
    tus[2].start_date = "20261103";   /* Tuesday's T1 runs early */
    tus[2].start_day = g_monday + 1;
    rt_feed f = test_rt_feed_of(tus, 3);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    assert_non_null(o);
    int64_t mon = dataset_instant(g_ds, g_monday, 0), tue = dataset_instant(g_ds, g_monday + 1, 0);
    uint32_t s1 = stop_index("S1"), s3 = stop_index("S3");
    /* S3: T1 08:20 predicted 08:25 */
    assert_int_equal(rt_overlay_stop_lead(o, s3, mon + H(8, 21)), 60);
    assert_int_equal(rt_overlay_stop_lead(o, s3, mon + H(8, 22)), 120);
    assert_int_equal(rt_overlay_stop_lead(o, s3, mon + H(8, 25)), 300);
    assert_int_equal(rt_overlay_stop_lead(o, s3, mon + H(8, 20)), 0);    /* in the window anyway */
    /* left before 08:26, but in the bucket of 08:25: the stop's slack at most */
    assert_int_equal(rt_overlay_stop_lead(o, s3, mon + H(8, 26)), 300);
    assert_int_equal(rt_overlay_stop_lead(o, s3, mon + H(8, 31)), 0);    /* past the bucket */
    assert_int_equal(rt_overlay_stop_lead(o, s3, mon + H(12, 0)), 0);
    assert_int_equal(rt_overlay_stop_lead(o, s3, tue + H(8, 22)), 0);    /* Tuesday's T1 runs early */
    /* S1: T2 09:00 predicted 09:10 (the stop's late slack is 600) */
    assert_int_equal(rt_overlay_stop_lead(o, s1, mon + H(9, 1)), 60);
    assert_int_equal(rt_overlay_stop_lead(o, s1, mon + H(9, 9)), 540);
    assert_int_equal(rt_overlay_stop_lead(o, s1, mon + H(9, 10)), 600);
    assert_int_equal(rt_overlay_stop_lead(o, s1, mon + H(8, 5)), 0);     /* T1 is on time at S1 */
    assert_int_equal(rt_overlay_stop_lead(o, s1, mon + H(12, 0)), 0);    /* not the day's largest delay */
    assert_int_equal(rt_overlay_stop_lead(o, QUERY_NONE, mon), 0);
    /* what a board asks for first at every stop (both steps, any window
     * start, a stop out of range) reads within bounds and changes nothing */
    int64_t starts[4] = {mon + H(8, 21), mon + H(9, 9), mon - 400 * 86400LL, INT64_MAX / 2};
    uint32_t stops[3] = {s1, s3, QUERY_NONE};
    for (int step = 0; step < 2; step++)
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 3; i++) rt_overlay_prefetch_stop_lead(o, stops[i], starts[k], step);
    assert_int_equal(rt_overlay_stop_lead(o, s3, mon + H(8, 21)), 60);
    assert_int_equal(rt_overlay_stop_lead(o, s1, mon + H(9, 9)), 540);
    rt_overlay_release(o);
    /* canceled: stays where the schedule has it */
    tus[1].relationship = RT_TRIP_CANCELED;
    f = test_rt_feed_of(tus + 1, 1);
    o = rt_overlay_build(&f, g_ds, 0, NULL);
    assert_non_null(o);
    assert_int_equal(rt_overlay_stop_lead(o, s1, mon + H(9, 1)), 0);
    rt_overlay_prefetch_stop_lead(o, s1, mon + H(9, 1), 0);   /* no late event anywhere: nothing to ask for */
    rt_overlay_prefetch_stop_lead(o, s1, mon + H(9, 1), 1);
    rt_overlay_release(o);
}

static void test_time_wins_and_trip_delay_fills_the_start(void **state)
{
    (void)state;
    int64_t sched = dataset_instant(g_ds, g_monday, H(8, 20));
    rt_stop_update u[1] = {
        {.has_stop_sequence = true, .stop_sequence = 30,
         .arrival = {.present = true, .has_time = true, .time = sched + 300, .has_delay = true, .delay = 5}},
    };
    rt_trip_update tu = trip_update("T1", u, 1);
    tu.has_delay = true;
    tu.delay = 60;
    rt_feed f = test_rt_feed_of(&tu, 1);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    expect_delay(o, "T1", 10, H(8, 0), 60);
    expect_delay(o, "T1", 20, H(8, 10), 60);
    expect_delay(o, "T1", 30, H(8, 20), 300);    /* arrival time, for the departure too */
    expect_delay(o, "T1", 50, H(8, 40), 300);
    rt_overlay_release(o);
}

static void test_skipped_stop_and_stop_id_matching(void **state)
{
    (void)state;
    rt_stop_update u[2] = {
        {.stop_id = "S2", .departure = test_rt_delay(-30)},
        {.stop_id = "S3", .relationship = RT_STOP_SKIPPED},
    };
    rt_trip_update tu = trip_update("T1", u, 2);
    rt_feed f = test_rt_feed_of(&tu, 1);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    expect_delay(o, "T1", 20, H(8, 10), -30);
    bool found;
    rt_departure r = row(o, "T1", g_monday, 30, H(8, 20), &found);
    assert_true(found && r.realtime && r.skipped && r.canceled && !r.has_prediction);
    expect_delay(o, "T1", 40, H(8, 30), -30);    /* carried past the skipped stop */
    rt_overlay_release(o);
}

static void test_canceled_trip(void **state)
{
    (void)state;
    rt_trip_update tu = trip_update("T2", NULL, 0);
    tu.relationship = RT_TRIP_CANCELED;
    rt_feed f = test_rt_feed_of(&tu, 1);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_int_equal(stats.canceled, 1);
    for (uint32_t seq = 1; seq <= 2; seq++) {
        bool found;
        rt_departure r = row(o, "T2", g_monday, seq, H(9, 0) + (seq - 1) * 600, &found);
        assert_true(found && r.realtime && r.canceled && !r.skipped && !r.has_prediction);
    }
    rt_overlay_release(o);
}

/* F1 runs at 07:00 and 07:30; the update names the 07:30 run. The rows come
 * from the departures query itself, so the times are the ones rows carry. */
static void test_frequency_run_by_start_time(void **state)
{
    (void)state;
    rt_stop_update u[1] = {{.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(90)}};
    rt_trip_update tu = trip_update("F1", u, 1);
    tu.start_time = "07:30:00";
    tu.start_secs = (int32_t)H(7, 30);
    rt_trip_update no_start = trip_update("F1", u, 1);
    rt_trip_update tus[2] = {tu, no_start};
    rt_feed f = test_rt_feed_of(tus, 2);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_int_equal(stats.matched, 1);
    assert_int_equal(stats.bad_start_time, 1);

    query_scratch *s = query_scratch_new();
    departure deps[8];
    uint32_t count;
    bool truncated;
    query_error err;
    uint32_t s2 = dataset_find_stop(g_ds, "S2", 2);
    assert_int_equal(stop_departures(g_ds, s, s2, dataset_instant(g_ds, g_monday, H(7, 0)), 3600, 8, deps,
                                     &count, &truncated, &err),
                     QUERY_OK);
    assert_int_equal(count, 2);
    rt_departure r;
    assert_int_equal(deps[0].secs, H(7, 5));
    assert_false(rt_overlay_lookup(o, &deps[0], &r));
    assert_int_equal(deps[1].secs, H(7, 35));
    assert_true(rt_overlay_lookup(o, &deps[1], &r));
    assert_true(r.has_prediction);
    assert_int_equal(r.delay_s, 90);                 /* carried from stop 1 */
    query_scratch_free(s);
    rt_overlay_release(o);
}

static void test_what_matches_nothing_is_counted(void **state)
{
    (void)state;
    rt_stop_update u[1] = {{.has_stop_sequence = true, .stop_sequence = 99, .departure = test_rt_delay(10)}};
    rt_trip_update tus[5] = {
        trip_update("NOPE", NULL, 0),
        trip_update("T1", NULL, 0),
        trip_update("NEW", NULL, 0),
        trip_update("T2", u, 1),
        trip_update("T2", NULL, 0),
    };
    tus[1].start_day = days_from_civil(2026, 11, 7);   /* a Saturday */
    tus[2].relationship = RT_TRIP_ADDED;
    rt_feed f = test_rt_feed_of(tus, 5);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_int_equal(stats.unknown_trip, 1);
    assert_int_equal(stats.not_running, 1);
    assert_int_equal(stats.added_no_route, 1);   /* ADDED, and no route_id to show it under */
    assert_int_equal(stats.unmatched_stops, 1);
    assert_int_equal(stats.duplicate, 1);
    assert_int_equal(stats.matched, 1);
    assert_int_equal(rt_overlay_trip_count(o), 1);
    rt_overlay_release(o);
}

/* Without start_date the service date is the one nearest `now`. */
static void test_date_from_now(void **state)
{
    (void)state;
    rt_stop_update u[1] = {{.has_stop_sequence = true, .stop_sequence = 10, .departure = test_rt_delay(45)}};
    rt_trip_update tu = trip_update("T1", u, 1);
    tu.start_date = NULL;
    tu.start_day = INT32_MIN;
    rt_feed f = test_rt_feed_of(&tu, 1);
    /* Tuesday 2026-11-03 07:00 local: Tuesday's 08:00 run, not Monday's */
    rt_overlay *o = rt_overlay_build(&f, g_ds, dataset_instant(g_ds, g_monday + 1, H(7, 0)), NULL);
    bool found;
    row(o, "T1", g_monday, 10, H(8, 0), &found);
    assert_false(found);
    rt_departure r = row(o, "T1", g_monday + 1, 10, H(8, 0), &found);
    assert_true(found && r.delay_s == 45);
    rt_overlay_release(o);
    /* Saturday: no run yesterday (Friday 08:00 is a day away) ... Friday it is */
    o = rt_overlay_build(&f, g_ds, dataset_instant(g_ds, g_monday + 5, H(7, 0)), NULL);
    row(o, "T1", g_monday + 4, 10, H(8, 0), &found);
    assert_true(found);
    rt_overlay_release(o);
}

/* GET /v1/stops/{id}/departures at `stop` from Monday 07:00 for three hours. */
static void departures_json(const char *stop, const rt_overlay *o, json_writer *out)
{
    api_param params[] = {{"time", "2026-11-02T07:00:00-05:00"}, {"window", "180"}};
    api_request req = {.params = params, .nparams = 2, .id = stop, .realtime = o};
    api_thread *t = api_thread_new();
    api_problem prob;
    int cache = 0;
    json_init(out);
    assert_int_equal(api_stop_departures(t, g_ds, &req, out, &prob, &cache), 200);
    api_thread_free(t);
}

static void test_departure_rows_carry_realtime(void **state)
{
    (void)state;
    rt_stop_update u[1] = {{.has_stop_sequence = true, .stop_sequence = 20, .departure = test_rt_delay(120)}};
    rt_trip_update tus[2] = {trip_update("T1", u, 1), trip_update("T2", NULL, 0)};
    tus[1].relationship = RT_TRIP_CANCELED;
    rt_feed f = test_rt_feed_of(tus, 2);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    json_writer w;

    departures_json("S2", o, &w);
    assert_non_null(strstr(w.buf, "\"trip_id\":\"T1\""));
    assert_non_null(strstr(w.buf, "\"departure\":\"2026-11-02T08:10:00-05:00\",\"departure_secs\":29400,"
                                  "\"stop_sequence\":20,\"scheduled\":\"2026-11-02T08:10:00-05:00\","
                                  "\"predicted\":\"2026-11-02T08:12:00-05:00\",\"delay_s\":120,"
                                  "\"realtime\":true,\"canceled\":false}"));
    /* F1's runs have no update */
    assert_non_null(strstr(w.buf, "\"stop_sequence\":2,\"scheduled\":\"2026-11-02T07:05:00-05:00\","
                                  "\"predicted\":null,\"delay_s\":null,\"realtime\":false,\"canceled\":false}"));
    json_free(&w);

    departures_json("S1", o, &w);
    /* T1 before its first update: realtime, no prediction; T2 canceled */
    assert_non_null(strstr(w.buf, "\"stop_sequence\":10,\"scheduled\":\"2026-11-02T08:00:00-05:00\","
                                  "\"predicted\":null,\"delay_s\":null,\"realtime\":true,\"canceled\":false}"));
    assert_non_null(strstr(w.buf, "\"stop_sequence\":1,\"scheduled\":\"2026-11-02T09:00:00-05:00\","
                                  "\"predicted\":null,\"delay_s\":null,\"realtime\":true,\"canceled\":true}"));
    json_free(&w);

    /* no realtime configured: the rows are as they were */
    departures_json("S2", NULL, &w);
    assert_null(strstr(w.buf, "\"scheduled\""));
    assert_null(strstr(w.buf, "\"realtime\""));
    json_free(&w);
    rt_overlay_release(o);
}

static rt_event time_event(int32_t date, uint32_t secs)
{
    return (rt_event){.present = true, .has_time = true, .time = dataset_instant(g_ds, date, secs)};
}

/* Updates of a trip from S1 (departing at `depart`) to S2 (arriving at
 * `arrive`) on Monday. */
static void s1_to_s2(rt_stop_update u[2], uint32_t depart, uint32_t arrive)
{
    u[0] = (rt_stop_update){.stop_id = "S1", .departure = time_event(g_monday, depart)};
    u[1] = (rt_stop_update){.stop_id = "S2", .arrival = time_event(g_monday, arrive)};
}

static rt_trip_update added_trip(const char *trip_id, const char *route_id, rt_stop_update *stops, uint32_t n)
{
    rt_trip_update tu = trip_update(trip_id, stops, n);
    tu.relationship = RT_TRIP_ADDED;
    tu.route_id = route_id;
    return tu;
}


/* The added departures at `stop` on Monday 07:00-10:00. */
static uint32_t added_at(const rt_overlay *o, const char *stop, departure *out, uint32_t max)
{
    return rt_overlay_added_departures(o, stop_index(stop), dataset_instant(g_ds, g_monday, H(7, 0)),
                                       dataset_instant(g_ds, g_monday, H(10, 0)), out, max);
}

/* An ADDED trip departs from each stop its updates give a time for, except
 * the last one (it ends there), a SKIPPED one and a stop_id the dataset
 * lacks; stop_sequence is the update's, else its position from 1. */
static void test_added_trip_departs_where_it_has_times(void **state)
{
    (void)state;
    rt_stop_update u[5] = {
        {.stop_id = "S2", .departure = time_event(g_monday, H(8, 15))},
        {.stop_id = "S3", .relationship = RT_STOP_SKIPPED},
        {.has_stop_sequence = true, .stop_sequence = 7, .stop_id = "S4",
         .arrival = time_event(g_monday, H(8, 34)), .departure = time_event(g_monday, H(8, 35))},
        {.stop_id = "NOPE", .departure = time_event(g_monday, H(8, 40))},
        {.stop_id = "S5", .arrival = time_event(g_monday, H(8, 45))},
    };
    rt_trip_update tu = added_trip("X1", "R1", u, 5);
    rt_feed f = test_rt_feed_of(&tu, 1);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_non_null(o);
    assert_int_equal(stats.added, 1);
    assert_int_equal(stats.matched, 0);
    assert_int_equal(stats.unmatched_stops, 1);
    assert_int_equal(rt_overlay_added_trip_count(o), 1);

    departure d[4];
    assert_int_equal(added_at(o, "S2", d, 4), 1);
    assert_int_equal(d[0].instant, dataset_instant(g_ds, g_monday, H(8, 15)));
    assert_int_equal(d[0].secs, H(8, 15));
    assert_int_equal(d[0].service_date, g_monday);
    assert_int_equal(d[0].stop_sequence, 1);
    assert_int_equal(d[0].utc_offset, -5 * 3600);
    const rt_added_trip *a = rt_overlay_added_trip(o, &d[0]);
    assert_non_null(a);
    assert_string_equal(a->trip_id, "X1");
    assert_int_equal(a->route, dataset_find_route(g_ds, "R1", 2));
    assert_int_equal(added_at(o, "S4", d, 4), 1);
    assert_int_equal(d[0].secs, H(8, 35));          /* the departure time wins */
    assert_int_equal(d[0].stop_sequence, 7);
    assert_int_equal(added_at(o, "S3", d, 4), 0);   /* skipped */
    assert_int_equal(added_at(o, "S5", d, 4), 0);   /* where it ends */
    assert_int_equal(added_at(o, "S1", d, 4), 0);
    assert_false(rt_overlay_added_at_stop(o, stop_index("S1")));
    /* outside the window */
    assert_int_equal(rt_overlay_added_departures(o, stop_index("S2"), dataset_instant(g_ds, g_monday, H(8, 16)),
                                                 dataset_instant(g_ds, g_monday, H(10, 0)), d, 4),
                     0);
    /* a scheduled row is no added trip's */
    departure sched = {.trip = dataset_find_trip(g_ds, "T1", 2)};
    assert_null(rt_overlay_added_trip(o, &sched));
    rt_overlay_release(o);
}

/* What an ADDED trip needs: a route of the dataset and a time; a second
 * update of the same trip and date is dropped; no trip_id: "rt:" + entity. */
static void test_added_trips_counted(void **state)
{
    (void)state;
    rt_stop_update timed[2], later[2];
    s1_to_s2(timed, H(8, 5), H(8, 9));
    s1_to_s2(later, H(9, 5), H(9, 9));
    rt_stop_update delays[2] = {
        {.stop_id = "S1", .departure = test_rt_delay(60)},
        {.stop_id = "S2", .departure = test_rt_delay(60)},
    };
    rt_trip_update tus[5] = {
        added_trip("X1", "R9", timed, 2),    /* unknown route */
        added_trip("X2", "R1", delays, 2),   /* no time to show */
        added_trip("X3", "R1", timed, 2),
        added_trip("X3", "R1", later, 2),    /* the same instance again */
        added_trip(NULL, "R1", later, 2),
    };
    tus[4].entity_id = "e7";
    tus[4].start_date = NULL;
    tus[4].start_day = INT32_MIN;            /* the date of its first time */
    rt_feed f = test_rt_feed_of(tus, 5);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_int_equal(stats.added_no_route, 1);
    assert_int_equal(stats.added_no_departure, 1);
    assert_int_equal(stats.duplicate, 1);
    assert_int_equal(stats.added, 2);
    departure d[4];
    assert_int_equal(added_at(o, "S1", d, 4), 2);
    assert_string_equal(rt_overlay_added_trip(o, &d[0])->trip_id, "X3");
    assert_int_equal(d[0].secs, H(8, 5));            /* the first X3 stays */
    assert_string_equal(rt_overlay_added_trip(o, &d[1])->trip_id, "rt:e7");
    assert_int_equal(d[1].service_date, g_monday);
    assert_int_equal(d[1].secs, H(9, 5));
    /* `max` bounds what is written, not what is counted */
    assert_int_equal(added_at(o, "S1", d, 1), 2);
    rt_overlay_release(o);
}

/* GET /v1/stops/{id}/departures or /v1/departures with these parameters. */
static int api_json(bool nearby, const char *stop, api_param *params, size_t n, const rt_overlay *o,
                    json_writer *out)
{
    api_request req = {.params = params, .nparams = n, .id = stop, .realtime = o};
    api_thread *t = api_thread_new();
    api_problem prob;
    int cache = 0;
    json_init(out);
    int status = nearby ? api_departures(t, g_ds, &req, out, &prob, &cache)
                        : api_stop_departures(t, g_ds, &req, out, &prob, &cache);
    api_thread_free(t);
    return status;
}

static const char *after(const char *buf, const char *what, const char *from)
{
    const char *at = strstr(from ? from : buf, what);
    if (!at)
        fail_msg("\"%s\" not found (in order) in %s", what, buf);
    return at + 1;
}

/* Added departures take their place among the scheduled ones: by instant,
 * then stop_id, route_short_name, trip_id; the limit counts them. */
static void test_added_departures_in_answers(void **state)
{
    (void)state;
    rt_stop_update u[2], tie[2];
    s1_to_s2(u, H(8, 30), H(8, 40));
    s1_to_s2(tie, H(8, 0), H(8, 10));
    rt_trip_update tus[3] = {added_trip("X1", "R1", u, 2), added_trip("A0", "R1", tie, 2),
                             added_trip("Z9", "R1", tie, 2)};
    rt_feed f = test_rt_feed_of(tus, 3);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    json_writer w;
    api_param params[] = {{"time", "2026-11-02T07:00:00-05:00"}, {"window", "180"}, {"limit", "50"}};

    assert_int_equal(api_json(false, "S1", params, 3, o, &w), 200);
    /* F1 07:00 and 07:30, then A0, T1, Z9 at 08:00, X1 at 08:30, T2 at 09:00 */
    const char *p = after(w.buf, "\"trip_id\":\"F1\"", NULL);
    p = after(w.buf, "\"trip_id\":\"F1\"", p);
    p = after(w.buf, "\"trip_id\":\"A0\"", p);
    p = after(w.buf, "\"trip_id\":\"T1\"", p);
    p = after(w.buf, "\"trip_id\":\"Z9\"", p);
    p = after(w.buf, "{\"stop_id\":\"S1\",\"trip_id\":\"X1\",\"route_id\":\"R1\",\"route_short_name\":\"1\","
                     "\"route_long_name\":\"Main\",\"route_type\":3,\"headsign\":null,"
                 "\"wheelchair_accessible\":0,\"bikes_allowed\":0,\"service_date\":\"2026-11-02\","
                     "\"departure\":\"2026-11-02T08:30:00-05:00\",\"departure_secs\":30600,\"stop_sequence\":1,"
                     "\"scheduled\":null,\"predicted\":\"2026-11-02T08:30:00-05:00\",\"delay_s\":null,"
                     "\"realtime\":true,\"canceled\":false,\"added\":true,\"trip_relationship\":\"ADDED\"}",
              p);
    p = after(w.buf, "\"trip_id\":\"T2\"", p);
    assert_non_null(strstr(w.buf, "\"truncated\":false"));
    json_free(&w);

    /* the limit counts the added rows: 5 keeps F1, F1, A0, T1, Z9 (X1 and T2
     * fall off, so truncated), 7 holds all seven rows */
    static const struct {
        const char *limit;
        bool all, truncated;
    } cuts[] = {{"5", false, true}, {"7", true, false}};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        params[2].value = cuts[k].limit;
        assert_int_equal(api_json(false, "S1", params, 3, o, &w), 200);
        assert_non_null(strstr(w.buf, "\"trip_id\":\"Z9\""));
        assert_int_equal(strstr(w.buf, "\"trip_id\":\"X1\"") != NULL, cuts[k].all);
        assert_int_equal(strstr(w.buf, "\"trip_id\":\"T2\"") != NULL, cuts[k].all);
        assert_non_null(strstr(w.buf, cuts[k].truncated ? "\"truncated\":true" : "\"truncated\":false"));
        json_free(&w);
    }

    /* near S2 (S1 lies 111 m south): the added rows carry the distance */
    api_param near[] = {{"lat", "40.001"}, {"lon", "-74.0"}, {"radius", "150"},
                        {"time", "2026-11-02T08:20:00-05:00"}, {"window", "30"}};
    assert_int_equal(api_json(true, NULL, near, 5, o, &w), 200);
    after(w.buf, "\"stop_sequence\":1,\"stop_name\":\"One\",\"distance_m\":111,\"scheduled\":null,"
                 "\"predicted\":\"2026-11-02T08:30:00-05:00\"", NULL);
    json_free(&w);

    /* without the overlay, nothing of it */
    assert_int_equal(api_json(false, "S1", params, 3, NULL, &w), 200);
    assert_null(strstr(w.buf, "\"trip_id\":\"X1\""));
    json_free(&w);
    rt_overlay_release(o);
}

/* What realtime says of the arrival of trip_id at stop_sequence (arriving at secs). */
static rt_departure arrival_row(const rt_overlay *o, const char *trip_id, uint32_t seq, uint32_t pos, uint32_t secs,
                                bool *found)
{
    departure d = {0};
    d.trip = dataset_find_trip(g_ds, trip_id, strlen(trip_id));
    d.service_date = g_monday;
    d.stop_sequence = seq;
    d.pos = pos;
    d.secs = secs;
    d.instant = dataset_instant(g_ds, g_monday, secs);
    d.arrival = true;
    rt_departure r;
    *found = rt_overlay_lookup(o, &d, &r);
    return r;
}

static void expect_arrival_delay(const rt_overlay *o, uint32_t seq, uint32_t secs, int32_t delay)
{
    bool found;
    rt_departure r = arrival_row(o, "T1", seq, seq / 10 - 1, secs, &found);
    if (!found || !r.realtime || !r.has_prediction || r.delay_s != delay || r.canceled)
        fail_msg("arrival at seq %u: found %d prediction %d delay %d, expected delay %d", seq, found,
                 r.has_prediction, r.delay_s, delay);
}

/* An update's arrival wins for the arrival, its departure for the
 * departure; each missing one takes the other's delay; a carried delay
 * applies to both. */
static void test_arrival_delays(void **state)
{
    (void)state;
    rt_stop_update u[3] = {
        {.has_stop_sequence = true, .stop_sequence = 20, .arrival = test_rt_delay(60), .departure = test_rt_delay(120)},
        {.has_stop_sequence = true, .stop_sequence = 40, .departure = test_rt_delay(30)},
        {.has_stop_sequence = true, .stop_sequence = 50, .arrival = test_rt_delay(-15)},
    };
    rt_trip_update tu = trip_update("T1", u, 3);
    rt_feed f = test_rt_feed_of(&tu, 1);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    bool found;
    rt_departure r = arrival_row(o, "T1", 10, 0, H(8, 0), &found);
    assert_true(found && r.realtime && !r.has_prediction);   /* before the first update */
    expect_arrival_delay(o, 20, H(8, 10), 60);
    expect_delay(o, "T1", 20, H(8, 10), 120);
    expect_arrival_delay(o, 30, H(8, 20), 120);                /* carried: the departure's */
    expect_delay(o, "T1", 30, H(8, 20), 120);
    expect_arrival_delay(o, 40, H(8, 30), 30);                 /* no arrival: the departure's */
    expect_delay(o, "T1", 40, H(8, 30), 30);
    expect_arrival_delay(o, 50, H(8, 40), -15);
    expect_delay(o, "T1", 50, H(8, 40), -15);                  /* no departure: the arrival's */
    /* an arrival row finds its stop without its position too */
    r = arrival_row(o, "T1", 20, 0, H(8, 10), &found);
    assert_true(found && r.has_prediction && r.delay_s == 60);
    /* a row of another time (another instance) is not this one's */
    arrival_row(o, "T1", 20, 1, H(8, 11), &found);
    assert_false(found);
    rt_overlay_release(o);
}

static void test_arrivals_of_canceled_and_skipped(void **state)
{
    (void)state;
    rt_stop_update u[2] = {
        {.stop_id = "S2", .departure = test_rt_delay(-30)},
        {.stop_id = "S3", .relationship = RT_STOP_SKIPPED},
    };
    rt_trip_update tu = trip_update("T1", u, 2);
    rt_feed f = test_rt_feed_of(&tu, 1);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    bool found;
    rt_departure r = arrival_row(o, "T1", 30, 2, H(8, 20), &found);
    assert_true(found && r.realtime && r.skipped && r.canceled && !r.has_prediction);
    expect_arrival_delay(o, 40, H(8, 30), -30);
    rt_overlay_release(o);
}

/* An ADDED trip arrives at each stop but the first its updates give a time
 * for (arrival, else departure); its last stop is an arrival without a
 * departure, so a board of both kinds shows it. */
static void test_added_trip_arrivals(void **state)
{
    (void)state;
    rt_stop_update u[4] = {
        {.stop_id = "S2", .departure = time_event(g_monday, H(8, 15))},
        {.stop_id = "S3", .departure = time_event(g_monday, H(8, 25))},
        {.stop_id = "S4", .arrival = time_event(g_monday, H(8, 34)), .departure = time_event(g_monday, H(8, 35))},
        {.stop_id = "S5", .arrival = time_event(g_monday, H(8, 45))},
    };
    rt_trip_update tu = added_trip("X1", "R1", u, 4);
    rt_feed f = test_rt_feed_of(&tu, 1);
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, &stats);
    assert_int_equal(stats.added, 1);
    assert_int_equal(stats.unmatched_stops, 0);
    int64_t from = dataset_instant(g_ds, g_monday, H(7, 0)), to = dataset_instant(g_ds, g_monday, H(10, 0));
    departure d[4];
    assert_int_equal(rt_overlay_added_events(o, QUERY_ARRIVALS, stop_index("S2"), from, to, d, 4), 0);
    assert_int_equal(rt_overlay_added_events(o, QUERY_ARRIVALS, stop_index("S3"), from, to, d, 4), 1);
    assert_true(d[0].arrival);
    assert_int_equal(d[0].secs, H(8, 25));          /* no arrival given: its departure */
    assert_int_equal(rt_overlay_added_events(o, QUERY_ARRIVALS, stop_index("S4"), from, to, d, 4), 1);
    assert_int_equal(d[0].secs, H(8, 34));          /* the arrival time wins */
    assert_int_equal(rt_overlay_added_events(o, QUERY_DEPARTURES, stop_index("S4"), from, to, d, 4), 1);
    assert_false(d[0].arrival);
    assert_int_equal(d[0].secs, H(8, 35));
    assert_int_equal(rt_overlay_added_events(o, QUERY_BOTH, stop_index("S4"), from, to, d, 4), 1);
    assert_false(d[0].arrival);                     /* it departs there */
    assert_int_equal(rt_overlay_added_events(o, QUERY_DEPARTURES, stop_index("S5"), from, to, d, 4), 0);
    assert_int_equal(rt_overlay_added_events(o, QUERY_BOTH, stop_index("S5"), from, to, d, 4), 1);
    assert_true(d[0].arrival);                      /* where it ends */
    assert_int_equal(d[0].secs, H(8, 45));
    assert_int_equal(d[0].stop_sequence, 4);
    rt_overlay_release(o);
}

/* The arrivals endpoint's rows carry realtime of their arrivals, and the
 * ADDED trips' arrivals among them. */
static void test_arrival_rows_carry_realtime(void **state)
{
    (void)state;
    rt_stop_update u[1] = {{.has_stop_sequence = true, .stop_sequence = 20, .arrival = test_rt_delay(60),
                            .departure = test_rt_delay(120)}};
    rt_stop_update x[2];
    s1_to_s2(x, H(8, 12), H(8, 19));
    rt_trip_update tus[2] = {trip_update("T1", u, 1), added_trip("X1", "R1", x, 2)};
    rt_feed f = test_rt_feed_of(tus, 2);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    api_param params[] = {{"time", "2026-11-02T08:00:00-05:00"}, {"window", "30"}};
    api_request req = {.params = params, .nparams = 2, .id = "S2", .realtime = o};
    api_thread *t = api_thread_new();
    api_problem prob;
    int cache = 0;
    json_writer w;
    json_init(&w);
    assert_int_equal(api_stop_arrivals(t, g_ds, &req, &w, &prob, &cache), 200);
    const char *p = after(w.buf, "\"arrivals\":[{\"stop_id\":\"S2\",\"trip_id\":\"T1\"", NULL);
    p = after(w.buf, "\"arrival\":\"2026-11-02T08:10:00-05:00\",\"arrival_secs\":29400,\"stop_sequence\":20,"
                     "\"scheduled\":\"2026-11-02T08:10:00-05:00\",\"predicted\":\"2026-11-02T08:11:00-05:00\","
                     "\"delay_s\":60,\"realtime\":true,\"canceled\":false}",
              p);
    after(w.buf, "{\"stop_id\":\"S2\",\"trip_id\":\"X1\",\"route_id\":\"R1\",\"route_short_name\":\"1\","
                 "\"route_long_name\":\"Main\",\"route_type\":3,\"headsign\":null,"
                 "\"wheelchair_accessible\":0,\"bikes_allowed\":0,\"service_date\":\"2026-11-02\","
                 "\"arrival\":\"2026-11-02T08:19:00-05:00\",\"arrival_secs\":29940,\"stop_sequence\":2,"
                 "\"scheduled\":null,\"predicted\":\"2026-11-02T08:19:00-05:00\",\"delay_s\":null,"
                 "\"realtime\":true,\"canceled\":false,\"added\":true,\"trip_relationship\":\"ADDED\"}",
          p);
    json_free(&w);
    /* the departures of the same stop say the departure's delay */
    json_init(&w);
    assert_int_equal(api_stop_departures(t, g_ds, &req, &w, &prob, &cache), 200);
    after(w.buf, "\"departure\":\"2026-11-02T08:10:00-05:00\",\"departure_secs\":29400,\"stop_sequence\":20,"
                 "\"scheduled\":\"2026-11-02T08:10:00-05:00\",\"predicted\":\"2026-11-02T08:12:00-05:00\","
                 "\"delay_s\":120",
          NULL);
    assert_null(strstr(w.buf, "\"arrival\""));
    json_free(&w);
    api_thread_free(t);
    rt_overlay_release(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delay_carries_until_no_data),
        cmocka_unit_test(test_slack_trip_late_and_rows_by_position),
        cmocka_unit_test(test_stop_lead_reaches_the_rows_delayed_into_the_window),
        cmocka_unit_test(test_time_wins_and_trip_delay_fills_the_start),
        cmocka_unit_test(test_skipped_stop_and_stop_id_matching),
        cmocka_unit_test(test_canceled_trip),
        cmocka_unit_test(test_frequency_run_by_start_time),
        cmocka_unit_test(test_what_matches_nothing_is_counted),
        cmocka_unit_test(test_date_from_now),
        cmocka_unit_test(test_departure_rows_carry_realtime),
        cmocka_unit_test(test_added_trip_departs_where_it_has_times),
        cmocka_unit_test(test_added_trips_counted),
        cmocka_unit_test(test_added_departures_in_answers),
        cmocka_unit_test(test_arrival_delays),
        cmocka_unit_test(test_arrivals_of_canceled_and_skipped),
        cmocka_unit_test(test_added_trip_arrivals),
        cmocka_unit_test(test_arrival_rows_carry_realtime),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
