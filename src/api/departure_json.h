/* departure_json.h — the Departure objects of the two departures endpoints.
 *
 * Why it exists: api.c writes every other response through the generic
 * writer calls; departure lists are the one body large enough (50 rows,
 * about 17 KB) for the per-call overhead to cost more than the query, so
 * they have their own row writer. See departure_json.c.
 */
#ifndef TRANSIT_DEPARTURE_JSON_H
#define TRANSIT_DEPARTURE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/alert_view.h"
#include "transit/json_writer.h"
#include "transit/query.h"
#include "transit/rt_overlay.h"

/* Derives, when a dataset is opened, the JSON text a row copies for its
 * stop and for its trip's route and headsign: ds->stop_text, ds->row_text
 * and each trip_hot's middle_off and middle_len. Fills err and returns -1
 * when memory runs out or the text would pass 4 GB. */
int departure_json_derive(dataset *ds, char *err, size_t errlen);

/* Writes `count` Departure objects as elements of the array the caller
 * opened; near_point adds "stop_name" and "distance_m" (/v1/departures).
 * With `alerts` (begun with a view), a row that alerts apply to gets an
 * "alerts" member with their ids, and they are marked for the response.
 * With `realtime` (a server that ingests GTFS-Realtime), every row gets
 * "scheduled", "predicted", "delay_s", "realtime" and "canceled"; rows of
 * trips the overlay has no update for say realtime false (as do all rows
 * when the overlay was resolved against another dataset). Without it (no
 * realtime configured) the rows are unchanged: those members are absent.
 * Rows of trips the feed ADDED (trip index past the dataset's, put there by
 * rt_merge) come only with the overlay they came from, of this dataset;
 * theirs say "scheduled":null and "added":true. */
void departure_json_write_items(json_writer *w, const dataset *ds, const departure *deps,
                                uint32_t count, bool near_point, alert_marks *alerts,
                                const rt_overlay *realtime);

#endif
