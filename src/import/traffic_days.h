/* traffic_days.h — the days each service runs, as bitsets over the feed's
 * date range, with identical bitsets shared.
 *
 * Why it exists: feeds that give every trip its own service listed day by
 * day (national feeds do) have as many services as trips, but only a few
 * distinct sets of days. Both stores keep the distinct sets once and a set
 * number per service (as nigiri does), so such a feed costs what the same
 * feed written with calendar.txt costs. One computation serves the
 * timetable (timetable_index.c) and schedule.sqlite (schedule_write_days.c),
 * so the two stores agree on every service's days.
 */
#ifndef TRANSIT_TRAFFIC_DAYS_H
#define TRANSIT_TRAFFIC_DAYS_H

#include <stddef.h>
#include <stdint.h>


struct tb_calendar;
struct tb_calendar_date;

typedef struct traffic_days {
    int32_t first_day;     /* days since the epoch of bit 0 */
    uint32_t ndays;        /* days covered: first_day .. first_day + ndays - 1 */
    uint32_t words;        /* uint64 words per set */
    uint32_t nsets;        /* distinct sets, sorted by their words */
    uint64_t *sets;        /* nsets * words: bit d = day first_day + d */
    uint32_t *set_of;      /* per service: its set */
} traffic_days;

/* calendar_dates.txt's additions (type 1 rows) set as each service's bits
 * while the file is read, instead of kept as rows: a day-by-day feed has
 * millions of them (Brooklyn so written: 1.45M rows, 17 MB of rows against
 * 2 MB of bits). The bits cover a range of days that grows, by whole words,
 * to take any date that comes. A zeroed one is empty. */
typedef struct day_additions {
    int32_t base;              /* the day of bit 0 of every service's words (a multiple of 64) */
    uint32_t words;            /* words per service: 0 until a day is added */
    uint64_t *bits;            /* cap * words */
    uint32_t nservices;        /* services 0..nservices-1 have words (the rest have no day added) */
    uint32_t cap;              /* services bits has room for */
    int32_t lo, hi;            /* the first and last day added (once words > 0) */
} day_additions;

/* Adds `day` to `service`'s days: 0, or -1 out of memory. */
int day_additions_grow_add(day_additions *a, uint32_t service, int32_t day);
static inline int day_additions_add(day_additions *a, uint32_t service, int32_t day)
{
    int64_t off = (int64_t)day - a->base;
    if (service >= a->nservices || off < 0 || off >= (int64_t)a->words * 64)
        return day_additions_grow_add(a, service, day);
    a->bits[(size_t)service * a->words + (size_t)off / 64] |= 1ull << (off % 64);
    if (day < a->lo) a->lo = day;
    if (day > a->hi) a->hi = day;
    return 0;
}
void day_additions_free(day_additions *a);

/* The sets of services 0..nservices-1: calendar rows' weekdays within their
 * dates, plus the calendar_dates additions (type 1), minus the removals
 * (type 2), whatever the rows' order. The range spans every date the rows
 * name. 0, or -1 with err ("calendar.txt/calendar_dates.txt: ..." for no
 * dates or a span over 50 years, or out of memory). */
int traffic_days_build(traffic_days *out, const struct tb_calendar *cal, size_t ncal, const struct tb_calendar_date *dates,
                       size_t ndates, uint32_t nservices, char *err, size_t errlen);
/* The same, with more additions given as bits (`adds`: services below
 * nservices; the same sets as with those days given as rows). */
int traffic_days_build_adding(traffic_days *out, const struct tb_calendar *cal, size_t ncal,
                              const struct tb_calendar_date *dates, size_t ndates, const day_additions *adds,
                              uint32_t nservices, char *err, size_t errlen);
void traffic_days_free(traffic_days *t);

#endif
