/* rt_alerts.h — GTFS-Realtime alerts as transitd alerts ("rt:" ids).
 *
 * Why it exists: alerts from the realtime feed are shown beside those
 * written through /v1/alerts, matched to departures and listed the same way.
 * Each rt_alert becomes the JSON body the alerts API would accept and goes
 * through the same checks (alert_parse), so both kinds are one `alert`.
 * Their ids are "rt:" and the feed entity's id (or "rt:" and a hash of it
 * when that id holds bytes alert ids may not, or is too long); the alerts
 * API refuses to write ids with that prefix, so the two never collide.
 */
#ifndef TRANSIT_RT_ALERTS_H
#define TRANSIT_RT_ALERTS_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/alert.h"
#include "transit/rt_feed.h"

#define RT_ALERT_ID_PREFIX "rt:"

/* Whether an alert id belongs to the realtime feed. */
bool rt_alert_id(const char *id);

/* The feed's alerts, ordered by id (duplicates dropped), each with one
 * reference, in *out (free with rt_alerts_free). An alert that fails the checks is skipped and counted in
 * *rejected (its reason in err when it is the first). Stamped with the
 * feed's timestamp (else `now`) as revision (the single alert's ETag) and
 * both times. Returns the count, or -1 when out of memory. */
long rt_alerts_from_feed(const rt_feed *feed, int64_t now, alert ***out, uint32_t *rejected,
                         char *err, size_t errlen);
void rt_alerts_free(alert **alerts, uint32_t n);

/* The alerts to show: `stored` (written through the API; any "rt:" ids among
 * them are left out) and `rt`, both ordered by id, merged into one list
 * ordered by id (malloc'd; the pointers are borrowed). NULL when out of
 * memory. */
alert **rt_alerts_merge(alert *const *stored, uint32_t nstored, alert *const *rt, uint32_t nrt,
                        uint32_t *count);

#endif
