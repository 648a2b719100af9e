/* timetable_format.h — the on-disk layout of timetable.bin, shared by the
 * writer (timetable_write.c) and the reader (dataset.c, query.c).
 *
 * Why it exists: the file is mapped and used in place, so its structs ARE the
 * format. Everything is offsets and indices, never pointers; integers are in
 * the writer's byte order, which the header records and the reader checks.
 * docs/timetable-format.md explains the design; this file is the truth.
 *
 * The model in one paragraph: a *pattern* is a route's exact sequence of
 * (stop, stop_sequence, pickup, drop-off). A *profile* is a trip's offsets
 * from its first departure at each position. A *run* is one vehicle journey:
 * a trip (or one frequencies.txt instance of it) with a start time. A *group*
 * is a pattern plus a *day set* (the distinct set of days its services run
 * on: services with the same days share one), holding runs sorted so that, at every
 * position, times (then trip_id rank) never decrease: the departures of a
 * group at one position are sorted, so a stop's departures are a k-way merge
 * of a few binary-searched groups. A *visit* says "group g stops here at
 * position k and lets people board".
 */
#ifndef TRANSIT_TIMETABLE_FORMAT_H
#define TRANSIT_TIMETABLE_FORMAT_H

#include <stdint.h>
#include <zlib.h>

#define TT_MAGIC "TRANSITD"
#define TT_FORMAT_VERSION 4u  /* 3: day sets shared between services (no SERVICES section), groups by day set;
                                * 4: trips carry wheelchair_accessible and bikes_allowed */
#define TT_BYTE_ORDER 0x01020304u
#define TT_NONE UINT32_MAX
#define TT_ALIGN 16

enum tt_section_id {
    TT_SEC_META,
    TT_SEC_STRINGS,        /* char[]: NUL-terminated strings; offset 0 is "" */
    TT_SEC_STOPS,          /* tt_stop[nstops] */
    TT_SEC_STOP_BY_ID,     /* uint32[nstops]: stop indices sorted by id bytes */
    TT_SEC_STOP_CHILDREN,  /* uint32[]: child stop indices, per station (tt_stop.children_*) */
    TT_SEC_STOP_ROUTES,    /* uint32[]: route indices serving each stop (tt_stop.routes_*) */
    TT_SEC_GRID_CELLS,     /* uint32[nx*ny+1]: CSR offsets into GRID_STOPS */
    TT_SEC_GRID_STOPS,     /* uint32[]: stops (location_type 0 and 1) by cell */
    TT_SEC_ROUTES,         /* tt_route[nroutes] */
    TT_SEC_ROUTE_BY_ID,    /* uint32[nroutes] */
    TT_SEC_AGENCIES,       /* tt_agency[nagencies] */
    TT_SEC_TRIPS,          /* tt_trip[ntrips] */
    TT_SEC_TRIP_BY_ID,     /* uint32[ntrips] */
    TT_SEC_DAY_SETS,       /* uint64[ndaysets * service_words]: bit d = day first_day+d; distinct, sorted */
    TT_SEC_PATTERNS,       /* tt_pattern[npatterns] */
    TT_SEC_PATTERN_STOPS,  /* tt_pattern_stop[] */
    TT_SEC_PROFILES,       /* uint32[]: offsets pool */
    TT_SEC_GROUPS,         /* tt_group[ngroups] */
    TT_SEC_RUNS,           /* tt_run[nruns], contiguous per group */
    TT_SEC_VISITS,         /* tt_visit[], contiguous per stop */
    TT_SEC_DAYBASE,        /* int64[ndays + lookback]: noon-minus-12h instant of day first_day-lookback+i */
    TT_SEC_TZ,             /* tt_tz_transition[ntz] */
    TT_SEC_COUNT
};

typedef struct tt_section {
    uint32_t id;
    uint32_t elem_size;    /* size of one element, for a sanity check */
    uint64_t offset;       /* from the start of the file, TT_ALIGN-aligned */
    uint64_t size;         /* bytes */
} tt_section;

typedef struct tt_header {
    char magic[8];
    uint32_t format_version;
    uint32_t byte_order;
    uint32_t header_size;  /* sizeof(tt_header) */
    uint32_t nsections;    /* TT_SEC_COUNT */
    uint64_t file_size;
    uint32_t checksum;     /* zlib crc32 of bytes [header_size, file_size) */
    uint32_t reserved;
    tt_section sections[TT_SEC_COUNT];
} tt_header;

typedef struct tt_meta {
    int32_t first_day;         /* first service date covered, days since epoch */
    uint32_t ndays;            /* service dates covered */
    uint32_t lookback;         /* extra days before first_day in DAYBASE */
    uint32_t max_secs;         /* largest GTFS time (arrival or departure) */
    uint32_t tz_name;          /* string */
    uint32_t nstops, nroutes, ntrips, nruns, npatterns, ngroups, nservices, nagencies, ntz;
    uint32_t service_words;    /* uint64 words per day set */
    uint32_t ndaysets;         /* distinct day sets (<= nservices); a service is its trips' service_id_str */
    uint64_t stop_times;       /* stop_times rows in the timetable (templates count once) */
    int64_t imported_at;
    double grid_lat0, grid_lon0, grid_dlat, grid_dlon;
    uint32_t grid_nx, grid_ny;
} tt_meta;

typedef struct tt_stop {
    double lat, lon;
    uint32_t id, name;          /* strings */
    uint32_t parent;            /* stop index or TT_NONE */
    uint32_t id_rank;           /* position in STOP_BY_ID: the byte order of ids */
    uint32_t children_first, children_count;
    uint32_t routes_first, routes_count;
    uint32_t visit_first, visit_count;
    uint32_t code, desc, platform_code;  /* strings, for stop detail without SQLite */
    uint8_t location_type;
    uint8_t wheelchair_boarding;         /* 0 unknown, 1 some, 2 none */
    uint8_t pad[2];
} tt_stop;

typedef struct tt_route {
    uint32_t id, agency_id, short_name, long_name, color, text_color;  /* strings */
    int32_t type;
    uint32_t short_name_rank;   /* byte order of short_name; equal names share a rank */
} tt_route;

typedef struct tt_agency {
    uint32_t id, name, url, timezone, lang, phone;  /* strings */
} tt_agency;

typedef struct tt_trip {
    uint32_t id, service_id_str, headsign, shape_id;  /* strings */
    uint32_t route;
    uint32_t days;                       /* its service's day set, in DAY_SETS */
    uint32_t pattern;
    uint32_t dep_profile, arr_profile;   /* offsets into PROFILES, pattern-length arrays */
    uint32_t start;                      /* the template's first departure, GTFS seconds */
    uint32_t id_rank;                    /* position in TRIP_BY_ID */
    int8_t direction_id;                 /* -1 when absent */
    uint8_t frequency_based;
    uint8_t wheelchair_accessible;       /* trips.txt: 0 no information (or invalid), 1 yes, 2 no */
    uint8_t bikes_allowed;               /* trips.txt: 0 no information (or invalid), 1 yes, 2 no */
} tt_trip;

typedef struct tt_pattern {
    uint32_t first, len;        /* into PATTERN_STOPS */
    uint32_t route;
    uint32_t pad;
} tt_pattern;

typedef struct tt_pattern_stop {
    uint32_t stop;
    uint32_t stop_sequence;
    uint8_t pickup_type, drop_off_type;
    uint8_t pad[2];
} tt_pattern_stop;

typedef struct tt_group {
    uint32_t pattern, days;     /* days: the day set of every run's service */
    uint32_t run_first, run_count;
    uint32_t route_rank;        /* the pattern's route short_name_rank, for ordering */
    uint32_t pad;
} tt_group;

typedef struct tt_run {
    uint32_t start;             /* departure at position 0, GTFS seconds */
    uint32_t dep_profile;       /* copy of the trip's, to save an indirection */
    uint32_t trip;
    uint32_t trip_rank;         /* copy of the trip's id_rank */
} tt_run;

typedef struct tt_visit {
    uint32_t group, pos;
} tt_visit;

typedef struct tt_tz_transition {
    int64_t at;                 /* offset in effect from this instant on */
    int32_t offset;
    int32_t pad;
} tt_tz_transition;

/* CRC-32 (zlib) over any length: zlib takes at most 4 GB a call. */
static inline uint32_t tt_crc32_init(void) { return (uint32_t)crc32(0L, Z_NULL, 0); }
static inline uint32_t tt_crc32(uint32_t crc, const void *data, uint64_t len)
{
    const unsigned char *p = data;
    while (len) {
        uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = (uint32_t)crc32(crc, p, chunk);
        p += chunk;
        len -= chunk;
    }
    return crc;
}

#endif
