/* test_bad_rows.c — CSV records the parser rejects (fewer fields than the
 * header, a NUL byte in a name) as the import sees them: dropped, counted as
 * bad_row problems with file and line, and counted as rows read so that the
 * import guard sees them as dropped. Also the shapes writer, which reads
 * shapes.txt alone. */
#include "test_support.h"

#include "test_timetable_fixture.h"
#include "transit/store_write.h"
#include "transit/stores.h"

/* A fixture file that may hold NUL bytes. */
static void write_bytes(const char *dir, const char *name, const char *bytes, size_t len)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

#define WRITE(dir, name, lit) write_bytes(dir, name, lit, sizeof lit - 1)

static void write_feed(const char *dir)
{
    WRITE(dir, "agency.txt", "agency_id,agency_name,agency_url,agency_timezone\n"
                             "A1,Test,http://example.com,Europe/Berlin\n");
    WRITE(dir, "stops.txt", "stop_id,stop_name,stop_lat,stop_lon\n"
                            "S1,One,52.5,13.4\n"
                            "S2,Two,52.6,13.4\n"
                            "S3,Three\n"                    /* line 4: short */
                            "S4,Fo\0ur,52.7,13.4\n");       /* line 5: NUL in stop_name */
    WRITE(dir, "routes.txt", "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                             "R1,A1,1,One,3\n"
                             "R2,A1,2,Tw\0o,3\n");          /* line 3: NUL in route_long_name */
    WRITE(dir, "calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                               "start_date,end_date\n"
                               "WK,1,1,1,1,1,1,1,20260101,20261231\n");
    WRITE(dir, "trips.txt", "route_id,service_id,trip_id\n"
                            "R1,WK,T1\n"
                            "R1,WK,T2\n");
    WRITE(dir, "stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                                 "T1,08:00:00,08:00:00,S1,1\n"
                                 "T1,08:05:00,08:05:00,S2,2\n"
                                 "T2,09:00:00,09:00:00,S1,1\n"
                                 "T2,09:05:00,09:05:00\n"   /* line 5: short */
                                 "T2,09:10:00,09:10:00,S2,3\n");
    WRITE(dir, "shapes.txt", "shape_id,shape_pt_lat,shape_pt_lon,shape_pt_sequence\n"
                             "SH,52.5,13.4,1\n"
                             "SH,52.6\n"                    /* line 3: short */
                             "SH,52.7,13.4,3\n");
}

static bool has_example(const diag *d, const char *text)
{
    for (int i = 0; i < d->nexamples; i++)
        if (strcmp(d->examples[i], text) == 0)
            return true;
    return false;
}

static void test_timetable_drops_and_reports_rejected_rows(void **state)
{
    (void)state;
    char dir[512];
    test_tmpdir(dir, sizeof dir, "bad-rows");
    write_feed(dir);
    diag d;
    diag_init(&d);
    timetable_stats st;
    memset(&st, 0, sizeof st);
    dataset *ds = test_build_timetable(dir, &d, &st);
    assert_int_equal(d.count[DIAG_BAD_ROW], 4);
    assert_true(has_example(&d, "stops.txt:4: row has 2 field(s), the header has 4; row skipped"));
    assert_true(has_example(&d, "stops.txt:5: NUL byte in field 'stop_name'; row skipped"));
    assert_true(has_example(&d, "routes.txt:3: NUL byte in field 'route_long_name'; row skipped"));
    assert_true(has_example(&d, "stop_times.txt:5: row has 3 field(s), the header has 5; row skipped"));
    /* rows read include the rejected ones; the version holds the others */
    assert_int_equal(st.stops, 4);
    assert_int_equal(st.routes, 2);
    assert_int_equal(st.stop_times, 5);
    dataset_counts c;
    dataset_get_counts(ds, &c);
    assert_int_equal(c.stops, 2);
    assert_int_equal(c.routes, 1);
    assert_int_equal(c.stop_times, 4);
    dataset_close(ds);
    diag_destroy(&d);
}

static void test_shapes_writer_reports_rejected_rows(void **state)
{
    (void)state;
    char dir[512], err[512], path[1200];
    test_tmpdir(dir, sizeof dir, "bad-rows-shapes");
    write_feed(dir);
    feed_t *f = feed_open(dir, err, sizeof err);
    assert_non_null(f);
    snprintf(path, sizeof path, "%s/shapes.sqlite", dir);
    diag d;
    diag_init(&d);
    store_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(shapes_store_write(f, path, &d, &st, err, sizeof err), 0);
    feed_close(f);
    assert_int_equal(d.count[DIAG_BAD_ROW], 1);
    assert_true(has_example(&d, "shapes.txt:3: row has 2 field(s), the header has 4; row skipped"));
    assert_int_equal(st.shapes, 3);
    diag_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timetable_drops_and_reports_rejected_rows),
        cmocka_unit_test(test_shapes_writer_reports_rejected_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
