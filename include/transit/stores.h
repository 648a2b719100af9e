/* stores.h — the SQLite side of the segregated stores.
 *
 * Why it exists: reference data (agencies, routes, trips, stops with name
 * search, calendars, transfers, feed info) is looked up by id, listed and
 * searched: SQLite's job. Shapes are large and rarely read, so they live in a
 * file of their own. Live data (alerts) changes while the server runs and
 * outlives feed versions: a WAL database beside the versions. The hot path
 * (departures, nearby) never touches any of these; see timetable.h.
 *
 * Files: DATA/versions/<v>/schedule.sqlite, DATA/versions/<v>/shapes.sqlite,
 * DATA/live.sqlite.
 */
#ifndef TRANSIT_STORES_H
#define TRANSIT_STORES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- reading */

/* A read-only, immutable connection to schedule.sqlite of one version, for
 * one thread (connections are not shared between threads). */
typedef struct schedule_db schedule_db;
schedule_db *schedule_open(const char *version_dir, char *err, size_t errlen);
void schedule_close(schedule_db *db);

/* Stop name search: FTS5, prefix matching on every term, case- and
 * diacritics-insensitive. Writes up to `limit` stop_ids (copied into `ids`,
 * each at most 255 bytes + NUL) best match first; sets *truncated when more
 * matched. Returns the count, or -1 with err. */
typedef struct stop_id_buf { char id[256]; } stop_id_buf;
int schedule_stop_search(schedule_db *db, const char *text, uint32_t limit, stop_id_buf *ids,
                         bool *truncated, char *err, size_t errlen);

typedef struct feed_meta {
    char publisher_name[256], publisher_url[256], lang[32], version[128];
    int32_t start_date, end_date;   /* days since epoch, or INT32_MIN when absent */
} feed_meta;
/* feed_info.txt's single row (all fields empty when the feed has none). */
int schedule_feed_meta(schedule_db *db, feed_meta *out);

/* The feeds of a dataset merged from several (feed_merge.h). Dates are
 * YYYY-MM-DD or "" when absent. */
typedef struct feed_entry {
    int index;
    char name[64], file[256], sha256[65], publisher_name[256], version[256], timezone[64];
    char feed_start[11], feed_end[11], service_start[11], service_end[11];
    int64_t agencies, stops, routes, trips, stop_times, renamed_ids;
} feed_entry;
/* How many feeds were merged (0 for a one-feed dataset), or -1. */
int schedule_feed_count(schedule_db *db);
/* Feed i (0-based, command-line order). 0, or -1 when there is none. */
int schedule_feed_at(schedule_db *db, int i, feed_entry *out);
/* The name of the feed of record `id` of `kind` ("agency", "stop", "route",
 * "trip") into name; false for a one-feed dataset or an unknown id. */
bool schedule_record_feed(schedule_db *db, const char *kind, const char *id, char *name, size_t cap);

/* A read-only, immutable connection to shapes.sqlite of one version, for
 * one thread. */
typedef struct shapes_db shapes_db;
shapes_db *shapes_open(const char *version_dir, char *err, size_t errlen);
void shapes_close(shapes_db *db);

typedef struct shape_point {
    double lat, lon;
} shape_point;
/* The points of shape_id by shape_pt_sequence into *points, which grows
 * (realloc; *cap is its room). Returns their count, 0 for a shape_id the
 * store does not hold, or -1 with err. */
int shapes_read(shapes_db *db, const char *shape_id, shape_point **points, uint32_t *cap, char *err,
                size_t errlen);

/* A shape as it is served: its encoded polyline (polyline.h, precision 5)
 * and its length, the sum of the haversine distances between its points. */
typedef struct shape_line {
    uint32_t points;
    double length_m;
    const char *polyline;      /* NUL-terminated; the connection's, until its next call */
    size_t polyline_len;
} shape_line;
/* 1 and *out for a shape_id the store holds, 0 when it does not, -1 with
 * err. One lookup in shape_lines; a file imported before that table existed
 * has its points read and encoded instead. */
int shapes_line(shapes_db *db, const char *shape_id, shape_line *out, char *err, size_t errlen);

#endif
