/* schedule_write_trips.c — trips.txt in schedule.sqlite, its rows never held.
 *
 * Why it exists: trips.txt is this store's one big file (7.5M rows, 627 MB
 * for 64 copies of Brooklyn), and a trip row names its service by the id of
 * a `services` row or, when no other trip runs that service (every trip of a
 * day-by-day feed), by the service_id itself with its day set: each
 * service's trips must be counted before the first row is written. The rows
 * used to be buffered for that and sorted (about 535 MB at 64x), while the
 * timetable builder on the other thread was at its own peak, so the import's
 * peak depended on which thread ran ahead (issue #28). Now the file is read
 * twice. The first read counts each service's trips and sees whether the
 * trip_ids come in key order (SQLite's BINARY order, as many feeds write
 * them); the second checks each row as before and writes it as it is read:
 * straight into trip_rows when they do (appends), else into a temporary
 * table (in a file: the writer's temp_store) that SQLite sorts on disk and
 * gives back in key order. What stays in memory is a count per service and
 * one trip_id. A city's out-of-order trips.txt (at most 262,144
 * rows: about 20 MB at the most) is sorted in memory instead: through the
 * temporary table, Brooklyn's 58,000 trips cost its whole import about 15 %
 * more CPU. The rows, and so the file, are the same as when they were
 * buffered: the first of a repeated trip_id (in file order) is kept, the
 * others counted and refused.
 */
#include "import/schedule_write_internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const TRIP_KEYS[] = {"route_id",     "service_id",   "trip_id",
                                        "trip_headsign", "trip_short_name", "direction_id",
                                        "block_id",     "shape_id",     "wheelchair_accessible",
                                        "bikes_allowed"};
enum {
    TR_ROUTE, TR_SERVICE, TR_ID, TR_HEADSIGN, TR_SHORT, TR_DIRECTION, TR_BLOCK, TR_SHAPE,
    TR_WHEELCHAIR, TR_BIKES, TR_N
};
#define TRIP_REQUIRED (1u << TR_ROUTE | 1u << TR_SERVICE | 1u << TR_ID)

/* w->trip_counts[s]: the trips of service s + 1 counted by the first read,
 * less those refused since as a repeated trip_id (TRIP_REFUSED then set). */
#define TRIP_REFUSED 0x80000000u
#define TRIP_COUNT(c) ((c) & ~TRIP_REFUSED)

static const char TRIP_INSERT[] = "INSERT INTO trip_rows VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)";

/* The rows of a trips.txt out of key order, in file order (line as rowid:
 * appended), read back sorted. */
static const char STAGE_TABLE[] =
    "CREATE TEMP TABLE trips_read(line INTEGER PRIMARY KEY, trip_id TEXT NOT NULL, route INTEGER,"
    " service INTEGER, headsign INTEGER, short_name INTEGER, direction_id INTEGER, block INTEGER,"
    " shape INTEGER, wheelchair_accessible INTEGER, bikes_allowed INTEGER);";
static const char STAGE_INSERT[] = "INSERT INTO temp.trips_read VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)";
static const char STAGE_SORTED[] =
    "SELECT line, trip_id, route, service, headsign, short_name, direction_id, block, shape,"
    " wheelchair_accessible, bikes_allowed FROM temp.trips_read ORDER BY trip_id, line";

/* Up to this many rows, an out-of-order trips.txt is sorted in memory
 * (about 64 bytes a row and its trip_id), not through temp.trips_read; a
 * variable so that the unit tests can take either path. */
uint64_t schedule_trips_sorted_in_memory_max = 262144;

/* One checked trips.txt row: strings are ids in the writer's `strings`
 * pool (0 = empty), service one in its `services` pool; small enums are -1
 * when empty. */
typedef struct trip_values {
    const char *id;
    int id_len;
    uint32_t route, service, headsign, short_name, block, shape;
    int direction_id, wheelchair_accessible, bikes_allowed;
} trip_values;

/* ------------------------------------------------------------ the first read */

/* Counts the row's trip for its service when the second read would keep it
 * (the same checks as trip_row's, told nothing: the second read counts the
 * problems), and whether the trip_ids still rise. */
static int trip_count_row(schedule_writer *w, const csv_field *f)
{
    const csv_field *id = &f[TR_ID];
    if (id->len == 0 || !pool_find(&w->routes, f[TR_ROUTE].ptr, f[TR_ROUTE].len))
        return ROW_CONTINUE;
    uint32_t service = pool_find(&w->services, f[TR_SERVICE].ptr, f[TR_SERVICE].len);
    if (!service)
        return ROW_CONTINUE;
    if (TRIP_COUNT(w->trip_counts[service - 1]) < TRIP_COUNT(UINT32_MAX))
        w->trip_counts[service - 1]++;
    if (!w->trips_in_order)
        return ROW_CONTINUE;
    if (w->last_trip_id && store_binary_order(w->last_trip_id, w->last_trip_id_len, id->ptr, id->len) > 0) {
        w->trips_in_order = false;
        return ROW_CONTINUE;
    }
    char *last = grow_to(w->last_trip_id, &w->last_trip_id_cap, id->len, 1);
    if (!last)
        return schedule_out_of_memory(w);
    w->last_trip_id = last;
    memcpy(last, id->ptr, id->len);
    w->last_trip_id_len = id->len;
    return ROW_CONTINUE;
}

static const file_spec trips_count_spec = {"trips.txt", TRIP_KEYS, TR_ID + 1, TRIP_REQUIRED, NULL,
                                           trip_count_row};

/* ------------------------------------------------------------ writing a row */

static void bind_string_id(sqlite3_stmt *s, int i, uint32_t id)
{
    if (id)
        sqlite3_bind_int64(s, i, id);
    else
        sqlite3_bind_null(s, i);
}

/* Inserts the trip into trip_rows, holding its service_id and day set when
 * its service has no other trip; a repeated trip_id is counted and refused.
 * 0, or -1 (fatal, recorded). */
static int write_trip(schedule_writer *w, const trip_values *t)
{
    sqlite3_stmt *s = w->trip_insert;
    uint32_t service = t->service - 1;
    sqlite3_bind_text(s, 1, t->id, t->id_len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, t->route);
    if (TRIP_COUNT(w->trip_counts[service]) == 1) {
        sqlite3_bind_text(s, 3, strmap_key(&w->services, service), (int)strmap_key_len(&w->services, service),
                          SQLITE_STATIC);
        sqlite3_bind_int64(s, 11, w->day_set_of[service]);
    } else {
        sqlite3_bind_int64(s, 3, t->service);
        sqlite3_bind_null(s, 11);
    }
    bind_string_id(s, 4, t->headsign);
    bind_string_id(s, 5, t->short_name);
    bind_opt_int(s, 6, t->direction_id >= 0, t->direction_id);
    bind_string_id(s, 7, t->block);
    bind_string_id(s, 8, t->shape);
    bind_opt_int(s, 9, t->wheelchair_accessible >= 0, t->wheelchair_accessible);
    bind_opt_int(s, 10, t->bikes_allowed >= 0, t->bikes_allowed);
    int rc = schedule_step_insert(w, s);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        schedule_skip_row(w, DIAG_DUPLICATE_ID, "duplicate trip_id '%.*s'",
                          t->id_len > SHOWN_MAX ? SHOWN_MAX : t->id_len, t->id);
        uint32_t *count = &w->trip_counts[service];
        if (TRIP_COUNT(*count) > 0)
            *count = (TRIP_COUNT(*count) - 1) | TRIP_REFUSED;
        w->trips_refused = true;
    }
    return 0;
}

/* Appends the trip to temp.trips_read, to be sorted. 0 or -1. */
static int stage_trip(schedule_writer *w, const trip_values *t)
{
    sqlite3_stmt *s = w->trip_stage;
    sqlite3_bind_int64(s, 1, (int64_t)w->line);
    sqlite3_bind_text(s, 2, t->id, t->id_len, SQLITE_STATIC);
    const uint32_t ids[] = {t->route, t->service, t->headsign, t->short_name};
    for (int k = 0; k < 4; k++)
        sqlite3_bind_int64(s, 3 + k, ids[k]);
    sqlite3_bind_int64(s, 7, t->direction_id);
    sqlite3_bind_int64(s, 8, t->block);
    sqlite3_bind_int64(s, 9, t->shape);
    sqlite3_bind_int64(s, 10, t->wheelchair_accessible);
    sqlite3_bind_int64(s, 11, t->bikes_allowed);
    int rc = schedule_step_insert(w, s);
    if (rc > 0)   /* a line given twice: never */
        schedule_fail(w, "schedule.sqlite: trips.txt:%llu staged twice", (unsigned long long)w->line);
    return rc == 0 ? 0 : -1;
}

/* A row of an out-of-order trips.txt kept to be sorted in memory: its
 * trip_id is at id_at in w->staged_ids (t.id is set once all are read). */
typedef struct staged_trip {
    trip_values t;
    uint64_t line;
    size_t id_at;
} staged_trip;

/* Keeps the row in memory, to be sorted. 0 or -1. */
static int stage_trip_in_memory(schedule_writer *w, const trip_values *t)
{
    staged_trip *rows = grow_to(w->staged, &w->staged_cap, w->staged_count + 1, sizeof *rows);
    if (rows)
        w->staged = rows;
    char *ids = grow_to(w->staged_ids, &w->staged_ids_cap, w->staged_ids_len + (size_t)t->id_len, 1);
    if (ids)
        w->staged_ids = ids;
    if (!rows || !ids)
        return schedule_out_of_memory(w), -1;
    memcpy(ids + w->staged_ids_len, t->id, (size_t)t->id_len);
    rows[w->staged_count++] = (staged_trip){*t, w->line, w->staged_ids_len};
    w->staged_ids_len += (size_t)t->id_len;
    return 0;
}

/* Key order (SQLite's BINARY), then file order: as STAGE_SORTED. */
static int staged_before(const void *a, const void *b)
{
    const staged_trip *x = a, *y = b;
    int k = store_binary_order(x->t.id, (size_t)x->t.id_len, y->t.id, (size_t)y->t.id_len);
    if (k)
        return k;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* The rows kept in memory into trip_rows in key order (then file order),
 * and let go. 0 or -1. */
static int write_staged_in_memory(schedule_writer *w)
{
    for (size_t i = 0; i < w->staged_count; i++)
        w->staged[i].t.id = w->staged_ids + w->staged[i].id_at;
    qsort(w->staged, w->staged_count, sizeof *w->staged, staged_before);
    int rc = 0;
    for (size_t i = 0; i < w->staged_count && rc == 0; i++) {
        w->line = w->staged[i].line;
        rc = write_trip(w, &w->staged[i].t);
    }
    free(w->staged);
    free(w->staged_ids);
    w->staged = NULL;
    w->staged_ids = NULL;
    w->staged_count = w->staged_cap = w->staged_ids_len = w->staged_ids_cap = 0;
    return rc;
}

/* ------------------------------------------------------------ the second read */

/* Interns an optional string; *id is 0 for an empty one. False when out of memory. */
static bool intern_opt(schedule_writer *w, const csv_field *f, uint32_t *id)
{
    *id = 0;
    if (f->len == 0)
        return true;
    *id = pool_intern(&w->strings, f->ptr, f->len);
    return *id != 0;
}

/* Checks the row and writes it (trip_rows, or the stage when out of key order). */
static int trip_row(schedule_writer *w, const csv_field *f)
{
    int64_t direction = -1, wheelchair = -1, bikes = -1;
    bool present;
    if (!schedule_need_value(w, &f[TR_ID], "trip_id"))
        return ROW_CONTINUE;
    if (!pool_find(&w->routes, f[TR_ROUTE].ptr, f[TR_ROUTE].len))
        return schedule_skip_row(w, DIAG_UNKNOWN_ROUTE, "trip %.*s: unknown route_id '%.*s'",
                                 SHOWN(&f[TR_ID]), SHOWN(&f[TR_ROUTE]));
    uint32_t service = pool_find(&w->services, f[TR_SERVICE].ptr, f[TR_SERVICE].len);
    if (!service)
        return schedule_skip_row(w, DIAG_UNKNOWN_SERVICE, "trip %.*s: unknown service_id '%.*s'",
                                 SHOWN(&f[TR_ID]), SHOWN(&f[TR_SERVICE]));
    /* bad optional enums are counted and stored as NULL; the trip is kept */
    schedule_lenient_int(w, &f[TR_DIRECTION], "direction_id", 0, 1, &direction, &present);
    if (!present)
        direction = -1;
    schedule_lenient_int(w, &f[TR_WHEELCHAIR], "wheelchair_accessible", 0, 2, &wheelchair,
                         &present);
    if (!present)
        wheelchair = -1;
    schedule_lenient_int(w, &f[TR_BIKES], "bikes_allowed", 0, 2, &bikes, &present);
    if (!present)
        bikes = -1;
    trip_values t = {.id = f[TR_ID].ptr,
                     .id_len = (int)f[TR_ID].len,
                     .service = service,
                     .direction_id = (int)direction,
                     .wheelchair_accessible = (int)wheelchair,
                     .bikes_allowed = (int)bikes};
    if (!intern_opt(w, &f[TR_ROUTE], &t.route) || !intern_opt(w, &f[TR_HEADSIGN], &t.headsign) ||
        !intern_opt(w, &f[TR_SHORT], &t.short_name) || !intern_opt(w, &f[TR_BLOCK], &t.block) ||
        !intern_opt(w, &f[TR_SHAPE], &t.shape))
        return schedule_out_of_memory(w);
    int rc = w->trips_in_order ? write_trip(w, &t)
             : w->trip_stage   ? stage_trip(w, &t)
                               : stage_trip_in_memory(w, &t);
    return rc == 0 ? ROW_CONTINUE : ROW_STOP;
}

static const file_spec trips_spec = {"trips.txt", TRIP_KEYS, TR_N, TRIP_REQUIRED, NULL, trip_row};

/* The staged rows into trip_rows in key order (then file order). 0 or -1. */
static int write_staged(schedule_writer *w)
{
    sqlite3_stmt *q = NULL;
    if (schedule_prepare(w, STAGE_SORTED, &q) != 0)
        return -1;
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(q)) == SQLITE_ROW) {
        w->line = (uint64_t)sqlite3_column_int64(q, 0);
        const char *id = (const char *)sqlite3_column_text(q, 1);   /* before its length */
        trip_values t = {.id = id,
                         .id_len = sqlite3_column_bytes(q, 1),
                         .route = (uint32_t)sqlite3_column_int64(q, 2),
                         .service = (uint32_t)sqlite3_column_int64(q, 3),
                         .headsign = (uint32_t)sqlite3_column_int64(q, 4),
                         .short_name = (uint32_t)sqlite3_column_int64(q, 5),
                         .direction_id = sqlite3_column_int(q, 6),
                         .block = (uint32_t)sqlite3_column_int64(q, 7),
                         .shape = (uint32_t)sqlite3_column_int64(q, 8),
                         .wheelchair_accessible = sqlite3_column_int(q, 9),
                         .bikes_allowed = sqlite3_column_int(q, 10)};
        if (!id)
            rc = (schedule_out_of_memory(w), -1);
        else
            rc = write_trip(w, &t);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = (schedule_fail_sql(w, "trips.txt, sorted"), -1);
    sqlite3_finalize(q);
    return rc;
}

/* ------------------------------------------------------------ after the rows */

static int write_strings(schedule_writer *w)
{
    sqlite3_stmt *s = NULL;
    if (schedule_prepare(w, "INSERT INTO strings(id, value) VALUES (?1, ?2)", &s) != 0)
        return -1;
    for (uint32_t i = 0; i < w->strings.count; i++) {
        sqlite3_bind_int64(s, 1, (int64_t)i + 1);
        sqlite3_bind_text(s, 2, strmap_key(&w->strings, i), (int)strmap_key_len(&w->strings, i),
                          SQLITE_STATIC);
        if (schedule_step_insert(w, s) != 0) {
            sqlite3_finalize(s);
            schedule_fail(w, "schedule.sqlite: cannot write the strings table");
            return -1;
        }
    }
    sqlite3_finalize(s);
    return 0;
}

/* The services no trip has to itself, in `services`. */
static int write_services(schedule_writer *w)
{
    sqlite3_stmt *s = NULL;
    int rc = schedule_prepare(w, "INSERT INTO services VALUES (?1, ?2, ?3)", &s);
    for (uint32_t i = 0; i < w->services.count && rc == 0; i++) {
        if (TRIP_COUNT(w->trip_counts[i]) == 1)
            continue;
        sqlite3_bind_int64(s, 1, (int64_t)i + 1);
        sqlite3_bind_text(s, 2, strmap_key(&w->services, i), (int)strmap_key_len(&w->services, i),
                          SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, w->day_set_of[i]);
        rc = schedule_step_insert(w, s) == 0 ? 0 : -1;
    }
    sqlite3_finalize(s);
    return rc;
}

/* A repeated trip_id refused may leave its service one trip, written
 * before with the id of a services row: that row now holds the service_id
 * and its day set instead, as if the repeat had never been counted (one
 * pass over trip_rows, only when a trip_id was repeated). */
static int fix_refused(schedule_writer *w, int (*exec)(schedule_writer *, const char *))
{
    sqlite3_stmt *s = NULL;
    if (exec(w, "CREATE TEMP TABLE trip_fixes(id INTEGER PRIMARY KEY, service_id TEXT NOT NULL,"
                " day_set INTEGER NOT NULL);") != 0 ||
        schedule_prepare(w, "INSERT INTO temp.trip_fixes VALUES (?1, ?2, ?3)", &s) != 0)
        return -1;
    int rc = 0;
    for (uint32_t i = 0; i < w->services.count && rc == 0; i++) {
        if (w->trip_counts[i] != (1 | TRIP_REFUSED))
            continue;
        sqlite3_bind_int64(s, 1, (int64_t)i + 1);
        sqlite3_bind_text(s, 2, strmap_key(&w->services, i), (int)strmap_key_len(&w->services, i),
                          SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, w->day_set_of[i]);
        rc = schedule_step_insert(w, s) == 0 ? 0 : -1;
    }
    sqlite3_finalize(s);
    if (rc != 0)
        return -1;
    return exec(w, "UPDATE trip_rows SET"
                   " day_set = (SELECT f.day_set FROM temp.trip_fixes f WHERE f.id = trip_rows.service),"
                   " service = (SELECT f.service_id FROM temp.trip_fixes f WHERE f.id = trip_rows.service)"
                   " WHERE day_set IS NULL AND service IN (SELECT id FROM temp.trip_fixes);"
                   "DROP TABLE temp.trip_fixes;");
}

int schedule_write_trips(schedule_writer *w, int (*exec)(schedule_writer *, const char *),
                         int (*read)(schedule_writer *, const file_spec *, uint64_t *), uint64_t *rows)
{
    uint64_t counted_rows = 0;
    w->trip_counts = calloc((size_t)w->services.count + 1, sizeof *w->trip_counts);
    if (!w->trip_counts)
        return schedule_out_of_memory(w), -1;
    w->trips_in_order = true;
    if (read(w, &trips_count_spec, &counted_rows) != 0)
        return -1;
    free(w->last_trip_id);
    w->last_trip_id = NULL;
    w->last_trip_id_len = w->last_trip_id_cap = 0;
    if (w->services.count && !w->day_set_of) {
        schedule_fail(w, "schedule.sqlite: the services' days are missing");
        return -1;
    }
    if (schedule_prepare(w, TRIP_INSERT, &w->trip_insert) != 0)
        return -1;
    bool on_disk = !w->trips_in_order && counted_rows > schedule_trips_sorted_in_memory_max;
    if (on_disk && (exec(w, STAGE_TABLE) != 0 || schedule_prepare(w, STAGE_INSERT, &w->trip_stage) != 0))
        return -1;
    if (read(w, &trips_spec, rows) != 0)
        return -1;
    w->file = "trips.txt";
    if (on_disk && (write_staged(w) != 0 || exec(w, "DROP TABLE temp.trips_read;") != 0))
        return -1;
    if (!w->trips_in_order && !on_disk && write_staged_in_memory(w) != 0)
        return -1;
    if (write_strings(w) != 0 || write_services(w) != 0 || (w->trips_refused && fix_refused(w, exec) != 0))
        return -1;
    return 0;
}
