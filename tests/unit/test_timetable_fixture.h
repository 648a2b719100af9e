/* test_timetable_fixture.h — building and opening a fixture timetable, as
 * the unit tests that query one do in their setup.
 *
 * Why it exists: test_timetable and test_departure_json each write a small
 * feed into a scratch directory and need the same feed → timetable.bin →
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

#endif
