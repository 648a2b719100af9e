/* tt_builder.h — the importer's in-memory model of a feed, between reading
 * the GTFS files (gtfs_read.c) and laying out timetable.bin
 * (import/timetable_write.c).
 *
 * Why it exists: reading and laying out are separate concerns with one shared
 * model. Everything here is plain arrays of small structs indexed by uint32,
 * and strings are offsets into one deduplicated string table, exactly as they
 * will be written.
 */
#ifndef TRANSIT_TT_BUILDER_H
#define TRANSIT_TT_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strmap.h"
#include "base/strref_map.h"
#include "import/traffic_days.h"
#include "store/timetable_format.h"
#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/gtfs.h"
#include "transit/timetable.h"
#include "transit/tz.h"

typedef struct tb_stop {
    double lat, lon;
    uint32_t id, name;         /* strings */
    uint32_t parent_id;        /* string of parent_station ("" = none) */
    uint32_t parent;           /* resolved index or TT_NONE */
    uint32_t code, desc, platform_code;
    uint8_t location_type;
    uint8_t wheelchair_boarding;
} tb_stop;

/* One trips.txt row. There is one per trip (7.5M at 64 copies of Brooklyn),
 * held until timetable.bin is written, so it is kept to 40 bytes: what the
 * trip's service id, id rank and latest time are follows from other fields
 * (the service, the id order, its profiles). */
typedef struct tb_trip {
    uint32_t id, headsign, shape_id;   /* strings */
    uint32_t route;
    uint32_t service;          /* its index; while calendar_dates.txt is read beside the trips
                                  (services_pending), its service_id string */
    uint32_t pattern, dep_profile, arr_profile, start;
    int8_t direction_id;
    uint8_t wheelchair_accessible, bikes_allowed;   /* 0..2, 0 for absent or invalid */
    unsigned fold : 2;         /* TS_UNSEEN, TS_OPEN, TS_FOLDED (trip_stream.h) */
    unsigned valid : 1;        /* has usable stop times */
    unsigned frequency_based : 1;
} tb_trip;
_Static_assert(sizeof(tb_trip) == 40, "tb_trip is held once per trip: keep it at 40 bytes");

typedef struct tb_stop_time {
    uint32_t trip, seq, stop, arr, dep;
    uint8_t pickup, drop_off;
    uint16_t pad;
} tb_stop_time;

typedef struct tb_frequency {
    uint32_t trip, start, end, headway;
} tb_frequency;

typedef struct tb_calendar {
    uint32_t service;
    uint8_t weekdays;          /* bit 0 = Monday */
    int32_t start, end;
} tb_calendar;

typedef struct tb_calendar_date {
    uint32_t service;
    int32_t date;
    uint8_t type;              /* 1 add, 2 remove */
} tb_calendar_date;

#define TB_VEC(T) struct { T *v; size_t n, cap; }

typedef struct tt_builder {
    const feed_t *feed;
    diag *diag;
    timetable_stats *stats;
    const timetable_options *opt;   /* never NULL */
    char *err;
    size_t errlen;

    /* strings */
    char *strings;
    size_t strings_len, strings_cap;
    /* every string of the table, once (strref_map.h: keys are the table's
     * own bytes); a slot's value is the trip whose trip_id it is, else
     * TT_NONE, so that trip ids are not held a second time */
    strref_map string_index;
    strref_map stop_index;     /* stop_id (its string) → stop */

    strmap route_ids, service_ids, agency_ids;
    TB_VEC(tb_stop) stops;
    TB_VEC(tt_route) routes;
    TB_VEC(tt_agency) agencies;
    TB_VEC(tb_trip) trips;
    TB_VEC(uint32_t) services;          /* service_id strings (service i is service_ids' entry i) */
    /* stop_times rows: held only when the feed is not grouped by trip
     * (trip_stream.h folds each trip as it ends otherwise) */
    TB_VEC(tb_stop_time) stop_times;
    TB_VEC(double) dists;               /* shape_dist_traveled per stop_time, NaN when empty; only when the column exists */
    struct trip_stream *stream;         /* the trips folded so far (trip_stream.h) */
    bool hold_rows;                     /* stop_times rows go to stop_times, not to the stream */
    struct sts_spill *spill;            /* held rows sorted in runs on disk (stop_times_spill.h) */
    char spill_dir[4096];               /* where the runs go: beside the timetable being written */
    TB_VEC(tb_frequency) frequencies;
    TB_VEC(tb_calendar) calendars;
    TB_VEC(tb_calendar_date) calendar_dates;
    traffic_days days;                  /* every service's day set, once the calendars are read */
    bool services_pending;              /* trips keep their service_id string, resolved later */
    gtfs_date_memo dates_month;         /* calendar_date_row's last month parsed */
    struct calendar_dates_run *dates_run; /* calendar_dates.txt's run reader while it is read (calendar_dates_run.h) */
    bool service_ids_only;              /* the calendar_dates thread's builder: a service's id is
                                           kept in service_ids only (services.v is TT_NONE) */
    bool have_dist;

    tz_zone zone;
    uint32_t tz_name;
    uint32_t default_agency_id;         /* string: the single agency's id */
} tt_builder;

/* Grows a TB_VEC to hold one more element; returns a pointer to it or NULL. */
#define TB_PUSH(vec) \
    (((vec).n < (vec).cap || tb_grow((void **)&(vec).v, &(vec).cap, sizeof *(vec).v, (vec).n + 1) == 0) \
         ? &(vec).v[(vec).n++] : NULL)
int tb_grow(void **v, size_t *cap, size_t elem, size_t need);

/* Interns bytes into the string table; returns the offset (0 for ""), or
 * TT_NONE on allocation failure. */
uint32_t tb_intern(tt_builder *b, const char *s, size_t len);
/* The same, returning the string's slot in string_index (valid until the
 * next string is interned), or NULL when out of memory; len > 0. */
strref_slot *tb_intern_slot(tt_builder *b, const char *s, size_t len, uint32_t hash);
/* The trip whose trip_id is those bytes, or UINT32_MAX. */
uint32_t tb_trip_by_id(const tt_builder *b, const char *s, size_t len);
/* The stop whose stop_id is those bytes, or UINT32_MAX. */
uint32_t tb_stop_by_id(const tt_builder *b, const char *s, size_t len);
static inline const char *tb_str(const tt_builder *b, uint32_t off) { return b->strings + off; }

/* gtfs_read.c: reads every file the timetable needs. 0 or -1 (b->err). */
int tb_read_feed(tt_builder *b);
/* Frees the maps from ids and strings to indices, which only reading
 * needs (at 64 copies of Brooklyn: hundreds of MB of keys). */
void tb_drop_lookups(tt_builder *b);
void tb_free(tt_builder *b);

#endif
