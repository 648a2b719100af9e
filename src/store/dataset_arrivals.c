/* dataset_arrivals.c — the arrival events of a timetable, indexed when it is
 * opened the way timetable.bin indexes its departures.
 *
 * Why it exists: timetable.bin answers "which runs board at this stop"
 * (a visit: group g at position k, not the last, pickup allowed). Boards of
 * arrivals ask "which runs let riders off here": every position but a
 * trip's first where drop_off_type is not 1, at the trip's arrival time.
 * The same search answers both when the arrivals come in the same shape:
 *  - runs whose arrivals are in order at every position. A group's runs
 *    are in departure order; their arrivals nearly always are too (the same
 *    profile for every run, or arrivals equal to departures), but a run
 *    that dwells longer can arrive before the one ahead of it. So each
 *    group's runs are chained again by arrival (greedily, in their order,
 *    as the importer chains departures) into arrival groups;
 *  - per stop, a range of hot visit records (visit_hot) whose run ranges
 *    index event_runs, where the arrival groups' runs carry their trips'
 *    arrival profiles in place of the departure ones. event_runs starts
 *    with a copy of RUNS, so a board of both kinds reads one run array.
 * Each stop's arrival visits at calls riders cannot board at (the trip's
 * last stop, pickup_type 1) come first: a board of both kinds takes those
 * beside the departures, one row per call.
 * Derived, not stored: the file format stays as it is. The cost is one pass
 * over the runs and one over the arrival events, like derive_visit_hot's.
 */
#include "store/dataset_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An arrival group: runs of one departure group, in order, whose arrivals
 * are in order at every position. */
typedef struct arrival_group {
    uint32_t group;                  /* the departure group (pattern, day set, route rank) */
    uint32_t run_first, run_count;   /* in event_runs */
} arrival_group;

typedef struct arrival_build {
    dataset *ds;
    arrival_group *groups;
    size_t ngroups, groups_cap;
    uint32_t *chain_of, *chain_last, *chain_count;   /* per run of a group / per chain */
    uint32_t scratch_cap;
} arrival_build;

static uint32_t arrival_profile(const dataset *ds, const tt_run *r) { return ds->trips[r->trip].arr_profile; }

/* Whether run y can follow run x in an arrival group: at every position,
 * x's (arrival, trip rank) is strictly before y's. */
static bool arrivals_in_order(const dataset *ds, const tt_run *x, const tt_run *y, uint32_t len)
{
    uint32_t px = arrival_profile(ds, x), py = arrival_profile(ds, y);
    if (px == py)
        return true;   /* a group's runs come by (start, trip rank) */
    for (uint32_t k = 0; k < len; k++) {
        int64_t tx = (int64_t)x->start + ds->profiles[px + k], ty = (int64_t)y->start + ds->profiles[py + k];
        if (tx > ty || (tx == ty && x->trip_rank >= y->trip_rank))
            return false;
    }
    return true;
}

static int push_group(arrival_build *b, uint32_t group, uint32_t run_first, uint32_t run_count)
{
    if (b->ngroups == b->groups_cap) {
        size_t cap = b->groups_cap ? b->groups_cap * 2 : 256;
        arrival_group *g = realloc(b->groups, cap * sizeof *g);
        if (!g)
            return -1;
        b->groups = g;
        b->groups_cap = cap;
    }
    b->groups[b->ngroups++] = (arrival_group){group, run_first, run_count};
    return 0;
}

static int reserve_scratch(arrival_build *b, uint32_t n)
{
    if (n <= b->scratch_cap)
        return 0;
    uint32_t *a = realloc(b->chain_of, n * sizeof *a);
    if (a) b->chain_of = a;
    uint32_t *l = realloc(b->chain_last, n * sizeof *l);
    if (l) b->chain_last = l;
    uint32_t *c = realloc(b->chain_count, (n + 1) * sizeof *c);
    if (c) b->chain_count = c;
    if (!a || !l || !c)
        return -1;
    b->scratch_cap = n;
    return 0;
}

/* Group g's runs into arrival groups, appended to event_runs at *next. */
static int chain_group(arrival_build *b, uint32_t g, uint64_t *next)
{
    dataset *ds = b->ds;
    const tt_group *gr = &ds->groups[g];
    const tt_run *runs = ds->runs + gr->run_first;
    uint32_t n = gr->run_count, len = ds->patterns[gr->pattern].len;
    if (*next + n > ds->nevent_runs)
        return 1;   /* groups overlap: a damaged file (dataset_derive_arrivals says so) */
    tt_run *out = ds->event_runs + *next;
    bool same = true;   /* every arrival profile is the departure one: the group as it is */
    for (uint32_t i = 0; i < n && same; i++)
        same = arrival_profile(ds, &runs[i]) == runs[i].dep_profile;
    uint32_t nchains = 1;
    if (!same && n > 1) {
        if (reserve_scratch(b, n))
            return -1;
        nchains = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t c = 0;
            while (c < nchains && !arrivals_in_order(ds, &runs[b->chain_last[c]], &runs[i], len))
                c++;
            if (c == nchains)
                b->chain_count[nchains++] = 0;
            b->chain_last[c] = i;
            b->chain_of[i] = c;
            b->chain_count[c]++;
        }
    }
    if (nchains == 1) {
        for (uint32_t i = 0; i < n; i++) {
            out[i] = runs[i];
            out[i].dep_profile = arrival_profile(ds, &runs[i]);
        }
        if (n && push_group(b, g, (uint32_t)*next, n))
            return -1;
        *next += n;
        return 0;
    }
    /* chain_count becomes where each chain starts, then runs ahead as it is filled */
    uint32_t start = 0;
    for (uint32_t c = 0; c < nchains; c++) {
        uint32_t count = b->chain_count[c];
        if (push_group(b, g, (uint32_t)(*next + start), count))
            return -1;
        b->chain_count[c] = start;
        start += count;
    }
    for (uint32_t i = 0; i < n; i++) {
        tt_run *r = &out[b->chain_count[b->chain_of[i]]++];
        *r = runs[i];
        r->dep_profile = arrival_profile(ds, &runs[i]);
    }
    *next += n;
    return 0;
}

/* Whether position k of pattern p is an arrival for riders, and whether it
 * is one riders cannot board at (no departure: the last stop, or pickup_type 1). */
static bool is_arrival(const dataset *ds, const tt_pattern *p, uint32_t k, bool *only)
{
    const tt_pattern_stop *ps = &ds->pattern_stops[p->first + k];
    *only = k + 1 == p->len || ps->pickup_type == 1;
    return k > 0 && ps->drop_off_type != 1;
}

/* The hot record of arrival group a's visit at position k. */
static visit_hot arrival_visit(const dataset *ds, const arrival_group *a, uint32_t k)
{
    const tt_group *g = &ds->groups[a->group];
    int32_t lo = 0, hi = 0;
    uint32_t first = 0, last = 0;
    for (uint32_t r = a->run_first; r < a->run_first + a->run_count; r++) {
        const tt_run *run = &ds->event_runs[r];
        int32_t off = ds->profiles[run->dep_profile + k];
        uint32_t secs = (uint32_t)((int64_t)run->start + off);
        bool at_first = r == a->run_first;
        if (at_first || off < lo) lo = off;
        if (at_first || off > hi) hi = off;
        if (at_first || secs < first) first = secs;
        if (at_first || secs > last) last = secs;
    }
    uint32_t seq = ds->pattern_stops[ds->patterns[g->pattern].first + k].stop_sequence;
    return (visit_hot){g->days, first, last, lo, hi, a->run_first, a->run_count, g->route_rank, k, seq};
}

/* Counts, places and fills the arrival visits, per stop the calls without
 * a departure first. */
static int index_visits(arrival_build *b, char *err, size_t errlen)
{
    dataset *ds = b->ds;
    uint32_t nstops = ds->meta->nstops;
    if (!(ds->arr_stops = calloc(nstops ? nstops : 1, sizeof *ds->arr_stops)))
        goto oom;
    uint64_t total = 0;
    for (size_t i = 0; i < b->ngroups; i++) {
        const tt_pattern *p = &ds->patterns[ds->groups[b->groups[i].group].pattern];
        for (uint32_t k = 1; k < p->len; k++) {
            bool only;
            if (!is_arrival(ds, p, k, &only))
                continue;
            arrival_range *r = &ds->arr_stops[ds->pattern_stops[p->first + k].stop];
            r->count++;
            r->only += only;
            total++;
        }
    }
    if (total > UINT32_MAX)
        goto oom;
    ds->narr_visits = total;
    if (!(ds->arr_visit_hot = calloc(total ? total : 1, sizeof *ds->arr_visit_hot)))
        goto oom;
    /* first: where each stop's range starts; count and only: as they are filled */
    uint32_t at = 0;
    for (uint32_t s = 0; s < nstops; s++) {
        arrival_range *r = &ds->arr_stops[s];
        r->first = at;
        at += r->count;
        r->count = r->only = 0;
    }
    uint32_t *filled_other = calloc(nstops ? nstops : 1, sizeof *filled_other);
    if (!filled_other)
        goto oom;
    /* the calls without a departure, then the others after all of them */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < b->ngroups; i++) {
            const arrival_group *a = &b->groups[i];
            const tt_pattern *p = &ds->patterns[ds->groups[a->group].pattern];
            for (uint32_t k = 1; k < p->len; k++) {
                bool only;
                if (!is_arrival(ds, p, k, &only) || only != (pass == 0))
                    continue;
                uint32_t stop = ds->pattern_stops[p->first + k].stop;
                arrival_range *r = &ds->arr_stops[stop];
                uint32_t slot = pass == 0 ? r->first + r->only++ : r->first + r->only + filled_other[stop]++;
                ds->arr_visit_hot[slot] = arrival_visit(ds, a, k);
            }
        }
    }
    for (uint32_t s = 0; s < nstops; s++)
        ds->arr_stops[s].count = ds->arr_stops[s].only + filled_other[s];
    free(filled_other);
    if (!(ds->arr_grid = calloc(ds->ngrid_stops ? ds->ngrid_stops : 1, sizeof *ds->arr_grid)))
        goto oom;
    for (uint64_t i = 0; i < ds->ngrid_stops; i++)
        ds->arr_grid[i] = ds->arr_stops[ds->grid_stops[i]];
    return 0;
oom:
    snprintf(err, errlen, "out of memory indexing the arrivals");
    return -1;
}

int dataset_derive_arrivals(dataset *ds, char *err, size_t errlen)
{
    uint32_t nruns = ds->meta->nruns;
    arrival_build b = {.ds = ds};
    int rc = -1;
    ds->nevent_runs = 2 * (uint64_t)nruns;
    if (!(ds->event_runs = malloc((nruns ? 2 * (size_t)nruns : 1) * sizeof *ds->event_runs)))
        goto out;
    if (nruns)
        memcpy(ds->event_runs, ds->runs, (size_t)nruns * sizeof *ds->runs);
    uint64_t next = nruns;
    int chained = 0;
    for (uint32_t g = 0; g < ds->meta->ngroups && chained == 0; g++)
        chained = chain_group(&b, g, &next);
    if (chained < 0)
        goto out;
    /* the importer puts every run in exactly one group */
    if (chained > 0 || next != ds->nevent_runs) {
        snprintf(err, errlen, "the groups do not hold every run once; re-import the feed");
        goto done;
    }
    rc = index_visits(&b, err, errlen);
    goto done;
out:
    snprintf(err, errlen, "out of memory indexing the arrivals");
done:
    free(b.groups);
    free(b.chain_of);
    free(b.chain_last);
    free(b.chain_count);
    return rc;
}
