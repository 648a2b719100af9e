/* rt_assigned.c — an overlay's platform changes, kept and indexed; see
 * rt_assigned.h (and rt_overlay.h for what boards ask of them).
 *
 * Layout: the moved stop times in the order they were noted (which is the
 * order of their stop entries, so the row look-up binary-searches them by
 * entry), and their events (a departure, an arrival) sorted by (assigned
 * stop, scheduled instant), so a board finds a stop's moved rows in a window
 * by a binary search. Platform changes are few: nothing here is on the
 * path of a row that did not move.
 */
#include "live/rt_assigned.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/gtfs.h"

enum { CAN_DEPART = 1, CAN_ARRIVE = 2 };

/* A stop time served at another stop than scheduled. */
typedef struct moved {
    uint32_t entry;            /* the overlay's stop entry */
    uint32_t stop;             /* the assigned stop */
    uint32_t scheduled_stop;
    uint32_t trip;
    int32_t service_date;
    uint32_t stop_sequence, pos;
    uint32_t dep_secs, arr_secs;   /* the instance's GTFS seconds */
    uint32_t kinds;            /* CAN_DEPART, CAN_ARRIVE */
    int32_t dep_delay, arr_delay;
    uint32_t kept;             /* its instance is the overlay's (not a second update's) */
} moved;

/* A moved row at its assigned stop. */
typedef struct moved_event {
    uint32_t stop;
    uint32_t item;             /* in items[] */
    int64_t instant;           /* scheduled */
    uint32_t arrival;          /* 1: the arrival event, 0: the departure */
} moved_event;

struct rt_assigned {
    const dataset *ds;         /* the overlay's (it holds the reference) */
    moved *items;
    uint32_t count, cap;
    moved_event *events;
    uint32_t nevents;
    uint32_t late, early;      /* the most a moved event is predicted later / earlier than scheduled */
    uint64_t *stop_bits;       /* a bit per dataset stop: some moved event is served there */
    uint32_t nstops;
};

rt_assigned *rt_assigned_new(void) { return calloc(1, sizeof(rt_assigned)); }

void rt_assigned_free(rt_assigned *a)
{
    if (!a) return;
    free(a->items);
    free(a->events);
    free(a->stop_bits);
    free(a);
}

/* The stop time an update names from `from` on, as propagate() finds it:
 * by stop_sequence, else the first with its stop_id. -1 when none. One
 * definition for both (rt_assigned.h): a moved row must be the very stop
 * time the overlay's propagation matched. */
long rt_update_stop_index(const dataset *ds, const trip_stop_time *st, uint32_t n, const rt_stop_update *u,
                          uint32_t from)
{
    if (u->has_stop_sequence) {
        for (uint32_t k = 0; k < n; k++)
            if (st[k].stop_sequence == u->stop_sequence) return (long)k;
        return -1;
    }
    uint32_t stop = dataset_find_stop(ds, u->stop_id, strlen(u->stop_id));
    if (stop == QUERY_NONE) return -1;
    for (uint32_t k = from; k < n; k++)
        if (st[k].stop == stop) return (long)k;
    return -1;
}

uint32_t rt_assigned_stop_named(const dataset *ds, const rt_trip_update *tu, uint32_t i, uint32_t *unknown,
                                char *problem, size_t problem_len)
{
    const char *id = tu->stops[i].assigned_stop_id;
    if (!id) return QUERY_NONE;
    uint32_t stop = dataset_find_stop(ds, id, strlen(id));
    if (stop != QUERY_NONE) return stop;
    if (!*unknown && problem_len)
        snprintf(problem, problem_len,
                 "entity \"%.40s\": stop_time_update %u: stop_time_properties.assigned_stop_id \"%.40s\" "
                 "is not a stop of the dataset",
                 tu->entity_id ? tu->entity_id : "", i, id);
    (*unknown)++;
    return QUERY_NONE;
}

bool rt_assigned_next(rt_assigned_walk *w, const dataset *ds, const rt_trip_update *tu, const trip_stop_time *st,
                      uint32_t n, uint32_t *k, uint32_t *stop, uint32_t *unknown, char *problem,
                      size_t problem_len)
{
    while (w->update < tu->stop_count) {
        uint32_t i = w->update++;
        const rt_stop_update *u = &tu->stops[i];
        long at = rt_update_stop_index(ds, st, n, u, w->from);
        if (at < (long)w->from) continue;   /* names no stop of the trip: propagate() skips it too */
        w->from = (uint32_t)at + 1;
        uint32_t s = rt_assigned_stop_named(ds, tu, i, unknown, problem, problem_len);
        if (s == QUERY_NONE || s == st[at].stop) continue;   /* none, unknown, or where scheduled */
        *k = (uint32_t)at;
        *stop = s;
        return true;
    }
    return false;
}

bool rt_assigned_note(rt_assigned *a, const dataset *ds, const rt_trip_update *tu, const trip_stop_time *st,
                      uint32_t n, uint32_t trip, int32_t date, int32_t offset, uint32_t first_entry,
                      uint32_t *unknown, char *problem, size_t problem_len)
{
    a->ds = ds;
    rt_assigned_walk w = {0, 0};
    uint32_t k, stop;
    while (rt_assigned_next(&w, ds, tu, st, n, &k, &stop, unknown, problem, problem_len)) {
        uint32_t kinds = 0;
        if (k + 1 < n && st[k].pickup_type != 1 && st[k].departure_secs != GTFS_TIME_NONE)
            kinds |= CAN_DEPART;
        if (k > 0 && st[k].drop_off_type != 1 && st[k].arrival_secs != GTFS_TIME_NONE) kinds |= CAN_ARRIVE;
        if (a->count == a->cap) {
            uint32_t cap = a->cap ? a->cap * 2 : 64;
            moved *items = cap > a->cap ? realloc(a->items, (size_t)cap * sizeof *items) : NULL;
            if (!items) return false;
            a->items = items;
            a->cap = cap;
        }
        a->items[a->count++] = (moved){first_entry + k,
                                       stop,
                                       st[k].stop,
                                       trip,
                                       date,
                                       st[k].stop_sequence,
                                       k,
                                       (uint32_t)((int32_t)st[k].departure_secs + offset),
                                       (uint32_t)((int32_t)st[k].arrival_secs + offset),
                                       kinds,
                                       0,
                                       0,
                                       0};
    }
    return true;
}

uint32_t rt_assigned_noted(const rt_assigned *a) { return a ? a->count : 0; }
uint32_t rt_assigned_entry(const rt_assigned *a, uint32_t i) { return a->items[i].entry; }

void rt_assigned_set_delays(rt_assigned *a, uint32_t i, int32_t departure, int32_t arrival)
{
    a->items[i].dep_delay = departure;
    a->items[i].arr_delay = arrival;
}

static int compare_events(const void *x, const void *y)
{
    const moved_event *a = x, *b = y;
    if (a->stop != b->stop) return a->stop < b->stop ? -1 : 1;
    if (a->instant != b->instant) return a->instant < b->instant ? -1 : 1;
    if (a->item != b->item) return a->item < b->item ? -1 : 1;
    return (int)a->arrival - (int)b->arrival;
}

static uint32_t capped(int64_t d)
{
    if (d < 0) d = -d;
    return d > RT_OVERLAY_SLACK_MAX ? RT_OVERLAY_SLACK_MAX : (uint32_t)d;
}

bool rt_assigned_finish(rt_assigned *a, const uint64_t *kept, uint32_t nentries)
{
    if (!a->count) return true;
    a->events = malloc(2 * (size_t)a->count * sizeof *a->events);
    if (!a->events) return false;
    for (uint32_t i = 0; i < a->count; i++) {
        moved *m = &a->items[i];
        m->kept = m->entry < nentries && (kept[m->entry / 64] >> (m->entry % 64) & 1);
        if (!m->kept) continue;
        int32_t delays[2] = {m->dep_delay, m->arr_delay};
        for (int e = 0; e < 2; e++) {
            if (!(m->kinds & (e ? CAN_ARRIVE : CAN_DEPART))) continue;
            int64_t at = dataset_instant(a->ds, m->service_date, e ? m->arr_secs : m->dep_secs);
            a->events[a->nevents++] = (moved_event){m->stop, i, at, (uint32_t)e};
            uint32_t d = capped(delays[e]);
            if (delays[e] > 0 && d > a->late) a->late = d;
            if (delays[e] < 0 && d > a->early) a->early = d;
        }
    }
    qsort(a->events, a->nevents, sizeof *a->events, compare_events);
    /* "any here?" in one bit test: a nearby board asks it of every stop it searched */
    a->nstops = dataset_stop_count(a->ds);
    if (!(a->stop_bits = calloc((size_t)a->nstops / 64 + 1, sizeof *a->stop_bits))) return false;
    for (uint32_t i = 0; i < a->nevents; i++)
        a->stop_bits[a->events[i].stop / 64] |= (uint64_t)1 << (a->events[i].stop % 64);
    return true;
}

uint32_t rt_assigned_stop_of(const rt_assigned *a, uint32_t entry)
{
    uint32_t lo = 0, hi = a->count;
    while (lo < hi) {   /* noted in the order of their entries */
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->items[mid].entry < entry) lo = mid + 1;
        else hi = mid;
    }
    return lo < a->count && a->items[lo].entry == entry ? a->items[lo].stop : QUERY_NONE;
}

/* The first event at `stop` scheduled at `from` or after. */
static uint32_t first_event(const rt_assigned *a, uint32_t stop, int64_t from)
{
    uint32_t lo = 0, hi = a->nevents;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const moved_event *e = &a->events[mid];
        if (e->stop < stop || (e->stop == stop && e->instant < from)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* ------------------------------------------------------------ rt_overlay.h */

uint32_t rt_overlay_moved_count(const rt_overlay *o)
{
    const rt_assigned *a = rt_overlay_assigned(o);
    return a ? a->nevents : 0;
}

bool rt_overlay_moved_at_stop(const rt_overlay *o, uint32_t stop)
{
    const rt_assigned *a = rt_overlay_assigned(o);
    return a && a->nevents && stop < a->nstops && (a->stop_bits[stop / 64] >> (stop % 64) & 1);
}

void rt_overlay_moved_slack(const rt_overlay *o, uint32_t *late_s, uint32_t *early_s)
{
    const rt_assigned *a = rt_overlay_assigned(o);
    *late_s = a ? a->late : 0;
    *early_s = a ? a->early : 0;
}

uint32_t rt_overlay_moved_events(const rt_overlay *o, query_kind kind, uint32_t stop, int64_t from, int64_t to,
                                 departure *out, uint32_t max)
{
    const rt_assigned *a = rt_overlay_assigned(o);
    if (!a || !a->nevents) return 0;
    uint32_t n = 0;
    for (uint32_t i = first_event(a, stop, from); i < a->nevents; i++) {
        const moved_event *e = &a->events[i];
        if (e->stop != stop || e->instant >= to) break;
        const moved *m = &a->items[e->item];
        /* a board of both kinds lists a call's departure, or its arrival where it has none */
        bool wanted = kind == QUERY_DEPARTURES ? !e->arrival
                      : kind == QUERY_ARRIVALS ? e->arrival
                                               : !e->arrival || !(m->kinds & CAN_DEPART);
        if (!wanted || n++ >= max) continue;
        out[n - 1] = (departure){.instant = e->instant,
                                 .utc_offset = dataset_utc_offset(a->ds, e->instant),
                                 .service_date = m->service_date,
                                 .secs = e->arrival ? m->arr_secs : m->dep_secs,
                                 .stop = m->scheduled_stop,   /* the row names the scheduled stop */
                                 .trip = m->trip,
                                 .stop_sequence = m->stop_sequence,
                                 .pos = m->pos,
                                 .arrival = e->arrival != 0};
    }
    return n;
}
