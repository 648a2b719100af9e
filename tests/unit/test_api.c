/* test_api.c — the API layer: reading and writing instants, every parameter
 * error's status and exact detail (the text clients see), and, on two real
 * feeds, what the CLI cannot show: Cache-Control seconds per endpoint and one
 * api_thread serving two datasets in turn (its schedule connection follows
 * the dataset version). Answers themselves are tested black-box in
 * tests/api/test_cli_query.py.
 */
#include "test_support.h"

#include "transit/api.h"
#include "transit/import.h"

/* ------------------------------------------------------------ time */

static void expect_time(const char *text, int64_t instant)
{
    int64_t got = 0;
    if (api_parse_time(NULL, text, &got) != 0)
        fail_msg("api_parse_time rejected '%s'", text);
    if (got != instant)
        fail_msg("'%s' gave %lld, expected %lld", text, (long long)got, (long long)instant);
}

static void test_parse_time_with_offsets(void **state)
{
    (void)state;
    expect_time("2026-11-21T18:15:00-05:00", 1795302900);   /* 23:15Z */
    expect_time("2026-11-21T23:15:00Z", 1795302900);
    expect_time("2026-11-21T23:15:00z", 1795302900);
    expect_time("2026-11-21t23:15:00Z", 1795302900);
    expect_time("2026-11-21T18:15:00+05:30", 1795265100);   /* 12:45Z */
    expect_time("2026-11-21T23:15:00+00:00", 1795302900);
    expect_time("2026-11-21T23:15:00-00:00", 1795302900);
    expect_time("2026-11-21T23:15Z", 1795302900);             /* seconds omitted */
    expect_time("2026-11-21T23:15:00.999Z", 1795302900);      /* fraction truncated */
    expect_time("2024-02-29T00:00:00Z", 1709164800);          /* leap day */
    expect_time("1970-01-01T00:00:00Z", 0);
    expect_time("1969-12-31T23:59:59Z", -1);
}

static void test_parse_local_time_needs_the_feed_zone(void **state)
{
    (void)state;
    int64_t local = 0, instant = 0;
    bool has_offset = true;
    int32_t offset = 99;
    assert_int_equal(rfc3339_parse("2026-11-21T18:15", &local, &has_offset, &offset), 0);
    assert_false(has_offset);
    assert_int_equal(local, 1795284900);    /* 18:15 read as if UTC */
    assert_int_equal(rfc3339_parse("2026-11-21T18:15:00", &local, &has_offset, &offset), 0);
    assert_false(has_offset);
    assert_int_equal(local, 1795284900);
    assert_int_equal(rfc3339_parse("2026-11-21T18:15:00+05:30", &local, &has_offset, &offset),
                     0);
    assert_true(has_offset);
    assert_int_equal(offset, 19800);
    assert_int_equal(local, 1795284900);
    /* without a dataset a local time cannot become an instant */
    assert_int_equal(api_parse_time(NULL, "2026-11-21T18:15", &instant), -1);
}

static void test_parse_time_rejects_malformed(void **state)
{
    (void)state;
    const char *bad[] = {
        "", "2026-11-21", "2026-11-21 18:15", "2026-11-21T18", "2026-11-21T18:15:",
        "2026-11-21T18:15:00+05", "2026-11-21T18:15:00+5:00", "2026-11-21T18:15:00+0530",
        "2026-11-21T18:15:00Zjunk", "2026-11-21T18:15:00.Z", "2026-13-01T00:00",
        "2026-00-10T00:00", "2026-02-29T00:00", "2026-04-31T00:00", "2026-11-21T24:00",
        "2026-11-21T18:60", "2026-11-21T18:15:60", "2026-11-21T18:15:00+24:00",
        "26-11-21T18:15", "2026-11-21T18:15:00 ", " 2026-11-21T18:15", "now", "1795302900",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t local, instant;
        bool has_offset;
        int32_t offset;
        if (rfc3339_parse(bad[i], &local, &has_offset, &offset) == 0)
            fail_msg("rfc3339_parse accepted '%s'", bad[i]);
        assert_int_equal(api_parse_time(NULL, bad[i], &instant), -1);
    }
    int64_t instant;
    assert_int_equal(api_parse_time(NULL, NULL, &instant), -1);
}

static void expect_format(int64_t instant, int32_t offset, const char *expected)
{
    char out[26];
    memset(out, 'x', sizeof out);
    rfc3339_format_instant(instant, offset, out);
    assert_string_equal(out, expected);
    expect_time(out, instant);   /* and it reads back */
}

static void test_format_instant(void **state)
{
    (void)state;
    expect_format(1795302900, -18000, "2026-11-21T18:15:00-05:00");
    expect_format(1795302900, 19800, "2026-11-22T04:45:00+05:30");
    expect_format(1795302900, 0, "2026-11-21T23:15:00+00:00");
    expect_format(1795302900, 36000, "2026-11-22T09:15:00+10:00");
    expect_format(0, 0, "1970-01-01T00:00:00+00:00");
    expect_format(-1, 0, "1969-12-31T23:59:59+00:00");
    expect_format(1709164800 + 86399, 0, "2024-02-29T23:59:59+00:00");
    expect_format(1795302900, -34200, "2026-11-21T13:45:00-09:30");   /* Marquesas */
}

static void test_format_utc(void **state)
{
    (void)state;
    char out[21];
    rfc3339_format_utc(1795302900, out);
    assert_string_equal(out, "2026-11-21T23:15:00Z");
    rfc3339_format_utc(0, out);
    assert_string_equal(out, "1970-01-01T00:00:00Z");
}

/* ------------------------------------------------------------ parameters */

#define P(k, v) {k, v}

static int run(api_endpoint_fn fn, const api_param *params, int n, const char *id,
               api_problem *prob)
{
    json_writer out;
    json_init(&out);
    int cache = -1;
    memset(prob, 0, sizeof *prob);
    api_request req = {.params = params, .nparams = n, .id = id, .now = 1795302900};
    /* no thread and no dataset: everything tested here fails before either is used */
    int status = fn(NULL, NULL, &req, &out, prob, &cache);
    json_free(&out);
    return status;
}

static void expect_problem(api_endpoint_fn fn, const api_param *params, int n, const char *id,
                           int status, const char *param, const char *detail)
{
    api_problem prob;
    int got = run(fn, params, n, id, &prob);
    if (got != status || strcmp(prob.detail, detail) != 0 || strcmp(prob.param, param) != 0)
        fail_msg("expected %d [%s] '%s', got %d [%s] '%s'", status, param, detail, got,
                 prob.param, prob.detail);
    assert_int_equal(prob.status, status);
    assert_non_null(prob.title);
}

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const LAT_DETAIL = "lat must be between -90 and 90";
static const char *const LON_DETAIL = "lon must be between -180 and 180";
static const char *const RADIUS_DETAIL =
    "radius must be an integer number of metres between 1 and 5000";
static const char *const WINDOW_DETAIL =
    "window must be an integer number of minutes between 1 and 1440";
static const char *const LIMIT_DETAIL = "limit must be an integer between 1 and 500";
static const char *const TIME_DETAIL =
    "time must be an RFC 3339 date-time such as 2026-11-21T18:15:00-05:00 or a local date-time "
    "in the feed timezone such as 2026-11-21T18:15";

static void test_missing_required_parameters(void **state)
{
    (void)state;
    expect_problem(api_stops_nearby, NULL, 0, NULL, 400, "lat",
                   "missing required parameter 'lat'");
    api_param only_lat[] = {P("lat", "1")};
    expect_problem(api_stops_nearby, only_lat, 1, NULL, 400, "lon",
                   "missing required parameter 'lon'");
    expect_problem(api_departures, only_lat, 1, NULL, 400, "lon",
                   "missing required parameter 'lon'");
    expect_problem(api_stops_search, NULL, 0, NULL, 400, "q", "missing required parameter 'q'");
    api_param blank_q[] = {P("q", "  ")};
    expect_problem(api_stops_search, blank_q, 1, NULL, 400, "q", "q must not be empty");
    expect_problem(api_stop_departures, NULL, 0, NULL, 400, "stop_id", "missing stop_id");
    expect_problem(api_stop, NULL, 0, "", 400, "stop_id", "missing stop_id");
    expect_problem(api_trip, NULL, 0, NULL, 400, "trip_id", "missing trip_id");
    expect_problem(api_route, NULL, 0, NULL, 400, "route_id", "missing route_id");
}

static void test_coordinate_errors(void **state)
{
    (void)state;
    const char *bad_lat[] = {"91", "-90.000001", "abc", "", "1e2", "1e", "1e+", "9.1E1", "12.", ".5", "+5",
                             "NaN", "inf", "0x10", "1 ", "--1", "99999999999999999999", "1e99999"};
    for (size_t i = 0; i < sizeof bad_lat / sizeof *bad_lat; i++) {
        api_param p[] = {P("lat", bad_lat[i]), P("lon", "0")};
        expect_problem(api_stops_nearby, p, N(p), NULL, 400, "lat", LAT_DETAIL);
        expect_problem(api_departures, p, N(p), NULL, 400, "lat", LAT_DETAIL);
    }
    const char *bad_lon[] = {"180.5", "-181", "x", ""};
    for (size_t i = 0; i < sizeof bad_lon / sizeof *bad_lon; i++) {
        api_param p[] = {P("lat", "0"), P("lon", bad_lon[i])};
        expect_problem(api_stops_nearby, p, N(p), NULL, 400, "lon", LON_DETAIL);
    }
    /* the bounds themselves are valid: the request gets past validation */
    api_param edge[] = {P("lat", "-90"), P("lon", "180.000000")};
    expect_problem(api_stops_nearby, edge, N(edge), NULL, 503, "", "no dataset is loaded");
    /* JSON's exponents, as clients print small and large numbers */
    const char *exponents[] = {"1e1", "-1.175494351e-38", "5.25E1", "9e+1", "1e-400"};
    for (size_t i = 0; i < sizeof exponents / sizeof *exponents; i++) {
        api_param p[] = {P("lat", exponents[i]), P("lon", "0")};
        expect_problem(api_stops_nearby, p, N(p), NULL, 503, "", "no dataset is loaded");
    }
}

static void test_range_errors(void **state)
{
    (void)state;
    const char *bad_radius[] = {"0", "5001", "-1", "1.5", "500m", ""};
    for (size_t i = 0; i < sizeof bad_radius / sizeof *bad_radius; i++) {
        api_param p[] = {P("lat", "0"), P("lon", "0"), P("radius", bad_radius[i])};
        expect_problem(api_stops_nearby, p, N(p), NULL, 400, "radius", RADIUS_DETAIL);
        expect_problem(api_departures, p, N(p), NULL, 400, "radius", RADIUS_DETAIL);
    }
    const char *bad_window[] = {"0", "1441", "60.0", "1h", "-5", "1234567890"};
    for (size_t i = 0; i < sizeof bad_window / sizeof *bad_window; i++) {
        api_param p[] = {P("window", bad_window[i])};
        expect_problem(api_stop_departures, p, N(p), "S1", 400, "window", WINDOW_DETAIL);
        api_param q[] = {P("lat", "0"), P("lon", "0"), P("window", bad_window[i])};
        expect_problem(api_departures, q, N(q), NULL, 400, "window", WINDOW_DETAIL);
    }
    const char *bad_limit[] = {"0", "501", "ten", "2.0"};
    for (size_t i = 0; i < sizeof bad_limit / sizeof *bad_limit; i++) {
        api_param p[] = {P("lat", "0"), P("lon", "0"), P("limit", bad_limit[i])};
        expect_problem(api_stops_nearby, p, N(p), NULL, 400, "limit", LIMIT_DETAIL);
        expect_problem(api_departures, p, N(p), NULL, 400, "limit", LIMIT_DETAIL);
        api_param q[] = {P("q", "pier"), P("limit", bad_limit[i])};
        expect_problem(api_stops_search, q, N(q), NULL, 400, "limit", LIMIT_DETAIL);
        api_param r[] = {P("limit", bad_limit[i])};
        expect_problem(api_stop_departures, r, N(r), "S1", 400, "limit", LIMIT_DETAIL);
    }
    api_param bounds[] = {P("lat", "0"), P("lon", "0"), P("radius", "5000"), P("window", "1440"),
                          P("limit", "500"), P("time", "2026-11-21T18:15")};
    expect_problem(api_departures, bounds, N(bounds), NULL, 503, "", "no dataset is loaded");
    api_param low[] = {P("radius", "1"), P("lat", "0"), P("lon", "0"), P("window", "1"),
                       P("limit", "1")};
    expect_problem(api_departures, low, N(low), NULL, 503, "", "no dataset is loaded");
}

static void test_time_and_date_errors(void **state)
{
    (void)state;
    api_param p[] = {P("time", "2026-11-21 18:15")};
    expect_problem(api_stop_departures, p, N(p), "S1", 400, "time", TIME_DETAIL);
    api_param q[] = {P("lat", "0"), P("lon", "0"), P("time", "tomorrow")};
    expect_problem(api_departures, q, N(q), NULL, 400, "time", TIME_DETAIL);
    api_param ok[] = {P("time", "2026-11-21T18:15:00+05:30")};
    expect_problem(api_stop_departures, ok, N(ok), "S1", 503, "", "no dataset is loaded");
    const char *bad_date[] = {"2026-02-30", "20261121", "2026-11-21T00:00", ""};
    for (size_t i = 0; i < sizeof bad_date / sizeof *bad_date; i++) {
        api_param d[] = {P("date", bad_date[i])};
        expect_problem(api_trip, d, N(d), "T1", 400, "date",
                       "date must be a calendar date YYYY-MM-DD");
    }
    api_param good_date[] = {P("date", "2026-11-21")};
    expect_problem(api_trip, good_date, N(good_date), "T1", 503, "", "no dataset is loaded");
}

static void test_unknown_and_duplicate_parameters(void **state)
{
    (void)state;
    api_param foo[] = {P("lat", "0"), P("lon", "0"), P("foo", "1")};
    expect_problem(api_stops_nearby, foo, N(foo), NULL, 400, "foo", "unknown parameter 'foo'");
    /* an unknown parameter is reported before a bad value */
    api_param both[] = {P("lat", "999"), P("lon", "0"), P("Lat", "1")};
    expect_problem(api_stops_nearby, both, N(both), NULL, 400, "Lat", "unknown parameter 'Lat'");
    api_param time_on_nearby[] = {P("lat", "0"), P("lon", "0"), P("time", "2026-11-21T18:15")};
    expect_problem(api_stops_nearby, time_on_nearby, N(time_on_nearby), NULL, 400, "time",
                   "unknown parameter 'time'");
    api_param dup[] = {P("lat", "0"), P("lon", "0"), P("lat", "0")};
    expect_problem(api_departures, dup, N(dup), NULL, 400, "lat", "duplicate parameter 'lat'");
    api_param any[] = {P("x", "")};
    expect_problem(api_routes, any, N(any), NULL, 400, "x", "unknown parameter 'x'");
    expect_problem(api_route, any, N(any), "R1", 400, "x", "unknown parameter 'x'");
    expect_problem(api_agencies, any, N(any), NULL, 400, "x", "unknown parameter 'x'");
    expect_problem(api_feed, any, N(any), NULL, 400, "x", "unknown parameter 'x'");
    expect_problem(api_stop, any, N(any), "S1", 400, "x", "unknown parameter 'x'");
    /* names that share a first letter with allowed ones, and a repeat of the last allowed name */
    api_param prefix[] = {P("lat", "0"), P("lon", "0"), P("limit", "5"), P("la", "1")};
    expect_problem(api_departures, prefix, N(prefix), NULL, 400, "la", "unknown parameter 'la'");
    api_param longer[] = {P("lat", "0"), P("lons", "0")};
    expect_problem(api_departures, longer, N(longer), NULL, 400, "lons", "unknown parameter 'lons'");
    api_param all_then_dup[] = {P("lat", "0"),    P("lon", "0"),    P("radius", "5"), P("time", "2026-11-21T18:15"),
                                P("window", "5"), P("limit", "5"), P("radius", "6")};
    expect_problem(api_departures, all_then_dup, N(all_then_dup), NULL, 400, "radius",
                   "duplicate parameter 'radius'");
    api_param q_dup[] = {P("q", "a"), P("q", "b")};
    expect_problem(api_stops_search, q_dup, N(q_dup), NULL, 400, "q", "duplicate parameter 'q'");
    api_param stop_on_trip[] = {P("window", "60")};
    expect_problem(api_trip, stop_on_trip, N(stop_on_trip), "T1", 400, "window",
                   "unknown parameter 'window'");
    /* without parameters the entity endpoints get as far as the dataset */
    expect_problem(api_routes, NULL, 0, NULL, 503, "", "no dataset is loaded");
    expect_problem(api_agencies, NULL, 0, NULL, 503, "", "no dataset is loaded");
    expect_problem(api_feed, NULL, 0, NULL, 503, "", "no dataset is loaded");
}

static void test_problem_json(void **state)
{
    (void)state;
    api_problem prob;
    api_param foo[] = {P("fo\"o", "1")};
    assert_int_equal(run(api_routes, foo, 1, NULL, &prob), 400);
    json_writer w;
    json_init(&w);
    api_problem_write(&prob, "/v1/routes", &w);
    assert_string_equal(w.buf, "{\"type\":\"about:blank\",\"title\":\"Bad Request\",\"status\":400,"
                               "\"detail\":\"unknown parameter 'fo\\\"o'\",\"instance\":\"/v1/routes\"}");
    json_reset(&w);
    api_problem_write(&prob, NULL, &w);
    assert_null(strstr(w.buf, "instance"));
    json_free(&w);
}

static void test_thread_lifecycle(void **state)
{
    (void)state;
    api_thread *t = api_thread_new();
    assert_non_null(t);
    api_thread_free(t);
    api_thread_free(NULL);
}

/* ------------------------------------------------------------ with datasets */

static dataset *import_and_open(const char *feed_name, const char *tag)
{
    char feed[512], dir[512], err[512] = "";
    shared_feed_path(feed_name, feed, sizeof feed);
    test_tmpdir(dir, sizeof dir, tag);
    import_options o = {.feed_path = feed, .data_dir = dir, .wait_for_lock = true};
    import_result r;
    import_result_init(&r);
    int rc = import_run(&o, &r, err, sizeof err);
    import_result_destroy(&r);
    if (rc != 0)
        fail_msg("import of %s failed: %s", feed, err);
    dataset *ds = dataset_open(dir, err, sizeof err);
    if (!ds)
        fail_msg("dataset_open(%s): %s", dir, err);
    return ds;
}

static int call(api_endpoint_fn fn, api_thread *t, dataset *ds, const api_param *params, int n,
                const char *id, json_writer *out, int *cache)
{
    api_problem prob;
    memset(&prob, 0, sizeof prob);
    json_reset(out);
    *cache = -1;
    api_request req = {.params = params, .nparams = n, .id = id, .now = 1401660000};
    int status = fn(t, ds, &req, out, &prob, cache);
    if (status != 200)
        fail_msg("expected 200, got %d: %s", status, prob.detail);
    return status;
}

static void test_cache_seconds_and_dataset_switch(void **state)
{
    (void)state;
    dataset *cairns = import_and_open("cairns_translink_2014.zip", "api-cairns");
    dataset *abidjan = import_and_open("abidjan_osm_frequencies_2021.zip", "api-abidjan");
    api_thread *t = api_thread_new();
    assert_non_null(t);
    json_writer out;
    json_init(&out);
    int cache;

    api_param near[] = {P("lat", "-16.920876"), P("lon", "145.779259")};
    call(api_stops_nearby, t, cairns, near, N(near), NULL, &out, &cache);
    assert_int_equal(cache, 86400);
    call(api_departures, t, cairns, near, N(near), NULL, &out, &cache);
    assert_int_equal(cache, 30);
    api_param board[] = {P("time", "2014-06-02T06:00"), P("window", "120")};
    call(api_stop_departures, t, cairns, board, N(board), "750450", &out, &cache);
    assert_int_equal(cache, 30);
    assert_non_null(strstr(out.buf, "\"departure\":\"2014-06-02T"));
    call(api_stop, t, cairns, NULL, 0, "750450", &out, &cache);
    assert_int_equal(cache, 86400);
    call(api_routes, t, cairns, NULL, 0, NULL, &out, &cache);
    assert_int_equal(cache, 86400);
    call(api_agencies, t, cairns, NULL, 0, NULL, &out, &cache);
    assert_int_equal(cache, 86400);
    call(api_feed, t, cairns, NULL, 0, NULL, &out, &cache);
    assert_int_equal(cache, 3600);   /* its feed_validity follows the date */

    /* The same thread alternates between datasets: each search must come
     * from the dataset it is given, not from a connection kept from the
     * other one. */
    api_param pier[] = {P("q", "pier")};
    for (int round = 0; round < 3; round++) {
        call(api_stops_search, t, cairns, pier, N(pier), NULL, &out, &cache);
        assert_int_equal(cache, 86400);
        assert_non_null(strstr(out.buf, "The Pier Cairns"));
        call(api_stops_search, t, abidjan, pier, N(pier), NULL, &out, &cache);
        assert_null(strstr(out.buf, "The Pier Cairns"));
        call(api_feed, t, abidjan, NULL, 0, NULL, &out, &cache);
        assert_non_null(strstr(out.buf, "\"timezone\":\"Africa/Abidjan\""));
        assert_non_null(strstr(out.buf, "\"publisher_name\":\"Jungle Bus\""));
        call(api_feed, t, cairns, NULL, 0, NULL, &out, &cache);
        assert_non_null(strstr(out.buf, "\"publisher_name\":null"));
    }

    /* a trip longer than the thread's first stop-time array (32) makes it
     * grow; every stop time is still written */
    call(api_trip, t, cairns, NULL, 0, "CNS2014-CNS_MUL-Weekday-00-4166111", &out, &cache);
    assert_int_equal(cache, 86400);
    int stop_times = 0;
    for (const char *p = out.buf; (p = strstr(p, "\"stop_sequence\":")) != NULL; p++)
        stop_times++;
    assert_int_equal(stop_times, 52);
    assert_non_null(strstr(out.buf, "\"stop_sequence\":52,"));

    json_free(&out);
    api_thread_free(t);
    dataset_close(cairns);
    dataset_close(abidjan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_time_with_offsets),
        cmocka_unit_test(test_parse_local_time_needs_the_feed_zone),
        cmocka_unit_test(test_parse_time_rejects_malformed),
        cmocka_unit_test(test_format_instant),
        cmocka_unit_test(test_format_utc),
        cmocka_unit_test(test_missing_required_parameters),
        cmocka_unit_test(test_coordinate_errors),
        cmocka_unit_test(test_range_errors),
        cmocka_unit_test(test_time_and_date_errors),
        cmocka_unit_test(test_unknown_and_duplicate_parameters),
        cmocka_unit_test(test_problem_json),
        cmocka_unit_test(test_thread_lifecycle),
        cmocka_unit_test(test_cache_seconds_and_dataset_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
