/* fuzz_gtfs_time.c — libFuzzer target for the GTFS value parsers (src/base/gtfs.c):
 * times, dates, integers, decimals and ISO dates.
 *
 * Why it exists: these run on every field of every feed. Besides crashes and
 * UB, the target checks what must hold for any input: a parsed time is within
 * GTFS_MAX_SECS, a parsed date survives format_date → parse_iso_date, and
 * gtfs_parse_date_memo answers as gtfs_parse_date for the input's 8-byte
 * pieces read in order (its month memo hit and missed).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transit/gtfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy of exactly `size` bytes, so a read past it is caught */
    char *s = malloc(size ? size : 1);
    memcpy(s, data, size);

    uint32_t secs;
    if (gtfs_parse_time(s, size, &secs) == 0 && secs != GTFS_TIME_NONE && secs > GTFS_MAX_SECS)
        abort();
    int32_t days;
    if (gtfs_parse_date(s, size, &days) == 0) {
        char iso[11];
        format_date(days, iso);
        int32_t back;
        if (parse_iso_date(iso, 10, &back) != 0 || back != days)
            abort();
        int y;
        unsigned m, d;
        civil_from_days(days, &y, &m, &d);
        if (days_from_civil(y, m, d) != days || weekday_from_days(days) < 0 || weekday_from_days(days) > 6)
            abort();
    }
    gtfs_date_memo memo = {0};
    for (size_t at = 0; at + 8 <= size; at += 8) {
        int32_t a = 0, b = 0;
        int ra = gtfs_parse_date(s + at, 8, &a), rb = gtfs_parse_date_memo(s + at, 8, &b, &memo);
        if (ra != rb || (ra == 0 && a != b))
            abort();
    }
    int32_t whole;
    if (gtfs_parse_date_memo(s, size, &whole, &memo) != gtfs_parse_date(s, size, &days) ||
        (gtfs_parse_date(s, size, &days) == 0 && whole != days))
        abort();
    int64_t i;
    (void)gtfs_parse_int(s, size, &i);
    double x;
    (void)gtfs_parse_double(s, size, &x);
    if (parse_iso_date(s, size, &days) == 0) {
        char iso[11];
        format_date(days, iso);
    }
    free(s);
    return 0;
}
