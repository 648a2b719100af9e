/* test_traffic_days.c — the services' days as shared bitsets
 * (src/import/traffic_days.c) and their hand-over between the two store
 * writers (src/import/days_handoff.c). */
#include "test_support.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <stdio.h>
#include <stdlib.h>

#include "import/days_handoff.h"
#include "import/traffic_days.h"
#include "import/tt_builder.h"
#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/gtfs.h"
#include "transit/timetable.h"

static int32_t day(int y, unsigned m, unsigned d) { return days_from_civil(y, m, d); }

static bool has_day(const traffic_days *t, uint32_t service, int32_t d)
{
    uint32_t i = (uint32_t)(d - t->first_day);
    const uint64_t *bits = t->sets + (size_t)t->set_of[service] * t->words;
    return (bits[i / 64] >> (i % 64)) & 1;
}

/* Weekdays within the dates, plus additions, minus removals; a removal of
 * a date that is also added wins, whatever the rows' order. */
static void test_calendar_plus_additions_minus_removals(void **state)
{
    (void)state;
    /* service 0: Mondays and Fridays in March 2026; service 1: dates only */
    tb_calendar cal[] = {{.service = 0, .weekdays = 1u << 0 | 1u << 4, .start = day(2026, 3, 1), .end = day(2026, 3, 31)}};
    tb_calendar_date dates[] = {
        {1, day(2026, 3, 10), 2},   /* removal listed before the addition it cancels */
        {1, day(2026, 3, 10), 1},
        {1, day(2026, 3, 11), 1},
        {0, day(2026, 3, 2), 2},    /* a Monday removed */
        {0, day(2026, 3, 4), 1},    /* a Wednesday added */
    };
    traffic_days t;
    char err[200] = "";
    assert_int_equal(traffic_days_build(&t, cal, 1, dates, 5, 2, err, sizeof err), 0);
    assert_int_equal(t.first_day, day(2026, 3, 1));
    assert_int_equal(t.ndays, 31);
    assert_int_equal(t.words, 1);
    assert_false(has_day(&t, 0, day(2026, 3, 2)));
    assert_true(has_day(&t, 0, day(2026, 3, 4)));
    assert_true(has_day(&t, 0, day(2026, 3, 6)));    /* Friday */
    assert_true(has_day(&t, 0, day(2026, 3, 9)));    /* Monday */
    assert_false(has_day(&t, 0, day(2026, 3, 10)));
    assert_false(has_day(&t, 1, day(2026, 3, 10)));  /* the removal wins */
    assert_true(has_day(&t, 1, day(2026, 3, 11)));
    assert_int_equal(t.nsets, 2);
    traffic_days_free(&t);
}

/* Services with the same days share one set, however they were written;
 * the sets are distinct and sorted, so the numbering does not depend on
 * the services' order. */
static void test_identical_days_share_one_set(void **state)
{
    (void)state;
    /* service 0 and 2: weekdays of one week written two ways; 1: Sunday only; 3: no day */
    tb_calendar cal[] = {{.service = 0, .weekdays = 0x1F, .start = day(2026, 3, 2), .end = day(2026, 3, 8)}};
    tb_calendar_date dates[8];
    size_t n = 0;
    for (int d = 2; d <= 6; d++)
        dates[n++] = (tb_calendar_date){2, day(2026, 3, (unsigned)d), 1};
    dates[n++] = (tb_calendar_date){1, day(2026, 3, 8), 1};
    dates[n++] = (tb_calendar_date){3, day(2026, 3, 8), 2};
    traffic_days t;
    char err[200];
    assert_int_equal(traffic_days_build(&t, cal, 1, dates, n, 4, err, sizeof err), 0);
    assert_int_equal(t.nsets, 3);
    assert_int_equal(t.set_of[0], t.set_of[2]);
    assert_true(t.set_of[0] != t.set_of[1] && t.set_of[1] != t.set_of[3] && t.set_of[0] != t.set_of[3]);
    for (uint32_t s = 1; s < t.nsets; s++)
        assert_true(memcmp(t.sets + (s - 1) * t.words, t.sets + s * t.words, t.words * 8) < 0);
    assert_int_equal(t.sets[t.set_of[3] * t.words], 0);   /* the empty set */
    traffic_days_free(&t);
}

/* A span of more than one word per set, and the 50-year limit. */
static void test_long_spans_and_their_limit(void **state)
{
    (void)state;
    tb_calendar_date dates[] = {{0, day(2026, 1, 1), 1}, {0, day(2026, 12, 31), 1}};
    traffic_days t;
    char err[200];
    assert_int_equal(traffic_days_build(&t, NULL, 0, dates, 2, 1, err, sizeof err), 0);
    assert_int_equal(t.ndays, 365);
    assert_int_equal(t.words, 6);
    assert_true(has_day(&t, 0, day(2026, 12, 31)));
    assert_false(has_day(&t, 0, day(2026, 12, 30)));
    traffic_days_free(&t);
    tb_calendar_date far[] = {{0, day(2000, 1, 1), 1}, {0, day(2060, 1, 1), 1}};
    assert_int_equal(traffic_days_build(&t, NULL, 0, far, 2, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than 50 years"));
    assert_int_equal(traffic_days_build(&t, NULL, 0, NULL, 0, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "no service dates"));
}

static void assert_same_days(const traffic_days *a, const traffic_days *b)
{
    assert_int_equal(a->first_day, b->first_day);
    assert_int_equal(a->ndays, b->ndays);
    assert_int_equal(a->words, b->words);
    assert_int_equal(a->nsets, b->nsets);
    assert_memory_equal(a->sets, b->sets, (size_t)a->nsets * a->words * sizeof *a->sets);
}

/* Additions set as bits while reading give the sets the same days given as
 * rows give: dates before and after the first (the bits' range growing both
 * ways, by whole words), services coming in any order, a calendar row
 * reaching beyond the additions, removals as rows. */
static void test_additions_as_bits_as_rows(void **state)
{
    (void)state;
    tb_calendar cal[] = {{.service = 3, .weekdays = 0x7f, .start = day(2024, 1, 1), .end = day(2024, 1, 9)}};
    tb_calendar_date rows[64], removals[] = {{5, day(2026, 6, 2), 2}, {0, day(2031, 1, 1), 2}};
    size_t n = 0;
    int32_t first = day(2026, 6, 1);
    int offsets[] = {0, 1, 2, 700, -600, 63, 64, -1, 3000, -64, 5, 1};
    day_additions adds;
    memset(&adds, 0, sizeof adds);
    for (size_t i = 0; i < sizeof offsets / sizeof *offsets; i++) {
        uint32_t service = (uint32_t)(i * 7 % 6);
        rows[n++] = (tb_calendar_date){service, first + offsets[i], 1};
        assert_int_equal(day_additions_add(&adds, service, first + offsets[i]), 0);
        assert_int_equal(adds.base % 64, 0);
    }
    for (size_t i = 0; i < 2; i++) rows[n++] = removals[i];
    traffic_days want, got;
    char err[200];
    assert_int_equal(traffic_days_build(&want, cal, 1, rows, n, 6, err, sizeof err), 0);
    assert_int_equal(traffic_days_build_adding(&got, cal, 1, removals, 2, &adds, 6, err, sizeof err), 0);
    assert_same_days(&want, &got);
    assert_int_equal(want.first_day, day(2024, 1, 1));   /* the calendar row, before every addition */
    assert_memory_equal(want.set_of, got.set_of, 6 * sizeof *want.set_of);
    traffic_days_free(&want);
    traffic_days_free(&got);
    day_additions_free(&adds);
}

/* Additions over 50 years apart fail the build as rows would, without
 * bits for the whole span. */
static void test_additions_past_the_limit(void **state)
{
    (void)state;
    day_additions adds;
    memset(&adds, 0, sizeof adds);
    assert_int_equal(day_additions_add(&adds, 0, day(2000, 1, 1)), 0);
    assert_int_equal(day_additions_add(&adds, 1, day(2080, 1, 1)), 0);
    assert_true(adds.words <= 4);
    traffic_days t;
    char err[200];
    assert_int_equal(traffic_days_build_adding(&t, NULL, 0, NULL, 0, &adds, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than 50 years"));
    day_additions_free(&adds);
}

typedef struct waiter {
    days_handoff *h;
    const days_handoff *got;
} waiter;

static void *wait_for_days(void *arg)
{
    waiter *w = arg;
    w->got = days_handoff_wait(w->h);
    return NULL;
}

/* The writer waiting on another thread gets a copy of the builder's days
 * and service ids; a later withdrawal changes nothing. */
static void test_handoff_publishes_a_copy(void **state)
{
    (void)state;
    days_handoff h;
    assert_int_equal(days_handoff_init(&h), 0);
    waiter w = {&h, NULL};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, wait_for_days, &w), 0);
    tb_calendar_date dates[] = {{0, day(2026, 5, 1), 1}, {1, day(2026, 5, 2), 1}};
    traffic_days t;
    char err[200];
    assert_int_equal(traffic_days_build(&t, NULL, 0, dates, 2, 2, err, sizeof err), 0);
    strmap ids;
    int ins;
    assert_int_equal(strmap_init(&ids, 4), 0);
    assert_int_equal(strmap_put(&ids, "WK", 2, 0, &ins), 0);
    assert_int_equal(strmap_put(&ids, "SA", 2, 1, &ins), 1);
    days_handoff_publish(&h, &t, &ids);
    traffic_days_free(&t);     /* the handoff keeps its own copy */
    strmap_free(&ids);
    days_handoff_withdraw(&h);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_ptr_equal(w.got, &h);
    assert_int_equal(h.nservices, 2);
    assert_string_equal(strmap_key(&h.ids, 0), "WK");
    assert_string_equal(strmap_key(&h.ids, 1), "SA");
    assert_int_equal(strmap_get(&h.ids, "SA", 2), 1);   /* copied whole: found without hashing anew */
    assert_int_equal(strmap_get(&h.ids, "XX", 2), UINT32_MAX);
    assert_int_equal(h.days.ndays, 2);
    assert_true(h.days.set_of[0] != h.days.set_of[1]);
    days_handoff_destroy(&h);
}

/* A builder that stops before the calendars withdraws: the writer does
 * not wait for ever, it reads them itself. */
static void test_handoff_withdrawn_wakes_the_writer(void **state)
{
    (void)state;
    days_handoff h;
    assert_int_equal(days_handoff_init(&h), 0);
    waiter w = {&h, &h};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, wait_for_days, &w), 0);
    days_handoff_withdraw(&h);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_null(w.got);
    days_handoff_destroy(&h);
}

/* ------------------------------------------------------------ calendar_dates beside trips */

/* A feed with a trip of an unknown service, a duplicate trip and stop
 * times of unknown trips: every kind of problem whose count depends on
 * the services being known when trips are read. */
static void write_feed(const char *dir)
{
    test_write_file(dir, "agency.txt", "agency_name,agency_url,agency_timezone\nA,http://a,America/New_York\n");
    test_write_file(dir, "stops.txt", "stop_id,stop_name,stop_lat,stop_lon\nS1,One,40.0,-73.0\nS2,Two,40.01,-73.0\n");
    test_write_file(dir, "routes.txt", "route_id,route_short_name,route_type\nR,R,3\n");
    test_write_file(dir, "calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                                         "start_date,end_date\nWK,1,1,1,1,1,0,0,20260601,20260630\n");
    test_write_file(dir, "calendar_dates.txt", "service_id,date,exception_type\nD1,20260606,1\nD1,20260607,1\n"
                                               "WK,20260603,2\nD1,20260607,2\n");
    test_write_file(dir, "trips.txt", "route_id,service_id,trip_id,direction_id\nR,WK,T1,0\nR,D1,T2,7\n"
                                      "R,NOPE,T3,1\nR,WK,T1,1\nR,D1,T4,0\n");
    test_write_file(dir, "stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                                           "T1,08:00:00,08:00:00,S1,1\nT1,08:10:00,08:10:00,S2,2\n"
                                           "T2,09:00:00,09:00:00,S1,1\nT2,09:10:00,09:10:00,S2,2\n"
                                           "T3,10:00:00,10:00:00,S1,1\nT3,10:10:00,10:10:00,S2,2\n"
                                           "T4,11:00:00,11:00:00,S1,1\nT4,11:10:00,11:10:00,S2,2\n"
                                           "T9,12:00:00,12:00:00,S1,1\n");
}

/* Builds dir's timetable with calendar_dates.txt read first (beside = 0)
 * or beside trips and stop_times (beside = 1 byte); its diag and stats. */
static void build(const char *dir, uint64_t beside, diag *d, timetable_stats *st)
{
    char err[512], path[1200];
    feed_t *f = feed_open(dir, err, sizeof err);
    assert_non_null(f);
    snprintf(path, sizeof path, "%s/timetable-%llu.bin", dir, (unsigned long long)beside);
    timetable_options opt = {NULL, NULL, NULL, beside ? beside : (uint64_t)1 << 40, 0};
    diag_init(d);
    int rc = timetable_build(f, path, &opt, d, st, err, sizeof err);
    feed_close(f);
    if (rc != 0)
        fail_msg("timetable_build: %s", err);
}

/* same_bytes: a read again keeps the first reading's strings (T3 and NOPE)
 * in the file, so only then may the sizes differ. */
static void assert_same_build(const char *dir, bool same_bytes)
{
    diag first, beside;
    timetable_stats a, b;
    build(dir, 0, &first, &a);
    build(dir, 1, &beside, &b);
    for (int k = 0; k < DIAG_KIND_COUNT; k++)
        assert_int_equal(first.count[k], beside.count[k]);
    assert_int_equal(a.ntrips, b.ntrips);
    assert_int_equal(a.nservices, b.nservices);
    assert_int_equal(a.ngroups, b.ngroups);
    assert_int_equal(a.nruns, b.nruns);
    assert_int_equal(a.stop_times_kept, b.stop_times_kept);
    assert_int_equal(a.calendar_dates, b.calendar_dates);
    if (same_bytes)
        assert_int_equal(a.bytes, b.bytes);
    diag_destroy(&first);
    diag_destroy(&beside);
}

/* A trip of an unknown service makes the beside path read trips and stop
 * times again: the same trips kept, the same problems counted. */
static void test_beside_with_an_unknown_service_counts_as_first(void **state)
{
    (void)state;
    char dir[512];
    test_tmpdir(dir, sizeof dir, "traffic-days-beside");
    write_feed(dir);
    assert_same_build(dir, false);
    diag d;
    timetable_stats st;
    build(dir, 1, &d, &st);
    assert_int_equal(d.count[DIAG_UNKNOWN_SERVICE], 1);   /* T3 */
    assert_int_equal(d.count[DIAG_UNKNOWN_TRIP], 3);      /* T3's two stop times, T9's */
    assert_int_equal(d.count[DIAG_DUPLICATE_ID], 1);      /* the second T1 */
    assert_int_equal(d.count[DIAG_BAD_VALUE], 1);         /* T2's direction_id */
    assert_int_equal(st.ntrips, 3);
    assert_int_equal(st.nservices, 2);
    diag_destroy(&d);
}

/* Without one, the trips read beside the calendar dates are kept as read. */
static void test_beside_without_unknown_services_counts_as_first(void **state)
{
    (void)state;
    char dir[512];
    test_tmpdir(dir, sizeof dir, "traffic-days-beside-ok");
    write_feed(dir);
    test_write_file(dir, "trips.txt", "route_id,service_id,trip_id,direction_id\nR,WK,T1,0\nR,D1,T2,7\n"
                                      "R,WK,T1,1\nR,D1,T4,0\n");
    assert_same_build(dir, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calendar_plus_additions_minus_removals),
        cmocka_unit_test(test_identical_days_share_one_set),
        cmocka_unit_test(test_long_spans_and_their_limit),
        cmocka_unit_test(test_additions_as_bits_as_rows),
        cmocka_unit_test(test_additions_past_the_limit),
        cmocka_unit_test(test_handoff_publishes_a_copy),
        cmocka_unit_test(test_handoff_withdrawn_wakes_the_writer),
        cmocka_unit_test(test_beside_with_an_unknown_service_counts_as_first),
        cmocka_unit_test(test_beside_without_unknown_services_counts_as_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
