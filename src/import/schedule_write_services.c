/* schedule_write_services.c — the schedule.sqlite rows of agency.txt,
 * routes.txt and calendar.txt (calendar_dates.txt, read next, is
 * schedule_write_days.c's, and trips.txt schedule_write_trips.c's).
 *
 * Why it exists: these are the files that say who runs what and when. They
 * are read in this order, each row checked against the ids the files before
 * it kept (a route's agency, a trip's route and service), which is what
 * keeps this store's rows the same as the timetable's.
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
