/* fuzz_gtfs_time.c — libFuzzer target for the GTFS value parsers (src/base/gtfs.c):
 * times, dates, integers, decimals and ISO dates.
 *
 * Why it exists: these run on every field of every feed. Besides crashes and
 * UB, the target checks what must hold for any input: a parsed time is within
 * GTFS_MAX_SECS, and a parsed date survives format_date → parse_iso_date.
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
