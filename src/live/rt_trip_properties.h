/* rt_trip_properties.h — TripProperties of scheduled trip instances, kept by
 * an overlay.
 *
 * Why it exists: a TripUpdate of a timetable trip may give the instance a
 * headsign, a short name and a shape of its own (TripProperties
 * trip_headsign, trip_short_name, shape_id), standing in for the
 * schedule's on that instance only. rt_overlay.c notes them as it matches
 * each update, by the run of stop entries the instance owns (and flags
 * them), so the row look-up that already finds a row's entry says whether
 * any apply (rt_departure.has_properties) at no cost to the rows of other
 * instances; rt_overlay_row_properties finds them for those rows. Private to the live layer; boards and the API use
 * rt_overlay.h.
 */
#ifndef LIVE_RT_TRIP_PROPERTIES_H
#define LIVE_RT_TRIP_PROPERTIES_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/rt_feed.h"
#include "transit/rt_overlay.h"

typedef struct rt_properties_set rt_properties_set;

rt_properties_set *rt_properties_new(void);
void rt_properties_free(rt_properties_set *p);
/* Whether the update gives any property a scheduled instance takes. */
bool rt_properties_given(const rt_trip_update *tu);
/* Notes the update's properties for the instance whose stop entries are
 * [first_entry, first_entry + count), entries noted in increasing order.
 * false when out of memory. */
bool rt_properties_note(rt_properties_set *p, const rt_trip_update *tu, uint32_t first_entry, uint32_t count);
/* The properties of the instance owning stop entry `entry`: their number
 * (rt_overlay_trip_properties), or 0 when none. */
uint32_t rt_properties_of(const rt_properties_set *p, uint32_t entry);
const rt_trip_properties *rt_properties_at(const rt_properties_set *p, uint32_t number);

#endif
