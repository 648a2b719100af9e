/* test_rt_encode.c — what the /gtfs-rt export decodes back to what went in:
 * trip updates round-trip through rt_feed_decode field for field, alerts
 * (stored and "rt:") come back as feed alerts under their entity ids, and
 * the JSON form names fields and enums as the .proto does.
 */
#include "test_support.h"

#include "transit/rt_alerts.h"
#include "transit/rt_encode.h"

static void test_trip_updates_round_trip(void **state)
{
    (void)state;
    rt_stop_update stops[2] = {
        {.has_stop_sequence = true, .stop_sequence = 3,
         .departure = {.present = true, .has_delay = true, .delay = 120}},
        {.stop_id = "S5", .relationship = RT_STOP_SKIPPED,
         .arrival = {.present = true, .has_time = true, .time = 1793000000, .has_uncertainty = true}},
    };
    rt_trip_update tus[2] = {
        {.entity_id = "e1", .trip_id = "T1", .start_date = "20261102", .start_time = "25:10:00",
         .direction_id = 1, .vehicle_id = "bus 7", .stops = stops, .stop_count = 2, .has_delay = true,
         .delay = 30},
        {.entity_id = "e2", .trip_id = "T2", .direction_id = -1, .relationship = RT_TRIP_CANCELED},
    };
    rt_feed in = {.version = "2.0", .trip_updates = tus, .trip_update_count = 2};
    uint8_t *buf;
    size_t len;
    assert_int_equal(rt_encode_trip_updates(&in, 1793000500, &buf, &len), 0);
    char err[256];
    rt_feed *out = rt_feed_decode(buf, len, err, sizeof err);
    assert_non_null(out);
    assert_int_equal(out->timestamp, 1793000500);
    assert_int_equal(out->trip_update_count, 2);
    const rt_trip_update *t = &out->trip_updates[0];
    assert_string_equal(t->entity_id, "e1");
    assert_string_equal(t->trip_id, "T1");
    assert_string_equal(t->start_date, "20261102");
    assert_int_equal(t->start_secs, 25 * 3600 + 600);
    assert_int_equal(t->direction_id, 1);
    assert_string_equal(t->vehicle_id, "bus 7");
    assert_true(t->has_delay && t->delay == 30);
    assert_int_equal(t->stop_count, 2);
    assert_true(t->stops[0].departure.has_delay && t->stops[0].departure.delay == 120);
    assert_false(t->stops[0].arrival.present);
    assert_int_equal(t->stops[1].relationship, RT_STOP_SKIPPED);
    assert_string_equal(t->stops[1].stop_id, "S5");
    assert_int_equal(t->stops[1].arrival.time, 1793000000);
    assert_int_equal(out->trip_updates[1].relationship, RT_TRIP_CANCELED);

    size_t jlen;
    char *json = rt_feed_message_json(buf, len, &jlen);
    assert_non_null(json);
    assert_int_equal(strlen(json), jlen);
    assert_non_null(strstr(json, "\"gtfs_realtime_version\":\"2.0\""));
    assert_non_null(strstr(json, "\"incrementality\":\"FULL_DATASET\""));
    assert_non_null(strstr(json, "\"schedule_relationship\":\"CANCELED\""));
    assert_non_null(strstr(json, "\"stop_time_update\":[{\"stop_sequence\":3,\"departure\":{\"delay\":120}}"));
    free(json);
    rt_feed_free(out);
    free(buf);

    /* no feed: a header and nothing else */
    assert_int_equal(rt_encode_trip_updates(NULL, 7, &buf, &len), 0);
    out = rt_feed_decode(buf, len, err, sizeof err);
    assert_non_null(out);
    assert_int_equal(out->trip_update_count + out->alert_count, 0);
    rt_feed_free(out);
    free(buf);
    assert_null(rt_feed_message_json((const uint8_t *)"\xff\xff", 2, NULL));
}

static void test_alerts_round_trip(void **state)
{
    (void)state;
    alert_error e;
    const char *body = "{\"informed_entity\":[{\"stop_id\":\"S1\"},{\"trip\":{\"trip_id\":\"T1\","
                       "\"start_date\":\"20261102\"},\"direction_id\":0}],"
                       "\"active_period\":[{\"start\":1793000000,\"end\":1793003600}],"
                       "\"effect\":\"DETOUR\",\"cause\":\"STRIKE\","
                       "\"header_text\":{\"translation\":[{\"text\":\"Détour\",\"language\":\"fr\"}]},"
                       "\"url\":{\"translation\":[{\"text\":\"https://example.com\"}]}}";
    alert *stored = alert_parse(body, strlen(body), "al-1", false, &e);
    if (!stored)
        fail_msg("%s: %s", e.pointer, e.detail);
    assert_int_equal(alert_stamp(stored, 4, 1, 2), 0);
    alert *from_feed = alert_parse(body, strlen(body), "rt:x9", false, &e);
    assert_non_null(from_feed);
    assert_int_equal(alert_stamp(from_feed, 4, 1, 2), 0);
    const alert *both[2] = {stored, from_feed};
    uint8_t *buf;
    size_t len;
    assert_int_equal(rt_encode_alerts(both, 2, 99, &buf, &len), 0);
    char err[256];
    rt_feed *out = rt_feed_decode(buf, len, err, sizeof err);
    assert_non_null(out);
    assert_int_equal(out->alert_count, 2);
    assert_string_equal(out->alerts[0].entity_id, "al-1");
    assert_string_equal(out->alerts[1].entity_id, "x9");   /* the feed's own id */
    const rt_alert *a = &out->alerts[0];
    assert_int_equal(a->effect, 4);
    assert_int_equal(a->cause, 4);
    assert_int_equal(a->selector_count, 2);
    assert_string_equal(a->selectors[0].stop_id, "S1");
    assert_string_equal(a->selectors[1].trip_id, "T1");
    assert_int_equal(a->selectors[1].direction_id, 0);
    assert_int_equal(a->period_count, 1);
    assert_int_equal(a->periods[0].start, 1793000000);
    assert_string_equal(a->header.items[0].text, "Détour");
    assert_string_equal(a->header.items[0].language, "fr");
    assert_string_equal(a->url.items[0].text, "https://example.com");

    /* and a replica turns them into its own "rt:" alerts with the same fields */
    alert **again;
    uint32_t rejected;
    long n = rt_alerts_from_feed(out, 0, &again, &rejected, err, sizeof err);
    assert_int_equal(n, 2);
    assert_string_equal(again[0]->id, "rt:al-1");
    assert_int_equal(again[0]->nentities, 2);
    assert_int_equal(again[0]->entities[1].start_date, stored->entities[1].start_date);
    rt_alerts_free(again, (uint32_t)n);
    rt_feed_free(out);
    free(buf);
    alert_release(stored);
    alert_release(from_feed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trip_updates_round_trip),
        cmocka_unit_test(test_alerts_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
