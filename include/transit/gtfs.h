/* gtfs.h — the value types of GTFS: times, dates, and small parsers.
 *
 * Why it exists: every reader of a GTFS file needs the same strict parsing of
 * "H:MM:SS" times (hours may run past 24, up to 99), "YYYYMMDD" dates and
 * numbers, and the same calendar arithmetic. Times are kept as seconds from
 * the service day's "noon minus 12h", never as clock times; dates as days
 * since 1970-01-01 (the proleptic Gregorian calendar).
 */
#ifndef TRANSIT_GTFS_H
#define TRANSIT_GTFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GTFS_TIME_NONE UINT32_MAX     /* an empty time field */
#define GTFS_MAX_SECS (99u * 3600u + 59u * 60u + 59u)

/* "H:MM:SS" or "HH:MM:SS", hours 0..99, minutes and seconds 0..59.
 * Returns 0 and the seconds, GTFS_TIME_NONE in *secs for an empty field, or
 * -1 for a malformed value. */
int gtfs_parse_time(const char *s, size_t len, uint32_t *secs);
/* "YYYYMMDD" → days since 1970-01-01. Returns 0 or -1 (malformed or invalid). */
int gtfs_parse_date(const char *s, size_t len, int32_t *days);
/* gtfs_parse_date for a run of dates that mostly share their month (a
 * day-by-day calendar_dates.txt lists a service's dates in order): the last
 * month parsed is kept in *memo, and a date in it costs a compare and an
 * add. The same results as gtfs_parse_date for any input. A zeroed memo is
 * empty. */
typedef struct gtfs_date_memo {
    char year_month[6];   /* "YYYYMM" */
    uint8_t month_days;   /* 0: empty */
    int32_t first_day;    /* days since 1970-01-01 of YYYYMM01 */
} gtfs_date_memo;
int gtfs_parse_date_memo(const char *s, size_t len, int32_t *days, gtfs_date_memo *memo);
/* Decimal integer (optional sign). Returns 0 or -1. */
int gtfs_parse_int(const char *s, size_t len, int64_t *out);
/* Decimal number as strtod reads it, the whole field. Returns 0 or -1. */
int gtfs_parse_double(const char *s, size_t len, double *out);

/* Civil calendar. */
int32_t days_from_civil(int y, unsigned m, unsigned d);
void civil_from_days(int32_t z, int *y, unsigned *m, unsigned *d);
/* 0 = Monday .. 6 = Sunday */
int weekday_from_days(int32_t z);
/* Formats days as "YYYY-MM-DD" (11 bytes with NUL). */
void format_date(int32_t days, char out[11]);
/* Parses "YYYY-MM-DD". Returns 0 or -1. */
int parse_iso_date(const char *s, size_t len, int32_t *days);

#endif
