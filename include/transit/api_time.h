/* api_time.h — RFC 3339 date-times without a dataset: reading and writing.
 *
 * Why it exists: the `time` parameter (api.c) and the alerts' active periods
 * (alert.c) read the same syntax, and responses write instants in UTC the
 * same way; alert.c works with jansson, whose names clash with the JSON
 * writer's, so these live apart from api.h. Implemented in src/api/api_time.c.
 */
#ifndef TRANSIT_API_TIME_H
#define TRANSIT_API_TIME_H

#include <stdbool.h>
#include <stdint.h>

/* The syntax half of api_parse_time, needing no dataset: the date-time as
 * seconds since 1970-01-01T00:00 read as if UTC, and whether an offset (Z or
 * +HH:MM/-HH:MM, seconds east in *utc_offset) was given. Seconds may be
 * omitted; fractional seconds are accepted and truncated. Returns 0 or -1. */
int api_parse_datetime(const char *s, int64_t *local_secs, bool *has_offset, int32_t *utc_offset);
/* Formats an instant in UTC as "2026-11-21T23:15:00Z". out has room for 21 bytes. */
void api_format_utc(int64_t instant, char out[21]);

#endif
