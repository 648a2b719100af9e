/* rt_vehicle.h — one GTFS-Realtime VehiclePosition, decoded, and the merge of
 * several feeds' vehicles.
 *
 * Why it exists: a source may carry trip updates, vehicle positions and
 * alerts mixed (the spec allows it). rt_feed.c hands each VehiclePosition
 * entity to rt_vehicle.c, which checks it and copies it into the
 * feed's arena as this plain struct; nothing past it sees protobuf-c types.
 * A vehicle is named by its VehicleDescriptor id, else by its entity id
 * (`key`); where several sources send the same vehicle, the newest timestamp
 * wins (rt_vehicles_merge).
 *
 * Strings are NUL-terminated and owned by the feed; NULL means absent.
 */
#ifndef TRANSIT_RT_VEHICLE_H
#define TRANSIT_RT_VEHICLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* VehiclePosition.VehicleStopStatus. */
enum { RT_VEHICLE_INCOMING_AT = 0, RT_VEHICLE_STOPPED_AT = 1, RT_VEHICLE_IN_TRANSIT_TO = 2 };
/* VehiclePosition.OccupancyStatus runs 0 (EMPTY) to 8 (NOT_BOARDABLE). */
#define RT_OCCUPANCY_MAX 8

/* One carriage of a vehicle (VehiclePosition.multi_carriage_details). */
typedef struct rt_carriage {
    const char *id, *label;     /* NULL when absent */
    int occupancy_status;       /* 0..RT_OCCUPANCY_MAX, or -1 when absent */
    int occupancy_percentage;   /* 0.., or -1 when absent (the spec's -1: no data) */
    bool has_sequence;
    uint32_t carriage_sequence; /* 1 for the first carriage in the direction of travel */
} rt_carriage;
/* More carriages than this in one vehicle: the entity is rejected. */
#define RT_CARRIAGES_MAX 256

typedef struct rt_vehicle {
    const char *entity_id;
    const char *key;            /* the vehicle's id, else the entity id: never NULL */
    const char *id, *label, *license_plate;   /* VehicleDescriptor */
    /* TripDescriptor (all absent without one) */
    const char *trip_id, *route_id, *start_date, *start_time;
    int32_t start_day;          /* days since 1970-01-01, or INT32_MIN */
    int32_t start_secs;         /* or -1 */
    int direction_id;           /* 0, 1 or -1 */
    int trip_relationship;      /* TripDescriptor.ScheduleRelationship, or -1 without one */
    bool has_position, has_bearing, has_speed, has_odometer;
    float latitude, longitude, bearing, speed;   /* degrees; bearing clockwise from north; m/s */
    double odometer;            /* metres */
    bool has_stop_sequence;
    uint32_t current_stop_sequence;
    const char *stop_id;
    int current_status;         /* RT_VEHICLE_*, or -1 when absent */
    bool has_timestamp;
    uint64_t timestamp;         /* of the position (Unix seconds); without one, the feed
                                 * header's when it has one */
    int congestion_level;       /* 0..4, or -1 */
    int occupancy_status;       /* 0..RT_OCCUPANCY_MAX, or -1 */
    int occupancy_percentage;   /* 0.., or -1 */
    const rt_carriage *carriages;   /* multi_carriage_details, in feed order */
    uint32_t carriage_count;
} rt_vehicle;

struct rt_feed;
struct TransitRealtime__VehiclePosition;

/* Checks one VehiclePosition of entity `entity_id` and copies it into the
 * feed's arena. False when the entity is rejected (its reason recorded in the
 * feed) or memory ran out (*oom). In rt_vehicle.c. */
bool rt_vehicle_decode(struct rt_feed *f, const char *entity_id, const struct TransitRealtime__VehiclePosition *vp,
                       rt_vehicle *out, bool *oom);

/* The vehicles of feeds[0..n) (newest feed first) into merged->vehicles (an
 * array of merged's own, the structs copied, their strings borrowed): per
 * key the newest timestamp wins, a tie the earlier feed.
 * False when out of memory. In rt_vehicles_merge.c. */
bool rt_vehicles_merge(const struct rt_feed *const *feeds, size_t n, struct rt_feed *merged);

#endif
