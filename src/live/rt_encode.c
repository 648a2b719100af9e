/* rt_encode.c — trip updates and alerts packed as GTFS-Realtime; see rt_encode.h.
 *
 * The second (and last) file that knows protobuf-c: the messages are built
 * in arrays allocated for one encoding, pointing at the caller's strings,
 * packed, and freed. The JSON form walks the generated descriptors, so it
 * follows the .proto without a line per field.
 */
#include "transit/rt_encode.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtfs-realtime.pb-c.h"
#include "transit/rt_alerts.h"

typedef TransitRealtime__FeedMessage FeedMessage;
typedef TransitRealtime__FeedEntity FeedEntity;

static int pack_message(const FeedMessage *msg, uint8_t **out, size_t *len)
{
    size_t n = transit_realtime__feed_message__get_packed_size(msg);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return -1;
    transit_realtime__feed_message__pack(msg, buf);
    *out = buf;
    *len = n;
    return 0;
}

static void init_header(TransitRealtime__FeedHeader *h, uint64_t timestamp)
{
    transit_realtime__feed_header__init(h);
    h->gtfs_realtime_version = "2.0";
    h->has_incrementality = 1;
    h->incrementality = TRANSIT_REALTIME__FEED_HEADER__INCREMENTALITY__FULL_DATASET;
    h->has_timestamp = 1;
    h->timestamp = timestamp;
}

static void set_event(TransitRealtime__TripUpdate__StopTimeEvent *pe, const rt_event *e)
{
    transit_realtime__trip_update__stop_time_event__init(pe);
    pe->has_delay = e->has_delay;
    pe->delay = e->delay;
    pe->has_time = e->has_time;
    pe->time = e->time;
    pe->has_uncertainty = e->has_uncertainty;
    pe->uncertainty = e->uncertainty;
}

int rt_encode_trip_updates(const rt_feed *feed, uint64_t timestamp, uint8_t **out, size_t *len)
{
    uint32_t n = feed ? feed->trip_update_count : 0;
    size_t nstops = 0;
    uint32_t most = 0;   /* stops of one trip update: room to unpack packed ones */
    for (uint32_t i = 0; i < n; i++) {
        nstops += feed->trip_updates[i].stop_count;
        if (feed->trip_updates[i].stop_count > most) most = feed->trip_updates[i].stop_count;
    }
    TransitRealtime__FeedHeader header;
    init_header(&header, timestamp);
    FeedEntity *ents = calloc(n + 1, sizeof *ents);
    FeedEntity **ent_ptrs = calloc(n + 1, sizeof *ent_ptrs);
    TransitRealtime__TripUpdate *tus = calloc(n + 1, sizeof *tus);
    TransitRealtime__TripDescriptor *tds = calloc(n + 1, sizeof *tds);
    TransitRealtime__VehicleDescriptor *vds = calloc(n + 1, sizeof *vds);
    TransitRealtime__TripUpdate__StopTimeUpdate *stus = calloc(nstops + 1, sizeof *stus);
    TransitRealtime__TripUpdate__StopTimeUpdate **stu_ptrs = calloc(nstops + 1, sizeof *stu_ptrs);
    TransitRealtime__TripUpdate__StopTimeEvent *events = calloc(2 * nstops + 1, sizeof *events);
    TransitRealtime__TripUpdate__TripProperties *props = calloc(n + 1, sizeof *props);
    TransitRealtime__TripUpdate__StopTimeUpdate__StopTimeProperties *stop_props =
        calloc(nstops + 1, sizeof *stop_props);
    rt_stop_update *room = malloc(((size_t)most + 1) * sizeof *room);
    int rc = -1;
    if (!ents || !ent_ptrs || !tus || !tds || !vds || !stus || !stu_ptrs || !events || !props || !stop_props ||
        !room)
        goto done;
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const rt_trip_update *t = &feed->trip_updates[i];
        TransitRealtime__TripDescriptor *td = &tds[i];
        transit_realtime__trip_descriptor__init(td);
        td->trip_id = (char *)t->trip_id;
        td->route_id = (char *)t->route_id;
        td->start_time = (char *)t->start_time;
        td->start_date = (char *)t->start_date;
        td->has_direction_id = t->direction_id >= 0;
        td->direction_id = t->direction_id >= 0 ? (uint32_t)t->direction_id : 0;
        td->has_schedule_relationship = t->relationship != RT_TRIP_SCHEDULED;
        td->schedule_relationship = (TransitRealtime__TripDescriptor__ScheduleRelationship)t->relationship;
        TransitRealtime__TripUpdate *tu = &tus[i];
        transit_realtime__trip_update__init(tu);
        tu->trip = td;
        if (t->vehicle_id || t->vehicle_label) {
            transit_realtime__vehicle_descriptor__init(&vds[i]);
            vds[i].id = (char *)t->vehicle_id;
            vds[i].label = (char *)t->vehicle_label;
            tu->vehicle = &vds[i];
        }
        tu->has_timestamp = t->has_timestamp;
        tu->timestamp = t->timestamp;
        tu->has_delay = t->has_delay;
        tu->delay = t->delay;
        if (t->new_trip_id || t->shape_id || t->headsign || t->short_name) {
            transit_realtime__trip_update__trip_properties__init(&props[i]);
            props[i].trip_id = (char *)t->new_trip_id;
            props[i].start_date = (char *)t->new_start_date;
            props[i].start_time = (char *)t->new_start_time;
            props[i].shape_id = (char *)t->shape_id;
            props[i].trip_headsign = (char *)t->headsign;
            props[i].trip_short_name = (char *)t->short_name;
            tu->trip_properties = &props[i];
        }
        tu->n_stop_time_update = t->stop_count;
        tu->stop_time_update = t->stop_count ? &stu_ptrs[k] : NULL;
        const rt_stop_update *stops = rt_trip_update_stops(t, room);   /* copied from below: room is reused */
        for (uint32_t s = 0; s < t->stop_count; s++, k++) {
            const rt_stop_update *su = &stops[s];
            TransitRealtime__TripUpdate__StopTimeUpdate *p = &stus[k];
            transit_realtime__trip_update__stop_time_update__init(p);
            p->has_stop_sequence = su->has_stop_sequence;
            p->stop_sequence = su->stop_sequence;
            p->stop_id = (char *)su->stop_id;
            p->has_schedule_relationship = su->relationship != RT_STOP_SCHEDULED;
            p->schedule_relationship =
                (TransitRealtime__TripUpdate__StopTimeUpdate__ScheduleRelationship)su->relationship;
            p->has_departure_occupancy_status = su->departure_occupancy != 0;
            p->departure_occupancy_status =
                (TransitRealtime__VehiclePosition__OccupancyStatus)(su->departure_occupancy ? su->departure_occupancy - 1 : 0);
            if (su->assigned_stop_id) {
                transit_realtime__trip_update__stop_time_update__stop_time_properties__init(&stop_props[k]);
                stop_props[k].assigned_stop_id = (char *)su->assigned_stop_id;
                p->stop_time_properties = &stop_props[k];
            }
            if (su->arrival.present) {
                set_event(&events[2 * k], &su->arrival);
                p->arrival = &events[2 * k];
            }
            if (su->departure.present) {
                set_event(&events[2 * k + 1], &su->departure);
                p->departure = &events[2 * k + 1];
            }
            stu_ptrs[k] = p;
        }
        transit_realtime__feed_entity__init(&ents[i]);
        ents[i].id = (char *)(t->entity_id ? t->entity_id : "");
        ents[i].trip_update = tu;
        ent_ptrs[i] = &ents[i];
    }
    FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    msg.n_entity = n;
    msg.entity = n ? ent_ptrs : NULL;
    rc = pack_message(&msg, out, len);
done:
    free(ents);
    free(ent_ptrs);
    free(tus);
    free(tds);
    free(vds);
    free(stus);
    free(stu_ptrs);
    free(events);
    free(props);
    free(stop_props);
    free(room);
    return rc;
}

/* ------------------------------------------------------------ alerts */

/* The enum value of `name` in `desc`, or `fallback`. */
static int enum_value(const ProtobufCEnumDescriptor *desc, const char *name, int fallback)
{
    const ProtobufCEnumValue *v = name ? protobuf_c_enum_descriptor_get_value_by_name(desc, name) : NULL;
    return v ? v->value : fallback;
}

/* Per-alert storage for one encoding. */
typedef struct alert_parts {
    TransitRealtime__Alert alert;
    TransitRealtime__TimeRange *ranges;
    TransitRealtime__TimeRange **range_ptrs;
    TransitRealtime__EntitySelector *sels;
    TransitRealtime__EntitySelector **sel_ptrs;
    TransitRealtime__TripDescriptor *trips;
    char (*dates)[9];
    TransitRealtime__TranslatedString texts[3];
    TransitRealtime__TranslatedString__Translation *translations;
    TransitRealtime__TranslatedString__Translation **translation_ptrs;
    json_t *content;
} alert_parts;

static void free_parts(alert_parts *p)
{
    free(p->ranges);
    free(p->range_ptrs);
    free(p->sels);
    free(p->sel_ptrs);
    free(p->trips);
    free(p->dates);
    free(p->translations);
    free(p->translation_ptrs);
    if (p->content) json_decref(p->content);
}

static void civil_from_days(int32_t z, int *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int32_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int yy = (int)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

static int build_alert(const alert *a, alert_parts *p)
{
    transit_realtime__alert__init(&p->alert);
    TransitRealtime__Alert *al = &p->alert;
    p->content = json_loadb(a->content, a->content_len, 0, NULL);
    if (!p->content) return -1;
    if (a->nperiods) {
        p->ranges = calloc(a->nperiods, sizeof *p->ranges);
        p->range_ptrs = calloc(a->nperiods, sizeof *p->range_ptrs);
        if (!p->ranges || !p->range_ptrs) return -1;
        for (uint32_t i = 0; i < a->nperiods; i++) {
            transit_realtime__time_range__init(&p->ranges[i]);
            if (a->periods[i].start != INT64_MIN && a->periods[i].start >= 0) {
                p->ranges[i].has_start = 1;
                p->ranges[i].start = (uint64_t)a->periods[i].start;
            }
            if (a->periods[i].end != INT64_MAX && a->periods[i].end >= 0) {
                p->ranges[i].has_end = 1;
                p->ranges[i].end = (uint64_t)a->periods[i].end;
            }
            p->range_ptrs[i] = &p->ranges[i];
        }
        al->n_active_period = a->nperiods;
        al->active_period = p->range_ptrs;
    }
    if (a->nentities) {
        p->sels = calloc(a->nentities, sizeof *p->sels);
        p->sel_ptrs = calloc(a->nentities, sizeof *p->sel_ptrs);
        p->trips = calloc(a->nentities, sizeof *p->trips);
        p->dates = calloc(a->nentities, sizeof *p->dates);
        if (!p->sels || !p->sel_ptrs || !p->trips || !p->dates) return -1;
        for (uint32_t i = 0; i < a->nentities; i++) {
            const alert_entity *e = &a->entities[i];
            TransitRealtime__EntitySelector *s = &p->sels[i];
            transit_realtime__entity_selector__init(s);
            s->agency_id = (char *)e->agency_id;
            s->route_id = (char *)e->route_id;
            s->stop_id = (char *)e->stop_id;
            s->has_route_type = e->route_type >= 0;
            s->route_type = e->route_type;
            s->has_direction_id = e->direction_id >= 0;
            s->direction_id = e->direction_id >= 0 ? (uint32_t)e->direction_id : 0;
            if (e->trip_id) {
                transit_realtime__trip_descriptor__init(&p->trips[i]);
                p->trips[i].trip_id = (char *)e->trip_id;
                if (e->start_date != ALERT_NONE_DATE) {
                    int y;
                    unsigned m, d;
                    civil_from_days(e->start_date, &y, &m, &d);
                    snprintf(p->dates[i], sizeof p->dates[i], "%04d%02u%02u", y % 10000, m % 100, d % 100);
                    p->trips[i].start_date = p->dates[i];
                }
                s->trip = &p->trips[i];
            }
            p->sel_ptrs[i] = s;
        }
        al->n_informed_entity = a->nentities;
        al->informed_entity = p->sel_ptrs;
    }
    const char *cause = json_string_value(json_object_get(p->content, "cause"));
    const char *effect = json_string_value(json_object_get(p->content, "effect"));
    const char *severity = json_string_value(json_object_get(p->content, "severity_level"));
    al->has_cause = 1;
    al->cause = enum_value(&transit_realtime__alert__cause__descriptor, cause, 1);
    al->has_effect = 1;
    al->effect = enum_value(&transit_realtime__alert__effect__descriptor, effect, 8);
    al->has_severity_level = 1;
    al->severity_level = enum_value(&transit_realtime__alert__severity_level__descriptor, severity, 1);
    static const char *const text_keys[3] = {"header_text", "description_text", "url"};
    size_t ntr = 0;
    for (int t = 0; t < 3; t++)
        ntr += json_array_size(json_object_get(json_object_get(p->content, text_keys[t]), "translation"));
    p->translations = calloc(ntr + 1, sizeof *p->translations);
    p->translation_ptrs = calloc(ntr + 1, sizeof *p->translation_ptrs);
    if (!p->translations || !p->translation_ptrs) return -1;
    size_t k = 0;
    for (int t = 0; t < 3; t++) {
        json_t *arr = json_object_get(json_object_get(p->content, text_keys[t]), "translation");
        if (!json_array_size(arr)) continue;
        TransitRealtime__TranslatedString *ts = &p->texts[t];
        transit_realtime__translated_string__init(ts);
        ts->translation = &p->translation_ptrs[k];
        for (size_t i = 0; i < json_array_size(arr); i++, k++) {
            json_t *tr = json_array_get(arr, i);
            transit_realtime__translated_string__translation__init(&p->translations[k]);
            const char *text = json_string_value(json_object_get(tr, "text"));
            p->translations[k].text = (char *)(text ? text : "");
            p->translations[k].language = (char *)json_string_value(json_object_get(tr, "language"));
            p->translation_ptrs[k] = &p->translations[k];
            ts->n_translation++;
        }
        if (t == 0) al->header_text = ts;
        else if (t == 1) al->description_text = ts;
        else al->url = ts;
    }
    return 0;
}

int rt_encode_alerts(const alert *const *alerts, uint32_t n, uint64_t timestamp, uint8_t **out,
                     size_t *len)
{
    TransitRealtime__FeedHeader header;
    init_header(&header, timestamp);
    alert_parts *parts = calloc(n + 1, sizeof *parts);
    FeedEntity *ents = calloc(n + 1, sizeof *ents);
    FeedEntity **ent_ptrs = calloc(n + 1, sizeof *ent_ptrs);
    int rc = -1;
    uint32_t built = 0;
    if (!parts || !ents || !ent_ptrs) goto done;
    for (; built < n; built++) {
        const alert *a = alerts[built];
        if (build_alert(a, &parts[built]) != 0) {
            built++;
            goto done;
        }
        transit_realtime__feed_entity__init(&ents[built]);
        ents[built].id = (char *)(rt_alert_id(a->id) ? a->id + sizeof RT_ALERT_ID_PREFIX - 1 : a->id);
        ents[built].alert = &parts[built].alert;
        ent_ptrs[built] = &ents[built];
    }
    FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
    msg.header = &header;
    msg.n_entity = n;
    msg.entity = n ? ent_ptrs : NULL;
    rc = pack_message(&msg, out, len);
done:
    if (parts)
        for (uint32_t i = 0; i < built; i++) free_parts(&parts[i]);
    free(parts);
    free(ents);
    free(ent_ptrs);
    return rc;
}

/* ------------------------------------------------------------ JSON */

static json_t *message_json(const ProtobufCMessage *m);

static size_t element_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

static json_t *value_json(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
        return json_integer(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        return json_integer(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        return json_integer(*(const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        return json_integer((json_int_t)*(const uint64_t *)p);
    case PROTOBUF_C_TYPE_FLOAT:
        return json_real(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE:
        return json_real(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL:
        return json_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM: {
        int v = *(const int *)p;
        const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
        return ev ? json_string(ev->name) : json_integer(v);
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return s ? json_string(s) : json_null();
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        return json_stringn((const char *)b->data, b->len);
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *m = *(ProtobufCMessage *const *)p;
        return m ? message_json(m) : json_null();
    }
    }
    return json_null();
}

static json_t *message_json(const ProtobufCMessage *m)
{
    json_t *obj = json_object();
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const void *at = base + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t count = *(const size_t *)(base + f->quantifier_offset);
            if (!count) continue;
            const char *arr = *(char *const *)at;
            json_t *list = json_array();
            for (size_t k = 0; k < count; k++) json_array_append_new(list, value_json(f, arr + k * element_size(f->type)));
            json_object_set_new(obj, f->name, list);
            continue;
        }
        bool present;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE || f->type == PROTOBUF_C_TYPE_STRING)
            present = *(void *const *)at != NULL;
        else if (f->label == PROTOBUF_C_LABEL_REQUIRED)
            present = true;
        else
            present = *(const protobuf_c_boolean *)(base + f->quantifier_offset);
        if (present) json_object_set_new(obj, f->name, value_json(f, at));
    }
    return obj;
}

char *rt_feed_message_json(const uint8_t *data, size_t len, size_t *json_len)
{
    FeedMessage *msg = transit_realtime__feed_message__unpack(NULL, len, data);
    if (!msg) return NULL;
    json_t *root = message_json(&msg->base);
    transit_realtime__feed_message__free_unpacked(msg, NULL);
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    if (root) json_decref(root);
    if (text && json_len) *json_len = strlen(text);
    return text;
}
