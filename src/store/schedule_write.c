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
 *   - trips, the only big table, are buffered and inserted sorted by trip_id
 *     (appends), and their repeated strings (route, service, headsign, block,
 *     shape) are interned into a `strings` table; the `trips` view gives
 *     back the GTFS columns;
 *   - rows are accepted or rejected by the same rules as the timetable
 *     builder's, so both stores hold the same stops, routes and trips: bad
 *     rows are counted in the diag with file:line and skipped; a bad value in
 *     a field only this store reads is counted and stored as NULL; a missing
 *     required file or column is a fatal error naming it.
 * The schema is described in docs/sqlite-stores.md. No global state: this
 * runs on its own thread next to the timetable builder.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "transit/gtfs.h"
#include "transit/stores.h"

#include "base/strmap.h"
#include "store/sqlite_write.h"

#define SCHEDULE_SCHEMA_VERSION 2  /* 2: prefix index, stops renumbered by name length */

/* Row callbacks return one of these to the CSV reader. */
enum { ROW_CONTINUE = 0, ROW_STOP = 1 };

/* How many bytes of a bad value a diag message quotes. */
#define SHOWN_MAX 60
#define SHOWN(f) (int)((f)->len > SHOWN_MAX ? SHOWN_MAX : (f)->len), (f)->ptr

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
    /* Interned strings of trips (route/service/headsign/short name/block/shape). */
    "CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE trip_rows("
    " trip_id TEXT NOT NULL PRIMARY KEY, route_sid INTEGER NOT NULL, service_sid INTEGER NOT NULL,"
    " headsign_sid INTEGER, short_name_sid INTEGER, direction_id INTEGER, block_sid INTEGER,"
    " shape_sid INTEGER, wheelchair_accessible INTEGER, bikes_allowed INTEGER) WITHOUT ROWID;"
    "CREATE VIEW trips AS SELECT t.trip_id AS trip_id, r.value AS route_id,"
    " s.value AS service_id, h.value AS trip_headsign, n.value AS trip_short_name,"
    " t.direction_id AS direction_id, b.value AS block_id, p.value AS shape_id,"
    " t.wheelchair_accessible AS wheelchair_accessible, t.bikes_allowed AS bikes_allowed"
    " FROM trip_rows t JOIN strings r ON r.id = t.route_sid JOIN strings s ON s.id = t.service_sid"
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
    "CREATE TABLE calendar_dates("
    " service_id TEXT NOT NULL, date TEXT NOT NULL, exception_type INTEGER NOT NULL,"
    " PRIMARY KEY (service_id, date)) WITHOUT ROWID;"
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

/* ------------------------------------------------------------ growable memory */

/* Buffers here start at 256 elements and double. */
static void *grow_to(void *buf, size_t *cap, size_t need, size_t elem)
{
    return store_grow(buf, cap, need, 256, elem);
}

/* ------------------------------------------------------------ interned strings */

/* Ids and trip strings are interned in strmaps: a string's id is its entry
 * index + 1, in order of first appearance, so 0 can stand for "none". */

/* The id of a string, or 0 when it was never interned. */
static uint32_t pool_find(const strmap *m, const char *s, size_t len)
{
    uint32_t id = strmap_get(m, s, len);
    return id == UINT32_MAX ? 0 : id;
}

/* The id of a string, interning it first if needed; 0 when out of memory. */
static uint32_t pool_intern(strmap *m, const char *s, size_t len)
{
    int inserted;
    uint32_t e = strmap_put(m, s, len, m->count + 1, &inserted);
    return e == UINT32_MAX ? 0 : e + 1;
}

/* ------------------------------------------------------------ the writer */

/* One buffered trips.txt row; strings are ids in the writer's `strings` pool
 * (0 = empty), small enums are -1 when empty. */
typedef struct trip_row {
    const char *id;       /* into trip_ids; set once parsing is over */
    uint64_t line;
    uint32_t id_off, id_len;
    uint32_t route, service, headsign, short_name, block, shape;
    int8_t direction_id, wheelchair_accessible, bikes_allowed;
} trip_row;

typedef struct schedule_writer {
    const feed_t *feed;
    sqlite3 *db;
    diag *d;
    store_stats *st;
    char *err;
    size_t errlen;
    bool failed;               /* err holds a fatal problem */

    const char *file;          /* the GTFS file being read */
    uint64_t line;             /* the line of the row being handled */
    sqlite3_stmt *insert;      /* the current file's INSERT */
    sqlite3_stmt *find_stop, *find_trip;

    strmap agencies, routes, services;
    strmap strings;            /* trip strings, written to the strings table */
    char *trip_ids;
    size_t trip_ids_len, trip_ids_cap;
    trip_row *trips;
    size_t ntrips, trips_cap;
} schedule_writer;

/* Records a fatal problem; returns ROW_STOP so row callbacks can return it. */
static int fail(schedule_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(schedule_writer *w, const char *fmt, ...)
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

static int fail_sql(schedule_writer *w, const char *what)
{
    return fail(w, "schedule.sqlite: %s: %s", what, sqlite3_errmsg(w->db));
}

static int out_of_memory(schedule_writer *w)
{
    return fail(w, "%s: out of memory", w->file ? w->file : "schedule.sqlite");
}

/* Counts a bad row at the current file:line; the caller skips the row. */
static int skip_row(schedule_writer *w, diag_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int skip_row(schedule_writer *w, diag_kind kind, const char *fmt, ...)
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
        fail(w, "schedule.sqlite: %s", msg ? msg : sqlite3_errmsg(w->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int prepare(schedule_writer *w, const char *sql, sqlite3_stmt **out)
{
    if (sqlite3_prepare_v2(w->db, sql, -1, out, NULL) != SQLITE_OK) {
        fail_sql(w, "prepare");
        return -1;
    }
    return 0;
}

/* Steps an INSERT. Returns 0 when the row went in, 1 when it duplicates a
 * key, -1 on any other error (fatal, recorded). */
static int step_insert(schedule_writer *w, sqlite3_stmt *s)
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
    fail(w, "schedule.sqlite: %s:%llu: %s", w->file, (unsigned long long)w->line,
         sqlite3_errmsg(w->db));
    sqlite3_reset(s);
    return -1;
}

/* Whether a SELECT 1 ... WHERE key = ?1 finds a row; -1 on error. */
static int lookup(schedule_writer *w, sqlite3_stmt *s, const csv_field *key)
{
    sqlite3_bind_text(s, 1, key->ptr, (int)key->len, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    fail_sql(w, "lookup");
    return -1;
}

/* ------------------------------------------------------------ field helpers */

static void bind_text(sqlite3_stmt *s, int i, const csv_field *f)
{
    sqlite3_bind_text(s, i, f->ptr, (int)f->len, SQLITE_STATIC);
}

/* Empty values are stored as NULL. */
static void bind_opt_text(sqlite3_stmt *s, int i, const csv_field *f)
{
    if (f->len)
        bind_text(s, i, f);
    else
        sqlite3_bind_null(s, i);
}

static void bind_opt_int(sqlite3_stmt *s, int i, bool present, int64_t v)
{
    if (present)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

/* A value the row cannot do without. False (row counted as bad) when empty. */
static bool need_value(schedule_writer *w, const csv_field *f, const char *column)
{
    if (f->len)
        return true;
    skip_row(w, DIAG_MISSING_VALUE, "empty %s", column);
    return false;
}

/* An integer in [min, max]; empty is allowed unless `required`. Returns false
 * (row counted as bad) for a malformed, out-of-range or missing value. */
static bool int_value(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                      int64_t max, bool required, int64_t *out, bool *present)
{
    *present = false;
    if (f->len == 0) {
        if (required)
            skip_row(w, DIAG_MISSING_VALUE, "empty %s", column);
        return !required;
    }
    int64_t v;
    if (gtfs_parse_int(f->ptr, f->len, &v) != 0) {
        skip_row(w, DIAG_BAD_NUMBER, "%s is not an integer: '%.*s'", column, SHOWN(f));
        return false;
    }
    if (v < min || v > max) {
        skip_row(w, DIAG_BAD_VALUE, "%s out of range (%lld..%lld): %lld", column, (long long)min,
                 (long long)max, (long long)v);
        return false;
    }
    *out = v;
    *present = true;
    return true;
}

/* An optional integer in [min, max] of a field only this store reads: a bad
 * value is counted (DIAG_BAD_VALUE) and stored as NULL, the row is kept. */
static void lenient_int(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                        int64_t max, int64_t *out, bool *present)
{
    *present = false;
    if (f->len == 0)
        return;
    int64_t v;
    if (gtfs_parse_int(f->ptr, f->len, &v) != 0 || v < min || v > max) {
        skip_row(w, DIAG_BAD_VALUE, "%s '%.*s' is not %lld..%lld (ignored)", column, SHOWN(f),
                 (long long)min, (long long)max);
        return;
    }
    *out = v;
    *present = true;
}

/* An integer in [min, max], required; anything else is counted as `kind`. */
static bool strict_int(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                       int64_t max, diag_kind kind, int64_t *out)
{
    if (f->len == 0 || gtfs_parse_int(f->ptr, f->len, out) != 0 || *out < min || *out > max) {
        skip_row(w, kind, "%s '%.*s' is not %lld..%lld", column, SHOWN(f), (long long)min,
                 (long long)max);
        return false;
    }
    return true;
}

/* A YYYYMMDD date written as YYYY-MM-DD into out; empty allowed unless
 * `required`. */
static bool date_value(schedule_writer *w, const csv_field *f, const char *column, bool required,
                       char out[11], bool *present)
{
    *present = false;
    if (f->len == 0) {
        if (required)
            skip_row(w, DIAG_BAD_DATE, "empty %s", column);
        return !required;
    }
    int32_t days;
    if (gtfs_parse_date(f->ptr, f->len, &days) != 0) {
        skip_row(w, DIAG_BAD_DATE, "%s is not a YYYYMMDD date: '%.*s'", column, SHOWN(f));
        return false;
    }
    format_date(days, out);
    *present = true;
    return true;
}

/* A time of day (H:MM:SS) in seconds; required. */
static bool time_value(schedule_writer *w, const csv_field *f, const char *column, uint32_t *secs)
{
    if (f->len == 0) {
        skip_row(w, DIAG_BAD_TIME, "empty %s", column);
        return false;
    }
    if (gtfs_parse_time(f->ptr, f->len, secs) != 0 || *secs == GTFS_TIME_NONE) {
        skip_row(w, DIAG_BAD_TIME, "%s is not a H:MM:SS time: '%.*s'", column, SHOWN(f));
        return false;
    }
    return true;
}

/* A coordinate in [-limit, limit]; `optional` lets it be empty (present=false). */
static bool coordinate_value(schedule_writer *w, const csv_field *f, const char *column,
                             double limit, bool optional, double *out, bool *present)
{
    *present = false;
    if (f->len == 0) {
        if (!optional)
            skip_row(w, DIAG_BAD_COORDINATE, "empty %s", column);
        return optional;
    }
    double v;
    if (gtfs_parse_double(f->ptr, f->len, &v) != 0 || !(v >= -limit && v <= limit)) {
        skip_row(w, DIAG_BAD_COORDINATE, "bad %s: '%.*s'", column, SHOWN(f));
        return false;
    }
    *out = v;
    *present = true;
    return true;
}

/* ------------------------------------------------------------ reading a file */

typedef int (*row_handler)(schedule_writer *w, const csv_field *f);

typedef struct file_spec {
    const char *name;
    const char *const *keys;
    int nkeys;
    uint32_t required;        /* bit k: keys[k] is a required column */
    const char *insert_sql;   /* prepared as w->insert while the file is read */
    row_handler row;
} file_spec;

typedef struct file_read {
    schedule_writer *w;
    const file_spec *spec;
    bool header_checked;
    uint64_t rows;
} file_read;

static int missing_column(schedule_writer *w, const file_spec *spec, int key)
{
    return fail(w, "%s: missing required column %s", spec->name, spec->keys[key]);
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
    if (spec->insert_sql && prepare(w, spec->insert_sql, &w->insert) != 0)
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
            fail(w, "%s:%llu: column %u: %s", file, (unsigned long long)ce.line, ce.column,
                 ce.message);
        else if (ce.line)
            fail(w, "%s:%llu: %s", file, (unsigned long long)ce.line, ce.message);
        else
            fail(w, "%s: %s", file, ce.message[0] ? ce.message : "cannot be read");
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

/* ------------------------------------------------------------ agency.txt */

static const char *const AGENCY_KEYS[] = {"agency_id",   "agency_name",     "agency_url",
                                          "agency_timezone", "agency_lang", "agency_phone",
                                          "agency_fare_url", "agency_email"};
enum { AG_ID, AG_NAME, AG_URL, AG_TZ, AG_LANG, AG_PHONE, AG_FARE_URL, AG_EMAIL, AG_N };

static int agency_row(schedule_writer *w, const csv_field *f)
{
    /* Kept even with an empty name, url or timezone (counted), as the
     * timetable keeps it. */
    need_value(w, &f[AG_NAME], "agency_name");
    need_value(w, &f[AG_URL], "agency_url");
    need_value(w, &f[AG_TZ], "agency_timezone");
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[AG_ID]);  /* '' when the feed has a single agency without id */
    for (int k = AG_NAME; k < AG_N; k++)
        bind_opt_text(s, k + 1, &f[k]);
    int rc = step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return skip_row(w, DIAG_DUPLICATE_ID, "duplicate agency_id '%.*s'", SHOWN(&f[AG_ID]));
    if (!pool_intern(&w->agencies, f[AG_ID].ptr, f[AG_ID].len))
        return out_of_memory(w);
    return ROW_CONTINUE;
}

static const file_spec AGENCY_SPEC = {
    "agency.txt", AGENCY_KEYS, AG_N, 1u << AG_NAME | 1u << AG_URL | 1u << AG_TZ,
    "INSERT INTO agency VALUES (?1,?2,?3,?4,?5,?6,?7,?8)", agency_row};

/* ------------------------------------------------------------ routes.txt */

static const char *const ROUTE_KEYS[] = {
    "route_id",   "agency_id",        "route_short_name", "route_long_name",
    "route_desc", "route_type",       "route_url",        "route_color",
    "route_text_color", "route_sort_order", "continuous_pickup", "continuous_drop_off"};
enum {
    RT_ID, RT_AGENCY, RT_SHORT, RT_LONG, RT_DESC, RT_TYPE, RT_URL, RT_COLOR, RT_TEXT_COLOR,
    RT_SORT, RT_CPICKUP, RT_CDROPOFF, RT_N
};

static int route_row(schedule_writer *w, const csv_field *f)
{
    int64_t type, sort = 0, cpickup = 0, cdropoff = 0;
    bool has_sort, has_cpickup, has_cdropoff;
    /* extended route types (100..1702 and beyond) are accepted */
    if (!need_value(w, &f[RT_ID], "route_id") ||
        !strict_int(w, &f[RT_TYPE], "route_type", 0, 9999, DIAG_BAD_VALUE, &type))
        return ROW_CONTINUE;
    lenient_int(w, &f[RT_SORT], "route_sort_order", 0, INT32_MAX, &sort, &has_sort);
    lenient_int(w, &f[RT_CPICKUP], "continuous_pickup", 0, 3, &cpickup, &has_cpickup);
    lenient_int(w, &f[RT_CDROPOFF], "continuous_drop_off", 0, 3, &cdropoff, &has_cdropoff);
    /* an unknown agency is counted; the route is kept (its trips still run) */
    if (f[RT_AGENCY].len && !pool_find(&w->agencies, f[RT_AGENCY].ptr, f[RT_AGENCY].len))
        skip_row(w, DIAG_UNKNOWN_AGENCY, "route '%.*s': unknown agency_id '%.*s'",
                 SHOWN(&f[RT_ID]), SHOWN(&f[RT_AGENCY]));
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[RT_ID]);
    for (int k = RT_AGENCY; k <= RT_DESC; k++)
        bind_opt_text(s, k + 1, &f[k]);
    sqlite3_bind_int64(s, RT_TYPE + 1, type);
    for (int k = RT_URL; k <= RT_TEXT_COLOR; k++)
        bind_opt_text(s, k + 1, &f[k]);
    bind_opt_int(s, RT_SORT + 1, has_sort, sort);
    bind_opt_int(s, RT_CPICKUP + 1, has_cpickup, cpickup);
    bind_opt_int(s, RT_CDROPOFF + 1, has_cdropoff, cdropoff);
    int rc = step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return skip_row(w, DIAG_DUPLICATE_ID, "duplicate route_id '%.*s'", SHOWN(&f[RT_ID]));
    if (!pool_intern(&w->routes, f[RT_ID].ptr, f[RT_ID].len))
        return out_of_memory(w);
    return ROW_CONTINUE;
}

static const file_spec ROUTES_SPEC = {
    "routes.txt", ROUTE_KEYS, RT_N, 1u << RT_ID | 1u << RT_TYPE,
    "INSERT INTO routes VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)", route_row};

/* ------------------------------------------------------------ calendar.txt */

static const char *const CALENDAR_KEYS[] = {"service_id", "monday",   "tuesday",  "wednesday",
                                            "thursday",   "friday",   "saturday", "sunday",
                                            "start_date", "end_date"};
enum { CAL_SERVICE, CAL_MONDAY, CAL_SUNDAY = CAL_MONDAY + 6, CAL_START, CAL_END, CAL_N };

static int calendar_row(schedule_writer *w, const csv_field *f)
{
    if (!need_value(w, &f[CAL_SERVICE], "service_id"))
        return ROW_CONTINUE;
    int64_t day[7];
    bool present;
    for (int k = 0; k < 7; k++)
        if (!strict_int(w, &f[CAL_MONDAY + k], CALENDAR_KEYS[CAL_MONDAY + k], 0, 1,
                        DIAG_BAD_VALUE, &day[k]))
            return ROW_CONTINUE;
    char start[11], end[11];
    if (!date_value(w, &f[CAL_START], "start_date", true, start, &present) ||
        !date_value(w, &f[CAL_END], "end_date", true, end, &present))
        return ROW_CONTINUE;
    if (strcmp(end, start) < 0)
        return skip_row(w, DIAG_BAD_DATE, "end_date %s is before start_date %s", end, start);
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[CAL_SERVICE]);
    for (int k = 0; k < 7; k++)
        sqlite3_bind_int64(s, 2 + k, day[k]);
    sqlite3_bind_text(s, 9, start, 10, SQLITE_STATIC);
    sqlite3_bind_text(s, 10, end, 10, SQLITE_STATIC);
    int rc = step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return skip_row(w, DIAG_DUPLICATE_ID, "duplicate service_id '%.*s'",
                        SHOWN(&f[CAL_SERVICE]));
    if (!pool_intern(&w->services, f[CAL_SERVICE].ptr, f[CAL_SERVICE].len))
        return out_of_memory(w);
    return ROW_CONTINUE;
}

static const file_spec CALENDAR_SPEC = {
    "calendar.txt", CALENDAR_KEYS, CAL_N, (1u << CAL_N) - 1,
    "INSERT INTO calendar VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)", calendar_row};

/* ------------------------------------------------------------ calendar_dates.txt */

static const char *const CALENDAR_DATE_KEYS[] = {"service_id", "date", "exception_type"};
enum { CD_SERVICE, CD_DATE, CD_TYPE, CD_N };

static int calendar_date_row(schedule_writer *w, const csv_field *f)
{
    char date[11];
    bool present;
    int64_t type;
    if (!need_value(w, &f[CD_SERVICE], "service_id") ||
        !date_value(w, &f[CD_DATE], "date", true, date, &present) ||
        !strict_int(w, &f[CD_TYPE], "exception_type", 1, 2, DIAG_BAD_VALUE, &type))
        return ROW_CONTINUE;
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[CD_SERVICE]);
    sqlite3_bind_text(s, 2, date, 10, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, type);
    int rc = step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return skip_row(w, DIAG_DUPLICATE_ID, "duplicate (service_id, date) ('%.*s', %s)",
                        SHOWN(&f[CD_SERVICE]), date);
    if (!pool_intern(&w->services, f[CD_SERVICE].ptr, f[CD_SERVICE].len))
        return out_of_memory(w);
    return ROW_CONTINUE;
}

static const file_spec CALENDAR_DATES_SPEC = {
    "calendar_dates.txt", CALENDAR_DATE_KEYS, CD_N, (1u << CD_N) - 1,
    "INSERT INTO calendar_dates VALUES (?1,?2,?3)", calendar_date_row};

/* ------------------------------------------------------------ trips.txt */

static const char *const TRIP_KEYS[] = {"route_id",     "service_id",   "trip_id",
                                        "trip_headsign", "trip_short_name", "direction_id",
                                        "block_id",     "shape_id",     "wheelchair_accessible",
                                        "bikes_allowed"};
enum {
    TR_ROUTE, TR_SERVICE, TR_ID, TR_HEADSIGN, TR_SHORT, TR_DIRECTION, TR_BLOCK, TR_SHAPE,
    TR_WHEELCHAIR, TR_BIKES, TR_N
};

/* Interns an optional string; *id is 0 for an empty one. False when out of memory. */
static bool intern_opt(schedule_writer *w, const csv_field *f, uint32_t *id)
{
    *id = 0;
    if (f->len == 0)
        return true;
    *id = pool_intern(&w->strings, f->ptr, f->len);
    return *id != 0;
}

/* Buffers the row; trips are inserted sorted by trip_id once the file is read. */
static int trip_row_read(schedule_writer *w, const csv_field *f)
{
    int64_t direction = -1, wheelchair = -1, bikes = -1;
    bool present;
    if (!need_value(w, &f[TR_ID], "trip_id"))
        return ROW_CONTINUE;
    if (!pool_find(&w->routes, f[TR_ROUTE].ptr, f[TR_ROUTE].len))
        return skip_row(w, DIAG_UNKNOWN_ROUTE, "trip %.*s: unknown route_id '%.*s'",
                        SHOWN(&f[TR_ID]), SHOWN(&f[TR_ROUTE]));
    if (!pool_find(&w->services, f[TR_SERVICE].ptr, f[TR_SERVICE].len))
        return skip_row(w, DIAG_UNKNOWN_SERVICE, "trip %.*s: unknown service_id '%.*s'",
                        SHOWN(&f[TR_ID]), SHOWN(&f[TR_SERVICE]));
    /* bad optional enums are counted and stored as NULL; the trip is kept */
    lenient_int(w, &f[TR_DIRECTION], "direction_id", 0, 1, &direction, &present);
    if (!present)
        direction = -1;
    lenient_int(w, &f[TR_WHEELCHAIR], "wheelchair_accessible", 0, 2, &wheelchair, &present);
    if (!present)
        wheelchair = -1;
    lenient_int(w, &f[TR_BIKES], "bikes_allowed", 0, 2, &bikes, &present);
    if (!present)
        bikes = -1;
    if (w->trip_ids_len + f[TR_ID].len > UINT32_MAX)
        return out_of_memory(w);
    trip_row *trips = grow_to(w->trips, &w->trips_cap, w->ntrips + 1, sizeof *trips);
    if (!trips)
        return out_of_memory(w);
    w->trips = trips;
    char *ids = grow_to(w->trip_ids, &w->trip_ids_cap, w->trip_ids_len + f[TR_ID].len, 1);
    if (!ids)
        return out_of_memory(w);
    w->trip_ids = ids;

    trip_row t = {.line = w->line,
                  .id_off = (uint32_t)w->trip_ids_len,
                  .id_len = f[TR_ID].len,
                  .direction_id = (int8_t)direction,
                  .wheelchair_accessible = (int8_t)wheelchair,
                  .bikes_allowed = (int8_t)bikes};
    if (!intern_opt(w, &f[TR_ROUTE], &t.route) || !intern_opt(w, &f[TR_SERVICE], &t.service) ||
        !intern_opt(w, &f[TR_HEADSIGN], &t.headsign) ||
        !intern_opt(w, &f[TR_SHORT], &t.short_name) || !intern_opt(w, &f[TR_BLOCK], &t.block) ||
        !intern_opt(w, &f[TR_SHAPE], &t.shape))
        return out_of_memory(w);
    memcpy(w->trip_ids + w->trip_ids_len, f[TR_ID].ptr, f[TR_ID].len);
    w->trip_ids_len += f[TR_ID].len;
    w->trips[w->ntrips++] = t;
    return ROW_CONTINUE;
}

static const file_spec TRIPS_SPEC = {"trips.txt", TRIP_KEYS, TR_N,
                                     1u << TR_ROUTE | 1u << TR_SERVICE | 1u << TR_ID, NULL,
                                     trip_row_read};

/* SQLite's BINARY order (memcmp, then length), then file order. */
static int compare_trips(const void *a, const void *b)
{
    const trip_row *x = a, *y = b;
    int c = store_binary_order(x->id, x->id_len, y->id, y->id_len);
    if (c)
        return c;
    return x->line < y->line ? -1 : x->line > y->line;
}

static void bind_string_id(sqlite3_stmt *s, int i, uint32_t id)
{
    if (id)
        sqlite3_bind_int64(s, i, id);
    else
        sqlite3_bind_null(s, i);
}

/* Writes the interned strings, then the buffered trips in key order. */
static int write_trips(schedule_writer *w)
{
    sqlite3_stmt *s = NULL;
    if (prepare(w, "INSERT INTO strings(id, value) VALUES (?1, ?2)", &s) != 0)
        return -1;
    for (uint32_t i = 0; i < w->strings.count; i++) {
        sqlite3_bind_int64(s, 1, (int64_t)i + 1);
        sqlite3_bind_text(s, 2, strmap_key(&w->strings, i), (int)strmap_key_len(&w->strings, i),
                          SQLITE_STATIC);
        if (step_insert(w, s) != 0) {
            sqlite3_finalize(s);
            fail(w, "schedule.sqlite: cannot write the strings table");
            return -1;
        }
    }
    sqlite3_finalize(s);

    for (size_t i = 0; i < w->ntrips; i++)
        w->trips[i].id = w->trip_ids + w->trips[i].id_off;
    if (w->ntrips > 1)
        qsort(w->trips, w->ntrips, sizeof *w->trips, compare_trips);
    if (prepare(w, "INSERT INTO trip_rows VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)", &s) != 0)
        return -1;
    w->file = "trips.txt";
    for (size_t i = 0; i < w->ntrips; i++) {
        const trip_row *t = &w->trips[i];
        w->line = t->line;
        sqlite3_bind_text(s, 1, t->id, (int)t->id_len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, t->route);
        sqlite3_bind_int64(s, 3, t->service);
        bind_string_id(s, 4, t->headsign);
        bind_string_id(s, 5, t->short_name);
        bind_opt_int(s, 6, t->direction_id >= 0, t->direction_id);
        bind_string_id(s, 7, t->block);
        bind_string_id(s, 8, t->shape);
        bind_opt_int(s, 9, t->wheelchair_accessible >= 0, t->wheelchair_accessible);
        bind_opt_int(s, 10, t->bikes_allowed >= 0, t->bikes_allowed);
        int rc = step_insert(w, s);
        if (rc < 0) {
            sqlite3_finalize(s);
            return -1;
        }
        if (rc > 0)
            skip_row(w, DIAG_DUPLICATE_ID, "duplicate trip_id '%.*s'",
                     (int)(t->id_len > SHOWN_MAX ? SHOWN_MAX : t->id_len), t->id);
    }
    sqlite3_finalize(s);
    return 0;
}

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
    if (!need_value(w, &f[ST_ID], "stop_id"))
        return ROW_CONTINUE;
    if (f[ST_LOCATION_TYPE].len &&
        !strict_int(w, &f[ST_LOCATION_TYPE], "location_type", 0, 4, DIAG_BAD_VALUE,
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
        if (!coordinate_value(w, &f[ST_LAT], "stop_lat", 90.0, false, &lat, &has_lat) ||
            !coordinate_value(w, &f[ST_LON], "stop_lon", 180.0, false, &lon, &has_lon))
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
    int rc = step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return skip_row(w, DIAG_DUPLICATE_ID, "duplicate stop_id '%.*s'", SHOWN(&f[ST_ID]));
    if (f[ST_WHEELCHAIR].len && !has_wheelchair)
        skip_row(w, DIAG_BAD_VALUE, "stop '%.*s': wheelchair_boarding '%.*s' is not 0..2 (ignored)",
                 SHOWN(&f[ST_ID]), SHOWN(&f[ST_WHEELCHAIR]));
    /* kept, as the timetable keeps it, but it cannot be found by name */
    if (location_type < 3 && f[ST_NAME].len == 0)
        skip_row(w, DIAG_MISSING_VALUE, "stop '%.*s' has an empty stop_name (kept)",
                 SHOWN(&f[ST_ID]));
    return ROW_CONTINUE;
}

static const file_spec STOPS_SPEC = {
    "stops.txt", STOP_KEYS, ST_N, 1u << ST_ID,
    "INSERT INTO stops VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)", stop_row};

/* ------------------------------------------------------------ frequencies.txt */

static const char *const FREQUENCY_KEYS[] = {"trip_id", "start_time", "end_time", "headway_secs",
                                             "exact_times"};
enum { FQ_TRIP, FQ_START, FQ_END, FQ_HEADWAY, FQ_EXACT, FQ_N };

static int frequency_row(schedule_writer *w, const csv_field *f)
{
    uint32_t start, end;
    int64_t headway, exact = 0;
    bool has_exact;
    int known = lookup(w, w->find_trip, &f[FQ_TRIP]);
    if (known < 0)
        return ROW_STOP;
    if (!known)
        return skip_row(w, DIAG_UNKNOWN_TRIP, "unknown trip_id '%.*s'", SHOWN(&f[FQ_TRIP]));
    if (!time_value(w, &f[FQ_START], "start_time", &start) ||
        !time_value(w, &f[FQ_END], "end_time", &end))
        return ROW_CONTINUE;
    if (end <= start)
        return skip_row(w, DIAG_BAD_TIME, "end_time is not after start_time");
    if (!strict_int(w, &f[FQ_HEADWAY], "headway_secs", 1, 86400, DIAG_BAD_NUMBER, &headway))
        return ROW_CONTINUE;
    lenient_int(w, &f[FQ_EXACT], "exact_times", 0, 1, &exact, &has_exact);
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[FQ_TRIP]);
    sqlite3_bind_int64(s, 2, start);
    sqlite3_bind_int64(s, 3, end);
    sqlite3_bind_int64(s, 4, headway);
    bind_opt_int(s, 5, has_exact, exact);
    int rc = step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return skip_row(w, DIAG_DUPLICATE_ID, "duplicate (trip_id, start_time) for '%.*s'",
                        SHOWN(&f[FQ_TRIP]));
    return ROW_CONTINUE;
}

static const file_spec FREQUENCIES_SPEC = {
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
    if (!int_value(w, &f[TF_TYPE], "transfer_type", 0, 5, false, &type, &has_type))
        return ROW_CONTINUE;
    lenient_int(w, &f[TF_MIN_TIME], "min_transfer_time", 0, INT32_MAX, &min_time, &has_min_time);
    for (int k = TF_FROM_STOP; k <= TF_TO_TRIP; k++) {
        if (f[k].len == 0)
            continue;
        int known;
        diag_kind kind;
        if (k <= TF_TO_STOP) {
            known = lookup(w, w->find_stop, &f[k]);
            kind = DIAG_UNKNOWN_STOP;
        } else if (k <= TF_TO_ROUTE) {
            known = pool_find(&w->routes, f[k].ptr, f[k].len) != 0;
            kind = DIAG_UNKNOWN_ROUTE;
        } else {
            known = lookup(w, w->find_trip, &f[k]);
            kind = DIAG_UNKNOWN_TRIP;
        }
        if (known < 0)
            return ROW_STOP;
        if (!known)
            return skip_row(w, kind, "unknown %s '%.*s'", TRANSFER_KEYS[k], SHOWN(&f[k]));
    }
    sqlite3_stmt *s = w->insert;
    for (int k = TF_FROM_STOP; k <= TF_TO_TRIP; k++)
        bind_opt_text(s, k + 1, &f[k]);
    sqlite3_bind_int64(s, 7, type);
    bind_opt_int(s, 8, has_min_time, min_time);
    return step_insert(w, s) < 0 ? ROW_STOP : ROW_CONTINUE;
}

static const file_spec TRANSFERS_SPEC = {
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
    if (!date_value(w, &f[FI_START], "feed_start_date", false, start, &has_start) ||
        !date_value(w, &f[FI_END], "feed_end_date", false, end, &has_end))
        return ROW_CONTINUE;
    sqlite3_stmt *s = w->insert;
    for (int k = 0; k < FI_N; k++)
        bind_opt_text(s, k + 1, &f[k]);
    if (has_start)
        sqlite3_bind_text(s, FI_START + 1, start, 10, SQLITE_STATIC);
    if (has_end)
        sqlite3_bind_text(s, FI_END + 1, end, 10, SQLITE_STATIC);
    return step_insert(w, s) < 0 ? ROW_STOP : ROW_CONTINUE;
}

static const file_spec FEED_INFO_SPEC = {
    "feed_info.txt", FEED_INFO_KEYS, FI_N, 0,
    "INSERT INTO feed_info VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)", feed_info_row};

/* ------------------------------------------------------------ the whole build */

static int require_file(schedule_writer *w, const char *name)
{
    if (feed_has(w->feed, name))
        return 0;
    fail(w, "%s: required file is missing from the feed", name);
    return -1;
}

/* Writes the finished in-memory database to `path` in one pass. */
static int write_file(schedule_writer *w, const char *path)
{
    const char *step = "";
    if (store_build_vacuum_into(w->db, path, &step) == SQLITE_OK)
        return 0;
    if (strcmp(step, "prepare") == 0)
        fail_sql(w, "prepare");
    else
        fail(w, "%s: cannot write: %s", path, sqlite3_errmsg(w->db));
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
        fail(w, "calendar.txt and calendar_dates.txt: the feed has neither (one is required)");
        return -1;
    }
    if (exec_sql(w, "PRAGMA page_size=4096; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                    "PRAGMA temp_store=MEMORY; BEGIN;") != 0 ||
        exec_sql(w, SCHEDULE_SCHEMA) != 0)
        return -1;

    if (read_file(w, &AGENCY_SPEC, &st->agency) != 0 ||
        read_file(w, &ROUTES_SPEC, &st->routes) != 0)
        return -1;
    if (has_calendar && read_file(w, &CALENDAR_SPEC, &st->calendar) != 0)
        return -1;
    if (has_calendar_dates && read_file(w, &CALENDAR_DATES_SPEC, &st->calendar_dates) != 0)
        return -1;
    if (read_file(w, &TRIPS_SPEC, &st->trips) != 0 || write_trips(w) != 0)
        return -1;
    if (read_file(w, &STOPS_SPEC, &st->stops) != 0)
        return -1;
    if (prepare(w, "SELECT 1 FROM stops WHERE stop_id = ?1", &w->find_stop) != 0 ||
        prepare(w, "SELECT 1 FROM trip_rows WHERE trip_id = ?1", &w->find_trip) != 0)
        return -1;
    if (feed_has(w->feed, "frequencies.txt") &&
        read_file(w, &FREQUENCIES_SPEC, &st->frequencies) != 0)
        return -1;
    if (feed_has(w->feed, "transfers.txt") && read_file(w, &TRANSFERS_SPEC, &st->transfers) != 0)
        return -1;
    if (feed_has(w->feed, "feed_info.txt") && read_file(w, &FEED_INFO_SPEC, &st->feed_info) != 0)
        return -1;
    w->file = NULL;

    char version[64];
    snprintf(version, sizeof version, "PRAGMA user_version=%d;", SCHEDULE_SCHEMA_VERSION);
    /* Renumber stops shortest name first (then name, id) before indexing: for a
     * broad prefix, search returns the first matches in rowid order instead of
     * ranking thousands (schedule_read.c), and shorter names are what bm25 ranks
     * first anyway when every match contains every term. */
    if (exec_sql(w, "CREATE TEMP TABLE stops_by_name AS SELECT * FROM stops"
                    " ORDER BY length(stop_name), stop_name, stop_id;"
                    "DELETE FROM stops;"
                    "INSERT INTO stops SELECT * FROM stops_by_name;"
                    "DROP TABLE stops_by_name;") != 0 ||
        exec_sql(w, "INSERT INTO stop_names(stop_names) VALUES ('rebuild');"
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
    strmap_free(&w->agencies);
    strmap_free(&w->routes);
    strmap_free(&w->services);
    strmap_free(&w->strings);
    free(w->trip_ids);
    free(w->trips);
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
        out_of_memory(w);
    else
        rc = write_all(w, path);
    writer_free(w);
    return rc;
}

int schedule_store_write(const feed_t *feed, const char *path, diag *d, store_stats *st,
                         char *err, size_t errlen)
{
    store_stats local;
    st = store_stats_reset(st, &local);
    schedule_writer w = {.feed = feed, .d = d, .st = st, .err = err, .errlen = errlen};
    return store_build_file(path, "schedule.sqlite", fill_schedule, &w, st, err, errlen);
}
