/* rt_encode_vehicles.c — the vehicles a server shows, packed as GTFS-Realtime
 * VehiclePositions; see rt_encode_vehicles in rt_vehicles.h.
 *
 * Why it exists: /gtfs-rt/vehicle-positions.pb lets replicas mirror a
 * primary's vehicles with the ingest code they already have, and any
 * GTFS-Realtime consumer read them, as /gtfs-rt/trip-updates.pb does for
 * trip updates (rt_encode.c). Kept apart from rt_encode.c so each message
 * kind's encoder is one file; like it, the messages point at the set's
 * strings in arrays allocated for one encoding.
 */
#include <stdlib.h>

#include "gtfs-realtime.pb-c.h"
#include "transit/rt_vehicles.h"

/* One vehicle's messages. */
typedef struct vehicle_parts {
    TransitRealtime__FeedEntity entity;
    TransitRealtime__VehiclePosition vp;
    TransitRealtime__TripDescriptor trip;
    TransitRealtime__VehicleDescriptor vehicle;
    TransitRealtime__Position position;
} vehicle_parts;

/* A vehicle's multi_carriage_details into cars[0..count) and their pointers. */
static void build_carriages(const rt_vehicle *v, TransitRealtime__VehiclePosition *vp,
                            TransitRealtime__VehiclePosition__CarriageDetails *cars,
                            TransitRealtime__VehiclePosition__CarriageDetails **ptrs)
{
    for (uint32_t i = 0; i < v->carriage_count; i++) {
        const rt_carriage *c = &v->carriages[i];
        TransitRealtime__VehiclePosition__CarriageDetails *d = &cars[i];
        transit_realtime__vehicle_position__carriage_details__init(d);
        d->id = (char *)c->id;
        d->label = (char *)c->label;
        d->has_occupancy_status = c->occupancy_status >= 0;
        if (c->occupancy_status >= 0)
            d->occupancy_status = (TransitRealtime__VehiclePosition__OccupancyStatus)c->occupancy_status;
        d->has_occupancy_percentage = c->occupancy_percentage >= 0;
        if (c->occupancy_percentage >= 0)
            d->occupancy_percentage = c->occupancy_percentage;
        d->has_carriage_sequence = c->has_sequence;
        d->carriage_sequence = c->carriage_sequence;
        ptrs[i] = d;
    }
    vp->n_multi_carriage_details = v->carriage_count;
    vp->multi_carriage_details = v->carriage_count ? ptrs : NULL;
}

static void build(const rt_vehicle *v, vehicle_parts *p)
{
    transit_realtime__feed_entity__init(&p->entity);
    transit_realtime__vehicle_position__init(&p->vp);
    p->entity.id = (char *)(v->entity_id ? v->entity_id : v->key);
    p->entity.vehicle = &p->vp;
    TransitRealtime__VehiclePosition *vp = &p->vp;
    if (v->trip_relationship >= 0) {
        TransitRealtime__TripDescriptor *td = &p->trip;
        transit_realtime__trip_descriptor__init(td);
        td->trip_id = (char *)v->trip_id;
        td->route_id = (char *)v->route_id;
        td->start_date = (char *)v->start_date;
        td->start_time = (char *)v->start_time;
        td->has_direction_id = v->direction_id >= 0;
        td->direction_id = v->direction_id >= 0 ? (uint32_t)v->direction_id : 0;
        td->has_schedule_relationship = v->trip_relationship != 0;
        td->schedule_relationship = (TransitRealtime__TripDescriptor__ScheduleRelationship)v->trip_relationship;
        vp->trip = td;
    }
    if (v->id || v->label || v->license_plate) {
        transit_realtime__vehicle_descriptor__init(&p->vehicle);
        p->vehicle.id = (char *)v->id;
        p->vehicle.label = (char *)v->label;
        p->vehicle.license_plate = (char *)v->license_plate;
        vp->vehicle = &p->vehicle;
    }
    if (v->has_position) {
        TransitRealtime__Position *pos = &p->position;
        transit_realtime__position__init(pos);
        pos->latitude = v->latitude;
        pos->longitude = v->longitude;
        pos->has_bearing = v->has_bearing;
        pos->bearing = v->bearing;
        pos->has_speed = v->has_speed;
        pos->speed = v->speed;
        pos->has_odometer = v->has_odometer;
        pos->odometer = v->odometer;
        vp->position = pos;
    }
    vp->has_current_stop_sequence = v->has_stop_sequence;
    vp->current_stop_sequence = v->current_stop_sequence;
    vp->stop_id = (char *)v->stop_id;
    vp->has_current_status = v->current_status >= 0;
    vp->current_status = v->current_status >= 0 ? (TransitRealtime__VehiclePosition__VehicleStopStatus)v->current_status
                                                : TRANSIT_REALTIME__VEHICLE_POSITION__VEHICLE_STOP_STATUS__IN_TRANSIT_TO;
    vp->has_timestamp = v->has_timestamp;
    vp->timestamp = v->timestamp;
    vp->has_congestion_level = v->congestion_level >= 0;
    vp->congestion_level = (TransitRealtime__VehiclePosition__CongestionLevel)(v->congestion_level >= 0 ? v->congestion_level : 0);
    vp->has_occupancy_status = v->occupancy_status >= 0;
    vp->occupancy_status = (TransitRealtime__VehiclePosition__OccupancyStatus)(v->occupancy_status >= 0 ? v->occupancy_status : 0);
    vp->has_occupancy_percentage = v->occupancy_percentage >= 0;
    vp->occupancy_percentage = v->occupancy_percentage >= 0 ? (uint32_t)v->occupancy_percentage : 0;
}

int rt_encode_vehicles(const rt_vehicles *v, uint64_t timestamp, uint8_t **out, size_t *len)
{
    uint32_t n = rt_vehicles_count(v);
    TransitRealtime__FeedHeader header;
    transit_realtime__feed_header__init(&header);
    header.gtfs_realtime_version = "2.0";
    header.has_incrementality = 1;
    header.incrementality = TRANSIT_REALTIME__FEED_HEADER__INCREMENTALITY__FULL_DATASET;
    header.has_timestamp = 1;
    header.timestamp = timestamp;
    vehicle_parts *parts = calloc(n + 1, sizeof *parts);
    TransitRealtime__FeedEntity **ents = calloc(n + 1, sizeof *ents);
    size_t ncars = 0;
    for (uint32_t i = 0; i < n; i++)
        ncars += rt_vehicles_at(v, i)->carriage_count;
    TransitRealtime__VehiclePosition__CarriageDetails *cars = calloc(ncars + 1, sizeof *cars);
    TransitRealtime__VehiclePosition__CarriageDetails **car_ptrs = calloc(ncars + 1, sizeof *car_ptrs);
    int rc = -1;
    if (parts && ents && cars && car_ptrs) {
        size_t at = 0;
        for (uint32_t i = 0; i < n; i++) {
            const rt_vehicle *rv = rt_vehicles_at(v, i);
            build(rv, &parts[i]);
            build_carriages(rv, &parts[i].vp, cars + at, car_ptrs + at);
            at += rv->carriage_count;
            ents[i] = &parts[i].entity;
        }
        TransitRealtime__FeedMessage msg = TRANSIT_REALTIME__FEED_MESSAGE__INIT;
        msg.header = &header;
        msg.n_entity = n;
        msg.entity = n ? ents : NULL;
        size_t size = transit_realtime__feed_message__get_packed_size(&msg);
        uint8_t *buf = malloc(size ? size : 1);
        if (buf) {
            transit_realtime__feed_message__pack(&msg, buf);
            *out = buf;
            *len = size;
            rc = 0;
        }
    }
    free(parts);
    free(ents);
    free(cars);
    free(car_ptrs);
    return rc;
}
