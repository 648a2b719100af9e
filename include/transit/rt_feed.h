/* rt_feed.h — a decoded GTFS-Realtime feed, in transitd's own plain C structs.
 *
 * Why it exists: trip updates and alerts arrive as GTFS-Realtime protobuf
 * (a file, or a URL polled on an interval). rt_feed.c turns one FeedMessage
 * into these structs and checks them; nothing past it sees protobuf-c types,
 * so the overlay, the alerts merge and the tests depend on this header only.
 *
 * A feed either decodes or fails as a whole (malformed or truncated
 * protobuf, a missing required field, an unsupported header): the caller
 * then keeps its last good feed. An entity that decodes but breaks a rule
 * (no trip_id on a scheduled trip, stop_time_updates out of order, a bad
 * start_date...) is dropped and counted in `rejected`, with the first reason
 * kept in `first_rejection`, so one bad entity does not cost the rest.
 *
 * Strings are NUL-terminated and owned by the feed; NULL means absent.
 */
#ifndef TRANSIT_RT_FEED_H
#define TRANSIT_RT_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/rt_vehicle.h"

/* TripDescriptor.ScheduleRelationship (values as in the spec). */
typedef enum rt_trip_relationship {
    RT_TRIP_SCHEDULED = 0,
    RT_TRIP_ADDED = 1,
    RT_TRIP_UNSCHEDULED = 2,
    RT_TRIP_CANCELED = 3,
    RT_TRIP_REPLACEMENT = 5,
    RT_TRIP_DUPLICATED = 6,
    RT_TRIP_DELETED = 7,
    RT_TRIP_NEW = 8,           /* the spec's replacement for ADDED */
} rt_trip_relationship;

/* StopTimeUpdate.ScheduleRelationship. */
typedef enum rt_stop_relationship {
    RT_STOP_SCHEDULED = 0,
    RT_STOP_SKIPPED = 1,
    RT_STOP_NO_DATA = 2,
    RT_STOP_UNSCHEDULED = 3,
} rt_stop_relationship;

/* A StopTimeEvent, in 16 bytes: a 64 MB feed has millions of them (the
 * flags share the uncertainty's word, which rt_feed.c keeps within
 * RT_UNCERTAINTY_MAX, rejecting an entity past it). */
typedef struct rt_event {
    int64_t time;              /* Unix seconds */
    int32_t delay;             /* seconds, late > 0 */
    int32_t uncertainty : 28;  /* seconds */
    bool present : 1;          /* the StopTimeEvent was in the update */
    bool has_delay : 1, has_time : 1, has_uncertainty : 1;
} rt_event;
#define RT_UNCERTAINTY_MAX ((1 << 27) - 1)   /* |uncertainty|, seconds (over four years) */

/* A StopTimeUpdate, in 56 bytes (it was 80: a 64 MB feed has 2.3 million). */
typedef struct rt_stop_update {
    const char *stop_id;
    const char *assigned_stop_id;  /* StopTimeProperties.assigned_stop_id: a platform change */
    rt_event arrival, departure;
    uint32_t stop_sequence;
    bool has_stop_sequence;
    uint8_t relationship;      /* rt_stop_relationship */
    uint8_t departure_occupancy;   /* departure_occupancy_status + 1 (0..RT_OCCUPANCY_MAX + 1);
                                    * 0 when absent, so a zeroed update has none */
} rt_stop_update;
_Static_assert(sizeof(rt_event) == 16, "rt_event is 16 bytes");
_Static_assert(sizeof(rt_stop_update) <= 56, "rt_stop_update is at most 56 bytes");

typedef struct rt_trip_update {
    const char *entity_id;
    const char *trip_id, *route_id;
    const char *start_time;    /* "HH:MM:SS" as sent (hours may exceed 23) */
    const char *start_date;    /* "YYYYMMDD" as sent */
    const char *vehicle_id, *vehicle_label;
    /* TripProperties (experimental in the spec): a DUPLICATED trip's new
     * trip_id, start_date and start_time (all three required then), and a
     * shape, headsign and short name that stand in for the schedule's */
    const char *new_trip_id, *new_start_date, *new_start_time;
    const char *shape_id, *headsign, *short_name;
    rt_stop_update *stops;     /* in feed order: by stop_sequence when given; NULL where they
                                * are packed (read them with rt_trip_update_stops) */
    const uint8_t *packed_stops;   /* rt_feed_decode_packed's: the stop_count updates as packed
                                * records (live/rt_stop_pack.h), owned by the feed; else NULL */
    uint64_t timestamp;
    int32_t start_secs;        /* start_time in seconds, or -1 */
    int32_t start_day;         /* start_date in days since 1970-01-01, or INT32_MIN */
    int32_t new_start_day;     /* new_start_date in days, or INT32_MIN */
    int32_t new_start_secs;    /* new_start_time in seconds, or -1 */
    int32_t delay;             /* trip-level delay (experimental in the spec) */
    uint32_t stop_count;
    rt_trip_relationship relationship;
    int8_t direction_id;       /* 0, 1, or -1 when absent */
    bool has_timestamp, has_delay;
} rt_trip_update;               /* fields by size: 160 bytes */

typedef struct rt_translation {
    const char *text, *language;
} rt_translation;

typedef struct rt_text {
    rt_translation *items;
    uint32_t count;
} rt_text;

typedef struct rt_period {
    uint64_t start, end;       /* 0: open */
} rt_period;

typedef struct rt_selector {
    const char *agency_id, *route_id, *stop_id, *trip_id;
    const char *trip_start_date;   /* the trip's start_date (YYYYMMDD) as sent, or NULL */
    int32_t route_type;        /* -1 when absent */
    int direction_id;          /* -1 when absent */
} rt_selector;

typedef struct rt_alert {
    const char *entity_id;
    rt_period *periods;
    uint32_t period_count;
    rt_selector *selectors;
    uint32_t selector_count;
    int cause, effect, severity;   /* the spec's enum values (defaults 1, 8, 1) */
    rt_text url, header, description;
} rt_alert;

typedef struct rt_feed {
    const char *version;       /* gtfs_realtime_version */
    uint64_t timestamp;        /* header timestamp, 0 when absent */
    rt_trip_update *trip_updates;
    uint32_t trip_update_count;
    rt_alert *alerts;
    uint32_t alert_count;
    rt_vehicle *vehicles;      /* VehiclePosition entities (rt_vehicle.h) */
    uint32_t vehicle_count;
    uint32_t ignored;          /* entities of other kinds, deleted ones */
    uint32_t rejected;         /* entities dropped by a rule */
    char first_rejection[160];
    struct rt_arena *arena;    /* owns every string and array above */
    int refs;                  /* rt_feed_retain adds one, rt_feed_free drops one */
} rt_feed;

/* Decodes one FeedMessage, entity by entity (its peak memory is the bytes,
 * the decoded feed and one entity). NULL on failure with a message in err
 * (e.g. "not a GTFS-Realtime FeedMessage (malformed or truncated protobuf,
 * or a required field is missing): truncated varint at byte 812"). The feed
 * comes with one reference. */
rt_feed *rt_feed_decode(const uint8_t *data, size_t len, char *err, size_t errlen);
/* rt_feed_decode for bytes the caller frees right after without reading
 * them again: the pages of the entities decoded are given
 * back to the system as the decode goes (madvise), so that the bytes and
 * the decoded feed are not both held whole (a 64 MB feed decodes to about
 * 180 MB). The contents of data are undefined afterwards. */
rt_feed *rt_feed_decode_consuming(uint8_t *data, size_t len, char *err, size_t errlen);
/* rt_feed_decode_consuming whose trip updates keep their stop_time_updates
 * packed (packed_stops; about 18 bytes each, where an rt_stop_update is 56:
 * a 64 MB feed's 2.3 million were 122 MB), for the poller, whose feed is
 * held beside the overlay built from it. Its readers take each trip
 * update's stops with rt_trip_update_stops. */
rt_feed *rt_feed_decode_packed(uint8_t *data, size_t len, char *err, size_t errlen);
/* A trip update's stop_time_updates at full width, tu->stop_count of them:
 * tu->stops, or when they are packed, unpacked into `room` (room for
 * tu->stop_count). NULL when it has none. */
const rt_stop_update *rt_trip_update_stops(const rt_trip_update *tu, rt_stop_update *room);
/* Calls fn on where each stop_time_update's stop_id is kept (a pointer fn
 * may set to another string of the feed), in either form. */
void rt_trip_update_map_stop_ids(rt_trip_update *tu, void (*fn)(void *ctx, const char **id), void *ctx);
/* Another reference to feed (thread-safe), for a reader that uses it while
 * the poller may drop its own; returns feed. */
rt_feed *rt_feed_retain(rt_feed *feed);
/* Drops a reference; the last one frees the feed. */
void rt_feed_free(rt_feed *feed);
/* A copy of s owned by the feed (freed with it), or NULL when out of memory:
 * for ids rewritten after decoding (rt_feed_namespace.h). */
const char *rt_feed_add_string(rt_feed *feed, const char *s);

/* For the entity decoders beside rt_feed.c (rt_vehicle.c): memory in
 * the feed's arena (zeroed; NULL when out of memory), a copy of a string there
 * (NULL stays NULL; *oom set when it cannot), and an entity rejected with its
 * reason. */
void *rt_feed_alloc(rt_feed *f, size_t n);
const char *rt_feed_strdup(rt_feed *f, const char *s, bool *oom);
void rt_feed_reject(rt_feed *f, const char *entity_id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "20240131" → days since 1970-01-01; false when not a valid date. */
bool rt_parse_date(const char *s, int32_t *days);
/* "25:10:00" → seconds; false when not H:MM:SS / HH:MM:SS. */
bool rt_parse_time(const char *s, int32_t *secs);

#endif
