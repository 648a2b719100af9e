/* rt_feed_merge.h — one feed of several GTFS-Realtime feeds: the rule when two
 * sources speak of the same trip or alert.
 *
 * Why it exists: `serve --gtfs-rt A --gtfs-rt B` shows the updates of
 * every source (an agency's trip updates and its alerts at separate URLs,
 * or several agencies) through one overlay and one exported feed. The rule:
 * feeds are taken newest header timestamp first (the caller orders them;
 * a tie keeps the order the sources were given), and a trip update or
 * alert is dropped when an earlier feed already has one for the same trip
 * (same trip_id, start_date and start_time, which tells a frequency-based
 * trip's runs apart; for an update without trip_id, same route_id,
 * direction_id, start_date and start_time; a DUPLICATED update is of its
 * copy: the same TripProperties trip_id and start_date too) or the same alert
 * entity id. So, per trip, the newest feed wins. Updates the overlay
 * matches to one instance though they differ here (one gives start_date or
 * start_time, the other not) are both kept; the overlay keeps the first of
 * them, the newest feed's, and drops the other whole (a REPLACEMENT with its
 * calls). Updates naming neither a
 * trip nor a route are all kept. Vehicles go by their own timestamps: per
 * vehicle the newest position wins (rt_vehicle.h).
 */
#ifndef TRANSIT_RT_FEED_MERGE_H
#define TRANSIT_RT_FEED_MERGE_H

#include <stddef.h>

#include "transit/rt_feed.h"

/* The merge of feeds[0..n) (newest first) as a feed whose arrays are its
 * own but whose entities point into the given feeds: it must be freed
 * (rt_feed_merged_free) before any of them. Its header (version,
 * timestamp) is feeds[0]'s; ignored and rejected are the sums. NULL when
 * out of memory. */
rt_feed *rt_feed_merge(const rt_feed *const *feeds, size_t n);
void rt_feed_merged_free(rt_feed *merged);

#endif
