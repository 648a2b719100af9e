/* test_rt_alerts.c — GTFS-Realtime alerts become ordinary alerts with "rt:"
 * ids: their fields survive the alerts API's checks, ids the API could not
 * take are hashed, an alert those checks refuse is skipped and counted.
 */
#include "test_support.h"

#include "transit/rt_alerts.h"

static void test_feed_alerts_become_alerts(void **state)
{
    (void)state;
    rt_translation header = {"Detour on route 1", "en"};
    rt_translation desc = {"Use Main St", NULL};
    rt_selector sel[2] = {{.route_id = "R1", .route_type = -1, .direction_id = 1},
                          {.stop_id = "S9", .trip_id = "T1", .route_type = -1, .direction_id = -1}};
    rt_period period = {1793000000, 1793003600};
    rt_alert alerts[4] = {
        {.entity_id = "b", .selectors = sel, .selector_count = 2, .periods = &period, .period_count = 1,
         .cause = 10, .effect = 4, .severity = 3, .header = {&header, 1}, .description = {&desc, 1}},
        {.entity_id = "a with spaces", .selectors = sel, .selector_count = 1, .cause = 1, .effect = 8,
         .severity = 1, .header = {&header, 1}},
        {.entity_id = "no-header", .selectors = sel, .selector_count = 1, .cause = 1, .effect = 8, .severity = 1},
        {.entity_id = "b", .selectors = sel, .selector_count = 1, .cause = 1, .effect = 8, .severity = 1,
         .header = {&header, 1}},
    };
    rt_feed feed = {.version = "2.0", .timestamp = 1793000100, .alerts = alerts, .alert_count = 4};
    alert **out;
    uint32_t rejected;
    char err[256];
    long n = rt_alerts_from_feed(&feed, 5, &out, &rejected, err, sizeof err);
    assert_int_equal(n, 2);
    assert_int_equal(rejected, 2);                 /* no header_text; a second "b" */
    assert_non_null(strstr(err, "no-header"));
    assert_string_equal(out[0]->id, "rt:b");
    assert_true(strncmp(out[1]->id, "rt:h", 4) == 0);   /* "a with spaces" hashed */
    assert_true(rt_alert_id(out[0]->id));
    assert_false(rt_alert_id("al-123"));

    const alert *a = out[0];
    assert_int_equal(a->nentities, 2);
    assert_string_equal(a->entities[0].route_id, "R1");
    assert_int_equal(a->entities[0].direction_id, 1);
    assert_string_equal(a->entities[1].trip_id, "T1");
    assert_int_equal(a->nperiods, 1);
    assert_int_equal(a->periods[0].start, 1793000000);
    assert_int_equal(a->periods[0].end, 1793003600);
    assert_true(alert_active_at(a, 1793000001));
    assert_false(alert_active_at(a, 1793003600));
    assert_int_equal(a->created_at, 1793000100);
    assert_non_null(strstr(a->json, "\"id\":\"rt:b\""));
    assert_non_null(strstr(a->content, "\"cause\":\"CONSTRUCTION\""));
    assert_non_null(strstr(a->content, "\"effect\":\"DETOUR\""));
    assert_non_null(strstr(a->content, "\"severity_level\":\"WARNING\""));
    assert_non_null(strstr(a->content, "Use Main St"));
    assert_int_equal(a->revision, 1793000100);

    /* merged with stored alerts: ordered by id, stale "rt:" ones left out */
    alert_error e;
    const char *body = "{\"informed_entity\":[{\"stop_id\":\"S1\"}],"
                       "\"header_text\":{\"translation\":[{\"text\":\"x\"}]}}";
    alert *s1 = alert_parse(body, strlen(body), "al-1", false, &e);
    alert *s2 = alert_parse(body, strlen(body), "rt:old", false, &e);
    alert *s3 = alert_parse(body, strlen(body), "zz", false, &e);
    assert_true(s1 && s2 && s3);
    alert *stored[3] = {s1, s2, s3};
    uint32_t m;
    alert **merged = rt_alerts_merge(stored, 3, out, (uint32_t)n, &m);
    assert_int_equal(m, 4);
    assert_string_equal(merged[0]->id, "al-1");
    assert_string_equal(merged[1]->id, "rt:b");
    assert_true(strncmp(merged[2]->id, "rt:h", 4) == 0);
    assert_string_equal(merged[3]->id, "zz");
    free(merged);
    alert_release(s1);
    alert_release(s2);
    alert_release(s3);
    rt_alerts_free(out, (uint32_t)n);
}

static void test_no_feed_no_alerts(void **state)
{
    (void)state;
    alert **out;
    uint32_t rejected;
    char err[64];
    assert_int_equal(rt_alerts_from_feed(NULL, 0, &out, &rejected, err, sizeof err), 0);
    rt_alerts_free(out, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feed_alerts_become_alerts),
        cmocka_unit_test(test_no_feed_no_alerts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
