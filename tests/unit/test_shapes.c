/* test_shapes.c — encoded polylines and shapes.sqlite's lines.
 *
 * Pins the polyline encoder to Google's documented example and to values
 * worked out by hand (rounding, negative and large differences, the
 * backslash it can emit), the haversine length, and shapes.sqlite: each
 * shape's line written at import (a repeated sequence keeps its first
 * point, as the points table does), read back by shapes_line, unknown ids,
 * and a file of schema version 1 (no shape_lines), whose lines are encoded
 * from the points on request and must read the same.
 */
#include "test_support.h"

#include <math.h>
#include <sqlite3.h>

#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/polyline.h"
#include "transit/store_write.h"
#include "transit/stores.h"

static const char *encode(const double *lat, const double *lon, int n)
{
    static char out[1024];
    polyline p;
    polyline_begin(&p);
    char *o = out;
    for (int i = 0; i < n; i++) {
        char *end = polyline_put(&p, o, lat[i], lon[i]);
        assert_true(end - o <= POLYLINE_POINT_MAX);
        o = end;
    }
    *o = '\0';
    return out;
}

static void test_google_example(void **state)
{
    (void)state;
    /* https://developers.google.com/maps/documentation/utilities/polylinealgorithm */
    const double lat[] = {38.5, 40.7, 43.252}, lon[] = {-120.2, -120.95, -126.453};
    assert_string_equal(encode(lat, lon, 3), "_p~iF~ps|U_ulLnnqC_mqNvxq`@");
    /* one point, and each coordinate alone */
    assert_string_equal(encode(lat, lon, 1), "_p~iF~ps|U");
    assert_string_equal(encode((const double[]){0}, (const double[]){0}, 1), "??");
    /* -179.9832104: Google's worked example of one value */
    assert_string_equal(encode((const double[]){0}, (const double[]){-179.9832104}, 1), "?`~oia@");
}

static void test_rounding_and_extremes(void **state)
{
    (void)state;
    /* half a unit rounds away from zero: 0.000005 is 1, -0.000005 is -1 */
    assert_string_equal(encode((const double[]){0.000005}, (const double[]){-0.000005}, 1), "A@");
    assert_string_equal(encode((const double[]){0.0000049}, (const double[]){0}, 1), "??");
    /* the largest differences: from 90 to -90 and from 180 to -180 */
    const double lat[] = {90, -90}, lon[] = {180, -180};
    const char *s = encode(lat, lon, 2);
    assert_true(strlen(s) <= 2 * POLYLINE_POINT_MAX);
    for (const char *c = s; *c; c++)
        assert_true(*c >= 63 && *c <= 126);
    /* a repeated point is two zero differences */
    const double same[] = {52.5, 52.5}, lon2[] = {13.4, 13.4};
    size_t one = strlen(encode(same, lon2, 1));
    const char *two = encode(same, lon2, 2);
    assert_int_equal(strlen(two), one + 2);
    assert_string_equal(two + one, "??");
    /* a backslash can be part of a polyline (the JSON writer escapes it) */
    assert_string_equal(encode((const double[]){-0.00015}, (const double[]){0}, 1), "\\?");
}

static void test_distance(void **state)
{
    (void)state;
    assert_true(polyline_distance_m(52.5, 13.4, 52.5, 13.4) == 0);
    /* 0.001 degrees of latitude: 111.195 m on the mean Earth radius */
    assert_true(fabs(polyline_distance_m(40.0, -74.0, 40.001, -74.0) - 111.195) < 0.001);
    /* a quarter of the equator */
    assert_true(fabs(polyline_distance_m(0, 0, 0, 90) - 6371008.8 * M_PI / 2) < 0.01);
}

/* ------------------------------------------------------------ shapes.sqlite */

static char g_dir[512];

static void write_feed(const char *dir)
{
    test_write_file(dir, "agency.txt", "agency_name,agency_url,agency_timezone\nA,http://x,UTC\n");
    test_write_file(dir, "stops.txt", "stop_id,stop_name,stop_lat,stop_lon\nS,S,0,0\n");
    test_write_file(dir, "routes.txt", "route_id,route_type\nR,3\n");
    test_write_file(dir, "trips.txt", "route_id,service_id,trip_id\nR,C,T\n");
    test_write_file(dir, "calendar.txt",
                    "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
                    "C,1,1,1,1,1,1,1,20260101,20261231\n");
    test_write_file(dir, "stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n");
    /* G: Google's example, out of order and with sequence 2 given twice
     * (the first row wins); Q: one point; X: a bad coordinate skipped */
    test_write_file(dir, "shapes.txt",
                    "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\n"
                    "G,43.252,-126.453,3\n"
                    "G,38.5,-120.2,1\n"
                    "G,40.7,-120.95,2\n"
                    "G,10,10,2\n"
                    "Q,52.5,13.4,7\n"
                    "X,95,0,1\n"
                    "X,1,1,2\n");
}

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "shapes");
    write_feed(g_dir);
    char err[256] = "", path[1100];
    feed_t *feed = feed_open(g_dir, err, sizeof err);
    assert_non_null(feed);
    diag d;
    diag_init(&d);
    store_stats st;
    snprintf(path, sizeof path, "%s/shapes.sqlite", g_dir);
    if (shapes_store_write(feed, path, &d, &st, err, sizeof err) != 0)
        fail_msg("shapes_store_write: %s", err);
    diag_destroy(&d);
    feed_close(feed);
    return 0;
}

static void expect_lines(const char *dir)
{
    char err[256] = "";
    shapes_db *db = shapes_open(dir, err, sizeof err);
    if (!db)
        fail_msg("shapes_open: %s", err);
    shape_line line;
    assert_int_equal(shapes_line(db, "G", &line, err, sizeof err), 1);
    assert_int_equal(line.points, 3);
    assert_string_equal(line.polyline, "_p~iF~ps|U_ulLnnqC_mqNvxq`@");
    assert_int_equal(line.polyline_len, strlen(line.polyline));
    double want = polyline_distance_m(38.5, -120.2, 40.7, -120.95) + polyline_distance_m(40.7, -120.95, 43.252, -126.453);
    assert_true(fabs(line.length_m - want) < 1e-6);
    assert_int_equal(shapes_line(db, "Q", &line, err, sizeof err), 1);
    assert_int_equal(line.points, 1);
    assert_true(line.length_m == 0);
    assert_int_equal(shapes_line(db, "X", &line, err, sizeof err), 1);
    assert_int_equal(line.points, 1);
    assert_int_equal(shapes_line(db, "nope", &line, err, sizeof err), 0);
    assert_int_equal(shapes_line(db, "", &line, err, sizeof err), 0);
    /* the points, in sequence order */
    shape_point *pts = NULL;
    uint32_t cap = 0;
    assert_int_equal(shapes_read(db, "G", &pts, &cap, err, sizeof err), 3);
    assert_true(pts[0].lat == 38.5 && pts[2].lon == -126.453);
    free(pts);
    shapes_close(db);
}

static void test_lines_written_at_import(void **state)
{
    (void)state;
    expect_lines(g_dir);
}

static void test_schema_version_1_encodes_on_request(void **state)
{
    (void)state;
    char dir[600], cmd[1400], path[1100];
    snprintf(dir, sizeof dir, "%s/v1", g_dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s/shapes.sqlite' '%s/'", dir, g_dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/shapes.sqlite", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DROP TABLE shape_lines; PRAGMA user_version=1;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    expect_lines(dir);
}

static void test_missing_store(void **state)
{
    (void)state;
    char err[256] = "";
    assert_null(shapes_open("/nonexistent/version", err, sizeof err));
    assert_non_null(strstr(err, "shapes.sqlite"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_google_example),
        cmocka_unit_test(test_rounding_and_extremes),
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_lines_written_at_import),
        cmocka_unit_test(test_schema_version_1_encodes_on_request),
        cmocka_unit_test(test_missing_store),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
