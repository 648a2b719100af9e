/* network.h — the network as a rider reads it off a map: the stops of a
 * route in order for each of its patterns, and the routes and headsigns
 * that leave from a stop.
 *
 * Why it exists: GET /v1/routes/{id} lists a route's stop patterns and
 * GET /v1/stops/{id} the headsigns of the routes departing from the stop.
 * Both are read from the mapped timetable (patterns, groups, runs), not
 * from SQLite: a pattern there is a route's exact sequence of (stop,
 * stop_sequence, pickup, drop-off); here trips whose stop lists and
 * direction_id are the same make one pattern, whatever their stop_sequence
 * numbers or pickup and drop-off types.
 *
 * Results point into a network_scratch (one per thread, reused) and into
 * the dataset's strings, valid until the scratch's next call.
 */
#ifndef TRANSIT_NETWORK_H
#define TRANSIT_NETWORK_H

#include <stdint.h>

#include "transit/query.h"

typedef struct network_scratch network_scratch;
network_scratch *network_scratch_new(void);
void network_scratch_free(network_scratch *s);

/* One stop pattern of a route. */
typedef struct route_pattern {
    int direction_id;               /* 0, 1, or -1 when the trips give none */
    uint32_t trips;                 /* trips (trips.txt rows) that run it */
    uint32_t stops_first, nstops;   /* into network_route.stops, in stop_sequence order */
    uint32_t headsigns_first, nheadsigns;   /* into network_route.headsigns */
} route_pattern;

typedef struct network_route {
    const route_pattern *patterns;  /* direction 0, 1, then none; most trips first; then by stop ids */
    uint32_t npatterns;
    const uint32_t *stops;          /* stop indices */
    const char *const *headsigns;   /* non-empty trip_headsigns, most trips first, then bytewise */
} network_route;

/* The stop patterns of a route. QUERY_OK, QUERY_ENOTFOUND for a route index
 * out of range, QUERY_ENOMEM. */
int route_patterns(const dataset *ds, network_scratch *s, uint32_t route, network_route *out, query_error *err);

/* A route leaving from a stop, with one of its headsigns. */
typedef struct stop_headsign {
    uint32_t route;                 /* route index */
    const char *headsign;           /* a non-empty trip_headsign */
    uint32_t runs;                  /* its departures from the stop in the whole timetable */
} stop_headsign;

/* The headsigns of the trips departing from a stop (a station: from its
 * children): calls riders may board at, as the departures board lists them.
 * By route index, then most runs first, then bytewise. *out points into
 * the scratch. QUERY_OK, QUERY_ENOTFOUND, or QUERY_ENOMEM (also when the
 * per-dataset index of the groups' headsigns cannot be derived). */
int stop_headsigns(dataset *ds, network_scratch *s, uint32_t stop, const stop_headsign **out, uint32_t *count,
                   query_error *err);

/* Derives the groups' headsigns that stop_headsigns reads (a dataset
 * extension), so that no request pays for them: a server asks when it
 * installs a dataset. 0, or -1 with err. */
int network_prepare(dataset *ds, char *err, size_t errlen);

#endif
