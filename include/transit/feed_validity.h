/* feed_validity.h — whether the feed being served is in effect today.
 *
 * Why it exists: a GTFS feed covers a range of service dates. Past its last
 * date the server still answers, but every departures list is empty, which
 * looks like a quiet stop rather than an expired feed. This module says so:
 * /v1/feed and /readyz carry a feed_validity block, /metrics the days until
 * expiry, and a departures answer with no departures because its time lies
 * outside the feed's service carries a warning sentence.
 */
#ifndef TRANSIT_FEED_VALIDITY_H
#define TRANSIT_FEED_VALIDITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "transit/json_writer.h"
#include "transit/query.h"

typedef struct feed_validity {
    int32_t start, end;          /* first and last service date (days since 1970-01-01) */
    int32_t today;               /* the date in the feed timezone at `now` */
    int32_t days_until_expiry;   /* end - today: 0 on the last service date, < 0 once expired */
    bool expired;                /* today is after the last service date */
    bool not_yet_valid;          /* today is before the first service date */
} feed_validity;

/* The feed's validity at the instant `now` (Unix seconds). */
void feed_validity_at(const dataset *ds, int64_t now, feed_validity *out);

/* Writes "feed_validity":{"start","end","today","days_until_expiry","expired",
 * "not_yet_valid"} into the JSON object being written. */
void feed_validity_write(json_writer *w, const feed_validity *v);

/* A sentence for an expired or not yet valid feed in out (NUL-terminated);
 * false, and out empty, while the feed is in effect. */
bool feed_validity_warning(const feed_validity *v, char *out, size_t cap);

/* For a departures answer that found none: whether the window [from, from +
 * window_s) lies wholly after the feed's last departure or before its first
 * service date, with a sentence saying so in out. False (out empty) when the
 * window overlaps the feed's service. */
bool feed_validity_departures_warning(const dataset *ds, int64_t from, uint32_t window_s,
                                      char *out, size_t cap);
/* The same for a board of other events: `what` ("arrivals", ...) names them. */
bool feed_validity_events_warning(const dataset *ds, int64_t from, uint32_t window_s, const char *what,
                                  char *out, size_t cap);

#endif
