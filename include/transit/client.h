/* client.h — transitd on the phone: an offline snapshot, answered by the
 * server's own code.
 *
 * Why it exists: on a train in a tunnel a phone cannot ask the server. This
 * is the one header of libtransit_client.a (`make client`), which an iOS or
 * macOS app imports from Swift through module.modulemap (module
 * TransitClient) without glue code. It opens a snapshot directory (what
 * `transitd fetch` or the update calls below write: the server's data
 * directory layout) and answers with the very functions the HTTP server
 * calls: the same engine, the same JSON bytes. The library links SQLite,
 * zlib, zstd, jansson and a SHA-256 (nettle; CommonCrypto on Apple), and no
 * HTTP server, HTTP client, Objective-C runtime or protobuf: the app brings
 * the network (URLSession) and hands the bytes over (the update calls).
 *
 * This header includes only the C standard headers, so Swift imports every
 * type and function as it is: `transit_open(path, &err)`, and so on.
 *
 * Threads: a transit_snapshot may be used from any thread; its calls take
 * turns (a lock). Open the same directory twice for two threads that must
 * query at once: the mapped timetable is shared by the OS page cache.
 * Strings in results point into the snapshot and stay valid until
 * transit_close.
 */
#ifndef TRANSIT_CLIENT_H
#define TRANSIT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong: the HTTP status the server would have answered (400 a bad
 * argument, named in `param`; 404 an unknown id; 500/503 the snapshot), and
 * a message precise enough to fix it. */
typedef struct transit_error {
    int status;
    char param[48];
    char message[256];
} transit_error;

/* ------------------------------------------------------------ the snapshot */

typedef struct transit_snapshot transit_snapshot;

/* Opens a snapshot: a data directory (its `current` version is followed) or a
 * version directory. NULL with err when there is none or it is damaged. */
transit_snapshot *transit_open(const char *dir, transit_error *err);
void transit_close(transit_snapshot *s);
/* The version's name (12 hex digits), as GET /v1/dataset says it. */
const char *transit_version(const transit_snapshot *s);

/* ------------------------------------------------------------ the server's JSON */

/* The body the server sends for GET `path` ("/v1/stops/nearby?lat=40.6&lon=-73.9",
 * percent-encoded as in a URL), answered at `now` (Unix seconds; 0 for the
 * current time): the v1 endpoints that read the timetable and schedule
 * (stops nearby and by name, a stop, its departures and arrivals, departures
 * near a point, routes, a route, a trip, agencies, the feed). Returns the
 * HTTP status; *body (malloc'd, NUL-terminated, *length bytes; free it with
 * transit_free) is the JSON, or for a status >= 400 the problem
 * (application/problem+json) the server would send. NULL *body only when
 * memory ran out. */
int transit_get_json(transit_snapshot *s, const char *path, int64_t now, char **body, size_t *length);
void transit_free(void *p);

/* ------------------------------------------------------------ plain structs */

typedef struct transit_stop {
    const char *id, *name, *code, *platform_code;   /* "" when absent */
    const char *parent_id;                          /* "" for none */
    double lat, lon;
    double distance_m;         /* transit_nearby_stops: from the point; else 0 */
    int location_type;         /* 0 stop or platform, 1 station */
    int wheelchair_boarding;   /* 0 unknown, 1 some, 2 none */
} transit_stop;

/* Which calls a board lists (the API's `kind`). */
typedef enum transit_kind {
    TRANSIT_DEPARTURES = 0,
    TRANSIT_ARRIVALS = 1,
    TRANSIT_BOTH = 2
} transit_kind;

typedef struct transit_departure {
    int64_t time;              /* Unix seconds: the departure, or the arrival for an arrival row */
    int32_t utc_offset;        /* seconds east of UTC at that time, in the feed's zone */
    int32_t service_date;      /* YYYYMMDD */
    bool arrival;              /* the row is an arrival */
    const char *stop_id, *stop_name;
    const char *trip_id, *headsign;
    const char *route_id, *route_short_name, *route_long_name, *route_color, *route_text_color;
    int route_type;
    uint32_t stop_sequence;
    double distance_m;         /* transit_nearby_departures: the stop's distance; else 0 */
    int wheelchair_accessible; /* the trip's (trips.txt): 0 no information, 1 yes, 2 no */
    int bikes_allowed;         /* the trip's (trips.txt): 0 no information, 1 yes, 2 no */
} transit_departure;

typedef struct transit_trip {
    const char *id, *route_id, *service_id, *headsign, *shape_id, *block_id;
    int direction_id;          /* 0, 1, or -1 when absent */
    bool frequency_based;
    uint32_t stop_times;       /* how many the trip has */
    int wheelchair_accessible; /* trips.txt: 0 no information, 1 yes, 2 no */
    int bikes_allowed;         /* trips.txt: 0 no information, 1 yes, 2 no */
} transit_trip;

typedef struct transit_stop_time {
    const char *stop_id, *stop_name;
    double lat, lon;
    uint32_t stop_sequence;
    uint32_t arrival_secs, departure_secs;   /* GTFS seconds after noon minus 12 h (may pass 86400) */
    int pickup_type, drop_off_type;
} transit_stop_time;

/* Each returns 0, or the status the server would answer with err filled.
 * `out` has room for `limit` (at most 500) items; *count says how many were
 * written, *truncated whether more matched. Radii are metres (1..5000),
 * windows seconds (60..86400), `from` Unix seconds (0: now). */
int transit_nearby_stops(transit_snapshot *s, double lat, double lon, double radius_m, uint32_t limit,
                         transit_stop *out, uint32_t *count, bool *truncated, transit_error *err);
int transit_search_stops(transit_snapshot *s, const char *text, uint32_t limit, transit_stop *out,
                         uint32_t *count, bool *truncated, transit_error *err);
int transit_stop_departures(transit_snapshot *s, const char *stop_id, transit_kind kind, int64_t from,
                            uint32_t window_s, uint32_t limit, transit_departure *out, uint32_t *count,
                            bool *truncated, transit_error *err);
int transit_nearby_departures(transit_snapshot *s, double lat, double lon, double radius_m,
                              transit_kind kind, int64_t from, uint32_t window_s, uint32_t limit,
                              transit_departure *out, uint32_t *count, bool *truncated,
                              transit_error *err);
/* A trip and up to `max` of its stop times (*count: how many were written). */
int transit_trip_detail(transit_snapshot *s, const char *trip_id, transit_trip *trip,
                        transit_stop_time *out, uint32_t max, uint32_t *count, transit_error *err);

/* ------------------------------------------------------------ updates */

/* Bringing a snapshot directory to the version a server offers, with the
 * app's own HTTP client:
 *   1. GET BASE/v1/dataset?profile=phone (the manifest) and pass its body to
 *      transit_update_begin;
 *   2. while transit_update_next gives a step: GET BASE + step.path (send
 *      `Range: bytes=<resume_from>-` and `If-Range: "<sha256>"` when
 *      resume_from > 0), pass the body's bytes to transit_update_write as they
 *      arrive, then the status to transit_update_end;
 *   3. transit_update_commit makes the new version the one transit_open opens.
 * A delta (a zstd patch against the version the directory holds) that does
 * not apply or does not hash to the manifest's SHA-256 is dropped, and the
 * next step fetches the whole file. Files the directory already holds with
 * the manifest's digest are copied, not fetched. */
typedef struct transit_update transit_update;

typedef enum transit_step_kind {
    TRANSIT_STEP_FILE = 1,     /* the whole file (or its rest, from resume_from) */
    TRANSIT_STEP_DELTA = 2     /* a zstd patch against the held version's file */
} transit_step_kind;

typedef struct transit_step {
    transit_step_kind kind;
    char path[200];            /* to GET, relative to the server's base URL */
    char file[64];             /* the file it makes */
    char sha256[65];           /* what the file must hash to */
    uint64_t size;             /* the file's size */
    uint64_t resume_from;      /* bytes already held: ask for the rest with Range */
} transit_step;

typedef struct transit_update_stats {
    uint64_t bytes_received;   /* body bytes passed to transit_update_write */
    uint32_t files_fetched, deltas_applied, deltas_failed, files_kept;
} transit_update_stats;

/* NULL with err when the manifest is not one, or dir cannot be written. An
 * update to the version dir already holds has no steps. */
transit_update *transit_update_begin(const char *dir, const char *manifest, size_t length,
                                     transit_error *err);
/* 1 and the next step; 0 when every file is ready (commit next). */
int transit_update_next(transit_update *u, transit_step *step);
/* The next bytes of the current step's response body. 0, or -1 with err. */
int transit_update_write(transit_update *u, const void *bytes, size_t length, transit_error *err);
/* The current step's response ended with HTTP `status` (200, or 206 for a
 * resumed file), or 0 when no response came (a network error). 0 when the
 * file is ready, or when a delta failed (the next step fetches the whole
 * file); -1 with err when the step failed: a transfer cut short (the next
 * step resumes it), a file not matching its digest (dropped, fetched whole
 * next), a server error. Whether to retry, and when, is the app's call. */
int transit_update_end(transit_update *u, int status, transit_error *err);
/* Installs and activates the new version atomically, and prunes the
 * directory to the active version and the one before it (a snapshot still
 * open on an older one keeps it until transit_close). A transit_snapshot
 * opened before goes on answering from the version it opened: close it and
 * open the directory again. It also opens the new version once, which keeps
 * the indexes a first open derives (about 11 MB for Brooklyn) beside it, so
 * the next transit_open takes about 0.1 ms. 0, or -1 with err. */
int transit_update_commit(transit_update *u, transit_error *err);
/* The version the update brings, and what it cost so far. */
const char *transit_update_version(const transit_update *u);
void transit_update_get_stats(const transit_update *u, transit_update_stats *out);
/* Frees the update; uncommitted files stay staged for the next update to resume. */
void transit_update_free(transit_update *u);

#ifdef __cplusplus
}
#endif

#endif
