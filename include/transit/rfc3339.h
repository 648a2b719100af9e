/* rfc3339.h — RFC 3339 date-times without a dataset: reading and writing.
 *
 * Why it exists: the `time` parameter (api_params.c), the alerts' active periods
 * (alert.c) and the feed's validity (feed_validity.c) read and write the
 * same syntax, below any layer that knows a dataset. Implemented in
 * src/base/rfc3339.c.
 */
#ifndef TRANSIT_RFC3339_H
#define TRANSIT_RFC3339_H

#include <stdbool.h>
#include <stdint.h>

/* The syntax half of api_parse_time (api.h), needing no dataset: the date-time as
 * seconds since 1970-01-01T00:00 read as if UTC, and whether an offset (Z or
 * +HH:MM/-HH:MM, seconds east in *utc_offset) was given. Seconds may be
 * omitted; fractional seconds are accepted and truncated. Returns 0 or -1. */
int rfc3339_parse(const char *s, int64_t *local_secs, bool *has_offset, int32_t *utc_offset);
/* Formats an instant with a UTC offset, no fractional seconds
 * ("2026-11-21T18:15:00-05:00"). out has room for 26 bytes. */
void rfc3339_format_instant(int64_t instant, int32_t utc_offset, char out[26]);
/* Formats an instant in UTC as "2026-11-21T23:15:00Z". out has room for 21 bytes. */
void rfc3339_format_utc(int64_t instant, char out[21]);

#endif
