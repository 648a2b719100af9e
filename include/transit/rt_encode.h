/* rt_encode.h — what a server shows, as GTFS-Realtime FeedMessages.
 *
 * Why it exists: /gtfs-rt/trip-updates.pb and /gtfs-rt/alerts.pb let
 * replicas behind a load balancer read one primary's live data with the same
 * ingest code (`serve --gtfs-rt URL`), and let any GTFS-Realtime consumer read
 * it. Trip updates are the primary's last good feed's, re-encoded (its other
 * entities left out); alerts are every alert the primary shows, written
 * through the API or from its own feed. `?format=json` is the same message
 * as JSON (proto field names, enums by name), from the encoded bytes.
 */
#ifndef TRANSIT_RT_ENCODE_H
#define TRANSIT_RT_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "transit/alert.h"
#include "transit/rt_feed.h"

/* A FeedMessage (version 2.0, FULL_DATASET, `timestamp`) holding the trip
 * updates of `feed` (NULL: none). *out is malloc'd. 0, or -1 when out of
 * memory. */
int rt_encode_trip_updates(const rt_feed *feed, uint64_t timestamp, uint8_t **out, size_t *len);

/* A FeedMessage holding `alerts` as Alert entities: an "rt:" alert under the
 * feed entity id it came with, any other under its own id. */
int rt_encode_alerts(const alert *const *alerts, uint32_t n, uint64_t timestamp, uint8_t **out,
                     size_t *len);

/* The JSON of an encoded FeedMessage, NUL-terminated and malloc'd; NULL when
 * the bytes do not decode or memory runs out. */
char *rt_feed_message_json(const uint8_t *data, size_t len, size_t *json_len);

#endif
