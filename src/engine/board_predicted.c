/* board_predicted.c — a board chosen, ordered and cut by predicted times.
 *
 * Why it exists: see board_predicted.h. The schedule's rows come from a
 * scan (query.h: stop_events_scan, nearby_events_scan) in scheduled order;
 * each gets its predicted instant from the overlay, and those in the window
 * go into a sorted list of at most limit + 1 (insertion from its end, where
 * rows mostly belong).
 * The scan reads each stop's rows from its earliest row scheduled before
 * the window and predicted in it (rt_overlay_stop_lead), so the rows before
 * the window it hands over are few; what that reads at each stop is asked
 * for at every stop of the board first (prefetch_stop), so that the misses
 * overlap instead of queuing stop after stop.
 * A row scheduled at s is predicted no earlier than s - early (the largest
 * early running of the stops searched), so once the list is full and
 * s - early is past the limit-th row's predicted instant, no later row can
 * enter the first `limit` and the scan stops. Ties on the predicted instant
 * are broken by the ranks the scan gives (the contract's strings, ranked
 * at open), and by the strings themselves where an ADDED trip's row, which
 * has no rank, is one of the two.
 */
#include "engine/board_predicted.h"

#include "engine/board_accessible.h"
#include "engine/board_moved.h"
#include "live/rt_grid_leads.h"
#include "live/rt_row_index.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A chosen row and what it is ordered by. */
typedef struct pick {
    departure d;
    int64_t at;                /* predicted instant */
    query_rank rank;
    bool ranked;               /* rank is set: a timetable trip's row */
    rt_departure rt;           /* what the overlay said of it */
} pick;

/* A pick's place in the board's order: its predicted instant (from the
 * window's start) and ranks packed as two integers compared as one (see
 * query.c's heap), and its slot. The picks stay in their slots; a row
 * inserted moves 24 bytes a row after it. */
typedef struct order_key {
    uint64_t hi;               /* seconds from the window's start << 32 | stop rank */
    uint64_t lo;               /* route rank << 32 | trip rank */
    uint32_t slot;             /* in picks[] */
    uint32_t ranked;           /* 1: the ranks are set (not an ADDED trip's row) */
} order_key;

struct predicted_scratch {
    pick picks[QUERY_LIMIT_MAX + 2];   /* limit + 1 held, and a spare for the row being placed */
    order_key order[QUERY_LIMIT_MAX + 1];
    departure added[QUERY_LIMIT_MAX + 1];
    uint32_t *stops;           /* a station's children */
    uint32_t stops_cap;
    departure *moved;          /* a stop's rows moved there by a platform change */
    uint32_t moved_cap;
    bool by_schedule;          /* choose by scheduled time (predicted_scratch_by_schedule) */
};

predicted_scratch *predicted_scratch_new(void) { return calloc(1, sizeof(predicted_scratch)); }

void predicted_scratch_by_schedule(predicted_scratch *p, bool by_schedule) { p->by_schedule = by_schedule; }

void predicted_scratch_free(predicted_scratch *p)
{
    if (!p) return;
    free(p->stops);
    free(p->moved);
    free(p);
}

/* One board's choice in progress. */
typedef struct choice {
    predicted_scratch *p;
    const dataset *ds;
    const rt_overlay *rt;
    const rt_row_index *rows;  /* the overlay's: each row's look-up in one read */
    const rt_grid_leads *leads;   /* the stops' leads in grid order (nearby departures), or NULL */
    int64_t from, to;
    uint32_t limit;
    uint32_t early;            /* the largest early slack of the stops searched */
    uint32_t n;                /* picks held, at most limit + 1 */
    bool more;                 /* rows beyond the picks are in the window (ADDED overflow) */
    uint32_t spare, next_slot; /* the slot the next row is built in; the next never used */
    int64_t until;             /* the scan's end: no row scheduled later can be among the first `limit` */
} choice;

/* The strings a row is ordered by after its instant (rt_merge.c's rule). */
typedef struct row_key {
    const char *stop_id, *route_short_name, *trip_id;
} row_key;

static row_key key_of(const choice *c, const departure *d)
{
    stop_info s;
    route_info r;
    dataset_stop(c->ds, d->stop, &s);
    const rt_added_trip *added = rt_overlay_added_trip(c->rt, d);
    if (added) {
        dataset_route(c->ds, added->route, &r);
        return (row_key){s.id, r.short_name, added->trip_id};
    }
    trip_info t;
    dataset_trip(c->ds, d->trip, &t);
    dataset_route(c->ds, t.route, &r);
    return (row_key){s.id, r.short_name, t.id};
}

static bool pick_before(const choice *c, const pick *a, const pick *b)
{
    if (a->at != b->at) return a->at < b->at;
    if (a->ranked && b->ranked) {
        if (a->rank.stop != b->rank.stop) return a->rank.stop < b->rank.stop;
        if (a->rank.route != b->rank.route) return a->rank.route < b->rank.route;
        return a->rank.trip < b->rank.trip;
    }
    row_key x = key_of(c, &a->d), y = key_of(c, &b->d);
    int k = strcmp(x.stop_id, y.stop_id);
    if (!k) k = strcmp(x.route_short_name, y.route_short_name);
    if (!k) k = strcmp(x.trip_id, y.trip_id);
    return k < 0;
}

/* The pick i-th in the board's order. */
static const pick *nth(const choice *c, uint32_t i) { return &c->p->picks[c->p->order[i].slot]; }

static inline __attribute__((always_inline)) bool key_before(const choice *c, const order_key *a, const order_key *b)
{
    /* an ADDED trip's row has no ranks: a tie on the instant with one is
     * broken by the strings */
    if ((a->ranked & b->ranked) || (a->hi >> 32) != (b->hi >> 32))
        return (a->hi < b->hi) | ((a->hi == b->hi) & (a->lo < b->lo));
    return pick_before(c, &c->p->picks[a->slot], &c->p->picks[b->slot]);
}

/* Places the row built in the spare slot among the picks, after those it
 * does not come before (so equal rows keep the order they came in); the
 * (limit + 1)-th is as far as the list goes, and a pick pushed past it
 * gives its slot to the next row. */
static void insert(choice *c)
{
    const pick *x = &c->p->picks[c->spare];
    order_key *order = c->p->order;
    order_key k = {(uint64_t)(x->at - c->from) << 32 | x->rank.stop, (uint64_t)x->rank.route << 32 | x->rank.trip,
                   c->spare, x->ranked};
    /* rows come by scheduled time and a prediction moves them by minutes,
     * so a row's place is a few entries from the end: found from there,
     * each entry passed moved up as it is passed (no search, no memmove;
     * measured 5 % faster on the realtime benchmark's boards) */
    bool full = c->n == c->limit + 1;
    if (full && !key_before(c, &k, &order[c->limit])) return;   /* past the first limit + 1: the spare stays spare */
    uint32_t freed = full ? order[c->limit].slot : 0;   /* the pick pushed out, when full */
    uint32_t i = full ? c->limit : c->n;                 /* the hole, moving down */
    while (i > 0 && key_before(c, &k, &order[i - 1])) {
        order[i] = order[i - 1];
        i--;
    }
    order[i] = k;
    if (full) {
        c->spare = freed;
    } else {
        c->spare = c->next_slot++;
        c->n++;
    }
}

static void slack_of(void *ctx, uint32_t stop, uint32_t *late, uint32_t *early)
{
    choice *c = ctx;
    if (c->p->by_schedule) {
        *late = *early = 0;
        return;
    }
    rt_overlay_stop_slack(c->rt, stop, late, early);
    /* back to the earliest row there delayed into the window, not the
     * stop's largest delay */
    *late = rt_overlay_stop_lead(c->rt, stop, c->from);
    if (*early > c->early) c->early = *early;
}

/* What slack_of reads at each stop (rt_overlay_stop_lead), asked for every
 * stop searched before slack_of runs on the first, in the two steps its
 * reads depend on each other by. */
static void prefetch_stop(void *ctx, uint32_t stop, int step)
{
    const choice *c = ctx;
    if (!c->p->by_schedule) rt_overlay_prefetch_stop_lead(c->rt, stop, c->from, step);
}

/* slack_of for a nearby board of departures, from the leads in grid order
 * (rt_grid_leads.h): the stops near a point are a few lines there. */
static void slack_at_point(void *ctx, uint32_t point, uint32_t stop, uint32_t *late, uint32_t *early)
{
    (void)stop;
    choice *c = ctx;
    rt_grid_leads_slack(c->leads, point, c->from, late, early);
    if (*early > c->early) c->early = *early;
}

static void prefetch_point(void *ctx, uint32_t point)
{
    const choice *c = ctx;
    rt_grid_leads_prefetch(c->leads, point, c->from);
}

/* What a row's look-up reads (its trip's slot in the row index), asked for
 * as the scan hands the row over, a batch before visit reads it. */
static void prefetch_row(void *ctx, const departure *d)
{
    const choice *c = ctx;
    rt_row_index_prefetch(c->rows, c->rt, d);
}

static bool visit(void *ctx, const departure *rows, const query_rank *ranks, uint32_t n)
{
    choice *c = ctx;
    bool moves = rt_overlay_moved_count(c->rt) != 0;
    /* each row's slot in the row index, found once; the rows the overlay
     * answers: what their look-up reads, a pass ahead */
    const rt_row_slot *slots[QUERY_SCAN_BATCH];
    for (uint32_t i = 0; i < n; i++)
        if (!(slots[i] = rt_row_index_slot(c->rows, rows[i].trip))) rt_overlay_prefetch(c->rt, &rows[i]);
    for (uint32_t i = 0; i < n; i++) {
        const departure *d = &rows[i];
        /* before the window, and its trip never late enough to reach it */
        if (d->instant < c->from && (int64_t)rt_row_slot_late(slots[i], c->rt, d->trip) < c->from - d->instant)
            continue;
        /* full, and this row (so every later one) is predicted after the
         * limit-th: the first `limit` are settled */
        if (c->n > c->limit && d->instant - (int64_t)c->early > nth(c, c->limit - 1)->at) return false;
        pick *x = &c->p->picks[c->spare];
        int64_t at = d->instant;
        if (rt_row_slot_lookup(slots[i], c->rt, d, &x->rt) && x->rt.hidden) continue;   /* DELETED, REPLACED */
        if (moves && x->rt.moved) continue;   /* served at its assigned stop (add_moved) */
        if (x->rt.has_prediction && !x->rt.canceled && !c->p->by_schedule &&
            x->rt.delay_s <= RT_OVERLAY_SLACK_MAX && x->rt.delay_s >= -RT_OVERLAY_SLACK_MAX)
            at += x->rt.delay_s;
        if (at < c->from || at >= c->to) continue;
        x->d = *d;
        x->at = at;
        x->rank = ranks[i];
        x->ranked = true;
        insert(c);
        if (c->n > c->limit) c->until = nth(c, c->limit - 1)->at + (int64_t)c->early;
    }
    return true;
}

/* The ADDED trips' rows at `stop` in the window, among the picks. */
static void add_added(choice *c, query_kind kind, uint32_t stop, double distance_m)
{
    if (!rt_overlay_added_at_stop(c->rt, stop)) return;
    uint32_t room = c->limit + 1;
    uint32_t all = rt_overlay_added_events(c->rt, kind, stop, c->from, c->to, c->p->added, room);
    uint32_t got = all < room ? all : room;
    if (all > got) c->more = true;
    for (uint32_t i = 0; i < got; i++) {
        departure d = c->p->added[i];
        d.distance_m = distance_m;
        c->p->picks[c->spare] = (pick){d, d.instant, {0, 0, 0}, false, {.realtime = true}};
        insert(c);
    }
}

/* The rows a platform change moved to `stop` (rt_overlay.h), among the
 * picks by the same rules as the scan's rows. QUERY_OK or QUERY_ENOMEM. */
static int add_moved(choice *c, query_kind kind, uint32_t stop, double distance_m, bool wheelchair)
{
    if (!rt_overlay_moved_at_stop(c->rt, stop)) return QUERY_OK;
    uint32_t late, early;
    rt_overlay_moved_slack(c->rt, &late, &early);
    if (c->p->by_schedule) late = early = 0;
    int64_t from = c->from - late, to = c->to + early;
    predicted_scratch *p = c->p;
    uint32_t all = rt_overlay_moved_events(c->rt, kind, stop, from, to, p->moved, p->moved_cap);
    if (all > p->moved_cap) {
        departure *rows = realloc(p->moved, (size_t)all * sizeof *rows);
        if (!rows) return QUERY_ENOMEM;
        p->moved = rows;
        p->moved_cap = all;
        all = rt_overlay_moved_events(c->rt, kind, stop, from, to, p->moved, p->moved_cap);
    }
    for (uint32_t i = 0; i < all; i++) {
        departure *d = &p->moved[i];
        d->distance_m = distance_m;
        pick *x = &p->picks[c->spare];
        if (!rt_overlay_lookup(c->rt, d, &x->rt) || x->rt.hidden || !x->rt.moved) continue;
        if (wheelchair && !board_moved_accessible(c->ds, d, stop)) continue;
        int64_t at = d->instant;
        if (x->rt.has_prediction && !x->rt.canceled && !p->by_schedule && x->rt.delay_s <= RT_OVERLAY_SLACK_MAX &&
            x->rt.delay_s >= -RT_OVERLAY_SLACK_MAX)
            at += x->rt.delay_s;
        if (at < c->from || at >= c->to) continue;
        x->d = *d;
        x->at = at;
        x->rank = board_row_rank(c->ds, d);
        x->ranked = true;
        insert(c);
    }
    return QUERY_OK;
}

static void finish(const choice *c, departure *deps, rt_departure *rts, uint32_t *count, bool *truncated)
{
    uint32_t n = c->n < c->limit ? c->n : c->limit;
    for (uint32_t i = 0; i < n; i++) {
        deps[i] = nth(c, i)->d;
        rts[i] = nth(c, i)->rt;
    }
    *count = n;
    *truncated = c->n > c->limit || c->more;
}

/* add_moved at a stop and, for a station, at its platforms. */
static int add_moved_at_stop(choice *c, query_kind kind, uint32_t stop, bool wheelchair)
{
    int rc = add_moved(c, kind, stop, 0, wheelchair);
    stop_info si;
    dataset_stop(c->ds, stop, &si);
    if (rc != QUERY_OK || si.location_type != 1) return rc;
    predicted_scratch *p = c->p;
    uint32_t all = 0, got = dataset_stop_children(c->ds, stop, p->stops, p->stops_cap, &all);
    if (all > got) {
        uint32_t *stops = realloc(p->stops, (size_t)all * sizeof *stops);
        if (!stops) return QUERY_ENOMEM;
        p->stops = stops;
        p->stops_cap = all;
        got = dataset_stop_children(c->ds, stop, p->stops, p->stops_cap, &all);
    }
    for (uint32_t i = 0; i < got && rc == QUERY_OK; i++) rc = add_moved(c, kind, p->stops[i], 0, wheelchair);
    return rc;
}

int board_predicted_stop(predicted_scratch *p, const dataset *ds, query_scratch *s, const rt_overlay *rt,
                         query_kind kind, uint32_t stop, int64_t from, uint32_t window_s, uint32_t limit,
                         bool wheelchair, departure *deps, rt_departure *rts, uint32_t *count, bool *truncated,
                         query_error *err)
{
    *count = 0;
    *truncated = false;
    choice c = {p, ds, rt, rt_overlay_row_index(rt), NULL, from, from + (int64_t)window_s, limit, 0, 0, false, 0, 1,
                INT64_MAX};
    query_scan scan = {slack_of, visit, &c, &c.until, prefetch_row, prefetch_stop, NULL, NULL}, filtered;
    accessible_filter filter;
    int rc = stop_events_scan(ds, s, kind, stop, from, window_s,
                              wheelchair ? accessible_scan(&filter, ds, &scan, &filtered) : &scan, err);
    if (rc != QUERY_OK) return rc;
    if (rt_overlay_moved_count(rt) && (rc = add_moved_at_stop(&c, kind, stop, wheelchair)) != QUERY_OK) return rc;
    if (!wheelchair && rt_overlay_added_trip_count(rt)) {
        add_added(&c, kind, stop, 0);
        stop_info si;
        dataset_stop(ds, stop, &si);
        if (si.location_type == 1) {
            uint32_t all = 0, got = dataset_stop_children(ds, stop, p->stops, p->stops_cap, &all);
            if (all > got) {
                uint32_t *stops = realloc(p->stops, (size_t)all * sizeof *stops);
                if (!stops) return QUERY_ENOMEM;
                p->stops = stops;
                p->stops_cap = all;
                got = dataset_stop_children(ds, stop, p->stops, p->stops_cap, &all);
            }
            for (uint32_t i = 0; i < got; i++) add_added(&c, kind, p->stops[i], 0);
        }
    }
    finish(&c, deps, rts, count, truncated);
    return QUERY_OK;
}

int board_predicted_nearby(predicted_scratch *p, const dataset *ds, query_scratch *s, const rt_overlay *rt,
                           query_kind kind, double lat, double lon, double radius_m, int64_t from,
                           uint32_t window_s, uint32_t limit, bool wheelchair, departure *deps, rt_departure *rts,
                           uint32_t *count, bool *truncated, query_error *err)
{
    *count = 0;
    *truncated = false;
    const rt_row_index *rows = rt_overlay_row_index(rt);
    /* departures by predicted time: each stop's lead from the table in grid order (arrivals ask the overlay) */
    const rt_grid_leads *leads = kind == QUERY_DEPARTURES && !p->by_schedule ? rt_row_index_leads(rows) : NULL;
    choice c = {p, ds, rt, rows, leads, from, from + (int64_t)window_s, limit, 0, 0, false, 0, 1, INT64_MAX};
    query_scan scan = {slack_of, visit, &c, &c.until, prefetch_row, prefetch_stop, leads ? prefetch_point : NULL,
                       leads ? slack_at_point : NULL},
               filtered;
    accessible_filter filter;
    int rc = nearby_events_scan(ds, s, kind, lat, lon, radius_m, from, window_s,
                                wheelchair ? accessible_scan(&filter, ds, &scan, &filtered) : &scan, err);
    if (rc != QUERY_OK) return rc;
    if (rt_overlay_moved_count(rt)) {
        size_t near = query_near_count(s);
        for (size_t i = 0; i < near; i++) {
            nearby_stop ns = query_near_stop(s, i);
            if ((rc = add_moved(&c, kind, ns.stop, ns.distance_m, wheelchair)) != QUERY_OK) return rc;
        }
    }
    if (!wheelchair && rt_overlay_added_trip_count(rt)) {
        size_t near = query_near_count(s);
        for (size_t i = 0; i < near; i++) {
            nearby_stop ns = query_near_stop(s, i);
            add_added(&c, kind, ns.stop, ns.distance_m);
        }
    }
    finish(&c, deps, rts, count, truncated);
    return QUERY_OK;
}
