/* board_accessible.h — boards of the rows a rider in a wheelchair can take
 * (the API's wheelchair=1).
 *
 * Why it exists: filtering a board's rows after it was cut would return
 * fewer than `limit` rows while more exist. The filter sits inside the
 * schedule's scan instead (query.h: stop_events_scan, nearby_events_scan),
 * so a filtered board reads on until it has `limit` rows or the window
 * ends, and a board by predicted time (board_predicted.c) tests the rows it
 * chooses from as it drains its merge. An
 * unfiltered board never comes here: the hot path is as it was.
 *
 * The rule, per GTFS: a row is accessible when its trip's
 * wheelchair_accessible (trips.txt) is 1, and the wheelchair_boarding of the
 * stop it calls at is 1, where a stop with 0 (or none) inside a station
 * takes its parent station's. 0 (no information) and 2 (not accessible)
 * are both left out. A trip the realtime feed ADDED says nothing of its
 * accessibility and is left out too.
 */
#ifndef ENGINE_BOARD_ACCESSIBLE_H
#define ENGINE_BOARD_ACCESSIBLE_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/query.h"

/* Whether a timetable row (d->trip below the dataset's trip count) is
 * accessible by the rule above. */
bool board_row_accessible(const dataset *ds, const departure *d);

/* stop_events and nearby_events of the accessible rows only: the first
 * `limit` in the same order, truncated when more are in the window. */
int accessible_stop_events(const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop, int64_t from,
                           uint32_t window_s, uint32_t limit, departure *out, uint32_t *count, bool *truncated,
                           query_error *err);
int accessible_nearby_events(const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                             double radius_m, int64_t from, uint32_t window_s, uint32_t limit, departure *out,
                             uint32_t *count, bool *truncated, query_error *err);

#endif
