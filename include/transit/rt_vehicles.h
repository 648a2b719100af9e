/* rt_vehicles.h — the vehicles a server shows, matched to one dataset.
 *
 * Why it exists: /v1/vehicles lists vehicle positions filtered by area or
 * route, each departure row of a running trip carries its vehicle, and
 * /gtfs-rt/vehicle-positions.pb exports them. All three read this set, built
 * once per realtime update (beside the overlay, which holds it: rt_overlay.h)
 * from the merged feed's vehicles (rt_vehicle.h) and immutable afterwards:
 *  - vehicles whose position is older than the staleness limit are left
 *    out (a vehicle without any timestamp is kept), and of two with one key
 *    the newest stays;
 *  - each is matched to a trip instance of the dataset by its
 *    TripDescriptor with the trip updates' rules: trip_id and start_date
 *    (without start_date, of yesterday, today and tomorrow the date the
 *    trip runs on whose first departure is nearest now); a frequency-based
 *    trip also needs start_time;
 *  - its route is the descriptor's route_id, else the matched trip's;
 *  - the JSON of each (the object a row shows, and the fuller one the list
 *    shows) is written once here, so a row copies bytes.
 * The set owns copies of everything it keeps: it outlives the feeds.
 * Reference counted like the overlay.
 */
#ifndef TRANSIT_RT_VEHICLES_H
#define TRANSIT_RT_VEHICLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/query.h"
#include "transit/rt_vehicle.h"

typedef struct rt_vehicles rt_vehicles;

typedef struct rt_vehicles_stats {
    uint32_t shown;            /* in the set */
    uint32_t matched;          /* of those, matched to a trip instance of the dataset */
    uint32_t stale;            /* left out: older than the staleness limit */
    uint32_t duplicate;        /* left out: an older position of a vehicle in the set */
    uint32_t unknown_trip;     /* shown, but naming a trip_id the dataset lacks or a trip not
                                * running on its date (or a frequency-based trip without start_time) */
} rt_vehicles_stats;

/* The vehicles of `vehicles[0..n)` on `ds` at `now`, dropping those older
 * than max_age_s (0: none). NULL when out of memory. `stats` may be NULL. */
rt_vehicles *rt_vehicles_build(const rt_vehicle *vehicles, uint32_t n, const dataset *ds, int64_t now,
                               unsigned max_age_s, rt_vehicles_stats *stats);
rt_vehicles *rt_vehicles_retain(rt_vehicles *v);
void rt_vehicles_release(rt_vehicles *v);

/* How many, and the i-th by key (bytewise); its strings are the set's. */
uint32_t rt_vehicles_count(const rt_vehicles *v);
const rt_vehicle *rt_vehicles_at(const rt_vehicles *v, uint32_t i);
/* The first index whose key sorts after `key` (a list's `after` cursor). */
uint32_t rt_vehicles_after(const rt_vehicles *v, const char *key);
/* The i-th vehicle's route index, or QUERY_NONE when none of the dataset. */
uint32_t rt_vehicles_route(const rt_vehicles *v, uint32_t i);
/* Its JSON: the object a departure row shows (`row`), or the list's. */
const char *rt_vehicles_json(const rt_vehicles *v, uint32_t i, bool row, size_t *len);
/* When the first vehicle of the set goes stale (Unix seconds), INT64_MAX
 * when none will: a poller builds the set again then. */
int64_t rt_vehicles_expires_at(const rt_vehicles *v);

/* The vehicle of a departure row's trip instance: its index, or -1. Rows
 * of a frequency-based trip take the instance whose start is the latest at
 * or before the row's time. Cheap for rows of trips without a vehicle (one
 * bit test). */
long rt_vehicles_find_row(const rt_vehicles *v, const departure *d);

/* A FeedMessage (version 2.0, FULL_DATASET, `timestamp`) of the set's
 * vehicles (NULL: none) as VehiclePosition entities under their entity ids,
 * for /gtfs-rt/vehicle-positions.pb. *out is malloc'd. 0, or -1 when out of
 * memory. In rt_encode_vehicles.c (it knows protobuf-c; the phone's library
 * does not link it). */
int rt_encode_vehicles(const rt_vehicles *v, uint64_t timestamp, uint8_t **out, size_t *len);

/* The names the spec gives these enums ("STOPPED_AT", "FEW_SEATS_AVAILABLE",
 * ...), or NULL for a value it does not. */
const char *rt_vehicle_stop_status_name(int status);
const char *rt_occupancy_name(int occupancy);
const char *rt_congestion_name(int level);

#endif
