/* schedule_write_days.c — calendar_dates.txt, and the services' days, in
 * schedule.sqlite.
 *
 * Why it exists: a feed that gives every trip its own service listed day by
 * day (as national feeds do) has as many services as trips and millions of
 * calendar_dates rows, but only a few distinct sets of days. Stored as rows,
 * Brooklyn written that way made this file 38 MB instead of 4 MB and took
 * 4.5 s to write. So calendar_dates rows are not stored: the distinct sets
 * of days are (`day_sets`, shared by traffic_days.c with timetable.bin, in
 * the same numbering), each service names its set (in `services`, or in the
 * row of the one trip that runs it: schedule_write_trips), and the
 * `calendar_dates` view gives back the exceptions each service's days make
 * to its calendar row (docs/sqlite-stores.md).
 */
#include "import/schedule_write_internal.h"

#include <stdlib.h>
#include <string.h>

#include "import/days_handoff.h"
#include "import/traffic_days.h"
#include "transit/gtfs.h"

static const char *const CALENDAR_DATE_KEYS[] = {"service_id", "date", "exception_type"};
enum { CD_SERVICE, CD_DATE, CD_TYPE, CD_N };

/* Checks and keeps the row; the day sets are made once the file is read. */
static int calendar_date_row(schedule_writer *w, const csv_field *f)
{
    char date[11];
    bool present;
    int64_t type;
    int32_t day;
    if (!schedule_need_value(w, &f[CD_SERVICE], "service_id") ||
        !schedule_date_value(w, &f[CD_DATE], "date", true, date, &present) ||
        !schedule_strict_int(w, &f[CD_TYPE], "exception_type", 1, 2, DIAG_BAD_VALUE, &type) ||
        gtfs_parse_date(f[CD_DATE].ptr, f[CD_DATE].len, &day) != 0)
        return ROW_CONTINUE;
    /* feeds list a service's dates together: the previous row's service
     * is checked first, sparing a hash lookup (a cache miss) per row */
    uint32_t service = w->ndates ? w->dates[w->ndates - 1].service + 1 : 0;
    if (!service || strmap_key_len(&w->services, service - 1) != f[CD_SERVICE].len ||
        memcmp(strmap_key(&w->services, service - 1), f[CD_SERVICE].ptr, f[CD_SERVICE].len) != 0)
        service = pool_intern(&w->services, f[CD_SERVICE].ptr, f[CD_SERVICE].len);
    tb_calendar_date *dates = grow_to(w->dates, &w->dates_cap, w->ndates + 1, sizeof *dates);
    if (dates)
        w->dates = dates;
    uint64_t *lines = grow_to(w->date_lines, &w->date_lines_cap, w->ndates + 1, sizeof *lines);
    if (lines)
        w->date_lines = lines;
    if (!service || !dates || !lines)
        return schedule_out_of_memory(w);
    w->dates[w->ndates] = (tb_calendar_date){service - 1, day, (uint8_t)type};
    w->date_lines[w->ndates++] = w->line;
    return ROW_CONTINUE;
}

const file_spec schedule_calendar_dates_spec = {"calendar_dates.txt", CALENDAR_DATE_KEYS, CD_N,
                                              (1u << CD_N) - 1, NULL, calendar_date_row};

/* Counts each (service_id, date) given again, in one pass with a bit per
 * service and date seen. Both rows apply, as in the timetable: the date is
 * added, then removed if either row removes it. */
static int count_duplicate_dates(schedule_writer *w, const traffic_days *td)
{
    uint64_t *seen = calloc((size_t)w->services.count * td->words + 1, sizeof *seen);
    if (!seen)
        return schedule_out_of_memory(w), -1;
    w->file = "calendar_dates.txt";
    for (size_t i = 0; i < w->ndates; i++) {
        const tb_calendar_date *c = &w->dates[i];
        uint32_t d = (uint32_t)(c->date - td->first_day);
        uint64_t *word = seen + (size_t)c->service * td->words + d / 64, bit = 1ull << (d % 64);
        if (!(*word & bit)) {
            *word |= bit;
            continue;
        }
        char date[11];
        format_date(c->date, date);
        w->line = w->date_lines[i];
        schedule_skip_row(w, DIAG_DUPLICATE_ID, "duplicate (service_id, date) ('%s', %s): a removal wins",
                          strmap_key(&w->services, c->service), date);
    }
    free(seen);
    w->file = NULL;
    return 0;
}

/* day_sets: one row per distinct set, its days as a string of '0' and '1'
 * from first_date. */
static int write_day_sets(schedule_writer *w, const traffic_days *td)
{
    sqlite3_stmt *s = NULL;
    char first[11];
    format_date(td->first_day, first);
    char *days = malloc((size_t)td->ndays + 1);
    if (!days)
        return schedule_out_of_memory(w), -1;
    int rc = schedule_prepare(w, "INSERT INTO day_sets VALUES (?1, ?2, ?3)", &s);
    for (uint32_t i = 0; i < td->nsets && rc == 0; i++) {
        const uint64_t *bits = td->sets + (size_t)i * td->words;
        for (uint32_t d = 0; d < td->ndays; d++)
            days[d] = (char)('0' + ((bits[d / 64] >> (d % 64)) & 1));
        sqlite3_bind_int64(s, 1, i);
        sqlite3_bind_text(s, 2, first, 10, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, days, (int)td->ndays, SQLITE_STATIC);
        rc = schedule_step_insert(w, s) == 0 ? 0 : -1;
    }
    sqlite3_finalize(s);
    free(days);
    return rc;
}

/* Keeps each service's day set for the trip rows and `services`
 * (schedule_write_trips), which are written once it is known which trips
 * have a service to themselves. */
static int keep_day_sets(schedule_writer *w, const traffic_days *td)
{
    free(w->day_set_of);
    w->day_set_of = malloc(((size_t)w->services.count + 1) * sizeof *w->day_set_of);
    if (!w->day_set_of)
        return schedule_out_of_memory(w), -1;
    memcpy(w->day_set_of, td->set_of, (size_t)w->services.count * sizeof *w->day_set_of);
    return 0;
}

int schedule_write_days(schedule_writer *w)
{
    if (w->services.count == 0)
        return 0;    /* nothing to write; trips will all name unknown services */
    traffic_days td;
    char err[200];
    if (traffic_days_build(&td, w->calendars, w->ncalendars, w->dates, w->ndates, w->services.count, err,
                           sizeof err) != 0) {
        schedule_fail(w, "%s", err);
        return -1;
    }
    int rc = count_duplicate_dates(w, &td) == 0 && write_day_sets(w, &td) == 0 && keep_day_sets(w, &td) == 0
                 ? 0 : -1;
    traffic_days_free(&td);
    return rc;
}

int schedule_write_days_from(schedule_writer *w, const days_handoff *h)
{
    /* the services are the builder's, in its order (calendar.txt's rows
     * may have interned some here already): its map, copied, ids 1-based */
    strmap_free(&w->services);
    if (strmap_copy(&w->services, &h->ids, 1) != 0)
        return schedule_out_of_memory(w), -1;
    return write_day_sets(w, &h->days) == 0 && keep_day_sets(w, &h->days) == 0 ? 0 : -1;
}
