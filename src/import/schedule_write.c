/* schedule_write.c — writes schedule.sqlite, the reference-data store of one
 * feed version.
 *
 * Why it exists: agencies, routes, trips, stops (with an FTS5 name index),
 * calendars, frequencies, transfers and feed info are looked up by id, listed
 * and searched, which is SQLite's job; the departures hot path never reads
 * this file (timetable.bin does that). The file must be small (it counts in
 * the "stores <= 10% of the CSV" budget) and fast to build, so:
 *   - the database is built in memory in one transaction (journal off) with
 *     statements prepared once per file, then written to its path in one
 *     pass by VACUUM INTO, which packs every B-tree page full; one fsync;
 *   - trips, the only big table, are inserted in trip_id order (appends)
 *     without being held: trips.txt is read twice (schedule_write_trips.c),
 *     and their repeated strings (route, headsign, block, shape) are
 *     interned into a `strings` table, their service into `services`; the
 *     `trips` view gives back the GTFS columns;
 *   - calendar_dates rows are not stored, only the distinct sets of days the
 *     services run on (schedule_write_days.c); a view gives the rows back;
 *   - rows are accepted or rejected by the same rules as the timetable
 *     builder's, so both stores hold the same stops, routes and trips: bad
 *     rows are counted in the diag with file:line and skipped; a bad value in
 *     a field only this store reads is counted and stored as NULL; a missing
 *     required file or column is a fatal error naming it.
 * The schema is described in docs/sqlite-stores.md. No global state: this
 * runs on its own thread next to the timetable builder.
 */
#include "import/schedule_write_internal.h"

#include "import/days_handoff.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEDULE_SCHEMA_VERSION 5  /* 5: a service run by one trip only is in its trip row
                                      (trip_rows.service, day_set), not in services. 4: translations,
                                      when the feed has them. 3: day_sets and services; calendar_dates
                                      a view. 2: prefix index, stops renumbered by name length */

static const char SCHEDULE_SCHEMA[] =
    "CREATE TABLE agency("
    " agency_id TEXT NOT NULL PRIMARY KEY, agency_name TEXT, agency_url TEXT,"
    " agency_timezone TEXT, agency_lang TEXT, agency_phone TEXT, agency_fare_url TEXT,"
    " agency_email TEXT) WITHOUT ROWID;"
    "CREATE TABLE routes("
    " route_id TEXT NOT NULL PRIMARY KEY, agency_id TEXT, route_short_name TEXT,"
    " route_long_name TEXT, route_desc TEXT, route_type INTEGER NOT NULL, route_url TEXT,"
    " route_color TEXT, route_text_color TEXT, route_sort_order INTEGER,"
    " continuous_pickup INTEGER, continuous_drop_off INTEGER) WITHOUT ROWID;"
    /* Interned strings of trips (route/headsign/short name/block/shape). */
    "CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    /* service: the id of its `services` row (INTEGER), or, for a service no
     * other trip runs (day-by-day feeds give every trip its own), the
     * service_id itself (TEXT) with its day set in day_set, which is NULL
     * otherwise. No type: the value is kept as it is given. */
    "CREATE TABLE trip_rows("
    " trip_id TEXT NOT NULL PRIMARY KEY, route_sid INTEGER NOT NULL, service NOT NULL,"
    " headsign_sid INTEGER, short_name_sid INTEGER, direction_id INTEGER, block_sid INTEGER,"
    " shape_sid INTEGER, wheelchair_accessible INTEGER, bikes_allowed INTEGER, day_set INTEGER) WITHOUT ROWID;"
    "CREATE VIEW trips AS SELECT t.trip_id AS trip_id, r.value AS route_id,"
    " CASE WHEN t.day_set IS NULL THEN s.service_id ELSE t.service END AS service_id,"
    " h.value AS trip_headsign, n.value AS trip_short_name,"
    " t.direction_id AS direction_id, b.value AS block_id, p.value AS shape_id,"
    " t.wheelchair_accessible AS wheelchair_accessible, t.bikes_allowed AS bikes_allowed"
    " FROM trip_rows t JOIN strings r ON r.id = t.route_sid"
    " LEFT JOIN services s ON t.day_set IS NULL AND s.id = t.service"
    " LEFT JOIN strings h ON h.id = t.headsign_sid LEFT JOIN strings n ON n.id = t.short_name_sid"
    " LEFT JOIN strings b ON b.id = t.block_sid LEFT JOIN strings p ON p.id = t.shape_sid;"
    /* A rowid table: the FTS index below uses its rowid as external content. */
    "CREATE TABLE stops("
    " stop_id TEXT NOT NULL PRIMARY KEY, stop_code TEXT, stop_name TEXT, stop_desc TEXT,"
    " stop_lat REAL, stop_lon REAL, zone_id TEXT, stop_url TEXT, location_type INTEGER NOT NULL,"
    " parent_station TEXT, stop_timezone TEXT, wheelchair_boarding INTEGER, platform_code TEXT);"
    "CREATE INDEX stops_parent_station ON stops(parent_station) WHERE parent_station IS NOT NULL;"
    "CREATE VIRTUAL TABLE stop_names USING fts5(stop_name, content='stops', content_rowid='rowid',"
    " tokenize='unicode61 remove_diacritics 2', prefix='1 2 3');"
    "CREATE TABLE calendar("
    " service_id TEXT NOT NULL PRIMARY KEY, monday INTEGER NOT NULL, tuesday INTEGER NOT NULL,"
    " wednesday INTEGER NOT NULL, thursday INTEGER NOT NULL, friday INTEGER NOT NULL,"
    " saturday INTEGER NOT NULL, sunday INTEGER NOT NULL, start_date TEXT NOT NULL,"
    " end_date TEXT NOT NULL) WITHOUT ROWID;"
    /* The distinct sets of days services run on (schedule_write_days.c),
     * numbered as in timetable.bin: days[i] is '1' when the set holds the
     * date first_date + i. */
    "CREATE TABLE day_sets(id INTEGER PRIMARY KEY, first_date TEXT NOT NULL, days TEXT NOT NULL);"
    /* The services no trip has to itself (run by several trips, or none). */
    "CREATE TABLE services(id INTEGER PRIMARY KEY, service_id TEXT NOT NULL, day_set INTEGER NOT NULL);"
    /* calendar_dates.txt's rows, given back as the dates where a service's
     * days differ from its calendar row (or every date, without one); the
     * services are those of `services` and of the trip rows that hold one. */
    "CREATE VIEW calendar_dates(service_id, date, exception_type) AS"
    " WITH RECURSIVE day(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM day"
    "  WHERE i + 1 < (SELECT max(length(days)) FROM day_sets)),"
    " every_service(service_id, day_set) AS (SELECT service_id, day_set FROM services"
    "  UNION ALL SELECT service, day_set FROM trip_rows WHERE day_set IS NOT NULL),"
    " listed AS (SELECT s.service_id AS service_id, date(d.first_date, '+' || day.i || ' days') AS date,"
    "  substr(d.days, day.i + 1, 1) = '1' AS runs"
    "  FROM every_service s JOIN day_sets d ON d.id = s.day_set JOIN day ON day.i < length(d.days))"
    " SELECT l.service_id, l.date, CASE WHEN l.runs THEN 1 ELSE 2 END"
    " FROM listed l LEFT JOIN calendar c ON c.service_id = l.service_id"
    " WHERE l.runs <> coalesce(l.date BETWEEN c.start_date AND c.end_date AND"
    "  CASE strftime('%w', l.date) WHEN '0' THEN c.sunday WHEN '1' THEN c.monday WHEN '2' THEN c.tuesday"
    "  WHEN '3' THEN c.wednesday WHEN '4' THEN c.thursday WHEN '5' THEN c.friday ELSE c.saturday END = 1, 0);"
    "CREATE TABLE frequencies("
    " trip_id TEXT NOT NULL, start_time INTEGER NOT NULL, end_time INTEGER NOT NULL,"
    " headway_secs INTEGER NOT NULL, exact_times INTEGER,"
    " PRIMARY KEY (trip_id, start_time)) WITHOUT ROWID;"
    "CREATE TABLE transfers("
    " from_stop_id TEXT, to_stop_id TEXT, from_route_id TEXT, to_route_id TEXT,"
    " from_trip_id TEXT, to_trip_id TEXT, transfer_type INTEGER NOT NULL,"
    " min_transfer_time INTEGER);"
    "CREATE INDEX transfers_from_stop ON transfers(from_stop_id);"
    "CREATE TABLE feed_info("
    " feed_publisher_name TEXT, feed_publisher_url TEXT, feed_lang TEXT, default_lang TEXT,"
    " feed_start_date TEXT, feed_end_date TEXT, feed_version TEXT, feed_contact_email TEXT,"
    " feed_contact_url TEXT);";

/* stops.txt's rows as read (read_stops): the columns of `stops`. */
#define SCHEDULE_STOPS_READ_TABLE                                                                  \
    "CREATE TEMP TABLE stops_read("                                                                \
    " stop_id TEXT NOT NULL PRIMARY KEY, stop_code TEXT, stop_name TEXT, stop_desc TEXT,"          \
    " stop_lat REAL, stop_lon REAL, zone_id TEXT, stop_url TEXT, location_type INTEGER NOT NULL,"  \
    " parent_station TEXT, stop_timezone TEXT, wheelchair_boarding INTEGER, platform_code TEXT);"

/* ------------------------------------------------------------ the writer */

int schedule_fail(schedule_writer *w, const char *fmt, ...)
{
    if (!w->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, w->errlen, fmt, ap);
        va_end(ap);
        w->failed = true;
    }
    return ROW_STOP;
}

int schedule_fail_sql(schedule_writer *w, const char *what)
{
    return schedule_fail(w, "schedule.sqlite: %s: %s", what, sqlite3_errmsg(w->db));
}

int schedule_out_of_memory(schedule_writer *w)
{
    return schedule_fail(w, "%s: out of memory", w->file ? w->file : "schedule.sqlite");
}

int schedule_skip_row(schedule_writer *w, diag_kind kind, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_add(w->d, kind, w->file, w->line, "%s", msg);
    return ROW_CONTINUE;
}

static int exec_sql(schedule_writer *w, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(w->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        schedule_fail(w, "schedule.sqlite: %s", msg ? msg : sqlite3_errmsg(w->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int schedule_prepare(schedule_writer *w, const char *sql, sqlite3_stmt **out)
{
    if (sqlite3_prepare_v2(w->db, sql, -1, out, NULL) != SQLITE_OK) {
        schedule_fail_sql(w, "prepare");
        return -1;
    }
    return 0;
}

/* Steps an INSERT. Returns 0 when the row went in, 1 when it duplicates a
 * key, -1 on any other error (fatal, recorded). */
int schedule_step_insert(schedule_writer *w, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    int ext = sqlite3_extended_errcode(w->db);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(s);
        return 0;
    }
    if (ext == SQLITE_CONSTRAINT_PRIMARYKEY || ext == SQLITE_CONSTRAINT_UNIQUE) {
        sqlite3_reset(s);
        return 1;
    }
    schedule_fail(w, "schedule.sqlite: %s:%llu: %s", w->file, (unsigned long long)w->line,
                  sqlite3_errmsg(w->db));
    sqlite3_reset(s);
    return -1;
}

int schedule_insert_keyed(schedule_writer *w, const char *column, const csv_field *id, strmap *ids)
{
    int rc = schedule_step_insert(w, w->insert);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return schedule_skip_row(w, DIAG_DUPLICATE_ID, "duplicate %s '%.*s'", column, SHOWN(id));
    if (ids && !pool_intern(ids, id->ptr, id->len))
        return schedule_out_of_memory(w);
    return ROW_CONTINUE;
}

/* Whether a SELECT 1 ... WHERE key = ?1 finds a row; -1 on error. */
int schedule_lookup(schedule_writer *w, sqlite3_stmt *s, const csv_field *key)
{
    sqlite3_bind_text(s, 1, key->ptr, (int)key->len, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    schedule_fail_sql(w, "lookup");
    return -1;
}

/* ------------------------------------------------------------ reading a file */

typedef struct file_read {
    schedule_writer *w;
    const file_spec *spec;
    bool header_checked;
    uint64_t rows;
} file_read;

static int missing_column(schedule_writer *w, const file_spec *spec, int key)
{
    return schedule_fail(w, "%s: missing required column %s", spec->name, spec->keys[key]);
}

static int on_row(void *ctx, const csv_field *fields, uint64_t line)
{
    file_read *r = ctx;
    schedule_writer *w = r->w;
    const file_spec *spec = r->spec;
    if (!r->header_checked) {
        r->header_checked = true;
        for (int k = 0; k < spec->nkeys; k++)
            if ((spec->required >> k & 1u) && (fields[k].flags & CSV_FIELD_ABSENT))
                return missing_column(w, spec, k);
    }
    r->rows++;
    csv_field f[CSV_MAX_KEYS];
    for (int k = 0; k < spec->nkeys; k++)
        f[k] = store_field_trimmed(fields[k]);
    w->line = line;
    return spec->row(w, f);
}

/* Streams one file through its row handler. Returns 0 or -1 (err set). */
static int read_file(schedule_writer *w, const file_spec *spec, uint64_t *rows)
{
    w->file = spec->name;
    w->line = 0;
    if (spec->insert_sql && schedule_prepare(w, spec->insert_sql, &w->insert) != 0)
        return -1;
    file_read r = {.w = w, .spec = spec};
    int has_column[CSV_MAX_KEYS] = {0};
    csv_error ce;
    memset(&ce, 0, sizeof ce);
    int rc = feed_parse_csv(w->feed, spec->name, spec->keys, spec->nkeys, on_row, &r, has_column,
                            &ce);
    sqlite3_finalize(w->insert);
    w->insert = NULL;
    *rows = r.rows;
    if (w->failed)
        return -1;
    if (rc != 0) {
        const char *file = ce.file[0] ? ce.file : spec->name;
        if (ce.line && ce.column)
            schedule_fail(w, "%s:%llu: column %u: %s", file, (unsigned long long)ce.line, ce.column,
                          ce.message);
        else if (ce.line)
            schedule_fail(w, "%s:%llu: %s", file, (unsigned long long)ce.line, ce.message);
        else
            schedule_fail(w, "%s: %s", file, ce.message[0] ? ce.message : "cannot be read");
        return -1;
    }
    if (!r.header_checked)  /* no data rows: the header alone must have the columns */
        for (int k = 0; k < spec->nkeys; k++)
            if ((spec->required >> k & 1u) && !has_column[k]) {
                missing_column(w, spec, k);
                return -1;
            }
    return 0;
}

/* ------------------------------------------------------------ the whole build */

static int require_file(schedule_writer *w, const char *name)
{
    if (feed_has(w->feed, name))
        return 0;
    schedule_fail(w, "%s: required file is missing from the feed", name);
    return -1;
}

/* stops.txt, read into a scratch table (its key refuses a repeated
 * stop_id), then into `stops` shortest name first (then name, id): for a
 * broad prefix, search returns the first matches in rowid order instead of
 * ranking thousands (schedule_read.c), and shorter names are what bm25 ranks
 * first anyway when every match contains every term. Copied once in that
 * order, not renumbered at the end (a copy out, a delete and a copy back:
 * 1 s of 6 at 200k stops). 0 or -1. */
static int read_stops(schedule_writer *w, uint64_t *rows)
{
    if (exec_sql(w, SCHEDULE_STOPS_READ_TABLE) != 0 || read_file(w, &schedule_stops_spec, rows) != 0)
        return -1;
    return exec_sql(w, "INSERT INTO stops SELECT * FROM temp.stops_read"
                       " ORDER BY length(stop_name), stop_name, stop_id;"
                       "DROP TABLE temp.stops_read;");
}

/* Writes the finished in-memory database to `path` in one pass. */
static int write_file(schedule_writer *w, const char *path)
{
    const char *step = "";
    if (store_build_vacuum_into(w->db, path, &step) == SQLITE_OK)
        return 0;
    if (strcmp(step, "prepare") == 0)
        schedule_fail_sql(w, "prepare");
    else
        schedule_fail(w, "%s: cannot write: %s", path, sqlite3_errmsg(w->db));
    return -1;
}

static int write_all(schedule_writer *w, const char *path)
{
    store_stats *st = w->st;
    if (require_file(w, "agency.txt") != 0 || require_file(w, "stops.txt") != 0 ||
        require_file(w, "routes.txt") != 0 || require_file(w, "trips.txt") != 0)
        return -1;
    bool has_calendar = feed_has(w->feed, "calendar.txt");
    bool has_calendar_dates = feed_has(w->feed, "calendar_dates.txt");
    if (!has_calendar && !has_calendar_dates) {
        schedule_fail(w, "calendar.txt and calendar_dates.txt: the feed has neither"
                         " (one is required)");
        return -1;
    }
    /* temp_store FILE: the scratch tables (stops, trips out of key order)
     * and SQLite's sorts go to files past the cache, not to the heap */
    if (exec_sql(w, "PRAGMA page_size=4096; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                    "PRAGMA temp_store=FILE; BEGIN;") != 0 ||
        exec_sql(w, SCHEDULE_SCHEMA) != 0)
        return -1;

    if (read_file(w, &schedule_agency_spec, &st->agency) != 0 ||
        read_file(w, &schedule_routes_spec, &st->routes) != 0)
        return -1;
    if (has_calendar && read_file(w, &schedule_calendar_spec, &st->calendar) != 0)
        return -1;
    /* With the builder's days coming, stops are read while it reads the
     * calendars; otherwise calendar_dates.txt is read here. */
    const days_handoff *days = NULL;
    if (w->days_in) {
        if (read_stops(w, &st->stops) != 0)
            return -1;
        days = days_handoff_wait(w->days_in);
    }
    if (days) {
        if (schedule_write_days_from(w, days) != 0)
            return -1;
    } else {
        if (has_calendar_dates && read_file(w, &schedule_calendar_dates_spec, &st->calendar_dates) != 0)
            return -1;
        if (schedule_write_days(w) != 0)
            return -1;
    }
    if (schedule_write_trips(w, exec_sql, read_file, &st->trips) != 0)
        return -1;
    if (!w->days_in && read_stops(w, &st->stops) != 0)
        return -1;
    if (schedule_prepare(w, "SELECT 1 FROM stops WHERE stop_id = ?1", &w->find_stop) != 0 ||
        schedule_prepare(w, "SELECT 1 FROM trip_rows WHERE trip_id = ?1", &w->find_trip) != 0)
        return -1;
    if (feed_has(w->feed, "frequencies.txt") &&
        read_file(w, &schedule_frequencies_spec, &st->frequencies) != 0)
        return -1;
    if (feed_has(w->feed, "transfers.txt") &&
        read_file(w, &schedule_transfers_spec, &st->transfers) != 0)
        return -1;
    if (feed_has(w->feed, "feed_info.txt") &&
        read_file(w, &schedule_feed_info_spec, &st->feed_info) != 0)
        return -1;
    if (schedule_write_feed_list(w, exec_sql, read_file) != 0 ||
        schedule_write_translations(w, exec_sql, read_file) != 0)
        return -1;
    w->file = NULL;

    char version[64];
    snprintf(version, sizeof version, "PRAGMA user_version=%d;", SCHEDULE_SCHEMA_VERSION);
    if (exec_sql(w, "INSERT INTO stop_names(stop_names) VALUES ('rebuild');"
                    "INSERT INTO stop_names(stop_names) VALUES ('optimize');") != 0 ||
        exec_sql(w, version) != 0 || exec_sql(w, "COMMIT;") != 0)
        return -1;
    return write_file(w, path);
}

static void writer_free(schedule_writer *w)
{
    sqlite3_finalize(w->insert);
    sqlite3_finalize(w->find_stop);
    sqlite3_finalize(w->find_trip);
    sqlite3_finalize(w->trip_insert);
    sqlite3_finalize(w->trip_stage);
    strmap_free(&w->agencies);
    strmap_free(&w->routes);
    strmap_free(&w->services);
    strmap_free(&w->strings);
    free(w->trip_counts);
    free(w->last_trip_id);
    free(w->staged);
    free(w->staged_ids);
    free(w->calendars);
    free(w->dates);
    free(w->date_lines);
    free(w->day_set_of);
}

/* store_fill_fn: the whole build on the in-memory database. The writer's
 * statements are finalized here, before the database is closed. */
static int fill_schedule(void *ctx, sqlite3 *db, const char *path)
{
    schedule_writer *w = ctx;
    w->db = db;
    int rc = -1;
    if (strmap_init(&w->agencies, 16) != 0 || strmap_init(&w->routes, 256) != 0 ||
        strmap_init(&w->services, 256) != 0 || strmap_init(&w->strings, 1024) != 0)
        schedule_out_of_memory(w);
    else
        rc = write_all(w, path);
    writer_free(w);
    return rc;
}

int schedule_store_write_days(const feed_t *feed, const char *path, struct days_handoff *days, diag *d,
                              store_stats *st, char *err, size_t errlen)
{
    store_stats local;
    st = store_stats_reset(st, &local);
    schedule_writer w = {.feed = feed, .d = d, .st = st, .err = err, .errlen = errlen, .days_in = days};
    return store_build_file(path, "schedule.sqlite", fill_schedule, &w, st, err, errlen);
}

int schedule_store_write(const feed_t *feed, const char *path, diag *d, store_stats *st, char *err,
                         size_t errlen)
{
    return schedule_store_write_days(feed, path, NULL, d, st, err, errlen);
}
