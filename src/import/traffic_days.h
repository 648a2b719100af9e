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

/* The sets of services 0..nservices-1: calendar rows' weekdays within their
 * dates, plus the calendar_dates additions (type 1), minus the removals
 * (type 2), whatever the rows' order. The range spans every date the rows
 * name. 0, or -1 with err ("calendar.txt/calendar_dates.txt: ..." for no
 * dates or a span over 50 years, or out of memory). */
int traffic_days_build(traffic_days *out, const struct tb_calendar *cal, size_t ncal, const struct tb_calendar_date *dates,
                       size_t ndates, uint32_t nservices, char *err, size_t errlen);
void traffic_days_free(traffic_days *t);

#endif
