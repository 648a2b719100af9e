/* test_board_join.c — what a board hands its writer (board.h): each row's
 * word of the overlay alone (board.rts) when realtime is all there is to
 * join, else a board_row a row.
 *
 * Why it exists: engine/board.c skips the board_row of every row when no
 * alert is shown, no vehicle is known and no row is of an ADDED trip, moved
 * or with TripProperties, and departure_json.c then reads the words alone.
 * Here every kind of board (a stop's and nearby, by predicted and by
 * scheduled time, a cursor's page through board_join) is checked: which of
 * the two it hands over, and that each row's word is the overlay's own
 * look-up of the row, as the full join gives it.
 */
#include "test_support.h"
#include "test_rt_fixture.h"
#include "test_timetable_fixture.h"

#include "transit/alert.h"
#include "transit/alert_view.h"
#include "transit/board.h"
#include "transit/gtfs.h"
#include "transit/rt_overlay.h"

static char g_dir[512];
static dataset *g_ds;
static int32_t g_monday;   /* 2026-11-02 */
static board_scratch *g_b;
static query_scratch *g_s;

static int setup(void **state)
{
    (void)state;
    test_tmpdir(g_dir, sizeof g_dir, "board-join");
    test_rt_write_line(g_dir, 5);
    test_write_file(g_dir, "trips.txt",
                    "route_id,service_id,trip_id,trip_headsign\n"
                    "R1,WK,T1,Five\nR1,WK,T2,Five\nR1,WK,T3,Five\nR1,WK,T4,Five\n");
    test_write_file(g_dir, "stop_times.txt",
                    "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                    "T1,08:00:00,08:00:00,S1,1\nT1,08:10:00,08:10:00,S2,2\nT1,08:20:00,08:20:00,S3,3\n"
                    "T2,08:05:00,08:05:00,S1,1\nT2,08:15:00,08:15:00,S2,2\nT2,08:25:00,08:25:00,S3,3\n"
                    "T3,08:10:00,08:10:00,S1,1\nT3,08:20:00,08:20:00,S2,2\nT3,08:30:00,08:30:00,S3,3\n"
                    "T4,08:15:00,08:15:00,S1,1\nT4,08:25:00,08:25:00,S2,2\nT4,08:35:00,08:35:00,S3,3\n");
    g_ds = test_rt_open_weekdays(g_dir, &g_monday);
    g_b = board_scratch_new();
    g_s = query_scratch_new();
    assert_non_null(g_b);
    assert_non_null(g_s);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    board_scratch_free(g_b);
    query_scratch_free(g_s);
    dataset_release(g_ds);
    return 0;
}

#define H(h, m) ((uint32_t)((h) * 3600 + (m) * 60))

static rt_trip_update update_of(const char *trip_id, rt_stop_update *stops, uint32_t n)
{
    rt_trip_update u = test_rt_monday_update(trip_id, g_monday, stops, n);
    u.entity_id = trip_id;
    u.new_start_day = INT32_MIN;
    u.new_start_secs = -1;
    return u;
}

/* An overlay: T1 a minute late, T2 two minutes early from S2 on, T3 with
 * S1 skipped; with `moves`, T2's S2 call served at S5; with `properties`,
 * T3 with its own headsign. T4 has no update. */
static rt_overlay *overlay(bool moves, bool properties)
{
    static rt_stop_update u1[1], u2[1], u3[1];
    u1[0] = (rt_stop_update){.has_stop_sequence = true, .stop_sequence = 1, .departure = test_rt_delay(60)};
    u2[0] = (rt_stop_update){.has_stop_sequence = true, .stop_sequence = 2, .departure = test_rt_delay(-120),
                             .assigned_stop_id = moves ? "S5" : NULL};
    u3[0] = (rt_stop_update){.has_stop_sequence = true, .stop_sequence = 1, .relationship = RT_STOP_SKIPPED};
    static rt_trip_update tus[3];
    tus[0] = update_of("T1", u1, 1);
    tus[1] = update_of("T2", u2, 1);
    tus[2] = update_of("T3", u3, 1);
    tus[2].headsign = properties ? "Elsewhere" : NULL;
    rt_feed f = test_rt_feed_of(tus, 3);
    rt_overlay *o = rt_overlay_build(&f, g_ds, 0, NULL);
    assert_non_null(o);
    return o;
}

static bool same_word(rt_departure a, rt_departure b)
{
    return a.realtime == b.realtime && a.canceled == b.canceled && a.skipped == b.skipped && a.hidden == b.hidden &&
           a.has_prediction == b.has_prediction && a.delay_s == b.delay_s && a.occupancy == b.occupancy &&
           a.moved == b.moved && a.has_properties == b.has_properties;
}

/* Every row's word on b is the overlay's look-up of the row. */
static void assert_words_are_the_overlay_s(const rt_overlay *o, const board *b)
{
    assert_true(b->count > 0);
    for (uint32_t i = 0; i < b->count; i++) {
        rt_departure said;
        rt_overlay_lookup(o, &b->deps[i], &said);
        assert_true(same_word(board_row_rt(b, i), said));
    }
}

/* The stop's board and the board near it, by prediction and by schedule:
 * handed as words (rows NULL) or as rows, every word the overlay's. */
static void check_boards(const rt_overlay *o, alert_marks *marks, const char *stop_id, bool words)
{
    uint32_t stop = dataset_find_stop(g_ds, stop_id, strlen(stop_id));
    assert_int_not_equal(stop, QUERY_NONE);
    stop_info st;
    dataset_stop(g_ds, stop, &st);
    int64_t from = dataset_instant(g_ds, g_monday, H(7, 50));
    for (int order = 0; order < 2; order++)
        for (int nearby = 0; nearby < 2; nearby++) {
            board_sources src = {o, marks, order ? BOARD_BY_SCHEDULE : BOARD_BY_PREDICTION, false};
            board b;
            query_error qe;
            int rc = nearby ? board_nearby(g_b, g_ds, g_s, QUERY_DEPARTURES, st.lat, st.lon, 50, from, 3600, 50,
                                           &src, &b, &qe)
                            : board_stop(g_b, g_ds, g_s, QUERY_DEPARTURES, stop, from, 3600, 50, &src, &b, &qe);
            assert_int_equal(rc, QUERY_OK);
            assert_true(b.realtime);
            if (words) {
                assert_null(b.rows);
                assert_non_null(b.rts);
            } else {
                assert_non_null(b.rows);
                assert_null(b.rts);
            }
            assert_words_are_the_overlay_s(o, &b);
        }
}

static void test_realtime_alone_is_handed_as_words(void **state)
{
    (void)state;
    rt_overlay *o = overlay(false, false);
    check_boards(o, NULL, "S1", true);
    check_boards(o, NULL, "S2", true);
    /* a page after a cursor is joined again (board_join): always rows */
    board all, page;
    board_sources src = {o, NULL, BOARD_BY_PREDICTION, false};
    query_error qe;
    assert_int_equal(board_stop(g_b, g_ds, g_s, QUERY_DEPARTURES, dataset_find_stop(g_ds, "S1", 2),
                                dataset_instant(g_ds, g_monday, H(7, 50)), 3600, 50, &src, &all, &qe),
                     QUERY_OK);
    assert_int_equal(all.count, 4);
    static board_row rows[QUERY_LIMIT_MAX];
    board_join(g_ds, all.deps + 1, all.count - 1, &src, rows, &page);
    assert_non_null(page.rows);
    assert_null(page.rts);
    assert_int_equal(page.count, 3);
    assert_words_are_the_overlay_s(o, &page);
    /* what the words said: T1 late, T3 skipped, T4 unknown */
    bool late = false, skipped = false, unknown = false;
    for (uint32_t i = 0; i < all.count; i++) {
        rt_departure w = board_row_rt(&all, i);
        late |= w.has_prediction && w.delay_s == 60;
        skipped |= w.skipped && w.canceled;
        unknown |= !w.realtime;
    }
    assert_true(late && skipped && unknown);
    rt_overlay_release(o);
}

static void test_anything_more_is_handed_as_rows(void **state)
{
    (void)state;
    /* a platform change: the moved row's board (at S5, where it is served) and the others' */
    rt_overlay *moved = overlay(true, false);
    check_boards(moved, NULL, "S5", false);
    rt_overlay_release(moved);
    /* TripProperties: T3's rows */
    rt_overlay *props = overlay(false, true);
    check_boards(props, NULL, "S1", false);
    rt_overlay_release(props);
    /* alerts shown: every board */
    rt_overlay *o = overlay(false, false);
    alert_error err;
    const char *body = "{\"informed_entity\":[{\"stop_id\":\"S1\"}],\"header_text\":{\"translation\":"
                       "[{\"text\":\"Moved\"}]}}";
    alert *a = alert_parse(body, strlen(body), "a1", true, &err);
    assert_non_null(a);
    assert_int_equal(alert_stamp(a, 1, 0, 0), 0);
    alert_view *v = alert_view_new(&a, 1, g_ds, 1);
    assert_non_null(v);
    alert_release(a);
    alert_marks *marks = alert_marks_new();
    assert_non_null(marks);
    alert_marks_begin(marks, v);
    check_boards(o, marks, "S1", false);
    alert_marks_free(marks);
    alert_view_release(v);
    rt_overlay_release(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_realtime_alone_is_handed_as_words),
        cmocka_unit_test(test_anything_more_is_handed_as_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
