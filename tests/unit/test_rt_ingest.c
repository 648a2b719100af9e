/* test_rt_ingest.c — polling a GTFS-Realtime file: a good feed is taken, a
 * truncated or garbage one and a missing file are counted as failures and
 * leave the last good feed (and its overlay) in place; /metrics text says so;
 * an overlay is built without holding the ingest lock.
 */
#include "test_support.h"
#include "test_timetable_fixture.h"

#include "gtfs-realtime.pb-c.h"
#include "transit/gtfs.h"
#include "transit/rt_fetch.h"
#include "transit/rt_ingest.h"

#include <pthread.h>

static char g_dir[512];
static dataset *g_ds;

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "rt-ingest");
    test_write_file(g_dir, "agency.txt",
                    "agency_id,agency_name,agency_url,agency_timezone\n"
                    "A1,Tiny,https://example.com,America/New_York\n");
    test_write_file(g_dir, "stops.txt",
                    "stop_id,stop_name,stop_lat,stop_lon\nS1,One,40.0,-74.0\nS2,Two,40.001,-74.0\n");
    test_write_file(g_dir, "routes.txt",
                    "route_id,agency_id,route_short_name,route_long_name,route_type\nR1,A1,1,Main,3\n");
    test_write_file(g_dir, "trips.txt", "route_id,service_id,trip_id\nR1,WK,T1\n");
    test_write_file(g_dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                    "T1,08:00:00,08:00:00,S1,1\nT1,08:10:00,08:10:00,S2,2\n");
    test_write_weekday_calendar(g_dir);
    g_ds = test_open_fixture(g_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dataset_release(g_ds);
    return 0;
}

static size_t write_feed_to(const char *name, uint64_t timestamp, int32_t delay, size_t cut);

/* Writes a feed with T1 delayed `delay` s on 20261102 (cut to `cut` bytes
 * when cut > 0) to dir/rt.pb; returns its full size. */
static size_t write_feed(int32_t delay, size_t cut)
{
    return write_feed_to("rt.pb", 1793000000, delay, cut);
}

/* The same, to dir/name with header timestamp `timestamp`. */
static size_t write_feed_to(const char *name, uint64_t timestamp, int32_t delay, size_t cut)
{
    TransitRealtime__FeedHeader header = TRANSIT_REALTIME__FEED_HEADER__INIT;
    header.gtfs_realtime_version = "2.0";
    header.has_timestamp = 1;
    header.timestamp = timestamp;
    TransitRealtime__TripDescriptor td = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    td.trip_id = "T1";
    td.start_date = "20261102";
    TransitRealtime__TripUpdate tu = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu.trip = &td;
    tu.has_delay = 1;
    tu.delay = delay;
    TransitRealtime__FeedEntity e = TRANSIT_REALTIME__FEED_ENTITY__INIT;
    e.id = "e1";
    e.trip_update = &tu;
    TransitRealtime__FeedEntity *es[] = {&e};
    TransitRealtime__FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    msg.n_entity = 1;
    msg.entity = es;
    size_t len = transit_realtime__feed_message__get_packed_size(&msg);
    uint8_t *buf = malloc(len);
    transit_realtime__feed_message__pack(&msg, buf);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(buf, 1, cut ? cut : len, f);
    fclose(f);
    free(buf);
    return len;
}

static int32_t delay_of_t1(rt_ingest *in)
{
    rt_overlay *o = rt_ingest_overlay(in, g_ds, 0);
    assert_non_null(o);
    departure d = {0};
    d.trip = dataset_find_trip(g_ds, "T1", 2);
    d.service_date = days_from_civil(2026, 11, 2);
    d.stop_sequence = 1;
    d.secs = 8 * 3600;
    rt_departure r;
    bool found = rt_overlay_lookup(o, &d, &r);
    rt_overlay_release(o);
    return found && r.has_prediction ? r.delay_s : INT32_MIN;
}

static void expect_metric(rt_ingest *in, const char *line)
{
    char text[8192];
    size_t n = rt_ingest_render_metrics(in, 0, text, sizeof text);
    assert_true(n < sizeof text);
    if (!strstr(text, line))
        fail_msg("metrics lack \"%s\":\n%s", line, text);
}

static void test_last_good_feed_survives_failures(void **state)
{
    (void)state;
    char path[1200], err[256];
    snprintf(path, sizeof path, "%s/rt.pb", g_dir);
    rt_ingest *in = rt_ingest_new(path, 5);
    assert_non_null(in);
    assert_false(rt_source_is_url(path));
    assert_true(rt_source_is_url("https://example.com/tu.pb"));

    /* before any poll: an empty overlay */
    assert_int_equal(delay_of_t1(in), INT32_MIN);

    write_feed(120, 0);
    assert_int_equal(rt_ingest_poll(in, 1000, err, sizeof err), RT_POLL_NEW);
    assert_int_equal(delay_of_t1(in), 120);
    /* the same bytes again: nothing new to build */
    assert_int_equal(rt_ingest_poll(in, 1005, err, sizeof err), RT_POLL_UNCHANGED);
    assert_int_equal(delay_of_t1(in), 120);

    size_t full = write_feed(300, 0);
    write_feed(300, full - 3);    /* truncated */
    assert_int_equal(rt_ingest_poll(in, 1010, err, sizeof err), RT_POLL_FAILED);
    assert_non_null(strstr(err, "malformed or truncated"));
    assert_int_equal(delay_of_t1(in), 120);

    test_write_file(g_dir, "rt.pb", "<html>502 Bad Gateway</html>");
    assert_int_equal(rt_ingest_poll(in, 1020, err, sizeof err), RT_POLL_FAILED);
    assert_int_equal(delay_of_t1(in), 120);

    unlink(path);
    assert_int_equal(rt_ingest_poll(in, 1030, err, sizeof err), RT_POLL_FAILED);
    assert_non_null(strstr(err, "cannot open"));
    assert_int_equal(delay_of_t1(in), 120);

    expect_metric(in, "transitd_rt_polls_total 5\n");
    expect_metric(in, "transitd_rt_poll_failures_total{stage=\"fetch\"} 1\n");
    expect_metric(in, "transitd_rt_poll_failures_total{stage=\"decode\"} 2\n");
    expect_metric(in, "transitd_rt_last_failure_timestamp_seconds 1030\n");
    expect_metric(in, "transitd_rt_feed_timestamp_seconds 1793000000\n");
    expect_metric(in, "transitd_rt_entities{kind=\"trip_update\"} 1\n");
    expect_metric(in, "transitd_rt_trip_updates{outcome=\"matched\"} 1\n");

    write_feed(300, 0);
    assert_int_equal(rt_ingest_poll(in, 1040, err, sizeof err), RT_POLL_NEW);
    assert_int_equal(delay_of_t1(in), 300);
    rt_ingest_free(in);
}

/* Two sources: the newest feed wins T1; one failing keeps its last good
 * feed until it is older than max_age, then leaves the merge. */
static void test_sources_merge_newest_first_and_stale_ones_leave(void **state)
{
    (void)state;
    char a[1200], b[1200], err[1024], line[1400];
    snprintf(a, sizeof a, "%s/a.pb", g_dir);
    snprintf(b, sizeof b, "%s/b.pb", g_dir);
    rt_source_list list = {0};
    assert_true(rt_source_list_add(&list, a, err, sizeof err));
    assert_true(rt_source_list_add(&list, b, err, sizeof err));
    rt_ingest *in = rt_ingest_new_sources(&list, 5, 10);
    assert_non_null(in);
    assert_int_equal(rt_ingest_source_count(in), 2);

    write_feed_to("a.pb", 1000, 120, 0);
    write_feed_to("b.pb", 2000, 300, 0);
    assert_int_equal(rt_ingest_poll(in, 100, err, sizeof err), RT_POLL_NEW);
    assert_string_equal(err, "");
    assert_int_equal(delay_of_t1(in), 300);
    write_feed_to("b.pb", 500, 60, 0);   /* b's feed is now older than a's */
    assert_int_equal(rt_ingest_poll(in, 101, err, sizeof err), RT_POLL_NEW);
    assert_int_equal(delay_of_t1(in), 120);
    assert_int_equal(rt_ingest_poll(in, 102, err, sizeof err), RT_POLL_UNCHANGED);

    write_feed_to("b.pb", 3000, 60, 0);
    assert_int_equal(rt_ingest_poll(in, 103, err, sizeof err), RT_POLL_NEW);
    assert_int_equal(delay_of_t1(in), 60);
    unlink(b);
    /* b fails: its last good feed stays while it is fresh enough */
    assert_int_equal(rt_ingest_poll(in, 110, err, sizeof err), RT_POLL_FAILED);
    assert_non_null(strstr(err, b));
    assert_null(strstr(err, a));
    assert_int_equal(delay_of_t1(in), 60);
    rt_source_state st;
    rt_ingest_source_state(in, 1, &st);
    assert_true(st.merged && st.has_feed);
    assert_int_equal(st.last_success, 103);
    assert_non_null(strstr(st.last_error, "cannot open"));
    /* past max_age (10 s after its last good poll) it leaves the merge */
    assert_int_equal(rt_ingest_poll(in, 114, err, sizeof err), RT_POLL_NEW);
    assert_int_equal(delay_of_t1(in), 120);
    rt_ingest_source_state(in, 1, &st);
    assert_false(st.merged);
    snprintf(line, sizeof line, "transitd_rt_source_merged{source=\"%s\"} 0\n", b);
    expect_metric(in, line);
    snprintf(line, sizeof line, "transitd_rt_source_poll_failures_total{source=\"%s\",stage=\"fetch\"} 2\n", b);
    expect_metric(in, line);
    snprintf(line, sizeof line, "transitd_rt_source_polls_total{source=\"%s\"} 6\n", a);
    expect_metric(in, line);
    /* it answers again: back in */
    write_feed_to("b.pb", 3000, 60, 0);
    assert_int_equal(rt_ingest_poll(in, 120, err, sizeof err), RT_POLL_NEW);
    assert_int_equal(delay_of_t1(in), 60);
    rt_ingest_free(in);
    unlink(a);
    unlink(b);
}

/* Writes dir/name: T1 delayed `delay` s, after `n` updates of trips the
 * dataset does not know (a large feed, cheap to write); returns its size. */
static size_t write_large_feed(const char *name, uint64_t timestamp, int32_t delay, size_t n)
{
    TransitRealtime__FeedHeader header = TRANSIT_REALTIME__FEED_HEADER__INIT;
    header.gtfs_realtime_version = "2.0";
    header.has_timestamp = 1;
    header.timestamp = timestamp;
    char (*ids)[16] = calloc(n + 1, sizeof *ids);
    TransitRealtime__TripDescriptor *td = calloc(n + 1, sizeof *td);
    TransitRealtime__TripUpdate *tu = calloc(n + 1, sizeof *tu);
    TransitRealtime__FeedEntity *e = calloc(n + 1, sizeof *e);
    TransitRealtime__FeedEntity **es = calloc(n + 1, sizeof *es);
    assert_true(ids && td && tu && e && es);
    for (size_t i = 0; i <= n; i++) {
        td[i] = (TransitRealtime__TripDescriptor)TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
        tu[i] = (TransitRealtime__TripUpdate)TRANSIT_REALTIME__TRIP_UPDATE__INIT;
        e[i] = (TransitRealtime__FeedEntity)TRANSIT_REALTIME__FEED_ENTITY__INIT;
        snprintf(ids[i], sizeof ids[i], i < n ? "U%zu" : "T1", i);
        td[i].trip_id = ids[i];
        td[i].start_date = "20261102";
        tu[i].trip = &td[i];
        tu[i].has_delay = 1;
        tu[i].delay = delay;
        e[i].id = ids[i];
        e[i].trip_update = &tu[i];
        es[i] = &e[i];
    }
    TransitRealtime__FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    msg.n_entity = n + 1;
    msg.entity = es;
    size_t len = transit_realtime__feed_message__get_packed_size(&msg);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    transit_realtime__feed_message__pack(&msg, buf);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
    free(es);
    free(e);
    free(tu);
    free(td);
    free(ids);
    return len;
}

typedef struct build_job {
    rt_ingest *in;
    rt_overlay *built;
    int started, done;     /* __atomic */
} build_job;

static void *build_overlay(void *arg)
{
    build_job *job = arg;
    __atomic_store_n(&job->started, 1, __ATOMIC_SEQ_CST);
    job->built = rt_ingest_overlay(job->in, g_ds, 0);
    __atomic_store_n(&job->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* An overlay is built without the ingest lock: while a large feed's overlay
 * is being built, /metrics and /readyz (their renders) keep answering, a
 * poll replaces the feed under the build (which keeps its reference: the
 * sanitizer run checks that nothing it reads is freed), and the overlay
 * built is the one of the feed it started from. */
static void test_a_build_holds_no_lock(void **state)
{
    (void)state;
    char path[1200], err[256], text[8192];
    snprintf(path, sizeof path, "%s/large.pb", g_dir);
    rt_ingest *in = rt_ingest_new(path, 5);
    assert_non_null(in);
    bool overlapped = false;
    /* a few attempts: the build must outlast a couple of renders on a loaded machine */
    for (size_t n = 100000, attempt = 0; attempt < 4 && !overlapped; attempt++, n *= 2) {
        write_large_feed("large.pb", 1000 + attempt * 2, 120, n);
        assert_int_equal(rt_ingest_poll(in, 1000, err, sizeof err), RT_POLL_NEW);
        build_job job = {.in = in};
        pthread_t builder;
        assert_int_equal(pthread_create(&builder, NULL, build_overlay, &job), 0);
        while (!__atomic_load_n(&job.started, __ATOMIC_SEQ_CST))
            ;
        unsigned answered = 0;
        bool replaced = false;
        while (!__atomic_load_n(&job.done, __ATOMIC_SEQ_CST)) {
            if (!replaced) {   /* the feed under the build replaced (a small one: T1 delayed 300 s) */
                write_large_feed("large.pb", 1001 + attempt * 2, 300, 1);
                assert_int_equal(rt_ingest_poll(in, 1001, err, sizeof err), RT_POLL_NEW);
                replaced = true;
            }
            assert_true(rt_ingest_render_metrics(in, 0, text, sizeof text) < sizeof text);
            rt_source_state st;
            rt_ingest_source_state(in, 0, &st);
            assert_true(st.has_feed);
            if (!__atomic_load_n(&job.done, __ATOMIC_SEQ_CST)) answered++;
        }
        pthread_join(builder, NULL);
        assert_non_null(job.built);
        departure d = {0};
        d.trip = dataset_find_trip(g_ds, "T1", 2);
        d.service_date = days_from_civil(2026, 11, 2);
        d.stop_sequence = 1;
        d.secs = 8 * 3600;
        rt_departure r;
        assert_true(rt_overlay_lookup(job.built, &d, &r) && r.has_prediction);
        assert_int_equal(r.delay_s, 120);   /* the feed the build started from */
        rt_overlay_release(job.built);
        overlapped = replaced && answered >= 2;
    }
    assert_true(overlapped);
    assert_int_equal(delay_of_t1(in), 300);   /* the next build: the feed that replaced it */
    rt_ingest_free(in);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_good_feed_survives_failures),
        cmocka_unit_test(test_sources_merge_newest_first_and_stale_ones_leave),
        cmocka_unit_test(test_a_build_holds_no_lock),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
