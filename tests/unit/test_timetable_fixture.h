/* test_timetable_fixture.h — building and opening a fixture timetable, as
 * the unit tests that query one do in their setup.
 *
 * Why it exists: test_timetable, test_departure_json and the realtime and
 * validity tests each write a small feed into a scratch directory and need the same feed → timetable.bin →
 * dataset steps; one copy here.
 */
#ifndef TRANSIT_TEST_TIMETABLE_FIXTURE_H
#define TRANSIT_TEST_TIMETABLE_FIXTURE_H

#include "test_support.h"
#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/query.h"
#include "transit/timetable.h"

/* Builds dir/timetable.bin from the feed in dir, counting its problems in
 * *d (initialised by the caller) and its sizes in *st, then opens the
 * dataset. Fails the test when either step fails. */
static inline dataset *test_build_timetable(const char *dir, diag *d, timetable_stats *st)
{
    char err[512], path[1200];
    feed_t *f = feed_open(dir, err, sizeof err);
    if (!f)
        fail_msg("feed_open: %s", err);
    snprintf(path, sizeof path, "%s/timetable.bin", dir);
    int rc = timetable_build(f, path, NULL, d, st, err, sizeof err);
    feed_close(f);
    if (rc != 0)
        fail_msg("timetable_build: %s", err);
    dataset *ds = dataset_open(dir, err, sizeof err);
    if (!ds)
        fail_msg("dataset_open: %s", err);
    return ds;
}

/* test_build_timetable for a feed whose problems and sizes the test does
 * not look at. */
static inline dataset *test_open_fixture(const char *dir)
{
    diag d;
    diag_init(&d);
    timetable_stats st;
    dataset *ds = test_build_timetable(dir, &d, &st);
    diag_destroy(&d);
    return ds;
}

/* dir/calendar.txt with one service, WK, on weekdays from Monday 2026-10-26
 * to Friday 2026-11-13: the calendar of the realtime and validity fixtures. */
static inline void test_write_weekday_calendar(const char *dir)
{
    test_write_file(dir, "calendar.txt",
                    "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                    "start_date,end_date\n"
                    "WK,1,1,1,1,1,0,0,20261026,20261113\n");
}

#endif
