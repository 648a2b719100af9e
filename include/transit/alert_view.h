/* alert_view.h — the alerts a server shows, resolved against one dataset.
 *
 * Why it exists: departures must say which alerts touch each row without
 * slowing the rows that none touches. A view is an immutable snapshot: the
 * alerts ordered by id, their informed entities resolved to the dataset's
 * stop, route, trip and agency indices and sorted by the one selector each is
 * looked up by, and two bitmaps (trips, stops) that answer "could any alert
 * apply?" with two bit tests. Routes, agencies and route types are folded
 * into the trip bitmap, stations into their platforms. A write builds a new
 * view and swaps it in; readers keep the one they took until they release it.
 */
#ifndef TRANSIT_ALERT_VIEW_H
#define TRANSIT_ALERT_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "transit/alert.h"
#include "transit/alert_text.h"
#include "transit/json_writer.h"
#include "transit/query.h"

typedef struct alert_view alert_view;

/* A view of `alerts` (ordered by id; each retained by the view) for `ds`
 * (retained; NULL: no departures to match, only listing). NULL when out of
 * memory. */
alert_view *alert_view_new(alert *const *alerts, uint32_t count, dataset *ds, int64_t generation);
/* The same alerts (and `a` put in place of the one with its id, or added),
 * or without alert `id`, for `ds`. */
alert_view *alert_view_with(const alert_view *v, alert *a, dataset *ds, int64_t generation);
alert_view *alert_view_without(const alert_view *v, const char *id, dataset *ds,
                               int64_t generation);
/* The same alerts and generation resolved against another dataset. */
alert_view *alert_view_rebase(const alert_view *v, dataset *ds);
alert_view *alert_view_retain(alert_view *v);
void alert_view_release(alert_view *v);

int64_t alert_view_generation(const alert_view *v);
uint32_t alert_view_count(const alert_view *v);
const alert *alert_view_at(const alert_view *v, uint32_t i);
/* The index of alert `id`, or -1. */
long alert_view_find(const alert_view *v, const char *id);
/* The dataset the view was resolved against (NULL for none). */
const dataset *alert_view_dataset(const alert_view *v);

/* The languages of the view's alerts' texts, each once (compared without
 * case; at most ALERT_VIEW_LANGUAGES_MAX, further ones are not offered), for
 * ranking a request's Accept-Language (alert_language.ranked). */
#define ALERT_VIEW_LANGUAGES_MAX 64
uint32_t alert_view_languages(const alert_view *v, const char *const **tags);
/* Whether an alert of the view has a text in more than one translation: then
 * what the alerts say depends on the request's languages. */
bool alert_view_multilingual(const alert_view *v);

/* Checks that every stop, route, trip and agency an alert names exists in
 * `ds`; 0, or -1 with the JSON pointer and a detail naming the id. */
int alert_check_references(const alert *a, const dataset *ds, alert_error *err);

/* The alerts one response shows, collected per thread and reused. */
typedef struct alert_marks alert_marks;
alert_marks *alert_marks_new(void);
void alert_marks_free(alert_marks *m);
/* Starts a response with view v (NULL: no alerts). */
void alert_marks_begin(alert_marks *m, const alert_view *v);

/* Marks the alerts active at d->instant that apply to departure d, and keeps
 * them as row `row`'s list (rows 0 .. QUERY_LIMIT_MAX - 1, each asked once).
 * Returns how many apply (0: the row shows none). */
uint32_t alert_marks_departure(alert_marks *m, const dataset *ds, const departure *d, uint32_t row);
/* The same for a row of a trip the realtime feed added (no trip of the
 * dataset): matched on its stop, route, agency, route type and direction. */
uint32_t alert_marks_added_departure(alert_marks *m, const dataset *ds, const departure *d, uint32_t row,
                                     uint32_t route, int direction_id);
/* How many alerts row `row` shows (0 when no view is active). */
uint32_t alert_marks_row_count(const alert_marks *m, uint32_t row);
/* The id of the i-th alert row `row` shows (i < alert_marks_row_count); ids
 * need no escaping in JSON (alert_id_valid). */
const char *alert_marks_row_id(const alert_marks *m, uint32_t row, uint32_t i);
/* Marks the alerts active at `instant` about stop `stop` itself (or its
 * station, or its platforms), or about a route among `routes` (the routes
 * serving it), their agency or route type. Alerts about single trips are left
 * to the departures. */
void alert_marks_stop(alert_marks *m, const dataset *ds, uint32_t stop, const uint32_t *routes,
                      uint32_t nroutes, int64_t instant);
/* Writes "alerts":[<every marked alert's JSON, in id order>] as an object
 * member, each text's translation chosen for lang (alert_text.h; NULL: none asked). */
void alert_marks_write(alert_marks *m, json_writer *w, alert_language *lang);

#endif
