/* rt_merge.h — the departures of ADDED trips among a query's departures.
 *
 * Why it exists: stop_departures and nearby_departures read the mapped
 * timetable, which knows no trip the GTFS-Realtime feed adds. After either
 * answers, these calls put the overlay's added departures (rt_overlay.h)
 * at the same stops and in the same window among its rows, in the same
 * order (instant, then stop_id, route_short_name, trip_id, bytewise) and
 * under the same limit, so a rider sees an extra bus where it stops. They
 * cost nothing unless the overlay has added trips; then they read where
 * each stop's added departures lie (two reads a stop), and sort and merge
 * only where some fall in the window.
 */
#ifndef TRANSIT_RT_MERGE_H
#define TRANSIT_RT_MERGE_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/query.h"
#include "transit/rt_overlay.h"

/* Working memory, reused from call to call (one per server thread). */
typedef struct rt_merge_scratch rt_merge_scratch;
rt_merge_scratch *rt_merge_scratch_new(void);
void rt_merge_scratch_free(rt_merge_scratch *m);

/* After stop_events(ds, ..., kind, stop, from, window_s, limit, deps, count,
 * truncated): adds the added events of `kind` at `stop` (a station: at its
 * children). `deps` has room for `limit` rows. QUERY_OK, or QUERY_ENOMEM
 * with the rows as they were. */
int rt_merge_stop_departures(const rt_overlay *o, const dataset *ds, rt_merge_scratch *m, query_kind kind,
                             uint32_t stop, int64_t from, uint32_t window_s, uint32_t limit, departure *deps,
                             uint32_t *count, bool *truncated);

/* After nearby_events on scratch `s`: adds the added events of `kind` at
 * the stops it searched, with their distances. */
int rt_merge_nearby_departures(const rt_overlay *o, const dataset *ds, rt_merge_scratch *m, query_kind kind,
                               const query_scratch *s, int64_t from, uint32_t window_s, uint32_t limit,
                               departure *deps, uint32_t *count, bool *truncated);

#endif
