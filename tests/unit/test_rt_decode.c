/* test_rt_decode.c — GTFS-Realtime decoding on fixtures this test builds by
 * packing protobuf-c messages: trip updates and alerts come out as plain
 * structs, entity rules drop only the bad entity, and malformed, truncated or
 * header-less input fails the whole feed with a clear message.
 */
#include "test_support.h"

#include "gtfs-realtime.pb-c.h"
#include "transit/rt_feed.h"

typedef TransitRealtime__FeedMessage FeedMessage;
typedef TransitRealtime__FeedHeader FeedHeader;
typedef TransitRealtime__FeedEntity FeedEntity;
typedef TransitRealtime__TripUpdate TripUpdate;
typedef TransitRealtime__TripDescriptor TripDescriptor;
typedef TransitRealtime__TripUpdate__StopTimeUpdate StopTimeUpdate;
typedef TransitRealtime__TripUpdate__StopTimeEvent StopTimeEvent;

/* Packs msg into a malloc'd buffer; *len gets its size. */
static uint8_t *pack(const FeedMessage *msg, size_t *len)
{
    *len = transit_realtime__feed_message__get_packed_size(msg);
    uint8_t *buf = malloc(*len ? *len : 1);
    assert_non_null(buf);
    assert_int_equal(transit_realtime__feed_message__pack(msg, buf), *len);
    return buf;
}

/* A feed: trip "T1" on 20240131 delayed 120 s at stop_sequence 3, its
 * stop 5 skipped; trip "T2" canceled; an alert on route R1 and stop S9. */
static uint8_t *sample_feed(size_t *len)
{
    FeedHeader header = TRANSIT_REALTIME__FEED_HEADER__INIT;
    header.gtfs_realtime_version = "2.0";
    header.has_timestamp = 1;
    header.timestamp = 1706700000;

    TripDescriptor td1 = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    td1.trip_id = "T1";
    td1.start_date = "20240131";
    td1.start_time = "25:10:00";
    StopTimeEvent ev = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_EVENT__INIT;
    ev.has_delay = 1;
    ev.delay = 120;
    StopTimeUpdate u1 = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__INIT;
    u1.has_stop_sequence = 1;
    u1.stop_sequence = 3;
    u1.departure = &ev;
    StopTimeUpdate u2 = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__INIT;
    u2.has_stop_sequence = 1;
    u2.stop_sequence = 5;
    u2.stop_id = "S5";
    u2.has_schedule_relationship = 1;
    u2.schedule_relationship = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__SCHEDULE_RELATIONSHIP__SKIPPED;
    StopTimeUpdate *stus[] = {&u1, &u2};
    TripUpdate tu1 = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu1.trip = &td1;
    tu1.n_stop_time_update = 2;
    tu1.stop_time_update = stus;
    FeedEntity e1 = TRANSIT_REALTIME__FEED_ENTITY__INIT;
    e1.id = "e1";
    e1.trip_update = &tu1;

    TripDescriptor td2 = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    td2.trip_id = "T2";
    td2.has_schedule_relationship = 1;
    td2.schedule_relationship = TRANSIT_REALTIME__TRIP_DESCRIPTOR__SCHEDULE_RELATIONSHIP__CANCELED;
    TripUpdate tu2 = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu2.trip = &td2;
    FeedEntity e2 = TRANSIT_REALTIME__FEED_ENTITY__INIT;
    e2.id = "e2";
    e2.trip_update = &tu2;

    TransitRealtime__EntitySelector sel1 = TRANSIT_REALTIME__ENTITY_SELECTOR__INIT;
    sel1.route_id = "R1";
    TransitRealtime__EntitySelector sel2 = TRANSIT_REALTIME__ENTITY_SELECTOR__INIT;
    sel2.stop_id = "S9";
    TransitRealtime__EntitySelector *sels[] = {&sel1, &sel2};
    TransitRealtime__TimeRange range = TRANSIT_REALTIME__TIME_RANGE__INIT;
    range.has_start = 1;
    range.start = 1706690000;
    TransitRealtime__TimeRange *ranges[] = {&range};
    TransitRealtime__TranslatedString__Translation tr = TRANSIT_REALTIME__TRANSLATED_STRING__TRANSLATION__INIT;
    tr.text = "Detour on R1";
    tr.language = "en";
    TransitRealtime__TranslatedString__Translation *trs[] = {&tr};
    TransitRealtime__TranslatedString header_text = TRANSIT_REALTIME__TRANSLATED_STRING__INIT;
    header_text.n_translation = 1;
    header_text.translation = trs;
    TransitRealtime__Alert alert = TRANSIT_REALTIME__ALERT__INIT;
    alert.n_informed_entity = 2;
    alert.informed_entity = sels;
    alert.n_active_period = 1;
    alert.active_period = ranges;
    alert.has_effect = 1;
    alert.effect = TRANSIT_REALTIME__ALERT__EFFECT__DETOUR;
    alert.header_text = &header_text;
    FeedEntity e3 = TRANSIT_REALTIME__FEED_ENTITY__INIT;
    e3.id = "a1";
    e3.alert = &alert;

    FeedEntity *entities[] = {&e1, &e2, &e3};
    FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    msg.n_entity = 3;
    msg.entity = entities;
    return pack(&msg, len);
}

static void test_trip_updates_and_alerts_decode(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = sample_feed(&len);
    char err[256] = "";
    rt_feed *f = rt_feed_decode(buf, len, err, sizeof err);
    free(buf);
    assert_non_null(f);
    assert_string_equal(f->version, "2.0");
    assert_int_equal(f->timestamp, 1706700000);
    assert_int_equal(f->trip_update_count, 2);
    assert_int_equal(f->rejected, 0);

    const rt_trip_update *t = &f->trip_updates[0];
    assert_string_equal(t->entity_id, "e1");
    assert_string_equal(t->trip_id, "T1");
    assert_string_equal(t->start_date, "20240131");
    assert_int_equal(t->start_day, 19753);           /* 2024-01-31 */
    assert_int_equal(t->start_secs, 25 * 3600 + 600);
    assert_int_equal(t->relationship, RT_TRIP_SCHEDULED);
    assert_int_equal(t->direction_id, -1);
    assert_null(t->route_id);
    assert_int_equal(t->stop_count, 2);
    assert_true(t->stops[0].has_stop_sequence);
    assert_int_equal(t->stops[0].stop_sequence, 3);
    assert_null(t->stops[0].stop_id);
    assert_false(t->stops[0].arrival.present);
    assert_true(t->stops[0].departure.present);
    assert_true(t->stops[0].departure.has_delay);
    assert_false(t->stops[0].departure.has_time);
    assert_int_equal(t->stops[0].departure.delay, 120);
    assert_int_equal(t->stops[1].relationship, RT_STOP_SKIPPED);
    assert_string_equal(t->stops[1].stop_id, "S5");

    assert_int_equal(f->trip_updates[1].relationship, RT_TRIP_CANCELED);
    assert_int_equal(f->trip_updates[1].stop_count, 0);
    assert_int_equal(f->trip_updates[1].start_day, INT32_MIN);

    assert_int_equal(f->alert_count, 1);
    const rt_alert *a = &f->alerts[0];
    assert_string_equal(a->entity_id, "a1");
    assert_int_equal(a->effect, 4);
    assert_int_equal(a->cause, 1);
    assert_int_equal(a->selector_count, 2);
    assert_string_equal(a->selectors[0].route_id, "R1");
    assert_int_equal(a->selectors[0].route_type, -1);
    assert_string_equal(a->selectors[1].stop_id, "S9");
    assert_int_equal(a->period_count, 1);
    assert_int_equal(a->periods[0].start, 1706690000);
    assert_int_equal(a->periods[0].end, 0);
    assert_int_equal(a->header.count, 1);
    assert_string_equal(a->header.items[0].text, "Detour on R1");
    assert_string_equal(a->header.items[0].language, "en");
    assert_int_equal(a->description.count, 0);
    rt_feed_free(f);
}

static void test_every_truncation_fails_cleanly(void **state)
{
    (void)state;
    size_t len;
    uint8_t *buf = sample_feed(&len);
    char err[256];
    /* Cutting the message anywhere either fails with a message or (at an
     * entity boundary) decodes fewer entities; it never crashes or leaks. */
    uint32_t failed = 0;
    for (size_t cut = 0; cut < len; cut++) {
        err[0] = 0;
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, buf, cut);
        rt_feed *f = rt_feed_decode(copy, cut, err, sizeof err);
        free(copy);
        if (!f) {
            failed++;
            assert_true(err[0] != 0);
        } else {
            assert_true(f->trip_update_count + f->alert_count < 3);
            rt_feed_free(f);
        }
    }
    assert_true(failed > len / 2);
    free(buf);
}

static void test_garbage_and_empty_input_fail(void **state)
{
    (void)state;
    char err[256] = "";
    const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02};
    assert_null(rt_feed_decode(garbage, sizeof garbage, err, sizeof err));
    assert_non_null(strstr(err, "malformed or truncated"));
    err[0] = 0;
    /* empty: the required header is missing */
    assert_null(rt_feed_decode((const uint8_t *)"", 0, err, sizeof err));
    assert_true(err[0] != 0);
}

static void test_header_rules(void **state)
{
    (void)state;
    FeedHeader header = TRANSIT_REALTIME__FEED_HEADER__INIT;
    header.gtfs_realtime_version = "3.0";
    FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    size_t len;
    char err[256] = "";
    uint8_t *buf = pack(&msg, &len);
    assert_null(rt_feed_decode(buf, len, err, sizeof err));
    assert_non_null(strstr(err, "unsupported gtfs_realtime_version \"3.0\""));
    free(buf);

    header.gtfs_realtime_version = "2.0";
    header.has_incrementality = 1;
    header.incrementality = TRANSIT_REALTIME__FEED_HEADER__INCREMENTALITY__DIFFERENTIAL;
    buf = pack(&msg, &len);
    assert_null(rt_feed_decode(buf, len, err, sizeof err));
    assert_non_null(strstr(err, "DIFFERENTIAL"));
    free(buf);

    header.has_incrementality = 0;
    buf = pack(&msg, &len);
    rt_feed *f = rt_feed_decode(buf, len, err, sizeof err);
    free(buf);
    assert_non_null(f);
    assert_int_equal(f->trip_update_count + f->alert_count, 0);
    rt_feed_free(f);
}

/* One entity of each kind of fault beside a good one: only the good one stays. */
static void test_bad_entities_are_rejected_alone(void **state)
{
    (void)state;
    FeedHeader header = TRANSIT_REALTIME__FEED_HEADER__INIT;
    header.gtfs_realtime_version = "2.0";

    TripDescriptor no_id = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    TripUpdate tu_no_id = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu_no_id.trip = &no_id;

    TripDescriptor bad_date = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    bad_date.trip_id = "T3";
    bad_date.start_date = "20240230";
    TripUpdate tu_bad_date = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu_bad_date.trip = &bad_date;

    TripDescriptor unsorted = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    unsorted.trip_id = "T4";
    StopTimeEvent ev = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_EVENT__INIT;
    ev.has_time = 1;
    ev.time = 1706700000;
    StopTimeUpdate a = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__INIT;
    a.has_stop_sequence = 1;
    a.stop_sequence = 7;
    a.arrival = &ev;
    StopTimeUpdate b = a;
    b.stop_sequence = 2;
    StopTimeUpdate *ab[] = {&a, &b};
    TripUpdate tu_unsorted = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu_unsorted.trip = &unsorted;
    tu_unsorted.n_stop_time_update = 2;
    tu_unsorted.stop_time_update = ab;

    TripDescriptor empty_stu = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    empty_stu.trip_id = "T5";
    StopTimeUpdate nothing = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__INIT;
    nothing.has_stop_sequence = 1;
    nothing.stop_sequence = 1;
    StopTimeUpdate *nothings[] = {&nothing};
    TripUpdate tu_empty = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu_empty.trip = &empty_stu;
    tu_empty.n_stop_time_update = 1;
    tu_empty.stop_time_update = nothings;

    TripDescriptor good = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    good.trip_id = "T6";
    TripUpdate tu_good = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu_good.trip = &good;
    tu_good.n_stop_time_update = 1;
    StopTimeUpdate *firsts[] = {&a};
    tu_good.stop_time_update = firsts;

    FeedEntity e[5];
    TripUpdate *tus[5] = {&tu_no_id, &tu_bad_date, &tu_unsorted, &tu_empty, &tu_good};
    const char *ids[5] = {"no-id", "bad-date", "unsorted", "empty", "good"};
    FeedEntity *ep[7];
    for (int i = 0; i < 5; i++) {
        FeedEntity init = TRANSIT_REALTIME__FEED_ENTITY__INIT;
        e[i] = init;
        e[i].id = (char *)ids[i];
        e[i].trip_update = tus[i];
        ep[i] = &e[i];
    }
    /* a deleted entity is ignored; a vehicle position is read (rt_vehicle.h) */
    FeedEntity deleted = TRANSIT_REALTIME__FEED_ENTITY__INIT;
    deleted.id = "gone";
    deleted.has_is_deleted = 1;
    deleted.is_deleted = 1;
    ep[5] = &deleted;
    TransitRealtime__Position pos = TRANSIT_REALTIME__POSITION__INIT;
    pos.latitude = 40.5f;
    pos.longitude = -73.9f;
    TransitRealtime__VehiclePosition vp = TRANSIT_REALTIME__VEHICLE_POSITION__INIT;
    vp.position = &pos;
    FeedEntity vehicle = TRANSIT_REALTIME__FEED_ENTITY__INIT;
    vehicle.id = "bus-1";
    vehicle.vehicle = &vp;
    ep[6] = &vehicle;
    FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    msg.n_entity = 7;
    msg.entity = ep;
    size_t len;
    char err[256] = "";
    uint8_t *buf = pack(&msg, &len);
    rt_feed *f = rt_feed_decode(buf, len, err, sizeof err);
    free(buf);
    assert_non_null(f);
    assert_int_equal(f->trip_update_count, 1);
    assert_string_equal(f->trip_updates[0].trip_id, "T6");
    assert_int_equal(f->rejected, 4);
    assert_int_equal(f->ignored, 1);
    assert_int_equal(f->vehicle_count, 1);
    assert_string_equal(f->vehicles[0].key, "bus-1");
    assert_true(f->vehicles[0].has_position);
    assert_string_equal(f->first_rejection, "entity \"no-id\": trip_update without a trip_id");
    rt_feed_free(f);
}

/* One trip update entity, decoded alone: the feed (or NULL) and its first rejection. */
static rt_feed *decode_one(TripUpdate *tu, const char *id)
{
    FeedHeader header = TRANSIT_REALTIME__FEED_HEADER__INIT;
    header.gtfs_realtime_version = "2.0";
    FeedEntity e = TRANSIT_REALTIME__FEED_ENTITY__INIT;
    e.id = (char *)id;
    e.trip_update = tu;
    FeedEntity *ep[] = {&e};
    FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    msg.n_entity = 1;
    msg.entity = ep;
    size_t len;
    char err[256] = "";
    uint8_t *buf = pack(&msg, &len);
    rt_feed *f = rt_feed_decode(buf, len, err, sizeof err);
    free(buf);
    assert_non_null(f);
    return f;
}

static void test_new_duplicated_and_trip_properties(void **state)
{
    (void)state;
    /* NEW: accepted like ADDED, TripProperties kept */
    TripDescriptor td = TRANSIT_REALTIME__TRIP_DESCRIPTOR__INIT;
    td.trip_id = "X1";
    td.route_id = "R1";
    td.has_schedule_relationship = 1;
    td.schedule_relationship = TRANSIT_REALTIME__TRIP_DESCRIPTOR__SCHEDULE_RELATIONSHIP__NEW;
    TransitRealtime__TripUpdate__TripProperties props = TRANSIT_REALTIME__TRIP_UPDATE__TRIP_PROPERTIES__INIT;
    props.trip_headsign = "Extra";
    props.trip_short_name = "X";
    props.shape_id = "SH1";
    TripUpdate tu = TRANSIT_REALTIME__TRIP_UPDATE__INIT;
    tu.trip = &td;
    tu.trip_properties = &props;
    rt_feed *f = decode_one(&tu, "new");
    assert_int_equal(f->trip_update_count, 1);
    assert_int_equal(f->trip_updates[0].relationship, RT_TRIP_NEW);
    assert_string_equal(f->trip_updates[0].headsign, "Extra");
    assert_string_equal(f->trip_updates[0].short_name, "X");
    assert_string_equal(f->trip_updates[0].shape_id, "SH1");
    assert_null(f->trip_updates[0].new_trip_id);
    rt_feed_free(f);

    /* DUPLICATED: trip_id, start_date and start_time of TripProperties are required */
    td.route_id = NULL;
    td.schedule_relationship = TRANSIT_REALTIME__TRIP_DESCRIPTOR__SCHEDULE_RELATIONSHIP__DUPLICATED;
    tu.trip_properties = NULL;
    f = decode_one(&tu, "d0");
    assert_int_equal(f->trip_update_count, 0);
    assert_string_equal(f->first_rejection, "entity \"d0\": DUPLICATED trip without trip_properties.trip_id");
    rt_feed_free(f);
    TransitRealtime__TripUpdate__TripProperties dup = TRANSIT_REALTIME__TRIP_UPDATE__TRIP_PROPERTIES__INIT;
    dup.trip_id = "X1-copy";
    dup.start_date = "20261102";
    dup.start_time = "9:30";
    tu.trip_properties = &dup;
    f = decode_one(&tu, "d1");
    assert_int_equal(f->trip_update_count, 0);
    assert_string_equal(f->first_rejection,
                        "entity \"d1\": DUPLICATED trip: trip_properties.start_time \"9:30\" is not HH:MM:SS");
    rt_feed_free(f);
    dup.start_time = "25:30:00";
    f = decode_one(&tu, "d2");
    assert_int_equal(f->trip_update_count, 1);
    assert_string_equal(f->trip_updates[0].new_trip_id, "X1-copy");
    assert_int_equal(f->trip_updates[0].new_start_secs, 25 * 3600 + 30 * 60);
    int32_t day;
    assert_true(rt_parse_date("20261102", &day));
    assert_int_equal(f->trip_updates[0].new_start_day, day);
    rt_feed_free(f);

    /* assigned_stop_id: kept; an empty one rejects the entity, naming the field */
    td.schedule_relationship = TRANSIT_REALTIME__TRIP_DESCRIPTOR__SCHEDULE_RELATIONSHIP__SCHEDULED;
    tu.trip_properties = NULL;
    StopTimeEvent ev = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_EVENT__INIT;
    ev.has_delay = 1;
    TransitRealtime__TripUpdate__StopTimeUpdate__StopTimeProperties sp =
        TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__STOP_TIME_PROPERTIES__INIT;
    sp.assigned_stop_id = "P2";
    StopTimeUpdate u = TRANSIT_REALTIME__TRIP_UPDATE__STOP_TIME_UPDATE__INIT;
    u.has_stop_sequence = 1;
    u.stop_sequence = 1;
    u.departure = &ev;
    u.stop_time_properties = &sp;
    StopTimeUpdate *us[] = {&u};
    tu.n_stop_time_update = 1;
    tu.stop_time_update = us;
    f = decode_one(&tu, "p1");
    assert_int_equal(f->trip_update_count, 1);
    assert_string_equal(f->trip_updates[0].stops[0].assigned_stop_id, "P2");
    rt_feed_free(f);
    sp.assigned_stop_id = "";
    f = decode_one(&tu, "p2");
    assert_int_equal(f->trip_update_count, 0);
    assert_string_equal(f->first_rejection,
                        "entity \"p2\": stop_time_update 0: stop_time_properties.assigned_stop_id is empty");
    rt_feed_free(f);
}

static void test_date_and_time_parsing(void **state)
{
    (void)state;
    int32_t v;
    assert_true(rt_parse_date("19700101", &v));
    assert_int_equal(v, 0);
    assert_true(rt_parse_date("20240229", &v));
    assert_false(rt_parse_date("20230229", &v));
    assert_false(rt_parse_date("2024-01-01", &v));
    assert_false(rt_parse_date("20241301", &v));
    assert_true(rt_parse_time("8:05:09", &v));
    assert_int_equal(v, 8 * 3600 + 309);
    assert_true(rt_parse_time("47:59:59", &v));
    assert_false(rt_parse_time("08:60:00", &v));
    assert_false(rt_parse_time("0805:00", &v));
    assert_false(rt_parse_time("", &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trip_updates_and_alerts_decode),
        cmocka_unit_test(test_every_truncation_fails_cleanly),
        cmocka_unit_test(test_garbage_and_empty_input_fail),
        cmocka_unit_test(test_header_rules),
        cmocka_unit_test(test_bad_entities_are_rejected_alone),
        cmocka_unit_test(test_new_duplicated_and_trip_properties),
        cmocka_unit_test(test_date_and_time_parsing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
