/* rt_ingest.h — the GTFS-Realtime source a server polls, and what it last got.
 *
 * Why it exists: `serve --gtfs-rt SOURCE --rt-interval N` fetches and decodes
 * the source every N seconds on its own thread. A fetch or decode failure
 * keeps the last good feed (and is counted, with its message, for /metrics);
 * a good one replaces it. The server builds overlays (rt_overlay.h) from the
 * last good feed: after each good poll, and again whenever it swaps in
 * another dataset. Thread-safe: one mutex, held only to swap or read the
 * state, never while fetching or decoding.
 */
#ifndef TRANSIT_RT_INGEST_H
#define TRANSIT_RT_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/alert.h"
#include "transit/rt_overlay.h"

typedef struct rt_ingest rt_ingest;

/* For `source` (a path or an http(s) URL, copied); NULL when out of memory. */
rt_ingest *rt_ingest_new(const char *source, unsigned timeout_s);
void rt_ingest_free(rt_ingest *in);
const char *rt_ingest_source(const rt_ingest *in);

/* What a poll found. */
typedef enum rt_poll_result {
    RT_POLL_FAILED = -1,       /* the last good feed stays; err says why (fetch or decode) */
    RT_POLL_UNCHANGED = 0,     /* the same bytes as the feed in use: nothing to rebuild */
    RT_POLL_NEW = 1,           /* a good feed replaced the last one */
} rt_poll_result;

/* Fetches and decodes once (bytes identical to the feed in use are not
 * decoded again, so answers and their ETags stay as they are). */
rt_poll_result rt_ingest_poll(rt_ingest *in, int64_t now, char *err, size_t errlen);

/* An overlay of the last good feed on `ds` (an empty one before the first
 * good poll); its match counts are kept for the metrics. NULL when out of
 * memory. */
rt_overlay *rt_ingest_overlay(rt_ingest *in, dataset *ds, int64_t now);

/* The last good feed's alerts as alerts with "rt:" ids (rt_alerts.h),
 * ordered by id, in *out (free with rt_alerts_free); those the alert checks
 * refuse are counted for the metrics. Returns the count, -1 when out of
 * memory. */
long rt_ingest_alerts(rt_ingest *in, int64_t now, alert ***out);

/* The last good feed's trip updates as a FeedMessage (rt_encode.h), for
 * /gtfs-rt/trip-updates.pb; stamped with its header timestamp, else `now`.
 * 0, or -1 when out of memory. */
int rt_ingest_encode_trip_updates(rt_ingest *in, int64_t now, uint8_t **out, size_t *len);

/* Appends the realtime metrics (Prometheus text) to out[0..cap); returns
 * the length they need (write again with more room when it is >= cap). */
size_t rt_ingest_render_metrics(rt_ingest *in, int64_t now, char *out, size_t cap);

#endif
