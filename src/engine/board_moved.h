/* board_moved.h — rows a platform change moved to another stop, as a board
 * by predicted time takes them in.
 *
 * Why it exists: a row the feed assigns to another stop (rt_overlay.h,
 * "Platform changes") is not in that stop's timetable, so the schedule's
 * scan (query.h) never hands it over with its ranks. board_predicted.c
 * skips such a row where it is scheduled and adds the overlay's moved rows
 * at each stop it searched; this gives each the ranks the scan would have
 * given it (the contract's order: instant, then the row's stop_id, route
 * short name and trip_id, whose ranks the timetable holds) and says
 * whether a wheelchair can take it where it is served.
 */
#ifndef ENGINE_BOARD_MOVED_H
#define ENGINE_BOARD_MOVED_H

#include <stdbool.h>

#include "transit/query.h"

/* The ranks of a timetable row (d->trip below the dataset's trip count). */
query_rank board_row_rank(const dataset *ds, const departure *d);
/* Whether a moved row is accessible (board_accessible.h's rule) at the
 * stop it is served at, `assigned_stop`. */
bool board_moved_accessible(const dataset *ds, const departure *d, uint32_t assigned_stop);

#endif
