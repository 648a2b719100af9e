/* rt_assigned.h — platform changes (StopTimeProperties.assigned_stop_id) of
 * an overlay: which stop times moved where, and each stop's moved rows.
 *
 * Why it exists: a stop time the feed assigns to another stop is served
 * there instead (the spec: "the vehicle serves the assigned stop"): its row
 * leaves the scheduled stop's board and appears on the assigned stop's,
 * still naming the scheduled stop. The timetable's scan of a stop finds no
 * such row, so the overlay keeps them apart, built once with it (rt_overlay.c
 * notes them as it matches each update; rt_assigned.c keeps and indexes
 * them): by stop entry, for the row's own look-up (rt_overlay_lookup says
 * `moved` from a flag of the entry; rt_overlay_assigned_stop, asked of
 * moved rows only, says where), and by (assigned stop, scheduled instant), for the
 * boards that merge them in. An overlay without platform changes allocates
 * nothing here, and boards then read nothing of it.
 * Realtime-only trips keep their platform changes on their calls
 * (rt_added_call.assigned_stop, rt_overlay.c); rt_assigned_stop_named and
 * rt_assigned_next are where an update's assigned_stop_id is read and
 * placed, for both.
 * Private to the live layer (rt_overlay.c and rt_assigned.c); boards use
 * rt_overlay.h.
 */
#ifndef LIVE_RT_ASSIGNED_H
#define LIVE_RT_ASSIGNED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/query.h"
#include "transit/rt_feed.h"
#include "transit/rt_overlay.h"

typedef struct rt_assigned rt_assigned;

/* The stop time of st[0..n) an update names, as the overlay's propagation
 * finds it: by stop_sequence, else the first stop time at or after `from`
 * with its stop_id. -1 when none. */
long rt_update_stop_index(const dataset *ds, const trip_stop_time *st, uint32_t n, const rt_stop_update *u,
                          uint32_t from);

/* The stop stop_time_update i of `tu` assigns (its assigned_stop_id), or
 * QUERY_NONE without one. An id the dataset lacks is QUERY_NONE too: counted
 * in *unknown and, the first time, described in problem (entity id and
 * field). */
uint32_t rt_assigned_stop_named(const dataset *ds, const rt_trip_update *tu, uint32_t i, uint32_t *unknown,
                                char *problem, size_t problem_len);

/* The platform changes of update `tu` on stop times st[0..n), one at a time,
 * each at the stop time propagate() places its update at (stop_sequence, else
 * stop_id from the last one matched on): rt_assigned_next gives the next stop
 * time (*k) assigned to a stop of the dataset other than its own (*stop), and
 * false when none is left. Unknown ids are skipped as rt_assigned_stop_named
 * says. Start with a zeroed walk. */
typedef struct rt_assigned_walk {
    uint32_t update, from;
} rt_assigned_walk;
bool rt_assigned_next(rt_assigned_walk *w, const dataset *ds, const rt_trip_update *tu, const trip_stop_time *st,
                      uint32_t n, uint32_t *k, uint32_t *stop, uint32_t *unknown, char *problem,
                      size_t problem_len);

rt_assigned *rt_assigned_new(void);
void rt_assigned_free(rt_assigned *a);

/* Notes the platform changes of update `tu` on the trip instance whose stop
 * times are st[0..n) (trip `trip` on service date `date`, times shifted by
 * `offset`), its stop entries numbered from `first_entry`: each that
 * rt_assigned_next gives (an unknown stop skipped, counted and described).
 * false when out of memory. */
bool rt_assigned_note(rt_assigned *a, const dataset *ds, const rt_trip_update *tu, const trip_stop_time *st,
                      uint32_t n, uint32_t trip, int32_t date, int32_t offset, uint32_t first_entry,
                      uint32_t *unknown, char *problem, size_t problem_len);
/* The stop times noted so far, and the i-th one's stop entry. */
uint32_t rt_assigned_noted(const rt_assigned *a);
uint32_t rt_assigned_entry(const rt_assigned *a, uint32_t i);
/* The i-th one's predicted delays (departure, arrival; 0 without a prediction). */
void rt_assigned_set_delays(rt_assigned *a, uint32_t i, int32_t departure, int32_t arrival);
/* Keeps the noted stop times whose entry is set in `kept` (a bit per stop
 * entry: the instances the overlay kept after dropping second updates) and
 * indexes them by assigned stop. false when out of memory. */
bool rt_assigned_finish(rt_assigned *a, const uint64_t *kept, uint32_t nentries);

/* The stop entry's assigned stop, QUERY_NONE when it has none. */
uint32_t rt_assigned_stop_of(const rt_assigned *a, uint32_t entry);

/* The overlay's (rt_overlay.c): NULL when it has no platform change. */
const rt_assigned *rt_overlay_assigned(const rt_overlay *o);

#endif
