/* rt_row_index.h — a row's realtime in one cache line: per trip with
 * realtime, its earliest instance's stop entries as runs of positions.
 *
 * Why it exists: rt_overlay_lookup reads two cache lines a row (the trip's
 * head, then its stop entry: 16 bytes among 12.8 MB on the realtime
 * benchmark's feed), one after the other. A board by predicted time reads
 * 60-70 rows, so these are about 130 misses a board, and a server's caches,
 * shared with its sockets, libmicrohttpd and the other processes, hold far
 * less of them than a loop of queries does (bench_query --evict). Along a
 * trip the entries repeat: no prediction before the first update, then one
 * delay carried to the end, a skipped stop between. Kept as runs (the
 * first position each holds from, and what the look-up says there), six
 * to a 64-byte slot a trip, a row's answer is one read, its slot found by
 * a rank over the trip bits (11 KB on Brooklyn, which stay cached).
 *
 * Built beside the overlay (rt_overlay_build keeps it) through the
 * overlay's own API: for every position of each trip's earliest instance,
 * what rt_overlay_lookup says of that row, so an answer here is always the
 * look-up's. Where it cannot be (a frequency-based trip, more than six
 * runs: no slot; an arrival row, a row of another instance, a position
 * past the trip's length) the look-up answers, with its own prefetches. Boards (engine/) take an overlay's index
 * with rt_overlay_row_index once a board and ask it for each row. The same
 * look-ups, of every instance, fill the stops' leads in grid order
 * (rt_grid_leads.h) that nearby boards read instead of the overlay's.
 */
#ifndef LIVE_RT_ROW_INDEX_H
#define LIVE_RT_ROW_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "live/rt_grid_leads.h"
#include "transit/query.h"
#include "transit/rt_overlay.h"

typedef struct rt_row_index rt_row_index;

/* The index of overlay `o` of dataset `ds`, read through the overlay's
 * API (rt_overlay_trip_dates, rt_overlay_lookup, rt_overlay_trip_late);
 * NULL when out of memory. */
rt_row_index *rt_row_index_build(const rt_overlay *o, const dataset *ds);
void rt_row_index_free(rt_row_index *ix);
/* Bytes it holds, and the trips it keeps a slot for. */
size_t rt_row_index_bytes(const rt_row_index *ix);
uint32_t rt_row_index_kept(const rt_row_index *ix);

/* rt_overlay_lookup(o, d, out) for a row of the timetable (its pos and
 * stop_sequence the trip's own), answered from the index where it can be. */
bool rt_row_index_lookup(const rt_row_index *ix, const rt_overlay *o, const departure *d, rt_departure *out);
/* Starts loading what rt_row_index_lookup reads for `d`, in two steps as
 * the overlay's (rt_overlay_prefetch_trip, then rt_overlay_prefetch): the
 * second only does something for rows the overlay answers. */
void rt_row_index_prefetch(const rt_row_index *ix, const rt_overlay *o, const departure *d);
void rt_row_index_prefetch_entry(const rt_row_index *ix, const rt_overlay *o, const departure *d);
/* rt_overlay_trip_late, from the same slot. */
uint32_t rt_row_index_trip_late(const rt_row_index *ix, const rt_overlay *o, uint32_t trip);
/* The stops' leads for boards of departures by predicted time, in grid
 * order (rt_grid_leads.h), built with the index from the same look-ups;
 * NULL where they could not be (boards then ask the overlay). */
const rt_grid_leads *rt_row_index_leads(const rt_row_index *ix);

#endif
