/* rt_vehicle.c — one GTFS-Realtime VehiclePosition into an rt_vehicle (rt_vehicle.h).
 *
 * Why it exists: vehicle positions come in the same FeedMessages as trip
 * updates and alerts, and rt_feed.c hands each one here (see rt_vehicle.h),
 * so that the checks of a position (coordinates on the globe, a bearing in
 * degrees, enums the spec knows) live in one file beside the trip-update
 * decoder instead of inside it. Like rt_feed.c it sees protobuf-c types;
 * what it keeps is copied into the feed's arena.
 */
#include "transit/rt_feed.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gtfs-realtime.pb-c.h"

/* The trip a vehicle serves; false when the descriptor breaks a rule. */
static bool decode_trip(rt_feed *f, const char *entity_id, const TransitRealtime__TripDescriptor *td,
                        rt_vehicle *out, bool *oom)
{
    out->start_day = INT32_MIN;
    out->start_secs = -1;
    out->direction_id = -1;
    out->trip_relationship = -1;
    if (!td)
        return true;
    if (td->start_date && !rt_parse_date(td->start_date, &out->start_day)) {
        rt_feed_reject(f, entity_id, "vehicle's start_date \"%.16s\" is not YYYYMMDD", td->start_date);
        return false;
    }
    if (td->start_time && !rt_parse_time(td->start_time, &out->start_secs)) {
        rt_feed_reject(f, entity_id, "vehicle's start_time \"%.16s\" is not HH:MM:SS", td->start_time);
        return false;
    }
    out->trip_relationship = td->has_schedule_relationship ? (int)td->schedule_relationship : RT_TRIP_SCHEDULED;
    if (out->trip_relationship < 0 || out->trip_relationship > 8 || out->trip_relationship == 4) {
        rt_feed_reject(f, entity_id, "unknown vehicle trip schedule_relationship %d", out->trip_relationship);
        return false;
    }
    out->direction_id = td->has_direction_id && td->direction_id <= 1 ? (int)td->direction_id : -1;
    out->trip_id = td->trip_id && td->trip_id[0] ? rt_feed_strdup(f, td->trip_id, oom) : NULL;
    out->route_id = td->route_id && td->route_id[0] ? rt_feed_strdup(f, td->route_id, oom) : NULL;
    out->start_date = rt_feed_strdup(f, td->start_date, oom);
    out->start_time = rt_feed_strdup(f, td->start_time, oom);
    return true;
}

static bool decode_position(rt_feed *f, const char *entity_id, const TransitRealtime__Position *p, rt_vehicle *out)
{
    if (!p)
        return true;
    if (!isfinite(p->latitude) || !isfinite(p->longitude) || fabsf(p->latitude) > 90.0f ||
        fabsf(p->longitude) > 180.0f) {
        rt_feed_reject(f, entity_id, "vehicle position (%.6g, %.6g) is not a latitude and longitude",
                       (double)p->latitude, (double)p->longitude);
        return false;
    }
    if (p->has_bearing && (!isfinite(p->bearing) || p->bearing < 0.0f || p->bearing > 360.0f)) {
        rt_feed_reject(f, entity_id, "vehicle bearing %.6g is not degrees 0-360", (double)p->bearing);
        return false;
    }
    if (p->has_speed && (!isfinite(p->speed) || p->speed < 0.0f)) {
        rt_feed_reject(f, entity_id, "vehicle speed %.6g is not metres per second", (double)p->speed);
        return false;
    }
    out->has_position = true;
    out->latitude = p->latitude;
    out->longitude = p->longitude;
    out->has_bearing = p->has_bearing;
    out->bearing = p->has_bearing ? p->bearing : 0.0f;
    out->has_speed = p->has_speed;
    out->speed = p->has_speed ? p->speed : 0.0f;
    out->has_odometer = p->has_odometer && isfinite(p->odometer);
    out->odometer = out->has_odometer ? p->odometer : 0.0;
    return true;
}

/* multi_carriage_details: each carriage's id, label, occupancy and place in
 * the train; false when one breaks a rule (its reason recorded) or *oom. */
static bool decode_carriages(rt_feed *f, const char *entity_id, const TransitRealtime__VehiclePosition *vp,
                             rt_vehicle *out, bool *oom)
{
    if (!vp->n_multi_carriage_details)
        return true;
    if (vp->n_multi_carriage_details > RT_CARRIAGES_MAX) {
        rt_feed_reject(f, entity_id, "vehicle has %zu multi_carriage_details (at most %d)",
                       vp->n_multi_carriage_details, RT_CARRIAGES_MAX);
        return false;
    }
    uint32_t n = (uint32_t)vp->n_multi_carriage_details;
    rt_carriage *c = rt_feed_alloc(f, n * sizeof *c);
    if (!c) {
        *oom = true;
        return false;
    }
    for (uint32_t i = 0; i < n; i++) {
        const TransitRealtime__VehiclePosition__CarriageDetails *d = vp->multi_carriage_details[i];
        if (d->has_occupancy_status && (unsigned)d->occupancy_status > RT_OCCUPANCY_MAX) {
            rt_feed_reject(f, entity_id, "multi_carriage_details %u: unknown occupancy_status %d", i,
                           (int)d->occupancy_status);
            return false;
        }
        if (d->has_occupancy_percentage && (d->occupancy_percentage < -1 || d->occupancy_percentage > 1000)) {
            rt_feed_reject(f, entity_id, "multi_carriage_details %u: occupancy_percentage %d is not -1 to 1000", i,
                           (int)d->occupancy_percentage);
            return false;
        }
        if (d->has_carriage_sequence && d->carriage_sequence == 0) {
            rt_feed_reject(f, entity_id, "multi_carriage_details %u: carriage_sequence is 0 (the first is 1)", i);
            return false;
        }
        c[i].id = d->id && d->id[0] ? rt_feed_strdup(f, d->id, oom) : NULL;
        c[i].label = d->label && d->label[0] ? rt_feed_strdup(f, d->label, oom) : NULL;
        c[i].occupancy_status = d->has_occupancy_status ? (int)d->occupancy_status : -1;
        c[i].occupancy_percentage = d->has_occupancy_percentage ? (int)d->occupancy_percentage : -1;
        c[i].has_sequence = d->has_carriage_sequence;
        c[i].carriage_sequence = d->carriage_sequence;
    }
    out->carriages = c;
    out->carriage_count = n;
    return !*oom;
}

bool rt_vehicle_decode(rt_feed *f, const char *entity_id, const TransitRealtime__VehiclePosition *vp,
                       rt_vehicle *out, bool *oom)
{
    memset(out, 0, sizeof *out);
    if (!decode_trip(f, entity_id, vp->trip, out, oom) || !decode_position(f, entity_id, vp->position, out))
        return false;
    if (vp->has_current_status && (unsigned)vp->current_status > RT_VEHICLE_IN_TRANSIT_TO) {
        rt_feed_reject(f, entity_id, "unknown vehicle current_status %d", (int)vp->current_status);
        return false;
    }
    if (vp->has_occupancy_status && (unsigned)vp->occupancy_status > RT_OCCUPANCY_MAX) {
        rt_feed_reject(f, entity_id, "unknown vehicle occupancy_status %d", (int)vp->occupancy_status);
        return false;
    }
    if (vp->has_occupancy_percentage && vp->occupancy_percentage > 1000) {
        /* the spec allows over 100 (a crowded vehicle), not a thousand */
        rt_feed_reject(f, entity_id, "vehicle occupancy_percentage %u is past 1000", vp->occupancy_percentage);
        return false;
    }
    const TransitRealtime__VehicleDescriptor *vd = vp->vehicle;
    out->entity_id = rt_feed_strdup(f, entity_id, oom);
    if (vd) {
        out->id = vd->id && vd->id[0] ? rt_feed_strdup(f, vd->id, oom) : NULL;
        out->label = rt_feed_strdup(f, vd->label, oom);
        out->license_plate = rt_feed_strdup(f, vd->license_plate, oom);
    }
    out->key = out->id ? out->id : out->entity_id;
    out->has_stop_sequence = vp->has_current_stop_sequence;
    out->current_stop_sequence = vp->current_stop_sequence;
    out->stop_id = vp->stop_id && vp->stop_id[0] ? rt_feed_strdup(f, vp->stop_id, oom) : NULL;
    /* current_status means nothing without a stop (the spec: "ignored if
     * current_stop_sequence is missing"; stop_id names one as well) */
    out->current_status = !out->has_stop_sequence && !out->stop_id ? -1
                          : vp->has_current_status ? (int)vp->current_status
                                                   : RT_VEHICLE_IN_TRANSIT_TO;
    out->has_timestamp = vp->has_timestamp || f->timestamp != 0;
    out->timestamp = vp->has_timestamp ? vp->timestamp : f->timestamp;
    out->congestion_level = vp->has_congestion_level && (unsigned)vp->congestion_level <= 4
                                ? (int)vp->congestion_level : -1;
    out->occupancy_status = vp->has_occupancy_status ? (int)vp->occupancy_status : -1;
    out->occupancy_percentage = vp->has_occupancy_percentage ? (int)vp->occupancy_percentage : -1;
    if (!out->entity_id && !*oom)
        out->key = out->entity_id = "";
    if (!*oom && !decode_carriages(f, entity_id, vp, out, oom))
        return false;
    return !*oom;
}
