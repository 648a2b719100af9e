/* board.c — departure rows joined with realtime and alerts; see board.h.
 *
 * The join asks for every row's realtime in passes (its trip's slot of the
 * overlay's row index, else the overlay's head and then its entry) and
 * reads them after, so that the cache misses of a 50-row board overlap
 * instead of queuing one behind the other. A board with nothing to join
 * but those answers (nearly every board) is handed over as the answers
 * alone (board.rts), without a board_row a row.
 */
#include "transit/board.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine/board_accessible.h"
#include "engine/board_predicted.h"
#include "live/rt_row_index.h"
#include "transit/rt_merge.h"

struct board_scratch {
    departure deps[QUERY_LIMIT_MAX];
    board_row rows[QUERY_LIMIT_MAX];
    rt_departure rts[QUERY_LIMIT_MAX];   /* a board by predicted time: the overlay's word on each row */
    rt_merge_scratch *merge;     /* ADDED trips' rows, put among the scheduled ones */
    predicted_scratch *predicted;   /* boards by predicted time */
};

board_scratch *board_scratch_new(void)
{
    board_scratch *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->merge = rt_merge_scratch_new();
    b->predicted = predicted_scratch_new();
    if (!b->merge || !b->predicted) {
        board_scratch_free(b);
        return NULL;
    }
    return b;
}

void board_scratch_free(board_scratch *b)
{
    if (!b)
        return;
    rt_merge_scratch_free(b->merge);
    predicted_scratch_free(b->predicted);
    free(b);
}

/* The row as served: where a platform change moved it (r->rt.moved), a
 * copy at its assigned stop in *at, so that the alerts of the stop the
 * vehicle calls at apply to it, not those of the stop it left (the API's
 * rule: README.md, "Platform changes"); else the row itself. */
static inline const departure *served_at(const departure *d, const board_row *r, departure *at)
{
    if (__builtin_expect(!r->rt.moved, 1) || r->assigned_stop == QUERY_NONE) return d;
    *at = *d;
    at->stop = r->assigned_stop;
    return at;
}

/* Each row's look-up (rt_row_index.h: its trip's slot, else the overlay's
 * head and then its entry) into said[0..count), asked for in passes so that
 * the misses of a board's rows overlap. Rows of ADDED trips (a trip index
 * past the dataset's) say nothing here (the join asks their calls). */
static void look_up(const rt_overlay *rt, uint32_t ntrips, const departure *deps, uint32_t count,
                    rt_departure *said)
{
    const rt_row_index *index = rt_overlay_row_index(rt);
    const rt_row_slot *slots[QUERY_LIMIT_MAX];   /* each row's slot, found once (index only) */
    assert(count <= QUERY_LIMIT_MAX);
    if (index) {
        for (uint32_t i = 0; i < count; i++) {
            slots[i] = deps[i].trip < ntrips ? rt_row_index_slot(index, deps[i].trip) : NULL;
            if (slots[i]) __builtin_prefetch(slots[i]);
            else if (deps[i].trip < ntrips) rt_overlay_prefetch_trip(rt, &deps[i]);
        }
        for (uint32_t i = 0; i < count; i++)
            if (!slots[i] && deps[i].trip < ntrips)
                rt_overlay_prefetch(rt, &deps[i]);
    }
    for (uint32_t i = 0; i < count; i++) {
        if (deps[i].trip < ntrips)
            rt_row_slot_lookup(index ? slots[i] : NULL, rt, &deps[i], &said[i]);
        else
            said[i] = (rt_departure){0};
    }
}

/* board_join, where `known` (when not NULL) already holds what the overlay
 * says of each timetable row (board_predicted asked it while choosing), else
 * `said` is room for it. With `words_only`, a board whose rows have nothing
 * joined but those words (no alerts shown, no vehicles, no row of an ADDED
 * trip, moved or with TripProperties: nearly every board) is handed over as
 * the words alone (board.rts, which then points at `known` or `said`),
 * without a board_row a row. */
static void join(const dataset *ds, const departure *deps, uint32_t count, const board_sources *src,
                 const rt_departure *known, rt_departure *said, bool words_only, board_row *rows, board *out)
{
    const rt_overlay *realtime = src ? src->realtime : NULL;
    alert_marks *alerts = src ? src->alerts : NULL;
    /* an overlay of another dataset knows none of these trips */
    const rt_overlay *rt = realtime && rt_overlay_dataset(realtime) == ds ? realtime : NULL;
    if (!rt && !alerts) {
        /* nothing to join: no row is of an ADDED trip (rt_merge puts them
         * only with this dataset's overlay), none has realtime or alerts */
        *out = (board){.deps = deps, .count = count, .realtime = realtime != NULL};
        return;
    }
    dataset_counts counts;
    dataset_get_counts(ds, &counts);
    /* the vehicles of running trips: a bit test a row when there are any */
    const rt_vehicles *vehicles = rt && rt_vehicles_count(rt_overlay_vehicles(rt)) ? rt_overlay_vehicles(rt) : NULL;
    if (rt && !known) {
        look_up(rt, counts.trips, deps, count, said);
        known = said;
    }
    if (rt && words_only && !alerts && !vehicles) {
        bool more = false;   /* some row needs more than its word of the overlay */
        for (uint32_t i = 0; i < count; i++)
            more |= deps[i].trip >= counts.trips || (known[i].moved | known[i].has_properties);
        if (!more) {
            *out = (board){.deps = deps, .rts = known, .count = count, .realtime = true};
            return;
        }
    }
    departure at;
    for (uint32_t i = 0; i < count; i++) {
        const departure *d = &deps[i];
        board_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        if (d->trip >= counts.trips) {
            /* rt_merge marks an ADDED trip's row with a trip index past the
             * dataset's, and puts such rows only with the overlay of this
             * dataset */
            assert(rt != NULL);
            r->added = rt_overlay_added_trip(rt, d);
            /* its call says whether the time is a prediction (else the
             * schedule's) and whether the vehicle stops there */
            const rt_added_call *call = rt_overlay_added_call(rt, d);
            uint32_t flags = call ? call->flags : 0;
            r->rt = (rt_departure){.realtime = true,
                                   .has_prediction = !(flags & RT_CALL_SCHEDULED_TIME),
                                   .canceled = (flags & RT_CALL_SKIPPED) != 0,
                                   .skipped = (flags & RT_CALL_SKIPPED) != 0};
            r->assigned_stop = call ? call->assigned_stop : QUERY_NONE;
            r->rt.moved = r->assigned_stop != QUERY_NONE;
            if (alerts)
                r->alerts = alert_marks_added_departure(alerts, ds, served_at(d, r, &at), i, r->added->route,
                                                        r->added->direction_id);
            continue;
        }
        if (rt)
            r->rt = known[i];
        if (r->rt.has_properties)
            r->properties = rt_overlay_row_properties(rt, d);
        if (r->rt.moved)
            r->assigned_stop = rt_overlay_assigned_stop(rt, d);
        if (vehicles)
            r->vehicle = (uint32_t)(rt_vehicles_find_row(vehicles, d) + 1);
        if (alerts)
            r->alerts = alert_marks_departure(alerts, ds, served_at(d, r, &at), i);
    }
    *out = (board){.deps = deps, .rows = rows, .count = count, .realtime = realtime != NULL, .alerts = alerts,
                   .vehicles = vehicles};
}

void board_join(const dataset *ds, const departure *deps, uint32_t count, const board_sources *src,
                board_row *rows, board *out)
{
    rt_departure said[QUERY_LIMIT_MAX];
    join(ds, deps, count, src, NULL, said, false, rows, out);
}

/* The rows found (and merged: rc), joined into the board. */
static int finish_board(board_scratch *b, const dataset *ds, const board_sources *src, query_kind kind, int rc,
                        uint32_t count, bool truncated, const rt_departure *known, board *out)
{
    if (rc != QUERY_OK)
        return rc;
    join(ds, b->deps, count, src, known, b->rts, true, b->rows, out);
    out->truncated = truncated;
    out->arrivals = kind != QUERY_DEPARTURES;
    return QUERY_OK;
}

/* The overlay a board is chosen by predicted times with, or NULL: one of
 * this dataset that predicts something, unless the schedule is asked for.
 * Without predictions (no overlay, or one with only ADDED trips) the
 * scheduled path is the same board. */
static const rt_overlay *predicting(board_scratch *b, const dataset *ds, const board_sources *src)
{
    if (!src || !src->realtime) return NULL;
    const rt_overlay *rt = src->realtime;
    if (rt_overlay_dataset(rt) != ds) return NULL;
    /* by schedule, unless the overlay hides rows or moves them to other
     * stops: then chosen here too, by scheduled time, so that hidden or
     * moved rows take no place under limit and moved ones appear where
     * they are served */
    bool by_schedule = src->order == BOARD_BY_SCHEDULE;
    if (by_schedule && !rt_overlay_hidden_count(rt) && !rt_overlay_moved_count(rt)) return NULL;
    predicted_scratch_by_schedule(b->predicted, by_schedule);
    return rt_overlay_trip_count(rt) ? rt : NULL;
}

int board_stop(board_scratch *b, const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop,
               int64_t from, uint32_t window_s, uint32_t limit, const board_sources *src, board *out,
               query_error *err)
{
    assert(limit <= QUERY_LIMIT_MAX);
    uint32_t count = 0;
    bool truncated = false;
    const rt_overlay *rt = predicting(b, ds, src);
    if (rt) {
        int rc = board_predicted_stop(b->predicted, ds, s, rt, kind, stop, from, window_s, limit, src->wheelchair,
                                      b->deps, b->rts, &count, &truncated, err);
        return finish_board(b, ds, src, kind, rc, count, truncated, b->rts, out);
    }
    if (src && src->wheelchair) {
        /* ADDED trips say nothing of their accessibility: no merge */
        int rc = accessible_stop_events(ds, s, kind, stop, from, window_s, limit, b->deps, &count, &truncated, err);
        return finish_board(b, ds, src, kind, rc, count, truncated, NULL, out);
    }
    /* the departures (the default board) through their own entry point,
     * where the search is inlined with its kind a constant (query.c) */
    int rc = kind == QUERY_DEPARTURES
                 ? stop_departures(ds, s, stop, from, window_s, limit, b->deps, &count, &truncated, err)
                 : stop_events(ds, s, kind, stop, from, window_s, limit, b->deps, &count, &truncated, err);
    if (rc == QUERY_OK && src && src->realtime)
        rc = rt_merge_stop_departures(src->realtime, ds, b->merge, kind, stop, from, window_s, limit, b->deps,
                                      &count, &truncated);
    return finish_board(b, ds, src, kind, rc, count, truncated, NULL, out);
}

int board_nearby(board_scratch *b, const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                 double radius_m, int64_t from, uint32_t window_s, uint32_t limit,
                 const board_sources *src, board *out, query_error *err)
{
    assert(limit <= QUERY_LIMIT_MAX);
    uint32_t count = 0;
    bool truncated = false;
    const rt_overlay *rt = predicting(b, ds, src);
    if (rt) {
        int rc = board_predicted_nearby(b->predicted, ds, s, rt, kind, lat, lon, radius_m, from, window_s, limit,
                                        src->wheelchair, b->deps, b->rts, &count, &truncated, err);
        return finish_board(b, ds, src, kind, rc, count, truncated, b->rts, out);
    }
    if (src && src->wheelchair) {
        int rc = accessible_nearby_events(ds, s, kind, lat, lon, radius_m, from, window_s, limit, b->deps, &count,
                                          &truncated, err);
        return finish_board(b, ds, src, kind, rc, count, truncated, NULL, out);
    }
    int rc = kind == QUERY_DEPARTURES
                 ? nearby_departures(ds, s, lat, lon, radius_m, from, window_s, limit, b->deps, &count, &truncated,
                                     err)
                 : nearby_events(ds, s, kind, lat, lon, radius_m, from, window_s, limit, b->deps, &count, &truncated,
                                 err);
    if (rc == QUERY_OK && src && src->realtime)
        rc = rt_merge_nearby_departures(src->realtime, ds, b->merge, kind, s, from, window_s, limit, b->deps,
                                        &count, &truncated);
    return finish_board(b, ds, src, kind, rc, count, truncated, NULL, out);
}
