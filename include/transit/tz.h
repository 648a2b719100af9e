/* tz.h — time zones from the system tz database, without the process TZ.
 *
 * Why it exists: GTFS instants are "local noon minus 12h plus seconds" in the
 * agency timezone, and the import runs next to other threads, so libc's
 * setenv("TZ")/localtime is off limits. This reads the TZif file of a zone
 * (following aliases such as America/Montreal, which are links) and its POSIX
 * rule footer, and answers "what is the UTC offset at instant t".
 */
#ifndef TRANSIT_TZ_H
#define TRANSIT_TZ_H

#include <stddef.h>
#include <stdint.h>

typedef struct tz_rule_date {
    char kind;          /* 'M' month/week/day, 'J' julian 1..365 (no Feb 29), 'D' zero-based day */
    int month, week, wday, day;
    int32_t time;       /* seconds after local midnight (may be negative or > 24h) */
} tz_rule_date;

typedef struct tz_zone {
    char name[64];
    int64_t *trans_at;      /* transition instants, ascending */
    int32_t *trans_offset;  /* offset in effect from trans_at[i] on */
    uint32_t ntrans;
    int32_t initial_offset; /* before the first transition */
    /* POSIX footer, for instants after the last transition */
    int has_rule;
    int32_t std_offset, dst_offset;  /* seconds east of UTC */
    int has_dst;
    tz_rule_date start, end;         /* DST starts / ends (local wall times) */
} tz_zone;

/* Loads a zone by IANA name ("Europe/Berlin") from $TZDIR or
 * /usr/share/zoneinfo. Returns 0, or -1 with a message in err. */
int tz_load(const char *name, tz_zone *z, char *err, size_t errlen);
void tz_free(tz_zone *z);
/* UTC offset in seconds east at instant t. */
int32_t tz_offset_at(const tz_zone *z, int64_t t);
/* Local wall time (seconds since 1970-01-01T00:00 as if UTC) to instant with
 * zoneinfo's fold=0: an ambiguous wall time gives the earlier instant, a
 * nonexistent one is shifted forward by the gap. */
int64_t tz_local_to_instant(const tz_zone *z, int64_t local);

#endif
