/* departure_json.h — the Departure objects of the two departures endpoints.
 *
 * Why it exists: the other endpoints (api.c, api_reference.c) write their
 * responses through the generic writer calls; departure lists are the one
 * body large enough (50 rows, about 17 KB) for the per-call overhead to cost
 * more than the query, so they have their own row writer. See
 * departure_json.c.
 */
#ifndef TRANSIT_DEPARTURE_JSON_H
#define TRANSIT_DEPARTURE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/board.h"
#include "transit/json_writer.h"
#include "transit/query.h"

struct dataset_translations;

/* Derives the JSON text a row copies for each stop and for each trip's
 * route and headsign, once per dataset (kept with it as a dataset
 * extension). Writing derives them when they are missing; a server asks for
 * them when it installs a dataset, so that no request pays for it. Fills err
 * and returns -1 when memory runs out or the text would pass 4 GB. */
int departure_json_prepare(dataset *ds, char *err, size_t errlen);

/* Writes the board's rows as Departure objects, elements of the array the
 * caller opened; near_point adds "stop_name" and "distance_m"
 * (/v1/departures). A row writes what the board joined for it: with
 * b->realtime every row gets "scheduled", "predicted", "delay_s",
 * "realtime" and "canceled" (rows the overlay knows nothing of say realtime
 * false), without it those members are absent; a row of an ADDED trip says
 * "scheduled":null and "added":true; a row that alerts apply to gets an
 * "alerts" member with their ids. Returns 0, or -1 with err when the texts
 * could not be derived. With `names` and a `language` of at least 1
 * (translations.h), the stop names, route names and headsigns are that
 * language's, from texts derived on the first use of the language. */
int departure_json_write_items(json_writer *w, dataset *ds, const board *b, bool near_point,
                               const struct dataset_translations *names, int language, char *err, size_t errlen);

/* A realtime-added trip's headsign in `language` (translations.h): a copy's or
 * replacement's, when it is its scheduled trip's, as that trip's translation;
 * else the text's (translation_of_text); else the feed's own, or NULL. */
struct rt_added_trip;
const char *departure_json_added_headsign(const dataset *ds, const struct dataset_translations *names, int language,
                                          const struct rt_added_trip *a);

#endif
