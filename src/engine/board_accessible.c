/* board_accessible.c — boards of the rows a rider in a wheelchair can take;
 * see board_accessible.h for why and for the rule.
 *
 * A filtered board is a scan of the schedule in its own order: every event
 * of the window, a batch at a time, is tested (a trip byte and a stop byte
 * or two of the mapped timetable), and the scan stops as soon as one row
 * past the limit has been kept.
 */
#include "engine/board_accessible.h"

#include <assert.h>

#include "store/dataset_internal.h"

bool board_row_accessible(const dataset *ds, const departure *d)
{
    assert(d->trip < ds->meta->ntrips && d->stop < ds->meta->nstops);
    if (ds->trips[d->trip].wheelchair_accessible != 1) return false;
    const tt_stop *st = &ds->stops[d->stop];
    uint8_t boarding = st->wheelchair_boarding;
    /* GTFS: a stop inside a station with no information inherits the station's */
    if (boarding == 0 && st->parent != TT_NONE) boarding = ds->stops[st->parent].wheelchair_boarding;
    return boarding == 1;
}

/* ------------------------------------------------------------ boards in schedule order */

/* The rows kept so far of a filtered board in schedule order. */
typedef struct collect {
    const dataset *ds;
    departure *out;
    uint32_t limit, n;
    bool truncated;
} collect;

static void no_slack(void *ctx, uint32_t stop, uint32_t *late, uint32_t *early)
{
    (void)ctx;
    (void)stop;
    *late = *early = 0;
}

static bool collect_visit(void *ctx, const departure *rows, const query_rank *ranks, uint32_t n)
{
    collect *c = ctx;
    (void)ranks;
    for (uint32_t i = 0; i < n; i++) {
        if (!board_row_accessible(c->ds, &rows[i])) continue;
        if (c->n == c->limit) {
            c->truncated = true;
            return false;
        }
        c->out[c->n++] = rows[i];
    }
    return true;
}

static const int64_t scan_to_the_end = INT64_MAX;

int accessible_stop_events(const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop, int64_t from,
                           uint32_t window_s, uint32_t limit, departure *out, uint32_t *count, bool *truncated,
                           query_error *err)
{
    collect c = {ds, out, limit, 0, false};
    query_scan scan = {no_slack, collect_visit, &c, &scan_to_the_end, NULL, NULL};
    *count = 0;
    *truncated = false;
    /* a bad limit: the unfiltered question names it as it always does */
    if (limit < QUERY_LIMIT_MIN || limit > QUERY_LIMIT_MAX)
        return stop_events(ds, s, kind, stop, from, window_s, limit, out, count, truncated, err);
    int rc = stop_events_scan(ds, s, kind, stop, from, window_s, &scan, err);
    if (rc != QUERY_OK) return rc;
    *count = c.n;
    *truncated = c.truncated;
    return QUERY_OK;
}

int accessible_nearby_events(const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                             double radius_m, int64_t from, uint32_t window_s, uint32_t limit, departure *out,
                             uint32_t *count, bool *truncated, query_error *err)
{
    collect c = {ds, out, limit, 0, false};
    query_scan scan = {no_slack, collect_visit, &c, &scan_to_the_end, NULL, NULL};
    *count = 0;
    *truncated = false;
    /* a bad limit: the unfiltered question names it as it always does */
    if (limit < QUERY_LIMIT_MIN || limit > QUERY_LIMIT_MAX)
        return nearby_events(ds, s, kind, lat, lon, radius_m, from, window_s, limit, out, count, truncated, err);
    int rc = nearby_events_scan(ds, s, kind, lat, lon, radius_m, from, window_s, &scan, err);
    if (rc != QUERY_OK) return rc;
    *count = c.n;
    *truncated = c.truncated;
    return QUERY_OK;
}
