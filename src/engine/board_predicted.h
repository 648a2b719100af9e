/* board_predicted.h — a board chosen, ordered and cut by predicted times.
 *
 * Why it exists: with realtime, a rider's question is "what leaves in the
 * next hour", not "what was scheduled to": a bus scheduled 08:55 and 15
 * minutes late belongs on the 09:00-10:00 board, and one predicted past
 * 10:00 does not. board.c calls these for realtime=predicted (the default
 * when the overlay has predictions); realtime=scheduled keeps the
 * schedule's choice (board_stop's other path).
 *
 * A row's predicted instant is its scheduled instant plus the overlay's
 * delay where the overlay predicts the row (rt_overlay_lookup:
 * has_prediction and not canceled), else the scheduled instant: a canceled
 * trip and a skipped stop stay where the schedule has them, marked
 * canceled. A delay of more than RT_OVERLAY_SLACK_MAX (a day) either way
 * does not move the row either (the scan reaches no further). ADDED trips' rows are at their own times. Rows are those whose
 * predicted instant is in [from, from + window_s), ordered by it, then
 * stop_id, route_short_name, trip_id, and cut at `limit` (truncated when
 * more are in the window). Each stop's schedule is scanned from its
 * earliest row scheduled before `from` and predicted in the window
 * (rt_overlay_stop_lead) to the largest early running of the stops
 * searched after the window (rt_overlay_stop_slack), and no further than
 * the limit needs. With `wheelchair`, only the rows board_accessible.h
 * lets through are chosen from (no ADDED trip's).
 */
#ifndef ENGINE_BOARD_PREDICTED_H
#define ENGINE_BOARD_PREDICTED_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/query.h"
#include "transit/rt_overlay.h"

/* Working memory, reused from call to call (one per server thread). */
typedef struct predicted_scratch predicted_scratch;
predicted_scratch *predicted_scratch_new(void);
void predicted_scratch_free(predicted_scratch *p);
/* The boards that follow choose by scheduled time (true), not predicted: a
 * board by schedule takes this path when the overlay hides instances
 * (DELETED, REPLACEMENT), so that a hidden row takes no place under limit. */
void predicted_scratch_by_schedule(predicted_scratch *p, bool by_schedule);

/* The rows of a stop's board (a station: its platforms) by predicted time,
 * into deps (room for `limit`, at most QUERY_LIMIT_MAX), and beside each in
 * rts what the overlay says of it (rt_overlay_lookup's answer; an ADDED
 * trip's row: realtime only). `rt` is an overlay of `ds`. QUERY_OK, else a
 * query error as stop_events gives it. */
int board_predicted_stop(predicted_scratch *p, const dataset *ds, query_scratch *s, const rt_overlay *rt,
                         query_kind kind, uint32_t stop, int64_t from, uint32_t window_s, uint32_t limit,
                         bool wheelchair, departure *deps, rt_departure *rts, uint32_t *count, bool *truncated,
                         query_error *err);
/* The same for the stops within radius_m of a point (nearby_events). */
int board_predicted_nearby(predicted_scratch *p, const dataset *ds, query_scratch *s, const rt_overlay *rt,
                           query_kind kind, double lat, double lon, double radius_m, int64_t from,
                           uint32_t window_s, uint32_t limit, bool wheelchair, departure *deps, rt_departure *rts,
                           uint32_t *count, bool *truncated, query_error *err);

#endif
