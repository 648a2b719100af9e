/* rt_ingest.h — the GTFS-Realtime sources a server polls, and what it last got.
 *
 * Why it exists: `serve --gtfs-rt SOURCE ... --rt-interval N` fetches and
 * decodes every source every N seconds on its own thread. Per source: a
 * fetch or decode failure keeps that source's last good feed (and is
 * counted, with its message, for /metrics and /readyz); a good one replaces
 * it; a URL is fetched conditionally (If-None-Match / If-Modified-Since
 * from its last good answer), and 304 keeps its last good feed.
 *
 * The feed in use is the merge of every source's last good feed: the
 * alerts and trip updates of all of them, where two sources update the same
 * trip (same trip_id, start_date and start_time; for a trip without
 * trip_id, same route, direction, start date and time) or send an alert
 * with the same entity id, the one whose feed header timestamp is newest wins (a tie: the
 * source given first). A source whose last good poll is older than the
 * staleness limit (max_age_s) leaves the merge until it answers again; the
 * others stay. With one source the merge is that source's feed.
 *
 * The server builds overlays (rt_overlay.h) from the merged feed: after
 * each poll that changed it, and again whenever it swaps in another
 * dataset. Thread-safe: one mutex, held only to swap or read the state,
 * never while fetching, decoding or building: a build, the alerts and the
 * trip-updates export take a counted reference to the feed in use and let
 * the mutex go, so a 64 MB feed's overlay is built off to the side while
 * /metrics, /readyz and the next poll go on (the server publishes the new
 * overlay by a pointer swap; serving.h).
 */
#ifndef TRANSIT_RT_INGEST_H
#define TRANSIT_RT_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/alert.h"
#include "transit/rt_feed_namespace.h"
#include "transit/rt_overlay.h"
#include "transit/rt_source_list.h"

typedef struct rt_ingest rt_ingest;

/* For `source` (a path or an http(s) URL, copied), no headers, never
 * stale; NULL when out of memory. */
rt_ingest *rt_ingest_new(const char *source, unsigned timeout_s);
/* For every source of `list` (locations and headers copied), each dropped
 * from the merge when its last good poll is older than max_age_s (0:
 * never). NULL when out of memory or the list is empty. */
rt_ingest *rt_ingest_new_sources(const rt_source_list *list, unsigned timeout_s, unsigned max_age_s);
/* How a source given --gtfs-rt-feed finds the served dataset's ids
 * (rt_feed_namespace.h); set before the first poll. Without it, ids are
 * used as sent. */
void rt_ingest_set_id_lookup(rt_ingest *in, rt_id_exists_fn exists, void *ctx);
/* How long a poll waits for sources fetched at once (several sources: each
 * on a thread of its own) before it takes what came and leaves the others
 * in flight for a later poll; 0 (the default) waits for every source, as a
 * one-shot `transitd query` must. A server sets its poll interval. */
void rt_ingest_set_poll_wait(rt_ingest *in, unsigned ms);
/* Cancels the fetches in flight (within about a second) and waits for them. */
void rt_ingest_free(rt_ingest *in);
/* How many sources; the label of source i (rt_source_label). */
size_t rt_ingest_source_count(const rt_ingest *in);
const char *rt_ingest_source_label(const rt_ingest *in, size_t i);

/* What a poll found. */
typedef enum rt_poll_result {
    RT_POLL_FAILED = -1,       /* the merged feed stays; err says why (fetch or decode) */
    RT_POLL_UNCHANGED = 0,     /* the same feeds as in use: nothing to rebuild */
    RT_POLL_NEW = 1,           /* the merged feed changed: rebuild */
} rt_poll_result;

/* Fetches and decodes every source once (bytes identical to a source's
 * feed in use, or a 304, are not decoded again, so answers and their ETags
 * stay as they are). err gets "LABEL: reason" of every source that failed,
 * joined by "; ", or "" when none did; the result is RT_POLL_NEW when the
 * merge changed (even if another source failed), else RT_POLL_FAILED when
 * a source failed. */
rt_poll_result rt_ingest_poll(rt_ingest *in, int64_t now, char *err, size_t errlen);

/* An overlay of the last good feed on `ds` (an empty one before the first
 * good poll), holding the feed's vehicles on `ds` (rt_vehicles.h; those
 * older than the staleness limit left out); their counts are kept for the
 * metrics. NULL when out of memory. A poll after the first vehicle shown
 * goes stale answers RT_POLL_NEW, so the next overlay leaves it out. */
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
 * the length they need (write again with more room when it is >= cap).
 * Per-source series carry a `source` label (the source's label). */
size_t rt_ingest_render_metrics(rt_ingest *in, int64_t now, char *out, size_t cap);

/* One source's state, for /readyz. */
typedef struct rt_source_state {
    int64_t last_success, last_failure;   /* Unix seconds, 0: never */
    char last_error[256];                 /* of the last failure, "" when none */
    bool has_feed, merged;                /* a good feed; it is in the merge (not stale) */
    uint32_t entities;                    /* of its good feed */
    uint32_t vehicles;                    /* of those, vehicle positions */
    uint64_t feed_timestamp;              /* its header timestamp, 0 when absent */
} rt_source_state;
void rt_ingest_source_state(rt_ingest *in, size_t i, rt_source_state *out);

#endif
