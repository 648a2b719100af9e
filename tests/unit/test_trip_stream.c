/* test_trip_stream.c — what a folded trip keeps (src/import/trip_stream.c)
 * now that tb_trip is 40 bytes: its latest time comes from its profiles'
 * largest offsets, kept per local profile, and equals the latest arrival or
 * departure of its stop times, whichever profile holds it. */
#include "test_support.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/trip_stream.h"
#include "import/tt_builder.h"
#include "transit/gtfs.h"

static tb_stop_time row(uint32_t seq, uint32_t stop, uint32_t arr, uint32_t dep)
{
    return (tb_stop_time){.trip = 0, .seq = seq, .stop = stop, .arr = arr, .dep = dep};
}

typedef struct fixture {
    tt_builder b;
    trip_stream s;
} fixture;

static void setup_fixture(fixture *f, uint32_t ntrips)
{
    memset(f, 0, sizeof *f);
    for (uint32_t i = 0; i < ntrips; i++) {
        tb_trip *t = TB_PUSH(f->b.trips);
        assert_non_null(t);
        memset(t, 0, sizeof *t);
        t->route = 0;
    }
    assert_int_equal(ts_init(&f->s), 0);
}

static void teardown_fixture(fixture *f)
{
    ts_free(&f->s);
    free(f->b.trips.v);
}

/* Latest = the last departure when times rise; a trip sharing the profile
 * at another start gets its own latest time; the largest offset of an
 * arrival profile counts when an arrival is later than every departure. */
static void test_latest_time_from_profiles(void **state)
{
    (void)state;
    fixture f;
    setup_fixture(&f, 3);
    tb_stop_time a[] = {row(1, 10, 3600, 3600), row(2, 11, 3700, 3720), row(3, 12, 3900, 3900)};
    assert_int_equal(ts_fold_trip(&f.b, &f.s, 0, a, NULL, 3), 0);
    tb_stop_time b[] = {row(1, 10, 7200, 7200), row(2, 11, 7300, 7320), row(3, 12, 7500, 7500)};
    assert_int_equal(ts_fold_trip(&f.b, &f.s, 1, b, NULL, 3), 0);
    /* times go backwards at the last stop: its arrival (9000) is later than
     * its departure (8000), which is the latest departure of the trip */
    tb_stop_time c[] = {row(1, 10, 5000, 5000), row(2, 11, 6000, 6000), row(3, 12, 9000, 8000)};
    assert_int_equal(ts_fold_trip(&f.b, &f.s, 2, c, NULL, 3), 0);
    const tb_trip *t = f.b.trips.v;
    assert_true(t[0].valid && t[1].valid && t[2].valid);
    assert_int_equal(t[0].fold, TS_FOLDED);
    assert_int_equal(t[0].dep_profile, t[1].dep_profile);   /* one shared profile */
    assert_int_equal(t[0].start, 3600);
    assert_int_equal(t[1].start, 7200);
    assert_int_equal(ts_trip_latest(&f.s, &t[0]), 3900);
    assert_int_equal(ts_trip_latest(&f.s, &t[1]), 7500);
    assert_true(t[2].arr_profile != t[2].dep_profile);
    assert_int_equal(ts_trip_latest(&f.s, &t[2]), 9000);
    assert_int_equal(f.s.profile_max.n, f.s.profiles.count);   /* one maximum per local profile */
    teardown_fixture(&f);
}

/* Rows out of stop_sequence order and an untimed middle stop: sorted and
 * interpolated before the profiles are made, so the latest time is the
 * last stop's whatever the file order. */
static void test_latest_time_after_sorting_and_interpolation(void **state)
{
    (void)state;
    fixture f;
    setup_fixture(&f, 1);
    tb_stop_time a[] = {row(3, 12, 4000, 4010), row(1, 10, 3600, 3600), row(2, 11, GTFS_TIME_NONE, GTFS_TIME_NONE)};
    assert_int_equal(ts_fold_trip(&f.b, &f.s, 0, a, NULL, 3), 0);
    const tb_trip *t = f.b.trips.v;
    assert_true(t[0].valid);
    assert_int_equal(t[0].start, 3600);
    assert_int_equal(ts_trip_latest(&f.s, &t[0]), 4010);
    const int32_t *dep = (const int32_t *)ts_profile(&f.s, t[0].dep_profile);
    assert_int_equal(dep[1], 200);   /* halfway from 3600 to 4000 */
    teardown_fixture(&f);
}

/* The flags share one word with the small enums: setting one leaves the
 * others as they were. */
static void test_trip_flags_are_independent(void **state)
{
    (void)state;
    tb_trip t;
    memset(&t, 0, sizeof t);
    t.direction_id = -1;
    t.wheelchair_accessible = 2;
    t.bikes_allowed = 1;
    t.fold = TS_FOLDED;
    t.valid = true;
    t.frequency_based = true;
    assert_int_equal(t.direction_id, -1);
    assert_int_equal(t.wheelchair_accessible, 2);
    assert_int_equal(t.bikes_allowed, 1);
    assert_int_equal(t.fold, TS_FOLDED);
    t.valid = false;
    assert_int_equal(t.fold, TS_FOLDED);
    assert_true(t.frequency_based);
    assert_int_equal(sizeof t, 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latest_time_from_profiles),
        cmocka_unit_test(test_latest_time_after_sorting_and_interpolation),
        cmocka_unit_test(test_trip_flags_are_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
