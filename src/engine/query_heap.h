/* query_heap.h — the merge state of a board's search, shared by query.c's
 * drains and the drain of boards by predicted time.
 *
 * Why it exists: query.c finds, per visit and service day, the first run in
 * the window and merges them in the contract's order with a small heap of
 * cursors. A board by predicted time (engine/board_predicted.c) reads the
 * same merge, but decides at each pop whether the row enters its own order
 * by predicted time: reading the cursors and the heap itself (no batch of
 * rows handed over, no call a row) is what keeps its cost a row close to a
 * plain board's. Engine-internal: only query.c and board_predicted.c
 * include it.
 */
#ifndef ENGINE_QUERY_HEAP_H
#define ENGINE_QUERY_HEAP_H

#include "store/dataset_internal.h"

/* A group's place in the merge on one service day: its current run and
 * what each of its departures carries into the output. */
typedef struct cursor {
    int64_t base;          /* day base instant */
    uint32_t run, run_end, pos;
    uint32_t stop, stop_sequence;
    int32_t day;
    uint32_t near;         /* index into query_scratch.near, or NO_NEAR */
    uint32_t arrival;      /* its events are arrivals (1) or departures (0) */
} cursor;

#define NO_NEAR UINT32_MAX

/* The merge heap holds the order key of each cursor's current event, not
 * the cursor: (instant, stop_id, route_short_name, trip_id) as two integers
 * compared as one 128-bit number. The instant counts from the window's
 * start (events lie in the window, so it fits 32 bits) and the strings are
 * precomputed ranks. A sift then moves 24 bytes an entry, not the 72 of a
 * cursor with its key, and compares two integers, not four. */
typedef struct heap_entry {
    uint64_t hi;           /* seconds from the window's start << 32 | stop rank */
    uint64_t lo;           /* route rank << 32 | trip rank */
    uint32_t cursor;       /* index into query_scratch.cur */
} heap_entry;

typedef struct pending pending;

/* A stop within the radius: its grid point and its distance (see
 * collect_near). */
typedef struct near_stop {
    const grid_point *point;
    double distance_m;
    uint32_t lead;         /* a scan: how far before the window its rows are read (widen_window) */
} near_stop;

struct query_scratch {
    pending *pending;
    size_t pending_n, pending_cap;
    cursor *cur;
    size_t cur_n, cur_cap;
    heap_entry *heap;
    size_t heap_n, heap_cap;
    near_stop *near;
    size_t near_n, near_cap;
    uint32_t *near_slack;  /* a scan's slack_points: grid points, late, early (3 * near_n) */
    size_t near_slack_cap;
};

/* The near stop's distance (0 for a stop's own departures). */
static inline double near_distance(const query_scratch *s, uint32_t i)
{
    return i == NO_NEAR ? 0 : s->near[i].distance_m;
}

/* The heap's comparisons depend on the data, so a branch on each would be
 * mispredicted about half the time: they are computed, not branched on. */
static inline size_t entry_before(const heap_entry *a, const heap_entry *b)
{
    return (size_t)((a->hi < b->hi) | ((a->hi == b->hi) & (a->lo < b->lo)));
}

/* Puts x in place of the top. A replaced top is the cursor's next event,
 * later than the one it had, so it mostly belongs near the bottom: the hole
 * goes down to a leaf along the earlier child at each level (a comparison
 * whose result picks the child, no branch), and x rises from there, most
 * often not at all. */
static inline void heap_replace_top(heap_entry *h, size_t n, heap_entry x)
{
    size_t i = 0;
    for (size_t l = 1; l + 1 < n; l = 2 * i + 1) {
        size_t c = l + entry_before(&h[l + 1], &h[l]);
        h[i] = h[c];
        i = c;
    }
    if (2 * i + 1 < n) {
        h[i] = h[2 * i + 1];
        i = 2 * i + 1;
    }
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!entry_before(&x, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

/* The event of a run at a position. `runs` is the query's run array: RUNS
 * for departures, event_runs (departure runs, then arrival runs with their
 * arrival profiles) when arrivals are asked for. */
static inline uint32_t run_secs(const dataset *ds, const tt_run *runs, uint32_t run, uint32_t pos)
{
    const tt_run *r = &runs[run];
    return (uint32_t)((int64_t)r->start + ds->profiles[r->dep_profile + pos]);
}

static inline void prefetch_event(const dataset *ds, const tt_run *runs, uint32_t run, uint32_t pos)
{
    __builtin_prefetch(&ds->profiles[runs[run].dep_profile + pos]);
}

/* The merge a board's scan set up and did not drain: its heap of cursors
 * in s, each at its first run in the window, over the run array `runs`,
 * instants in the heap counted from `from` (the window widened before by
 * the scan's slack), events to read before `to` (widened after). */
typedef struct scan_heap {
    const tt_run *runs;
    int64_t from, to;
} scan_heap;

/* stop_events_scan and nearby_events_scan, whose scan (its slack callbacks;
 * visit and until are not used) sets up the merge and leaves it in s and
 * *h for the caller to drain; QUERY_OK, or an error as they give it. */
int stop_events_heap(const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop, int64_t from,
                     uint32_t window_s, const query_scan *scan, scan_heap *h, query_error *err);
int nearby_events_heap(const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                       double radius_m, int64_t from, uint32_t window_s, const query_scan *scan, scan_heap *h,
                       query_error *err);

#endif
