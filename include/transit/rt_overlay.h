/* rt_overlay.h — realtime predictions resolved against one dataset.
 *
 * Why it exists: departure rows need "is there realtime for this trip
 * instance at this stop, and what does it say" in a few instructions, for
 * every row, while a poller replaces the feed every few seconds. An overlay
 * is built once per decoded feed (rt_feed.h) and is immutable afterwards:
 * each TripUpdate is matched to a dataset trip instance (trip_id and
 * start_date; frequency-based trips also by start_time), and the
 * GTFS-Realtime propagation rules are applied over the trip's stop times,
 * so a lookup only finds a precomputed delay. Like alert_view, it is
 * reference counted; a server publishes a new one and readers keep the one
 * they took until they release it (no torn state, no reader ever blocks).
 *
 * Propagation (GTFS-Realtime reference, TripUpdate / StopTimeUpdate):
 *  - an update's time wins over its delay; a missing departure takes the
 *    arrival's delay;
 *  - the last known delay carries to the following stops until the next
 *    update, never making a departure earlier than the one before it;
 *  - stops before the first update get the trip-level delay when the feed
 *    gives one, else no prediction;
 *  - NO_DATA (and UNSCHEDULED) stop the carrying: no prediction from there
 *    to the next update with data;
 *  - SKIPPED marks the stop skipped and carries the delay past it;
 *  - a CANCELED (or DELETED) trip marks every stop canceled.
 * Arrivals (rows with departure.arrival) follow the same rules with the
 * two events' roles swapped: an update's arrival wins, a missing arrival
 * takes the departure's delay, and a carried delay makes an arrival no
 * earlier than the predicted departure from the stop before.
 *
 * Trip relationships beyond SCHEDULED and CANCELED (TripDescriptor):
 *  - DELETED: the instance is hidden, on every board (rt_departure.hidden),
 *    where a CANCELED one is shown canceled;
 *  - NEW (the spec's replacement for ADDED) is an ADDED trip, below;
 *  - DUPLICATED: a copy of the scheduled trip named by trip_id, as
 *    TripProperties.trip_id, on TripProperties.start_date, its times the
 *    original's shifted by TripProperties.start_time minus the original's
 *    first departure, then the update's delays propagated over them as for
 *    any trip (an update's time stays as it is; a skipped stop a skipped
 *    call). The original still runs.
 *    A frequency-based original (no exact times) cannot be duplicated;
 *  - REPLACEMENT: the update's stop times are the instance's whole timetable
 *    for the day: the scheduled instance is hidden and a realtime-only trip
 *    of the same trip_id, route and direction calls where the updates say
 *    (each by stop_id, else the scheduled stop at its stop_sequence; at its
 *    time, else the scheduled time plus its delay; a NO_DATA one at the
 *    scheduled time, RT_CALL_SCHEDULED_TIME; a SKIPPED one a skipped call,
 *    RT_CALL_SKIPPED). A frequency-based run's scheduled times are the
 *    run's (start_time).
 * One update an instance: the first in the feed (the newest source's, in a
 * merge) stays, and a later one goes whole (a REPLACEMENT with its calls).
 * TripProperties.trip_headsign, trip_short_name and shape_id are kept on
 * the realtime-only trips (rt_added_trip) their rows and /v1/trips show,
 * and on a timetable trip's instance (rt_trip_properties: its rows and
 * /v1/trips, for that instance only).
 *
 * Platform changes (StopTimeProperties.assigned_stop_id, also with
 * NO_DATA): the stop time is served at the assigned stop instead of the
 * scheduled one. Its row (still naming the scheduled stop, the look-up
 * saying `moved`, rt_overlay_assigned_stop where) leaves the scheduled stop's boards
 * and appears on the assigned stop's (rt_overlay_moved_events, merged by
 * the boards). An assigned_stop_id the dataset lacks is skipped, counted
 * (rt_overlay_stats.unknown_assigned_stop) and described (`problem`): the
 * row stays at its scheduled stop.
 * Realtime-only trips take platform changes too: a NEW or ADDED trip's, a
 * REPLACEMENT's (each at the call its stop_time_update makes) and a
 * DUPLICATED copy's (at the stop time propagate() places the update at; the
 * copy's only, the original keeps its stops). Such a call
 * (rt_added_call.assigned_stop) is an event of the assigned stop: its rows
 * come out of rt_overlay_added_events there, still naming the call's stop
 * (`stop`), and rt_overlay_added_assigned_stop says where they are served.
 *
 * ADDED and NEW trips (trip_id not in the dataset) have no schedule to add delays
 * to: each of their stop_time_updates that names a stop_id of the dataset
 * and an absolute time (departure, else arrival) becomes a departure event
 * at that stop and instant, except the last one (the trip ends there, as
 * scheduled trips have no departure from their last stop) and NO_DATA ones
 * or SKIPPED ones without a time (a SKIPPED one with a time is a skipped
 * call: canceled rows, not a departure the trip needs). Likewise each but
 * the first becomes an arrival event (its arrival time, else departure);
 * the last one is an arrival at a call without a departure. A trip with no
 * departure event is not shown. The
 * trip needs a route_id of the dataset (a departure row
 * names its route); its trip_id is the update's, else "rt:" and the
 * entity id. Its service date is start_date, else the local date of its
 * first time. rt_merge.h puts these events among a query's departures.
 */
#ifndef TRANSIT_RT_OVERLAY_H
#define TRANSIT_RT_OVERLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/query.h"
#include "transit/rt_feed.h"
#include "transit/rt_vehicles.h"

typedef struct rt_overlay rt_overlay;

typedef struct rt_overlay_stats {
    uint32_t matched;          /* trip instances with an entry */
    uint32_t canceled;         /* of those, canceled or deleted */
    uint32_t unknown_trip;     /* trip_id not in the dataset */
    uint32_t not_running;      /* the trip does not run on start_date (or near now) */
    uint32_t bad_start_time;   /* a frequency-based trip without a usable start_time */
    uint32_t duplicate;        /* a second update for the same instance */
    uint32_t added;            /* ADDED trips (not in the dataset) shown as departures */
    uint32_t added_no_route;   /* ADDED trips without a route_id of the dataset */
    uint32_t added_no_departure;   /* ADDED trips with no usable departure event */
    uint32_t unmatched_stops;  /* stop_time_updates naming no stop of the trip (for
                                * an ADDED trip: no stop of the dataset, or no time) */
    uint32_t deleted;          /* DELETED instances (hidden; also in canceled) */
    uint32_t duplicated;       /* DUPLICATED copies shown (also in added) */
    uint32_t replaced;         /* REPLACEMENT instances shown (also in added) */
    uint32_t not_duplicable;   /* DUPLICATED of a frequency-based trip, or the copy's date out of range */
    uint32_t assigned;         /* events moved to an assigned stop (platform changes), of
                                * timetable and realtime-only trips */
    uint32_t unknown_assigned_stop;   /* assigned_stop_ids naming no stop of the dataset (skipped) */
    uint32_t properties;       /* timetable trip instances with TripProperties of their own */
    char problem[200];         /* the first skipped part, by entity id and field, or "" */
} rt_overlay_stats;

/* TripProperties of a timetable trip's instance: each NULL where the
 * update gives none (the schedule's then stands). Owned by the overlay. */
typedef struct rt_trip_properties {
    const char *headsign, *short_name, *shape_id;
} rt_trip_properties;

/* A realtime-only trip (ADDED, NEW, DUPLICATED, REPLACEMENT), as its
 * departure rows and /v1/trips show it. Strings are owned by the overlay. */
typedef struct rt_added_trip {
    const char *trip_id;
    uint32_t route;            /* route index */
    int direction_id;          /* 0, 1 or -1 */
    int32_t service_date;      /* days since 1970-01-01 */
    rt_trip_relationship relationship;   /* ADDED, NEW, DUPLICATED or REPLACEMENT */
    const char *headsign, *short_name, *shape_id;   /* TripProperties, else (a copy, a
                                * replacement) the scheduled trip's; NULL when none */
    const char *source_trip_id;   /* DUPLICATED, REPLACEMENT: the scheduled trip's id; else NULL */
    uint32_t first_call, call_count;   /* its calls (rt_overlay_added_calls) */
    int32_t start_secs;        /* a REPLACEMENT of a frequency-based run: its start_time; else -1 */
    uint32_t replaced_entry;   /* the overlay's own: a REPLACEMENT's hidden instance (its first stop
                                * entry), which must be the one the overlay keeps; else UINT32_MAX */
} rt_added_trip;

/* Where a realtime-only trip calls, in order. */
typedef struct rt_added_call {
    uint32_t stop;             /* dataset stop index */
    uint32_t assigned_stop;    /* a platform change: the stop it is served at; else QUERY_NONE */
    uint32_t stop_sequence;
    uint32_t flags;            /* RT_CALL_* */
    int64_t arrival, departure;   /* Unix seconds; RT_NO_TIME where it has none (the first
                                * call's arrival, the last's departure, a time not given) */
} rt_added_call;
#define RT_NO_TIME INT64_MIN
/* A call's flags. SKIPPED: the update says the vehicle does not stop there
 * (StopTimeUpdate SKIPPED): its rows stay, canceled, at the call's time.
 * SCHEDULED_TIME: the times are the schedule's, not a prediction (a
 * REPLACEMENT's NO_DATA call at the scheduled time of its stop_sequence, a
 * skipped call without a time, a DUPLICATED copy's stop no update predicts):
 * its rows say `scheduled`, not `predicted`. */
enum { RT_CALL_SKIPPED = 1, RT_CALL_SCHEDULED_TIME = 2 };

/* What realtime says about one departure row (or arrival row: then of
 * its arrival). */
typedef struct rt_departure {
    bool realtime;             /* the overlay has this trip instance */
    bool canceled;             /* the trip is canceled, or this stop is skipped */
    bool skipped;              /* this stop is skipped (canceled is also true) */
    bool hidden;               /* the instance is DELETED or REPLACED: no board shows the row */
    bool has_prediction;       /* delay_s is known */
    int32_t delay_s;           /* predicted event = scheduled + delay_s */
    uint8_t occupancy;         /* a departure's departure_occupancy_status + 1 from its
                                * stop_time_update; 0 when the update gives none */
    bool moved;                /* a platform change: served at another stop than the row's
                                * (rt_overlay_assigned_stop says which) */
    bool has_properties;       /* the instance has TripProperties (rt_overlay_row_properties) */
} rt_departure;

/* An overlay of `feed` on `ds` (retained). `now` (Unix seconds) picks the
 * service date of updates without start_date: the date among yesterday,
 * today and tomorrow (feed timezone) on which the trip runs, nearest now.
 * NULL when out of memory. `stats` may be NULL. */
rt_overlay *rt_overlay_build(const rt_feed *feed, dataset *ds, int64_t now, rt_overlay_stats *stats);
rt_overlay *rt_overlay_retain(rt_overlay *o);
void rt_overlay_release(rt_overlay *o);

const dataset *rt_overlay_dataset(const rt_overlay *o);
/* The service date of an update (or a vehicle) without start_date: of
 * yesterday, today and tomorrow (feed timezone), the one the trip runs on
 * whose first departure (first_secs) is nearest now. INT32_MIN when it
 * runs on none. */
int32_t rt_nearest_service_date(const dataset *ds, uint32_t trip, uint32_t first_secs, int64_t now);
/* The feed header's timestamp the overlay was built from. */
uint64_t rt_overlay_feed_timestamp(const rt_overlay *o);
uint32_t rt_overlay_trip_count(const rt_overlay *o);
/* A number the publisher gives each overlay it swaps in (ETags follow it);
 * set it before the overlay is shared. 0 until set. */
void rt_overlay_set_generation(rt_overlay *o, uint64_t generation);
uint64_t rt_overlay_generation(const rt_overlay *o);

/* Fills `out` for a departure row of the overlay's dataset; false (and out
 * all zero) when the overlay knows nothing of the row's trip instance. */
bool rt_overlay_lookup(const rt_overlay *o, const departure *d, rt_departure *out);
/* How far predictions move rows at `stop`: the most any predicted event
 * there (departure or arrival, of any trip instance) is later than
 * scheduled (*late_s) and earlier (*early_s), seconds, each at most
 * RT_OVERLAY_SLACK_MAX; 0 and 0 at a stop without predictions. A board
 * ordered by predicted times (board.h) reads the schedule that much
 * around its window. rt_overlay_slack gives the same over every stop. */
#define RT_OVERLAY_SLACK_MAX 86400
void rt_overlay_stop_slack(const rt_overlay *o, uint32_t stop, uint32_t *late_s, uint32_t *early_s);
void rt_overlay_slack(const rt_overlay *o, uint32_t *late_s, uint32_t *early_s);
/* How far before `from` a board by predicted time from `from` on must read
 * the schedule at `stop`, seconds: at least back to the earliest event there
 * scheduled before `from` and predicted at or after it (moved by a delay of
 * at most RT_OVERLAY_SLACK_MAX), at most the stop's late slack, and 0 when
 * no event there is. It may reach up to 6 minutes further back than
 * needed (the window starts are bucketed by 5 minutes, the leads kept in
 * whole minutes); a stop's largest delay, which
 * one late trip of the day sets, no longer holds every board there. Cheap:
 * two reads besides the slack's. */
uint32_t rt_overlay_stop_lead(const rt_overlay *o, uint32_t stop, int64_t from);
/* Starts loading what rt_overlay_stop_lead(o, stop, from) reads, in two
 * steps: step 0 where the stop's slack and buckets lie, step 1 (once step 0
 * has been asked for every stop of a board, so the loads overlap) the
 * bucket itself. */
void rt_overlay_prefetch_stop_lead(const rt_overlay *o, uint32_t stop, int64_t from, int step);
/* The same for one trip, over its instances and stops: the most any of its
 * events is predicted later than scheduled (0 without realtime). Cheap: it
 * reads what rt_overlay_prefetch_trip asks for. */
uint32_t rt_overlay_trip_late(const rt_overlay *o, uint32_t trip);

/* The service dates of a trip's instances, earliest first (a frequency-
 * based trip may have several on one date): writes at most `max`, returns
 * how many there are (0: the overlay has none of the trip). */
uint32_t rt_overlay_trip_dates(const rt_overlay *o, uint32_t trip, int32_t *dates, uint32_t max);
/* The overlay's row index (live/rt_row_index.h): rt_overlay_lookup of a
 * timetable row in one read where it can be. Never NULL. */
typedef struct rt_row_index rt_row_index;
const rt_row_index *rt_overlay_row_index(const rt_overlay *o);

/* Starts loading what rt_overlay_lookup will read for `d`: call it for every
 * row of a response first, so their cache misses overlap. It reads where the
 * row's trip instance lies; rt_overlay_prefetch_trip over every row before
 * it starts that read too (two passes over a batch of rows, the first
 * loading what the second reads). */
void rt_overlay_prefetch(const rt_overlay *o, const departure *d);
void rt_overlay_prefetch_trip(const rt_overlay *o, const departure *d);

/* ------------------------------------------------------------ ADDED trips
 * A departure row of an ADDED trip carries trip index `ntrips + k` (ntrips:
 * the dataset's trip count) for the overlay's k-th added trip: rows of the
 * dataset's trips are never mistaken for one, and a reader of such a row
 * must ask the overlay (rt_overlay_added_trip) rather than the dataset. */

uint32_t rt_overlay_added_trip_count(const rt_overlay *o);
/* How many scheduled instances the overlay hides (DELETED, REPLACEMENT):
 * boards by schedule then choose their rows as boards by prediction do, so
 * a hidden row does not take a place under `limit`. */
uint32_t rt_overlay_hidden_count(const rt_overlay *o);
/* The realtime-only trip of that id: the one on `service_date` when it is
 * not INT32_MIN, else the first by date. NULL when none. */
const rt_added_trip *rt_overlay_find_added(const rt_overlay *o, const char *trip_id, int32_t service_date);
/* A realtime-only trip's calls, a->call_count of them. */
const rt_added_call *rt_overlay_added_calls(const rt_overlay *o, const rt_added_trip *a);
/* Whether any added event (departure or arrival) is at `stop` (two reads). */
bool rt_overlay_added_at_stop(const rt_overlay *o, uint32_t stop);
/* The added trip of a row, or NULL when the row is a dataset trip's. */
const rt_added_trip *rt_overlay_added_trip(const rt_overlay *o, const departure *d);
/* The stop an added trip's row is served at when a platform change moved
 * it there (its call's assigned_stop), else QUERY_NONE. One read. */
uint32_t rt_overlay_added_assigned_stop(const rt_overlay *o, const departure *d);
/* The call an added trip's row is of, or NULL for a dataset trip's row. */
const rt_added_call *rt_overlay_added_call(const rt_overlay *o, const departure *d);
/* The added departures at `stop` with from <= instant < to, as rows (trip,
 * stop, instant, utc_offset, service_date, secs, stop_sequence; pos: the
 * call's index in its trip; distance_m 0), by instant; writes at most `max`
 * and returns how many there are in all. `stop` is where the event is
 * served: a row a platform change moved there names the call's own stop. */
uint32_t rt_overlay_added_departures(const rt_overlay *o, uint32_t stop, int64_t from, int64_t to,
                                     departure *out, uint32_t max);
/* The same for the events of `kind` (query.h): arrival rows say .arrival. */
uint32_t rt_overlay_added_events(const rt_overlay *o, query_kind kind, uint32_t stop, int64_t from, int64_t to,
                                 departure *out, uint32_t max);

/* ------------------------------------------------------------ platform changes
 * Rows moved to an assigned stop (see above). Everything here costs
 * nothing (one test) on an overlay without platform changes. */

/* How many moved events (departures and arrivals) the overlay has. */
uint32_t rt_overlay_moved_count(const rt_overlay *o);
/* Whether any moved event is at `stop` (its assigned stop). */
bool rt_overlay_moved_at_stop(const rt_overlay *o, uint32_t stop);
/* The most a moved event is predicted later (*late_s) and earlier than
 * scheduled, seconds (capped at RT_OVERLAY_SLACK_MAX). */
void rt_overlay_moved_slack(const rt_overlay *o, uint32_t *late_s, uint32_t *early_s);
/* The moved events of `kind` served at `stop` scheduled in [from, to), as
 * rows of their trip instance (stop: the scheduled stop; distance_m 0), by
 * scheduled instant; writes at most `max`, returns how many there are. */
uint32_t rt_overlay_moved_events(const rt_overlay *o, query_kind kind, uint32_t stop, int64_t from, int64_t to,
                                 departure *out, uint32_t max);
/* The stop a row the look-up says `moved` is served at, QUERY_NONE for a
 * row that did not move. A search of its own: ask it of moved rows only. */
uint32_t rt_overlay_assigned_stop(const rt_overlay *o, const departure *d);
/* The TripProperties of a row's instance (rt_departure.has_properties), or
 * NULL. Likewise a search of its own. */
const rt_trip_properties *rt_overlay_row_properties(const rt_overlay *o, const departure *d);

/* ------------------------------------------------------------ vehicles
 * The vehicle set (rt_vehicles.h) published with the overlay, so that a
 * request's one snapshot holds both. Set it before the overlay is shared
 * (it takes over the caller's reference); NULL without one. */
void rt_overlay_set_vehicles(rt_overlay *o, rt_vehicles *v);
const rt_vehicles *rt_overlay_vehicles(const rt_overlay *o);

#endif
