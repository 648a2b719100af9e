/* rt_merge.c — ADDED trips' departures merged into schedule answers.
 *
 * Why it exists: see include/transit/rt_merge.h. The scheduled rows come
 * sorted and cut at the limit; the added ones of each stop come sorted by
 * instant from the overlay. Both lists hold the first `limit` rows of their
 * kind, so the first `limit` of their merge are the answer's, and rows
 * beyond it mean `truncated`. Ties on the instant are broken by the
 * strings the API orders by (the scheduled query breaks them by ranks of
 * the same strings); they are rare, and so is this path.
 */
#include "transit/rt_merge.h"

#include <stdlib.h>
#include <string.h>

struct rt_merge_scratch {
    departure *rows;           /* the added rows, then the merge */
    uint32_t rows_cap;
    uint32_t *stops;           /* a station's children */
    uint32_t stops_cap;
};

rt_merge_scratch *rt_merge_scratch_new(void) { return calloc(1, sizeof(rt_merge_scratch)); }

void rt_merge_scratch_free(rt_merge_scratch *m)
{
    if (!m) return;
    free(m->rows);
    free(m->stops);
    free(m);
}

static bool reserve_rows(rt_merge_scratch *m, uint64_t n)
{
    if (n <= m->rows_cap) return true;
    if (n > UINT32_MAX / 2) return false;
    uint32_t cap = m->rows_cap ? m->rows_cap : 64;
    while (cap < n) cap *= 2;
    departure *rows = realloc(m->rows, (size_t)cap * sizeof *rows);
    if (!rows) return false;
    m->rows = rows;
    m->rows_cap = cap;
    return true;
}

/* The strings a row is ordered by after its instant. */
typedef struct row_key {
    const char *stop_id, *route_short_name, *trip_id;
} row_key;

static row_key key_of(const rt_overlay *o, const dataset *ds, const departure *d)
{
    stop_info s;
    route_info r;
    dataset_stop(ds, d->stop, &s);
    const rt_added_trip *added = rt_overlay_added_trip(o, d);
    if (added) {
        dataset_route(ds, added->route, &r);
        return (row_key){s.id, r.short_name, added->trip_id};
    }
    trip_info t;
    dataset_trip(ds, d->trip, &t);
    dataset_route(ds, t.route, &r);
    return (row_key){s.id, r.short_name, t.id};
}

static bool row_before(const rt_overlay *o, const dataset *ds, const departure *a, const departure *b)
{
    if (a->instant != b->instant) return a->instant < b->instant;
    row_key x = key_of(o, ds, a), y = key_of(o, ds, b);
    int c = strcmp(x.stop_id, y.stop_id);
    if (!c) c = strcmp(x.route_short_name, y.route_short_name);
    if (!c) c = strcmp(x.trip_id, y.trip_id);
    return c < 0;
}

/* Sorts a run of added rows: one stop's, already by instant, so insertion
 * only moves rows whose instants tie. */
static void sort_run(const rt_overlay *o, const dataset *ds, departure *rows, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        departure d = rows[i];
        uint32_t j = i;
        while (j > 0 && row_before(o, ds, &d, &rows[j - 1])) {
            rows[j] = rows[j - 1];
            j--;
        }
        rows[j] = d;
    }
}

/* The first `keep` rows of sorted a[0..na) and b[0..nb) into out; how many. */
static uint32_t merge_sorted(const rt_overlay *o, const dataset *ds, const departure *a, uint32_t na,
                             const departure *b, uint32_t nb, departure *out, uint32_t keep)
{
    uint32_t i = 0, j = 0, k = 0;
    for (; k < keep && (i < na || j < nb); k++)
        out[k] = j < nb && (i == na || row_before(o, ds, &b[j], &a[i])) ? b[j++] : a[i++];
    return k;
}

/* Folds the added departures at `stop` in [from, to) into m->rows[0..*n),
 * which stays sorted and holds the first `limit` added rows seen (no others
 * can be in the answer); *total counts every one. */
static bool collect(const rt_overlay *o, const dataset *ds, rt_merge_scratch *m, query_kind kind, uint32_t stop,
                    double distance_m, int64_t from, int64_t to, uint32_t limit, uint32_t *n, uint64_t *total)
{
    if (!rt_overlay_added_at_stop(o, stop)) return true;
    if (!reserve_rows(m, (uint64_t)*n + 2 * (uint64_t)limit)) return false;
    departure *run = m->rows + *n, *out = run + limit;
    uint32_t all = rt_overlay_added_events(o, kind, stop, from, to, run, limit);
    if (!all) return true;
    uint32_t got = all < limit ? all : limit;
    for (uint32_t i = 0; i < got; i++) run[i].distance_m = distance_m;
    sort_run(o, ds, run, got);
    uint32_t kept = merge_sorted(o, ds, m->rows, *n, run, got, out, limit);
    memmove(m->rows, out, (size_t)kept * sizeof *out);
    *n = kept;
    *total += all;
    return true;
}

/* Merges the n sorted added rows (m->rows) into deps, keeping the first
 * `limit`. */
static int merge(const rt_overlay *o, const dataset *ds, rt_merge_scratch *m, uint32_t n, uint64_t total,
                 uint32_t limit, departure *deps, uint32_t *count, bool *truncated)
{
    if (!n) return QUERY_OK;
    if (!reserve_rows(m, (uint64_t)n + limit)) return QUERY_ENOMEM;
    departure *out = m->rows + n;
    uint32_t written = merge_sorted(o, ds, deps, *count, m->rows, n, out, limit);
    memcpy(deps, out, (size_t)written * sizeof *deps);
    *truncated = *truncated || *count + total > written;
    *count = written;
    return QUERY_OK;
}

int rt_merge_stop_departures(const rt_overlay *o, const dataset *ds, rt_merge_scratch *m, query_kind kind,
                             uint32_t stop, int64_t from, uint32_t window_s, uint32_t limit, departure *deps,
                             uint32_t *count, bool *truncated)
{
    if (!rt_overlay_added_trip_count(o) || rt_overlay_dataset(o) != ds) return QUERY_OK;
    int64_t to = from + window_s;
    uint32_t n = 0;
    uint64_t total = 0;
    if (!collect(o, ds, m, kind, stop, 0, from, to, limit, &n, &total)) return QUERY_ENOMEM;
    stop_info si;
    dataset_stop(ds, stop, &si);
    if (si.location_type == 1) {
        uint32_t all = 0, got = dataset_stop_children(ds, stop, m->stops, m->stops_cap, &all);
        if (all > got) {
            uint32_t *stops = realloc(m->stops, (size_t)all * sizeof *stops);
            if (!stops) return QUERY_ENOMEM;
            m->stops = stops;
            m->stops_cap = all;
            got = dataset_stop_children(ds, stop, m->stops, m->stops_cap, &all);
        }
        for (uint32_t i = 0; i < got; i++)
            if (!collect(o, ds, m, kind, m->stops[i], 0, from, to, limit, &n, &total)) return QUERY_ENOMEM;
    }
    return merge(o, ds, m, n, total, limit, deps, count, truncated);
}

int rt_merge_nearby_departures(const rt_overlay *o, const dataset *ds, rt_merge_scratch *m, query_kind kind,
                               const query_scratch *s, int64_t from, uint32_t window_s, uint32_t limit,
                               departure *deps, uint32_t *count, bool *truncated)
{
    if (!rt_overlay_added_trip_count(o) || rt_overlay_dataset(o) != ds) return QUERY_OK;
    int64_t to = from + window_s;
    uint32_t n = 0;
    uint64_t total = 0;
    size_t near = query_near_count(s);
    for (size_t i = 0; i < near; i++) {
        nearby_stop ns = query_near_stop(s, i);
        if (!collect(o, ds, m, kind, ns.stop, ns.distance_m, from, to, limit, &n, &total)) return QUERY_ENOMEM;
    }
    return merge(o, ds, m, n, total, limit, deps, count, truncated);
}
