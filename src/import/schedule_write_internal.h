/* schedule_write_internal.h — what the pieces of the schedule.sqlite writer
 * share. Private to src/store.
 *
 * Why it exists: schedule_write.c builds the store file by file, each row
 * checked and inserted by that file's row handler: schedule_write_services.c
 * has those of agency, routes and calendar, schedule_write_days.c that of
 * calendar_dates and the day sets, schedule_write_trips.c trips.txt's (read
 * in the order agency, routes, calendar, calendar_dates, trips, each checked
 * against the ids of the ones before), and
 * schedule_write_stops.c those of stops and of the files that refer to
 * stops and trips. All check values alike (schedule_write_values.c) and
 * report through the one writer state below.
 */
#ifndef TRANSIT_SCHEDULE_WRITE_INTERNAL_H
#define TRANSIT_SCHEDULE_WRITE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "base/strmap.h"
#include "import/sqlite_write.h"
#include "import/tt_builder.h"
#include "transit/csv.h"
#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/store_write.h"

/* Row callbacks return one of these to the CSV reader. */
enum { ROW_CONTINUE = 0, ROW_STOP = 1 };

/* How many bytes of a bad value a diag message quotes. */
#define SHOWN_MAX 60
#define SHOWN(f) (int)((f)->len > SHOWN_MAX ? SHOWN_MAX : (f)->len), (f)->ptr

/* Buffers here start at 256 elements and double. */
static inline void *grow_to(void *buf, size_t *cap, size_t need, size_t elem)
{
    return store_grow(buf, cap, need, 256, elem);
}

/* ------------------------------------------------------------ interned strings */

/* Ids and trip strings are interned in strmaps: a string's id is its entry
 * index + 1, in order of first appearance, so 0 can stand for "none". */

/* The id of a string, or 0 when it was never interned. */
static inline uint32_t pool_find(const strmap *m, const char *s, size_t len)
{
    uint32_t id = strmap_get(m, s, len);
    return id == UINT32_MAX ? 0 : id;
}

/* The id of a string, interning it first if needed; 0 when out of memory. */
static inline uint32_t pool_intern(strmap *m, const char *s, size_t len)
{
    int inserted;
    uint32_t e = strmap_put(m, s, len, m->count + 1, &inserted);
    return e == UINT32_MAX ? 0 : e + 1;
}

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
    struct days_handoff *days_in;  /* the timetable builder's days, or NULL: read them here */

    strmap agencies, routes;
    strmap services;           /* every service_id of calendar and calendar_dates: the services table */
    strmap strings;            /* trip strings, written to the strings table */
    tb_calendar *calendars;    /* the calendar rows kept, for the day sets (service: pool id - 1) */
    size_t ncalendars, calendars_cap;
    uint32_t *day_set_of;      /* each service's day set (by pool id - 1), once the days are known */
    tb_calendar_date *dates;   /* the calendar_dates rows kept, likewise */
    uint64_t *date_lines;      /* the line of each, for the duplicates' diag */
    size_t ndates, dates_cap, date_lines_cap;
    /* trips.txt (schedule_write_trips.c), read twice, its rows not held */
    uint32_t *trip_counts;     /* each service's trips (by pool id - 1), from the first read */
    bool trips_in_order;       /* the first read found the trip_ids in key order */
    bool trips_refused;        /* a repeated trip_id was refused */
    char *last_trip_id;        /* the first read's previous trip_id, while in order */
    size_t last_trip_id_len, last_trip_id_cap;
    sqlite3_stmt *trip_insert, *trip_stage;
    struct staged_trip *staged;  /* an out-of-order trips.txt of a city's size, sorted in memory */
    size_t staged_count, staged_cap;
    char *staged_ids;          /* their trip_ids, one after another */
    size_t staged_ids_len, staged_ids_cap;
} schedule_writer;

/* One GTFS file: its columns, and what is done with each row. */
typedef int (*row_handler)(schedule_writer *w, const csv_field *f);

typedef struct file_spec {
    const char *name;
    const char *const *keys;
    int nkeys;
    uint32_t required;        /* bit k: keys[k] is a required column */
    const char *insert_sql;   /* prepared as w->insert while the file is read */
    row_handler row;
} file_spec;

/* The files, in schedule_write_services.c and schedule_write_stops.c. */
extern const file_spec schedule_agency_spec, schedule_routes_spec, schedule_calendar_spec,
    schedule_calendar_dates_spec;
extern const file_spec schedule_stops_spec, schedule_frequencies_spec, schedule_transfers_spec,
    schedule_feed_info_spec;

/* schedule_write_feeds.c: the tables feeds and record_feeds of a merged
 * dataset (feed_merge.h), when the feed has transitd_feeds.txt; exec and
 * read are schedule_write.c's. 0 or -1. */
int schedule_write_feed_list(schedule_writer *w, int (*exec)(schedule_writer *, const char *),
                             int (*read)(schedule_writer *, const file_spec *, uint64_t *));

/* schedule_write_translations.c: the table translations, when the feed has
 * translations.txt; exec and read are schedule_write.c's. 0 or -1. */
int schedule_write_translations(schedule_writer *w, int (*exec)(schedule_writer *, const char *),
                                int (*read)(schedule_writer *, const file_spec *, uint64_t *));

/* schedule_write_trips.c: trips.txt, read twice (a count per service, then
 * each row written as it is read, in key order), then the interned strings
 * and the services no trip has to itself; *rows: its data rows. exec and
 * read are schedule_write.c's. 0 or -1. */
int schedule_write_trips(schedule_writer *w, int (*exec)(schedule_writer *, const char *),
                         int (*read)(schedule_writer *, const file_spec *, uint64_t *), uint64_t *rows);
/* schedule_write_days.c: once calendar.txt and calendar_dates.txt are read,
 * writes the services' shared day sets and the services. 0 or -1. */
int schedule_write_days(schedule_writer *w);
/* The same from the timetable builder's days (days_handoff.h), instead of
 * reading calendar_dates.txt. 0 or -1. */
struct days_handoff;
int schedule_write_days_from(schedule_writer *w, const struct days_handoff *h);

/* ------------------------------------------------------------ the writer (schedule_write.c) */

/* Records a fatal problem (the first one is kept); returns ROW_STOP so row
 * callbacks can return it. */
int schedule_fail(schedule_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "schedule.sqlite: <what>: <SQLite's message>". */
int schedule_fail_sql(schedule_writer *w, const char *what);
/* "<file>: out of memory". */
int schedule_out_of_memory(schedule_writer *w);
/* Counts a bad row at the current file:line; returns ROW_CONTINUE (the
 * caller skips the row). */
int schedule_skip_row(schedule_writer *w, diag_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepares sql into *out; 0, or -1 (recorded). */
int schedule_prepare(schedule_writer *w, const char *sql, sqlite3_stmt **out);
/* Steps an INSERT: 0 when the row went in, 1 when it duplicates a key, -1
 * on any other error (fatal, recorded). */
int schedule_step_insert(schedule_writer *w, sqlite3_stmt *s);
/* Steps the row's INSERT (w->insert), keyed by `id`, the value of `column`,
 * and returns what the row handler returns: ROW_CONTINUE when the row went
 * in (its id then interned in `ids`, when not NULL) or when the key was
 * there already (counted as "duplicate <column> '<id>'", the row skipped);
 * ROW_STOP on a fatal error. */
int schedule_insert_keyed(schedule_writer *w, const char *column, const csv_field *id, strmap *ids);
/* Whether a SELECT 1 ... WHERE key = ?1 finds a row; -1 on error. */
int schedule_lookup(schedule_writer *w, sqlite3_stmt *s, const csv_field *key);

/* ------------------------------------------------------------ binding */

static inline void bind_text(sqlite3_stmt *s, int i, const csv_field *f)
{
    sqlite3_bind_text(s, i, f->ptr, (int)f->len, SQLITE_STATIC);
}

/* Empty values are stored as NULL. */
static inline void bind_opt_text(sqlite3_stmt *s, int i, const csv_field *f)
{
    if (f->len)
        bind_text(s, i, f);
    else
        sqlite3_bind_null(s, i);
}

static inline void bind_opt_int(sqlite3_stmt *s, int i, bool present, int64_t v)
{
    if (present)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}


/* ------------------------------------------------------------ values (schedule_write_values.c) */

/* Each checks one field. A bad value is counted in the diag at the current
 * file:line, and false tells the caller to skip the row (lenient_int keeps
 * it, storing NULL). */
bool schedule_need_value(schedule_writer *w, const csv_field *f, const char *column);
bool schedule_int_value(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                        int64_t max, bool required, int64_t *out, bool *present);
void schedule_lenient_int(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                          int64_t max, int64_t *out, bool *present);
bool schedule_strict_int(schedule_writer *w, const csv_field *f, const char *column, int64_t min,
                         int64_t max, diag_kind kind, int64_t *out);
bool schedule_date_value(schedule_writer *w, const csv_field *f, const char *column, bool required,
                         char out[11], bool *present);
bool schedule_time_value(schedule_writer *w, const csv_field *f, const char *column,
                         uint32_t *secs);
bool schedule_coordinate_value(schedule_writer *w, const csv_field *f, const char *column,
                               double limit, bool optional, double *out, bool *present);

#endif
