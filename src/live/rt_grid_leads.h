/* rt_grid_leads.h — each stop's lead and early slack for boards of
 * departures by predicted time, laid out in grid order.
 *
 * Why it exists: a nearby board by predicted time asks, at each of the ~20
 * stops it searches, how far before the window to read (the earliest row
 * there scheduled before it and predicted into it) and how early a row
 * there may run. The overlay keeps these per stop in three tables (the
 * stop's slack, its span of buckets, the bucket: rt_overlay_stop_lead),
 * three scattered cache lines a stop, about 45 of the 83 lines a board
 * reads beyond one without realtime (cachegrind, bench_query --evict).
 * The stops near a point lie close together in grid order (GRID_STOPS,
 * as dataset.c's grid_visits does for the visits), so kept in that order
 * -- per 5-minute bucket of window starts a byte for each grid point, and
 * per grid point its late and early slack -- the same answers for all the
 * stops of a board are a few lines.
 *
 * Built beside the row index (rt_row_index.c) from what rt_overlay_lookup
 * says of each departure row of each trip instance the overlay has, so a
 * lead here is never shorter than a row predicted into the window needs;
 * it may be up to a minute longer (kept in whole minutes) and the early
 * slack a little larger, which read a few more rows, never other answers.
 * Only departures are noted: boards of arrivals ask the overlay. Not built
 * (NULL: boards ask the overlay) when the overlay has a frequency-based
 * trip (its instances differ by their times), or when the table would
 * pass RT_GRID_LEADS_MAX_BYTES.
 */
#ifndef LIVE_RT_GRID_LEADS_H
#define LIVE_RT_GRID_LEADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/query.h"

/* The largest table built (a feed of many days over many stops asks the
 * overlay instead). */
#define RT_GRID_LEADS_MAX_BYTES ((size_t)16 << 20)

typedef struct rt_grid_leads rt_grid_leads;

/* An empty table for trip instances on service dates [first_date,
 * last_date] of `ds`, whose departures run at most late_max seconds late;
 * NULL when out of memory, when the dataset has no grid, or when it would
 * pass RT_GRID_LEADS_MAX_BYTES. */
rt_grid_leads *rt_grid_leads_new(const dataset *ds, int32_t first_date, int32_t last_date, uint32_t late_max);
/* Notes a departure row at `stop`, scheduled at instant `scheduled`, that
 * a board by predicted time moves by delay_s (a prediction, not canceled,
 * |delay_s| <= RT_OVERLAY_SLACK_MAX). A row outside the dates given to
 * rt_grid_leads_new makes the table unusable (rt_grid_leads_finish). */
void rt_grid_leads_note(rt_grid_leads *g, uint32_t stop, int64_t scheduled, int32_t delay_s);
/* Ends the notes (frees what only they need); false when a row noted did
 * not fit the table, which must then not be used. */
bool rt_grid_leads_finish(rt_grid_leads *g);
void rt_grid_leads_free(rt_grid_leads *g);
size_t rt_grid_leads_bytes(const rt_grid_leads *g);

/* For a board of departures by predicted time whose window starts at
 * `from`, at each of the n grid points points[i] (indices into
 * GRID_STOPS): how far before the window to read the stop there (its
 * lead, lead[i]) and how early its rows may run (early[i]), seconds; 0 and
 * 0 for a point past the grid. What they read is asked for at every point
 * first, so that the misses overlap, and the window's bucket found once. */
void rt_grid_leads_slack_points(const rt_grid_leads *g, const uint32_t *points, size_t n, int64_t from,
                                uint32_t *lead, uint32_t *early);

#endif
