/* schedule_write_stops.c — the schedule.sqlite rows of stops.txt and of the
 * files read after it: frequencies.txt, transfers.txt and feed_info.txt.
 *
 * Why it exists: stops come after trips, and frequencies and transfers
 * refer to stops and trips already in the database (looked up with the
 * writer's find_stop and find_trip statements); feed_info refers to nothing
 * and comes last.
 */
#include "import/schedule_write_internal.h"

#include <stdbool.h>
#include <stdint.h>

#include "transit/gtfs.h"

/* ------------------------------------------------------------ stops.txt */

static const char *const STOP_KEYS[] = {
    "stop_id",        "stop_code",     "stop_name",           "stop_desc",
    "stop_lat",       "stop_lon",      "zone_id",             "stop_url",
    "location_type",  "parent_station", "stop_timezone",      "wheelchair_boarding",
    "platform_code"};
enum {
    ST_ID, ST_CODE, ST_NAME, ST_DESC, ST_LAT, ST_LON, ST_ZONE, ST_URL, ST_LOCATION_TYPE,
    ST_PARENT, ST_TIMEZONE, ST_WHEELCHAIR, ST_PLATFORM, ST_N
};

static int stop_row(schedule_writer *w, const csv_field *f)
{
    int64_t location_type = 0, wheelchair = 0;
    bool has_wheelchair, has_lat = false, has_lon = false;
    double lat = 0, lon = 0;
    if (!schedule_need_value(w, &f[ST_ID], "stop_id"))
        return ROW_CONTINUE;
    if (f[ST_LOCATION_TYPE].len &&
        !schedule_strict_int(w, &f[ST_LOCATION_TYPE], "location_type", 0, 4, DIAG_BAD_VALUE,
                             &location_type))
        return ROW_CONTINUE;
    /* Generic nodes (3) and boarding areas (4) may go without name and
     * position: a missing or bad position is stored as NULL. */
    if (location_type >= 3) {
        has_lat = f[ST_LAT].len && gtfs_parse_double(f[ST_LAT].ptr, f[ST_LAT].len, &lat) == 0 &&
                  lat >= -90.0 && lat <= 90.0;
        has_lon = f[ST_LON].len && gtfs_parse_double(f[ST_LON].ptr, f[ST_LON].len, &lon) == 0 &&
                  lon >= -180.0 && lon <= 180.0;
    } else {
        if (!schedule_coordinate_value(w, &f[ST_LAT], "stop_lat", 90.0, false, &lat, &has_lat) ||
            !schedule_coordinate_value(w, &f[ST_LON], "stop_lon", 180.0, false, &lon, &has_lon))
            return ROW_CONTINUE;
    }
    /* A bad wheelchair_boarding is stored as NULL; noted once the row is in. */
    has_wheelchair = f[ST_WHEELCHAIR].len &&
                     gtfs_parse_int(f[ST_WHEELCHAIR].ptr, f[ST_WHEELCHAIR].len, &wheelchair) == 0 &&
                     wheelchair >= 0 && wheelchair <= 2;
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[ST_ID]);
    bind_opt_text(s, 2, &f[ST_CODE]);
    bind_opt_text(s, 3, &f[ST_NAME]);
    bind_opt_text(s, 4, &f[ST_DESC]);
    if (has_lat && has_lon) {
        sqlite3_bind_double(s, 5, lat);
        sqlite3_bind_double(s, 6, lon);
    } else {
        sqlite3_bind_null(s, 5);
        sqlite3_bind_null(s, 6);
    }
    bind_opt_text(s, 7, &f[ST_ZONE]);
    bind_opt_text(s, 8, &f[ST_URL]);
    sqlite3_bind_int64(s, 9, location_type);
    bind_opt_text(s, 10, &f[ST_PARENT]);
    bind_opt_text(s, 11, &f[ST_TIMEZONE]);
    bind_opt_int(s, 12, has_wheelchair, wheelchair);
    bind_opt_text(s, 13, &f[ST_PLATFORM]);
    int rc = schedule_step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return schedule_skip_row(w, DIAG_DUPLICATE_ID, "duplicate stop_id '%.*s'",
                                 SHOWN(&f[ST_ID]));
    if (f[ST_WHEELCHAIR].len && !has_wheelchair)
        schedule_skip_row(w, DIAG_BAD_VALUE,
                          "stop '%.*s': wheelchair_boarding '%.*s' is not 0..2 (ignored)",
                          SHOWN(&f[ST_ID]), SHOWN(&f[ST_WHEELCHAIR]));
    /* kept, as the timetable keeps it, but it cannot be found by name */
    if (location_type < 3 && f[ST_NAME].len == 0)
        schedule_skip_row(w, DIAG_MISSING_VALUE, "stop '%.*s' has an empty stop_name (kept)",
                          SHOWN(&f[ST_ID]));
    return ROW_CONTINUE;
}

const file_spec schedule_stops_spec = {
    "stops.txt", STOP_KEYS, ST_N, 1u << ST_ID,
    "INSERT INTO temp.stops_read VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)", stop_row};

/* ------------------------------------------------------------ frequencies.txt */

static const char *const FREQUENCY_KEYS[] = {"trip_id", "start_time", "end_time", "headway_secs",
                                             "exact_times"};
enum { FQ_TRIP, FQ_START, FQ_END, FQ_HEADWAY, FQ_EXACT, FQ_N };

static int frequency_row(schedule_writer *w, const csv_field *f)
{
    uint32_t start, end;
    int64_t headway, exact = 0;
    bool has_exact;
    int known = schedule_lookup(w, w->find_trip, &f[FQ_TRIP]);
    if (known < 0)
        return ROW_STOP;
    if (!known)
        return schedule_skip_row(w, DIAG_UNKNOWN_TRIP, "unknown trip_id '%.*s'",
                                 SHOWN(&f[FQ_TRIP]));
    if (!schedule_time_value(w, &f[FQ_START], "start_time", &start) ||
        !schedule_time_value(w, &f[FQ_END], "end_time", &end))
        return ROW_CONTINUE;
    if (end <= start)
        return schedule_skip_row(w, DIAG_BAD_TIME, "end_time is not after start_time");
    if (!schedule_strict_int(w, &f[FQ_HEADWAY], "headway_secs", 1, 86400, DIAG_BAD_NUMBER,
                             &headway))
        return ROW_CONTINUE;
    schedule_lenient_int(w, &f[FQ_EXACT], "exact_times", 0, 1, &exact, &has_exact);
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[FQ_TRIP]);
    sqlite3_bind_int64(s, 2, start);
    sqlite3_bind_int64(s, 3, end);
    sqlite3_bind_int64(s, 4, headway);
    bind_opt_int(s, 5, has_exact, exact);
    int rc = schedule_step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return schedule_skip_row(w, DIAG_DUPLICATE_ID, "duplicate (trip_id, start_time) for '%.*s'",
                                 SHOWN(&f[FQ_TRIP]));
    return ROW_CONTINUE;
}

const file_spec schedule_frequencies_spec = {
    "frequencies.txt", FREQUENCY_KEYS, FQ_N, 1u << FQ_TRIP | 1u << FQ_START | 1u << FQ_END |
    1u << FQ_HEADWAY, "INSERT INTO frequencies VALUES (?1,?2,?3,?4,?5)", frequency_row};

/* ------------------------------------------------------------ transfers.txt */

static const char *const TRANSFER_KEYS[] = {"from_stop_id",  "to_stop_id",   "from_route_id",
                                            "to_route_id",   "from_trip_id", "to_trip_id",
                                            "transfer_type", "min_transfer_time"};
enum { TF_FROM_STOP, TF_TO_STOP, TF_FROM_ROUTE, TF_TO_ROUTE, TF_FROM_TRIP, TF_TO_TRIP, TF_TYPE,
       TF_MIN_TIME, TF_N };

static int transfer_row(schedule_writer *w, const csv_field *f)
{
    int64_t type = 0, min_time = 0;
    bool has_type, has_min_time;
    if (!schedule_int_value(w, &f[TF_TYPE], "transfer_type", 0, 5, false, &type, &has_type))
        return ROW_CONTINUE;
    schedule_lenient_int(w, &f[TF_MIN_TIME], "min_transfer_time", 0, INT32_MAX, &min_time,
                         &has_min_time);
    for (int k = TF_FROM_STOP; k <= TF_TO_TRIP; k++) {
        if (f[k].len == 0)
            continue;
        int known;
        diag_kind kind;
        if (k <= TF_TO_STOP) {
            known = schedule_lookup(w, w->find_stop, &f[k]);
            kind = DIAG_UNKNOWN_STOP;
        } else if (k <= TF_TO_ROUTE) {
            known = pool_find(&w->routes, f[k].ptr, f[k].len) != 0;
            kind = DIAG_UNKNOWN_ROUTE;
        } else {
            known = schedule_lookup(w, w->find_trip, &f[k]);
            kind = DIAG_UNKNOWN_TRIP;
        }
        if (known < 0)
            return ROW_STOP;
        if (!known)
            return schedule_skip_row(w, kind, "unknown %s '%.*s'", TRANSFER_KEYS[k], SHOWN(&f[k]));
    }
    sqlite3_stmt *s = w->insert;
    for (int k = TF_FROM_STOP; k <= TF_TO_TRIP; k++)
        bind_opt_text(s, k + 1, &f[k]);
    sqlite3_bind_int64(s, 7, type);
    bind_opt_int(s, 8, has_min_time, min_time);
    return schedule_step_insert(w, s) < 0 ? ROW_STOP : ROW_CONTINUE;
}

const file_spec schedule_transfers_spec = {
    "transfers.txt", TRANSFER_KEYS, TF_N, 0,
    "INSERT INTO transfers VALUES (?1,?2,?3,?4,?5,?6,?7,?8)", transfer_row};

/* ------------------------------------------------------------ feed_info.txt */

static const char *const FEED_INFO_KEYS[] = {
    "feed_publisher_name", "feed_publisher_url", "feed_lang",         "default_lang",
    "feed_start_date",     "feed_end_date",      "feed_version",      "feed_contact_email",
    "feed_contact_url"};
enum { FI_NAME, FI_URL, FI_LANG, FI_DEFAULT_LANG, FI_START, FI_END, FI_VERSION, FI_EMAIL,
       FI_CONTACT_URL, FI_N };

static int feed_info_row(schedule_writer *w, const csv_field *f)
{
    char start[11], end[11];
    bool has_start, has_end;
    if (!schedule_date_value(w, &f[FI_START], "feed_start_date", false, start, &has_start) ||
        !schedule_date_value(w, &f[FI_END], "feed_end_date", false, end, &has_end))
        return ROW_CONTINUE;
    sqlite3_stmt *s = w->insert;
    for (int k = 0; k < FI_N; k++)
        bind_opt_text(s, k + 1, &f[k]);
    if (has_start)
        sqlite3_bind_text(s, FI_START + 1, start, 10, SQLITE_STATIC);
    if (has_end)
        sqlite3_bind_text(s, FI_END + 1, end, 10, SQLITE_STATIC);
    return schedule_step_insert(w, s) < 0 ? ROW_STOP : ROW_CONTINUE;
}

const file_spec schedule_feed_info_spec = {
    "feed_info.txt", FEED_INFO_KEYS, FI_N, 0,
    "INSERT INTO feed_info VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)", feed_info_row};
