/* test_traffic_days.c — the services' days as shared bitsets
 * (src/import/traffic_days.c) and their hand-over between the two store
 * writers (src/import/days_handoff.c). */
#include "test_support.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "import/days_handoff.h"
#include "import/traffic_days.h"
#include "import/tt_builder.h"
#include "transit/gtfs.h"

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
    const char strings[] = "\0WK\0SA";
    const uint32_t offsets[] = {1, 4};
    days_handoff_publish(&h, &t, strings, offsets, 2);
    traffic_days_free(&t);     /* the handoff keeps its own copy */
    days_handoff_withdraw(&h);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_ptr_equal(w.got, &h);
    assert_int_equal(h.nservices, 2);
    assert_string_equal(h.ids, "WK");
    assert_string_equal(h.ids + 3, "SA");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calendar_plus_additions_minus_removals),
        cmocka_unit_test(test_identical_days_share_one_set),
        cmocka_unit_test(test_long_spans_and_their_limit),
        cmocka_unit_test(test_handoff_publishes_a_copy),
        cmocka_unit_test(test_handoff_withdrawn_wakes_the_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
