/* query.h — the questions transitd answers, straight from the mapped stores.
 *
 * Why it exists: this is the contract between the C core and everything that
 * serves it (the HTTP resources, the `transitd query` CLI, the benchmarks).
 * Departures and nearby answers come from timetable.bin alone; name search and
 * reference detail come from schedule.sqlite (see schedule.h).
 *
 * Rules for every call:
 *  - a dataset is immutable once opened; any number of threads may query it at
 *    once without locks;
 *  - no malloc on the query path: results go into caller-provided arrays, and
 *    working memory comes from a per-thread query_scratch that is reused;
 *  - a result says `truncated` when more matched than the limit;
 *  - out-of-range input returns QUERY_EINVAL with a message naming the
 *    parameter; it is never clamped.
 *
 * Times: an instant is Unix seconds (UTC). A stop event on service date D
 * happens at local noon of D in the feed timezone minus 12 h plus its GTFS
 * seconds (DST-correct). Service dates are days since 1970-01-01.
 */
#ifndef TRANSIT_QUERY_H
#define TRANSIT_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dataset dataset;
typedef struct query_scratch query_scratch;

#define QUERY_NONE UINT32_MAX

enum { QUERY_OK = 0, QUERY_EINVAL = -1, QUERY_ENOTFOUND = -2, QUERY_ENOMEM = -3 };

typedef struct query_error {
    char param[32];     /* the offending parameter ("lat", "radius", "stop_id"...) or "" */
    char message[192];  /* e.g. "lat must be between -90 and 90" */
} query_error;

/* ------------------------------------------------------------ datasets */

/* Opens a dataset: `dir` is a data directory (its `current` link is followed)
 * or a version directory holding timetable.bin. Maps timetable.bin read-only
 * and verifies magic, format version, byte order, sizes and checksum. On
 * failure returns NULL with a message in err. The result has a reference
 * count of 1. */
dataset *dataset_open(const char *dir, char *err, size_t errlen);
/* The same for a snapshot whose files were verified against their SHA-256
 * when they were installed (the client library's): the checksum is not
 * computed again, and the indexes dataset_open derives are kept in
 * VERSION/.derived after the first open and mapped by the next ones, which
 * then answer in a few ms instead of tens. */
dataset *dataset_open_trusted(const char *dir, char *err, size_t errlen);
/* Reference counting for hot reload: a server takes a reference per request;
 * the mapping goes away when the last reference is released. Lock-free. */
dataset *dataset_retain(dataset *ds);
void dataset_release(dataset *ds);
/* Same as dataset_release; reads better where the opener is the only user. */
void dataset_close(dataset *ds);

/* Data a higher layer derives from a dataset once and keeps as long as the
 * dataset lives (the JSON layer's departure-row texts, for one). The store
 * holds it without knowing what it is: an extension names how to derive it
 * and how to free it, and is identified by its address. */
typedef struct dataset_extension {
    const char *name;                                        /* for messages */
    void *(*derive)(const dataset *ds, char *err, size_t errlen);   /* NULL + err on failure */
    void (*release)(void *derived);
    /* Optional: for a dataset opened with dataset_open_trusted, the derived
     * data is kept in VERSION/.<file> (bound to the timetable it came from)
     * and read from there by later opens. `save` writes it to fd (0, or -1);
     * `view` makes it again over those bytes, which stay mapped until the
     * dataset is freed (release then frees only what view allocated), and
     * returns NULL when they do not fit this dataset. */
    const char *file;
    int (*save)(const void *derived, int fd);
    void *(*view)(const dataset *ds, const void *bytes, size_t len);
} dataset_extension;
#define DATASET_EXTENSIONS_MAX 6
/* The extension's data for `ds`, derived on the first call (one caller
 * derives, concurrent callers wait for it) and kept until the dataset is
 * released. NULL with a message in err when deriving failed (tried again on
 * the next call) or when more than DATASET_EXTENSIONS_MAX kinds are used. */
void *dataset_extension_get(dataset *ds, const dataset_extension *ext, char *err, size_t errlen);

/* The version directory's name (12 hex digits of the feed's sha256). */
const char *dataset_version(const dataset *ds);
/* The version directory (holds timetable.bin, schedule.sqlite, shapes.sqlite). */
const char *dataset_dir(const dataset *ds);
/* Whether `path` (e.g. "DATA/current/timetable.bin") is the very file this
 * dataset maps (same device and inode): false once the data directory's
 * active version is another one, or was rebuilt in place. */
bool dataset_maps_file(const dataset *ds, const char *path);
/* NULL when the dataset pins its version directory (datadir_pin: pruning
 * leaves it alone while the dataset lives); else why it could not. */
const char *dataset_pin_problem(const dataset *ds);
/* Lets go of the pages this process has mapped in, the timetable's and
 * those of the arrays kept in files (dataset_keep_derived_in_files): an
 * open's checks and a server's preparation read every page once, queries
 * only theirs, so afterwards the resident set is what is asked (16x
 * Brooklyn's size: 202 MB of 539 at start). They stay in the page cache. */
void dataset_drop_pages(const dataset *ds);
/* Moves what the open derived (visit summaries, the grid, id hashes, the
 * arrival index) out of the heap into an unlinked file in the version
 * directory, mapped, and makes the extensions that can be kept in a file
 * (the departure rows' texts) go there when derived: their pages then count
 * in the resident set only while queries touch them, as the timetable's do
 * (a server, which runs for days over a dataset larger than what it is
 * asked; national 64x: 1.2 GB of heap). Best effort: a directory it cannot
 * write keeps them in the heap. Call it before the dataset is shared with
 * other threads. */
void dataset_keep_derived_in_files(dataset *ds);
/* Whether a server should call it: when the timetable is at least
 * DATASET_DERIVED_IN_FILES_FROM bytes (16 copies of Brooklyn and up). Below
 * that the derived data is a few tens of MB, and the heap (transparent huge
 * pages, nothing written at each open) serves a board 5-12 % cheaper than
 * 4 KB file pages (bench/README.md "Serving memory at national scale"). */
#define DATASET_DERIVED_IN_FILES_FROM (128u << 20)
bool dataset_derived_belongs_in_files(const dataset *ds);

/* Connections to the version's schedule.sqlite, pooled with the dataset:
 * take one for the length of a request (one thread at a time), give it
 * back. They close when the dataset is freed, so no idle thread keeps a
 * replaced version's file open. NULL with err when it cannot be opened. */
typedef struct schedule_db schedule_db;
schedule_db *dataset_take_schedule(dataset *ds, char *err, size_t errlen);
void dataset_give_schedule(dataset *ds, schedule_db *db);
/* The same for the version's shapes.sqlite (stores.h). */
typedef struct shapes_db shapes_db;
shapes_db *dataset_take_shapes(dataset *ds, char *err, size_t errlen);
void dataset_give_shapes(dataset *ds, shapes_db *db);
const char *dataset_timezone(const dataset *ds);

typedef struct dataset_counts {
    uint32_t stops, routes, trips, agencies, services;
    uint64_t stop_times;
    int32_t first_date, last_date;   /* service dates covered, days since epoch */
    int64_t imported_at;             /* Unix seconds */
    uint32_t max_secs;               /* the largest GTFS time in the feed */
} dataset_counts;
void dataset_get_counts(const dataset *ds, dataset_counts *out);

/* UTC offset (seconds east) of the feed timezone at an instant. */
int32_t dataset_utc_offset(const dataset *ds, int64_t instant);
/* Reads a local date-time (no offset) in the feed timezone: an ambiguous time
 * means the earlier instant, a nonexistent one the instant after the gap
 * (zoneinfo's fold=0). `local` is seconds since 1970-01-01T00:00 as if UTC. */
int64_t dataset_local_to_instant(const dataset *ds, int64_t local);

/* ------------------------------------------------------------ entities */

typedef struct stop_info {
    const char *id, *name;
    double lat, lon;
    int location_type;      /* 0 stop/platform, 1 station, 2..4 as GTFS */
    uint32_t parent;        /* stop index or QUERY_NONE */
    const char *code, *desc, *platform_code;   /* "" when absent */
    int wheelchair_boarding;                   /* 0 unknown, 1 some, 2 none */
} stop_info;

typedef struct route_info {
    const char *id, *agency_id, *short_name, *long_name, *color, *text_color;
    int type;
} route_info;

typedef struct trip_info {
    const char *id, *service_id, *headsign, *shape_id, *block_id;
    uint32_t route;         /* route index */
    int direction_id;       /* 0, 1, or -1 when absent */
    bool frequency_based;
    int wheelchair_accessible;  /* trips.txt: 0 no information, 1 yes, 2 no */
    int bikes_allowed;          /* trips.txt: 0 no information, 1 yes, 2 no */
} trip_info;

typedef struct agency_info {
    const char *id, *name, *url, *timezone, *lang, *phone;
} agency_info;

uint32_t dataset_stop_count(const dataset *ds);
uint32_t dataset_route_count(const dataset *ds);
uint32_t dataset_agency_count(const dataset *ds);
/* id[0..len) → index, through a hash built when the dataset was opened;
 * QUERY_NONE when unknown. */
uint32_t dataset_find_stop(const dataset *ds, const char *id, size_t len);
uint32_t dataset_find_route(const dataset *ds, const char *id, size_t len);
uint32_t dataset_find_trip(const dataset *ds, const char *id, size_t len);
void dataset_stop(const dataset *ds, uint32_t stop, stop_info *out);
void dataset_route(const dataset *ds, uint32_t route, route_info *out);
void dataset_trip(const dataset *ds, uint32_t trip, trip_info *out);
void dataset_agency(const dataset *ds, uint32_t agency, agency_info *out);
/* Child stops of a station; returns the number written (at most max) and the
 * total in *total. */
uint32_t dataset_stop_children(const dataset *ds, uint32_t stop, uint32_t *out, uint32_t max, uint32_t *total);
/* Routes with at least one departure or arrival at the stop (or, for a
 * station, at its children), by route index order. */
uint32_t dataset_stop_routes(const dataset *ds, uint32_t stop, uint32_t *out, uint32_t max, uint32_t *total);

/* ------------------------------------------------------------ scratch */

query_scratch *query_scratch_new(void);
void query_scratch_free(query_scratch *s);

/* ------------------------------------------------------------ queries */

/* Limits (inclusive). */
#define QUERY_RADIUS_MIN 1
#define QUERY_RADIUS_MAX 5000
#define QUERY_WINDOW_MIN 60        /* seconds: 1 minute */
#define QUERY_WINDOW_MAX 86400     /* seconds: 1440 minutes */
#define QUERY_LIMIT_MIN 1
#define QUERY_LIMIT_MAX 500

typedef struct nearby_stop {
    uint32_t stop;
    double distance_m;
} nearby_stop;

/* Stops with location_type 0 or 1 within radius_m of (lat, lon), by
 * distance then stop_id. `out` has room for `limit` items. */
int nearby_stops(const dataset *ds, query_scratch *s, double lat, double lon, double radius_m,
                 uint32_t limit, nearby_stop *out, uint32_t *count, bool *truncated,
                 query_error *err);

typedef struct departure {
    int64_t instant;        /* Unix seconds */
    int32_t utc_offset;     /* seconds east of UTC at that instant */
    int32_t service_date;   /* days since epoch */
    uint32_t secs;          /* raw GTFS departure seconds (may be >= 86400) */
    uint32_t stop;          /* stop index (the platform for a station query) */
    uint32_t trip;          /* trip index */
    uint32_t stop_sequence; /* the raw GTFS stop_sequence */
    uint32_t pos;           /* the stop time's index in its trip (as trip_detail lists them) */
    bool arrival;           /* an arrival (stop_events with QUERY_ARRIVALS or QUERY_BOTH):
                             * instant and secs are the arrival's; else a departure */
    double distance_m;      /* nearby_departures: the stop's distance in whole metres
                             * (the haversine's, rounded half up); else 0 */
} departure;

/* Which stop events a board lists (the API's `kind`). A departure is a call
 * riders may board at: not the last stop of its trip, pickup_type not 1. An
 * arrival is a call riders may alight at: not the first stop of its trip,
 * drop_off_type not 1, at its arrival time. QUERY_BOTH lists every call
 * riders may board or alight at once: its departure, or its arrival where it
 * has no departure (the trip ends there, or pickup_type is 1). */
typedef enum query_kind { QUERY_DEPARTURES, QUERY_ARRIVALS, QUERY_BOTH } query_kind;

/* Departures at a stop in [from, from + window_s), ordered by instant, then
 * stop_id, route_short_name, trip_id (bytes). A station yields its children's
 * departures. Excludes pickup_type=1 and the last stop of each trip. */
int stop_departures(const dataset *ds, query_scratch *s, uint32_t stop, int64_t from,
                    uint32_t window_s, uint32_t limit, departure *out, uint32_t *count,
                    bool *truncated, query_error *err);
/* The same for the events of `kind` (stop_departures is QUERY_DEPARTURES):
 * rows in the same order, by the instant of their event. */
int stop_events(const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop, int64_t from,
                uint32_t window_s, uint32_t limit, departure *out, uint32_t *count, bool *truncated,
                query_error *err);

/* Departures at all location_type 0 stops within radius_m, same order. */
int nearby_departures(const dataset *ds, query_scratch *s, double lat, double lon,
                      double radius_m, int64_t from, uint32_t window_s, uint32_t limit,
                      departure *out, uint32_t *count, bool *truncated, query_error *err);
/* The same for the events of `kind`. */
int nearby_events(const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                  double radius_m, int64_t from, uint32_t window_s, uint32_t limit, departure *out,
                  uint32_t *count, bool *truncated, query_error *err);

/* A scan: the events of a board in schedule order, handed one by one to a
 * visitor that chooses among them itself (engine/board_accessible.c keeps
 * the rows a wheelchair can take; engine/board_predicted.c, which orders a
 * board by predicted times, drains the same merge itself through the
 * engine's query_heap.h, with visit NULL). The window read is [from, from + window_s)
 * widened, for each stop searched, by the slack the callback gives it: an
 * event at that stop may be chosen up to `late` seconds after its scheduled
 * instant or `early` seconds before it, so the scan reads each stop from its
 * own `late` before `from` and ends the largest `early` after the window
 * (each capped at QUERY_SCAN_SLACK_MAX). The visitor sees every event of that
 * window, by instant then the contract's order (as `ranks` give it), in
 * batches of at most QUERY_SCAN_BATCH (so that it can ask for what the rows
 * need all at once), until it returns false or the next event is scheduled
 * after *until (which the visitor may lower as it learns where to stop). */
#define QUERY_SCAN_SLACK_MAX 86400
#define QUERY_SCAN_BATCH 32
typedef struct query_rank {
    uint32_t stop, route, trip;   /* ranks of stop_id, route_short_name, trip_id (bytewise) */
} query_rank;
typedef struct query_scan {
    void (*slack)(void *ctx, uint32_t stop, uint32_t *late, uint32_t *early);
    bool (*visit)(void *ctx, const departure *rows, const query_rank *ranks, uint32_t n);
    void *ctx;
    const int64_t *until;
    /* may be NULL; else called for every stop searched with step 0, then
     * for every stop with step 1, before slack is asked of any: what slack
     * reads, in two dependent steps, on its way for all stops at once */
    void (*prefetch_stop)(void *ctx, uint32_t stop, int step);
    /* may be NULL; else a nearby scan asks this instead of slack and
     * prefetch_stop, once for all the stops it searches, by their grid
     * points (indices in the dataset's GRID_STOPS order, where the stops
     * near a point lie close together): late[i] and early[i], as slack
     * gives them, of the stop at points[i] */
    void (*slack_points)(void *ctx, const uint32_t *points, size_t n, uint32_t *late, uint32_t *early);
} query_scan;
/* stop_events as a scan; QUERY_OK, or an error as stop_events gives it. */
int stop_events_scan(const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop, int64_t from,
                     uint32_t window_s, const query_scan *scan, query_error *err);
/* nearby_events as a scan (query_near_* then list the stops searched). */
int nearby_events_scan(const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                       double radius_m, int64_t from, uint32_t window_s, const query_scan *scan, query_error *err);

/* The stops the last nearby_departures on `s` searched (location_type 0
 * within the radius), unordered, with the distances its rows carry (whole
 * metres): what rt_merge needs to add realtime departures to that answer. */
size_t query_near_count(const query_scratch *s);
nearby_stop query_near_stop(const query_scratch *s, size_t i);

typedef struct trip_stop_time {
    uint32_t stop;
    uint32_t stop_sequence;
    uint32_t arrival_secs, departure_secs;
    uint8_t pickup_type, drop_off_type;
} trip_stop_time;

/* The stop times of a trip (for a frequency-based trip: of its template).
 * `out` has room for `max`; *count is the trip's full length. */
int trip_detail(const dataset *ds, uint32_t trip, trip_stop_time *out, uint32_t max,
                uint32_t *count, query_error *err);
/* One stop time of a trip, trip_detail's out[pos] (without the copy of
 * the whole trip): for a caller that checks a row against the timetable.
 * false past the trip's end. */
bool trip_stop_at(const dataset *ds, uint32_t trip, uint32_t pos, trip_stop_time *out);
/* A trip's departure times as its template's first departure (*start) plus
 * an offset per position (the array returned, *count of them): for a
 * caller that checks many rows of the trip against the timetable, one read
 * a row. NULL for a trip without stop times. */
const int32_t *trip_departure_offsets(const dataset *ds, uint32_t trip, uint32_t *start, uint32_t *count);
/* Whether the trip's service runs on service_date. */
bool trip_runs_on(const dataset *ds, uint32_t trip, int32_t service_date);
/* The instant of GTFS seconds `secs` on service date `service_date`. */
int64_t dataset_instant(const dataset *ds, int32_t service_date, uint32_t secs);

#endif
