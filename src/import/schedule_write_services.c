/* schedule_write_services.c — the schedule.sqlite rows of agency.txt,
 * routes.txt, calendar.txt and trips.txt (calendar_dates.txt, read between
 * calendar.txt and trips.txt, is schedule_write_days.c's).
 *
 * Why it exists: these are the files that say who runs what and when. They
 * are read in this order, each row checked against the ids the files before
 * it kept (a route's agency, a trip's route and service), which is what
 * keeps this store's rows the same as the timetable's. trips.txt, the only
 * big one, is buffered and written sorted by trip_id with its repeated
 * strings interned.
 */
#include "import/schedule_write_internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transit/gtfs.h"

/* ------------------------------------------------------------ agency.txt */

static const char *const AGENCY_KEYS[] = {"agency_id",   "agency_name",     "agency_url",
                                          "agency_timezone", "agency_lang", "agency_phone",
                                          "agency_fare_url", "agency_email"};
enum { AG_ID, AG_NAME, AG_URL, AG_TZ, AG_LANG, AG_PHONE, AG_FARE_URL, AG_EMAIL, AG_N };

static int agency_row(schedule_writer *w, const csv_field *f)
{
    /* Kept even with an empty name, url or timezone (counted), as the
     * timetable keeps it. */
    schedule_need_value(w, &f[AG_NAME], "agency_name");
    schedule_need_value(w, &f[AG_URL], "agency_url");
    schedule_need_value(w, &f[AG_TZ], "agency_timezone");
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[AG_ID]);  /* '' when the feed has a single agency without id */
    for (int k = AG_NAME; k < AG_N; k++)
        bind_opt_text(s, k + 1, &f[k]);
    return schedule_insert_keyed(w, "agency_id", &f[AG_ID], &w->agencies);
}

const file_spec schedule_agency_spec = {
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
    if (!schedule_need_value(w, &f[RT_ID], "route_id") ||
        !schedule_strict_int(w, &f[RT_TYPE], "route_type", 0, 9999, DIAG_BAD_VALUE, &type))
        return ROW_CONTINUE;
    schedule_lenient_int(w, &f[RT_SORT], "route_sort_order", 0, INT32_MAX, &sort, &has_sort);
    schedule_lenient_int(w, &f[RT_CPICKUP], "continuous_pickup", 0, 3, &cpickup, &has_cpickup);
    schedule_lenient_int(w, &f[RT_CDROPOFF], "continuous_drop_off", 0, 3, &cdropoff, &has_cdropoff);
    /* an unknown agency is counted; the route is kept (its trips still run) */
    if (f[RT_AGENCY].len && !pool_find(&w->agencies, f[RT_AGENCY].ptr, f[RT_AGENCY].len))
        schedule_skip_row(w, DIAG_UNKNOWN_AGENCY, "route '%.*s': unknown agency_id '%.*s'",
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
    return schedule_insert_keyed(w, "route_id", &f[RT_ID], &w->routes);
}

const file_spec schedule_routes_spec = {
    "routes.txt", ROUTE_KEYS, RT_N, 1u << RT_ID | 1u << RT_TYPE,
    "INSERT INTO routes VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)", route_row};

/* ------------------------------------------------------------ calendar.txt */

static const char *const CALENDAR_KEYS[] = {"service_id", "monday",   "tuesday",  "wednesday",
                                            "thursday",   "friday",   "saturday", "sunday",
                                            "start_date", "end_date"};
enum { CAL_SERVICE, CAL_MONDAY, CAL_SUNDAY = CAL_MONDAY + 6, CAL_START, CAL_END, CAL_N };

static int calendar_row(schedule_writer *w, const csv_field *f)
{
    if (!schedule_need_value(w, &f[CAL_SERVICE], "service_id"))
        return ROW_CONTINUE;
    int64_t day[7];
    bool present;
    for (int k = 0; k < 7; k++)
        if (!schedule_strict_int(w, &f[CAL_MONDAY + k], CALENDAR_KEYS[CAL_MONDAY + k], 0, 1,
                                 DIAG_BAD_VALUE, &day[k]))
            return ROW_CONTINUE;
    char start[11], end[11];
    if (!schedule_date_value(w, &f[CAL_START], "start_date", true, start, &present) ||
        !schedule_date_value(w, &f[CAL_END], "end_date", true, end, &present))
        return ROW_CONTINUE;
    if (strcmp(end, start) < 0)
        return schedule_skip_row(w, DIAG_BAD_DATE, "end_date %s is before start_date %s", end,
                                 start);
    sqlite3_stmt *s = w->insert;
    bind_text(s, 1, &f[CAL_SERVICE]);
    for (int k = 0; k < 7; k++)
        sqlite3_bind_int64(s, 2 + k, day[k]);
    sqlite3_bind_text(s, 9, start, 10, SQLITE_STATIC);
    sqlite3_bind_text(s, 10, end, 10, SQLITE_STATIC);
    int rc = schedule_step_insert(w, s);
    if (rc < 0)
        return ROW_STOP;
    if (rc > 0)
        return schedule_skip_row(w, DIAG_DUPLICATE_ID, "duplicate service_id '%.*s'", SHOWN(&f[CAL_SERVICE]));
    /* the day sets (schedule_write_days.c) are made from the rows kept */
    tb_calendar c = {.service = pool_intern(&w->services, f[CAL_SERVICE].ptr, f[CAL_SERVICE].len)};
    for (int k = 0; k < 7; k++)
        c.weekdays |= (uint8_t)(day[k] << k);
    if (c.service == 0 || gtfs_parse_date(f[CAL_START].ptr, f[CAL_START].len, &c.start) != 0 ||
        gtfs_parse_date(f[CAL_END].ptr, f[CAL_END].len, &c.end) != 0)
        return schedule_out_of_memory(w);
    c.service--;
    tb_calendar *slot = grow_to(w->calendars, &w->calendars_cap, w->ncalendars + 1, sizeof *slot);
    if (!slot)
        return schedule_out_of_memory(w);
    w->calendars = slot;
    w->calendars[w->ncalendars++] = c;
    return ROW_CONTINUE;
}

const file_spec schedule_calendar_spec = {
    "calendar.txt", CALENDAR_KEYS, CAL_N, (1u << CAL_N) - 1,
    "INSERT INTO calendar VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)", calendar_row};

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
    if (w->trip_ids_len + f[TR_ID].len > UINT32_MAX)
        return schedule_out_of_memory(w);
    trip_row *trips = grow_to(w->trips, &w->trips_cap, w->ntrips + 1, sizeof *trips);
    if (!trips)
        return schedule_out_of_memory(w);
    w->trips = trips;
    char *ids = grow_to(w->trip_ids, &w->trip_ids_cap, w->trip_ids_len + f[TR_ID].len, 1);
    if (!ids)
        return schedule_out_of_memory(w);
    w->trip_ids = ids;

    trip_row t = {.line = w->line,
                  .id_off = (uint32_t)w->trip_ids_len,
                  .id_len = f[TR_ID].len,
                  .direction_id = (int8_t)direction,
                  .wheelchair_accessible = (int8_t)wheelchair,
                  .bikes_allowed = (int8_t)bikes};
    t.service = service;
    if (!intern_opt(w, &f[TR_ROUTE], &t.route) ||
        !intern_opt(w, &f[TR_HEADSIGN], &t.headsign) ||
        !intern_opt(w, &f[TR_SHORT], &t.short_name) || !intern_opt(w, &f[TR_BLOCK], &t.block) ||
        !intern_opt(w, &f[TR_SHAPE], &t.shape))
        return schedule_out_of_memory(w);
    memcpy(w->trip_ids + w->trip_ids_len, f[TR_ID].ptr, f[TR_ID].len);
    w->trip_ids_len += f[TR_ID].len;
    w->trips[w->ntrips++] = t;
    return ROW_CONTINUE;
}

const file_spec schedule_trips_spec = {"trips.txt", TRIP_KEYS, TR_N,
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

/* Whether the trips are in compare_trips' order already: feeds often list
 * trips.txt by trip_id, and one pass costs far less than the sort (0.5 s
 * for 1.9M trips). */
static bool trips_in_order(const schedule_writer *w)
{
    for (size_t i = 1; i < w->ntrips; i++)
        if (compare_trips(&w->trips[i - 1], &w->trips[i]) > 0)
            return false;
    return true;
}

static void bind_string_id(sqlite3_stmt *s, int i, uint32_t id)
{
    if (id)
        sqlite3_bind_int64(s, i, id);
    else
        sqlite3_bind_null(s, i);
}

/* The services no trip has to itself, in `services` (run[i]: how many trip
 * rows run service i + 1). */
static int write_services(schedule_writer *w, const uint32_t *run)
{
    sqlite3_stmt *s = NULL;
    int rc = schedule_prepare(w, "INSERT INTO services VALUES (?1, ?2, ?3)", &s);
    for (uint32_t i = 0; i < w->services.count && rc == 0; i++) {
        if (run[i] == 1)
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

/* Writes the interned strings, then the services, then the buffered trips
 * in key order. A trip whose service no other trip runs (every trip of a
 * day-by-day feed) holds the service_id and its day set in its own row: a
 * `services` row of its own would cost more than the id (issue #28). */
int schedule_write_trips(schedule_writer *w)
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

    for (size_t i = 0; i < w->ntrips; i++)
        w->trips[i].id = w->trip_ids + w->trips[i].id_off;
    if (!trips_in_order(w))
        qsort(w->trips, w->ntrips, sizeof *w->trips, compare_trips);
    /* the trips each service runs: a repeated trip_id (the same bytes, next
     * to its first in this order) is refused, so it runs nothing */
    uint32_t *run = calloc((size_t)w->services.count + 1, sizeof *run);
    if (!run)
        return schedule_out_of_memory(w), -1;
    for (size_t i = 0; i < w->ntrips; i++) {
        const trip_row *t = &w->trips[i];
        if (i && t->id_len == t[-1].id_len && memcmp(t->id, t[-1].id, t->id_len) == 0)
            continue;
        run[t->service - 1]++;
    }
    if ((w->services.count && !w->day_set_of) || write_services(w, run) != 0 ||
        schedule_prepare(w, "INSERT INTO trip_rows VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)", &s) != 0) {
        if (!w->failed)
            schedule_fail(w, "schedule.sqlite: the services' days are missing");
        free(run);
        return -1;
    }
    w->file = "trips.txt";
    for (size_t i = 0; i < w->ntrips; i++) {
        const trip_row *t = &w->trips[i];
        uint32_t service = t->service - 1;
        w->line = t->line;
        sqlite3_bind_text(s, 1, t->id, (int)t->id_len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, t->route);
        if (run[service] == 1) {
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
        if (rc < 0) {
            sqlite3_finalize(s);
            free(run);
            return -1;
        }
        if (rc > 0)
            schedule_skip_row(w, DIAG_DUPLICATE_ID, "duplicate trip_id '%.*s'",
                              (int)(t->id_len > SHOWN_MAX ? SHOWN_MAX : t->id_len), t->id);
    }
    sqlite3_finalize(s);
    free(run);
    /* the rows are in the database now: let their memory go before the
     * writer's other files, while the timetable thread may still be at its
     * peak (7.5M trips held about 535 MB at 64x) */
    free(w->trips);
    free(w->trip_ids);
    w->trips = NULL;
    w->trip_ids = NULL;
    w->ntrips = w->trips_cap = w->trip_ids_len = w->trip_ids_cap = 0;
    return 0;
}
