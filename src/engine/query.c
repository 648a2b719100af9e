/* query.c — nearby stops and departures, straight from the mapped timetable.
 *
 * Why it exists: this is the hot path every request ends in. A stop's
 * departures in a window are a k-way merge: for each service day whose
 * times can reach the window and each group visiting the stop on a day its
 * service runs, a search bounded by the visit's offsets finds the first
 * run in the window (pick_visits, narrow_pending, then settle_pending,
 * each phase over all stops at once, so that the loads one phase asks for
 * are on their way while it finishes), and a small heap merges the groups
 * in the contract's order (instant, stop_id, route_short_name, trip_id —
 * compared as precomputed ranks). Nothing is allocated once the caller's
 * scratch has grown to its working size, and nothing is written to the
 * dataset, so any number of threads may query it. Arrivals are searched the
 * same way over the arrival visits and runs indexed at open
 * (store/dataset_arrivals.c); a board of departures, the hot path, is the
 * same code inlined with its kind a constant.
 */
#include "engine/query_heap.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EARTH_RADIUS_M 6371008.8
#define METERS_PER_DEG_LAT (EARTH_RADIUS_M * M_PI / 180.0)

/* Doubles a scratch array. Scratch only grows, so a warm thread's queries
 * allocate nothing. */
static int grow_scratch(void **arr, size_t *cap, size_t elem)
{
    size_t n = *cap ? *cap * 2 : 256;
    void *p = realloc(*arr, n * elem);
    if (!p) return -1;
    *arr = p;
    *cap = n;
    return 0;
}

query_scratch *query_scratch_new(void) { return calloc(1, sizeof(query_scratch)); }

void query_scratch_free(query_scratch *s)
{
    if (!s) return;
    free(s->pending);
    free(s->cur);
    free(s->heap);
    free(s->near);
    free(s->near_slack);
    free(s);
}

static int set_err(query_error *err, const char *param, const char *msg)
{
    if (err) {
        snprintf(err->param, sizeof err->param, "%s", param);
        snprintf(err->message, sizeof err->message, "%s", msg);
    }
    return QUERY_EINVAL;
}

static int check_common(double radius_m, uint32_t window_s, uint32_t limit, bool has_radius, bool has_window,
                        query_error *err)
{
    if (has_radius && !(radius_m >= QUERY_RADIUS_MIN && radius_m <= QUERY_RADIUS_MAX))
        return set_err(err, "radius", "radius must be between 1 and 5000 metres");
    if (has_window && (window_s < QUERY_WINDOW_MIN || window_s > QUERY_WINDOW_MAX))
        return set_err(err, "window", "window must be between 1 and 1440 minutes");
    if (limit < QUERY_LIMIT_MIN || limit > QUERY_LIMIT_MAX)
        return set_err(err, "limit", "limit must be between 1 and 500");
    return QUERY_OK;
}

static int check_point(double lat, double lon, query_error *err)
{
    if (!(lat >= -90 && lat <= 90)) return set_err(err, "lat", "lat must be between -90 and 90");
    if (!(lon >= -180 && lon <= 180)) return set_err(err, "lon", "lon must be between -180 and 180");
    return QUERY_OK;
}

/* Great-circle distance; cos_lat1 and cos_lat2 are cos(lat * M_PI / 180),
 * precomputed by the caller and when the dataset was opened. */
static double haversine_m(double lat1, double lon1, double cos_lat1, double lat2, double lon2, double cos_lat2)
{
    const double rad = M_PI / 180.0;
    double dphi = (lat2 - lat1) * rad, dl = (lon2 - lon1) * rad;
    double s1 = sin(dphi / 2), s2 = sin(dl / 2);
    double a = s1 * s1 + cos_lat1 * cos_lat2 * s2 * s2;
    if (a > 1) a = 1;
    return 2 * EARTH_RADIUS_M * asin(sqrt(a));
}

/* ------------------------------------------------------------ nearby stops */

static int near_push(query_scratch *s, const grid_point *gp, double d)
{
    if (s->near_n == s->near_cap && grow_scratch((void **)&s->near, &s->near_cap, sizeof *s->near)) return -1;
    s->near[s->near_n++] = (near_stop){gp, d, 0};
    return 0;
}

/* floor(x + 0.5): a distance as the API writes it, in whole metres. */
static double whole_metres(double x) { return floor(x + 0.5); }

/* Whether a stop lies within the radius is decided without the haversine
 * (two sines and an arcsine, each saving and restoring the rounding mode
 * in glibc) whenever a cheaper distance settles it. For angles φ, λ (the
 * differences in latitude and longitude, in radians) the planar distance
 * A = 2R·sqrt((φ/2)² + cos φ1·cos φ2·(λ/2)²) differs from the haversine D
 * by less than A·(φ² + λ²)/12 once φ² + λ² ≤ 0.01: sin²x lies within
 * x²·[1 - x²/3, 1], and asin y within y·[1, 1 + y²/5] for small y. The
 * slack below is twelve times that plus a micrometre for rounding, so a
 * stop farther than the slack from the circle is inside or outside exactly
 * as the haversine says; only a stop within it gets the haversine. In the
 * same way, when the whole interval planar ± slack rounds to one whole
 * metre, that is the haversine's whole metre too (a micrometre from a
 * half, the haversine decides). */
#define PLANAR_MAX_ANGLE2 0.01

/* Collects stops within radius (location_type 0 or 1; only 0 when
 * platforms_only) into s->near, unordered. Each distance is the haversine,
 * or with whole_metres_only, the haversine rounded to the whole metre: what
 * departures carry, and mostly settled without the haversine. */
static int collect_near(const dataset *ds, query_scratch *s, double lat, double lon, double radius, bool platforms_only,
                        bool whole_metres_only)
{
    const tt_meta *m = ds->meta;
    s->near_n = 0;
    if (m->grid_nx == 0 || m->grid_ny == 0) return 0;
    double dlat = radius / METERS_PER_DEG_LAT * 1.0001 + 1e-9;
    double maxlat = fabs(lat) + dlat;
    double dlon = maxlat >= 89.9 ? 360 : dlat / cos(maxlat * M_PI / 180);
    double y0 = floor((lat - dlat - m->grid_lat0) / m->grid_dlat), y1 = floor((lat + dlat - m->grid_lat0) / m->grid_dlat);
    double x0 = floor((lon - dlon - m->grid_lon0) / m->grid_dlon), x1 = floor((lon + dlon - m->grid_lon0) / m->grid_dlon);
    if (y1 < 0 || y0 >= m->grid_ny) return 0;
    if (dlon >= 180) {
        x0 = 0;
        x1 = m->grid_nx - 1;
    } else if (x1 < 0 || x0 >= m->grid_nx) {
        return 0;
    }
    double cos_lat = cos(lat * M_PI / 180);
    const double rad = M_PI / 180.0;
    uint32_t cy0 = y0 < 0 ? 0 : (uint32_t)y0, cy1 = y1 >= m->grid_ny ? m->grid_ny - 1 : (uint32_t)y1;
    uint32_t cx0 = x0 < 0 ? 0 : (uint32_t)x0, cx1 = x1 >= m->grid_nx ? m->grid_nx - 1 : (uint32_t)x1;
    assert(cy0 <= cy1 && cy1 < m->grid_ny && cx0 <= cx1 && cx1 < m->grid_nx);
    for (uint32_t cy = cy0; cy <= cy1; cy++) {
        uint32_t c0 = cy * m->grid_nx + cx0, c1 = cy * m->grid_nx + cx1;
        /* cells are ordered: a row of cells is one run of grid points */
        assert(ds->grid_cells[c0] <= ds->grid_cells[c1 + 1] && ds->grid_cells[c1 + 1] <= ds->ngrid_stops);
        for (uint32_t i = ds->grid_cells[c0]; i < ds->grid_cells[c1 + 1]; i++) {
            const grid_point *gp = &ds->grid_points[i];
            if (platforms_only && gp->location_type != 0) continue;
            /* the bounding box of the circle first: cheap, and exact enough to never drop a stop */
            if (fabs(gp->lat - lat) > dlat || (dlon < 180 && fabs(gp->lon - lon) > dlon)) continue;
            double dphi = (gp->lat - lat) * rad, dl = (gp->lon - lon) * rad;
            double angle2 = dphi * dphi + dl * dl;
            double d = NAN;
            if (angle2 <= PLANAR_MAX_ANGLE2) {
                double planar = 2 * EARTH_RADIUS_M * sqrt(0.25 * dphi * dphi + cos_lat * gp->cos_lat * 0.25 * dl * dl);
                double slack = planar * angle2 + 1e-6;
                if (planar - slack > radius) continue;
                if (planar + slack < radius && whole_metres_only) {
                    double low = whole_metres(planar - slack);
                    if (low == whole_metres(planar + slack)) d = low;
                }
            }
            if (isnan(d)) {
                d = haversine_m(lat, lon, cos_lat, gp->lat, gp->lon, gp->cos_lat);
                if (!(d <= radius)) continue;
                if (whole_metres_only) d = whole_metres(d);
            }
            if (near_push(s, gp, d)) return -1;
        }
    }
    return 0;
}

static int near_before(const dataset *ds, const near_stop *a, const nearby_stop *b)
{
    if (a->distance_m != b->distance_m) return a->distance_m < b->distance_m;
    return ds->stops[a->point->stop].id_rank < ds->stops[b->stop].id_rank;
}

int nearby_stops(const dataset *ds, query_scratch *s, double lat, double lon, double radius_m, uint32_t limit,
                 nearby_stop *out, uint32_t *count, bool *truncated, query_error *err)
{
    *count = 0;
    *truncated = false;
    int rc = check_point(lat, lon, err);
    if (rc == QUERY_OK) rc = check_common(radius_m, 0, limit, true, false, err);
    if (rc != QUERY_OK) return rc;
    if (collect_near(ds, s, lat, lon, radius_m, false, false))
        return set_err(err, "", "out of memory"), QUERY_ENOMEM;
    /* selection of the `limit` nearest: insertion into the sorted output */
    uint32_t n = 0;
    for (size_t i = 0; i < s->near_n; i++) {
        const near_stop *c = &s->near[i];
        if (n == limit && !near_before(ds, c, &out[n - 1])) continue;
        uint32_t j = n < limit ? n++ : n - 1;
        while (j > 0 && near_before(ds, c, &out[j - 1])) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = (nearby_stop){c->point->stop, c->distance_m};
    }
    assert(n <= limit && n <= s->near_n);
    *count = n;
    *truncated = s->near_n > limit;
    return QUERY_OK;
}

/* ------------------------------------------------------------ departures */

/* Adds cursor c, its first event `rel` seconds after the window's start. */
static int heap_push(query_scratch *s, const cursor *c, uint32_t rel, uint32_t stop_rank, uint32_t route_rank,
                     uint32_t trip_rank)
{
    if (s->cur_n == s->cur_cap && grow_scratch((void **)&s->cur, &s->cur_cap, sizeof *s->cur)) return -1;
    if (s->heap_n == s->heap_cap && grow_scratch((void **)&s->heap, &s->heap_cap, sizeof *s->heap)) return -1;
    assert(s->cur_n < s->cur_cap && s->heap_n < s->heap_cap && s->cur_n < UINT32_MAX);
    heap_entry e = {(uint64_t)rel << 32 | stop_rank, (uint64_t)route_rank << 32 | trip_rank, (uint32_t)s->cur_n};
    s->cur[s->cur_n++] = *c;
    size_t i = s->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!entry_before(&e, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
    return 0;
}

static inline int64_t floor_div64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* The service days whose events [base, base + max_secs] can meet the
 * window [from, to), computed once per query. */
typedef struct day_span {
    int32_t day;
    int64_t base;
    int64_t lo, hi;   /* the window in seconds of that service day */
} day_span;

#define MAX_DAY_SPANS 16

static uint32_t window_days(const dataset *ds, int64_t from, int64_t to, day_span *out)
{
    const tt_meta *m = ds->meta;
    int64_t d_lo = floor_div64(from + dataset_utc_offset(ds, from), 86400) - (int64_t)m->max_secs / 86400 - 2;
    int64_t d_hi = floor_div64(to + dataset_utc_offset(ds, to), 86400) + 1;
    if (d_lo < m->first_day) d_lo = m->first_day;
    if (d_hi > (int64_t)m->first_day + m->ndays - 1) d_hi = (int64_t)m->first_day + m->ndays - 1;
    uint32_t n = 0;
    for (int64_t day = d_lo; day <= d_hi && n < MAX_DAY_SPANS; day++) {
        int64_t base = dataset_day_base(ds, (int32_t)day);
        if (base + (int64_t)m->max_secs < from || base >= to) continue;
        /* ascending days, bases never earlier: a skipped day (Pacific/Apia's
         * 2011-12-30) shares the next day's base */
        assert(n == 0 || (out[n - 1].day < day && out[n - 1].base <= base));
        out[n++] = (day_span){(int32_t)day, base, from - base, to - base};
    }
    return n;
}

/* The first run in [a, z) whose start is at or after `t`, searched from a
 * guess: a run's start grows with its index about evenly over the day, so
 * the guess is usually within a step or two, and galloping out from it
 * reads one or two neighbouring cache lines where a plain binary search
 * over the group would read six. */
static uint32_t first_start_from(const tt_run *runs, uint32_t a, uint32_t z, uint32_t guess, int64_t t)
{
    assert(a <= guess && guess < z);
    uint32_t lo, hi;   /* the answer is in [lo, hi] */
    if ((int64_t)runs[guess].start < t) {
        lo = guess + 1;
        uint32_t step = 1;
        while (lo + step - 1 < z && (int64_t)runs[lo + step - 1].start < t) {
            lo += step;
            step *= 2;
        }
        hi = lo + step - 1 < z ? lo + step - 1 : z;
    } else {
        hi = guess;
        uint32_t step = 1;
        while (hi - a >= step && (int64_t)runs[hi - step].start >= t) {
            hi -= step;
            step *= 2;
        }
        lo = hi - a >= step ? hi - step + 1 : a;
    }
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)runs[mid].start < t) lo = mid + 1;
        else hi = mid;
    }
    /* the group's runs are ordered by start: lo is the first at or after t */
    assert(lo <= z && (lo == z || (int64_t)runs[lo].start >= t) && (lo == a || (int64_t)runs[lo - 1].start < t));
    return lo;
}

/* A visit's group on one service day that can reach the window. After
 * pick_visits, a = b = the guessed run, asked for; after narrow_pending,
 * its first run in the window has been narrowed, from the runs' starts
 * alone, to [a, b], and the time profiles that settle it are on their way. */
typedef struct pending {
    const visit_hot *vh;
    uint32_t a, b;
    uint32_t stop, stop_rank;
    uint16_t day;               /* index into the query's day spans */
    uint16_t arrival;           /* the visit is an arrival visit */
    uint32_t near;              /* index into query_scratch.near, or NO_NEAR */
    uint32_t skip;              /* a scan: seconds of the widened window this stop's rows start after */
} pending;

/* First phase, for one stop: every visit whose group runs on a day and can
 * reach the window is kept, with a guess of where its first run in the
 * window lies: the window's place between the group's earliest and latest
 * departure there, the runs' starts growing about evenly over the day. The
 * guessed run is only requested here; narrow_pending reads it once the
 * requests of every stop are in flight, so the misses overlap instead of
 * each search waiting for its own. */
static inline __attribute__((always_inline)) int pick_visits(const dataset *ds, const tt_run *runs, query_scratch *s,
                                                             uint32_t stop, const visit_hot *hot, uint32_t nvisits,
                                                             uint32_t stop_rank, uint32_t near, bool arrival,
                                                             uint32_t skip, const day_span *days, uint32_t ndays)
{
    /* once per stop: the loop below runs per visit and day, the hot path,
     * and has no assert of its own (first_start_from checks the guess) */
    assert(ndays <= MAX_DAY_SPANS);
    assert(arrival ? hot >= ds->arr_visit_hot && hot + nvisits <= ds->arr_visit_hot + ds->narr_visits
                   : hot >= ds->visit_hot && hot + nvisits <= ds->visit_hot + ds->nvisits);
    for (uint32_t d = 0; d < ndays; d++) {
        const day_span *day = &days[d];
        for (uint32_t i = 0; i < nvisits; i++) {
            const visit_hot *vh = &hot[i];
            if ((int64_t)vh->last_secs < day->lo || (int64_t)vh->first_secs >= day->hi) continue;
            if (!dataset_days_active(ds, vh->days, day->day)) continue;
            uint32_t first = vh->run_first, end = first + vh->run_count;
            int64_t span = (int64_t)vh->last_secs - vh->first_secs, into = day->lo - vh->first_secs;
            uint32_t guess = first;
            if (into > 0 && span > 0)
                guess = into >= span ? end - 1 : first + (uint32_t)((into * (int64_t)(vh->run_count - 1)) / span);
            if (s->pending_n == s->pending_cap &&
                grow_scratch((void **)&s->pending, &s->pending_cap, sizeof *s->pending))
                return -1;
            s->pending[s->pending_n++] = (pending){vh, guess, guess, stop, stop_rank, (uint16_t)d, arrival, near, skip};
            __builtin_prefetch(&runs[guess]);
        }
    }
    return 0;
}

/* Second phase: each kept visit's first run in the window is narrowed down
 * from the guess.
 *
 * Every run's event at the visit's position is its start plus an offset
 * within [min_off, max_off], so the runs' starts alone (one load a step,
 * the runs of a group lying side by side) bound the answer: runs starting
 * before lo - max_off are too early, the first run starting at or after
 * lo - min_off is late enough, and it lies a few runs on. Only the runs in
 * between, and the answer itself, need their time profile read: a second,
 * dependent load that mostly misses the cache. Here it is only requested,
 * for settle_pending to read. Visits with no run late enough are dropped. */
static void narrow_pending(const dataset *ds, const tt_run *runs, query_scratch *s, const day_span *days)
{
    size_t kept = 0;
    for (size_t k = 0; k < s->pending_n; k++) {
        pending pd = s->pending[k];
        const visit_hot *vh = pd.vh;
        const day_span *day = &days[pd.day];
        uint32_t first = vh->run_first, end = first + vh->run_count;
        int64_t lo = day->lo + pd.skip;
        int64_t early = lo - vh->max_off, late = lo - vh->min_off;
        uint32_t a = first_start_from(runs, first, end, pd.a, early);
        if (a == end) continue;
        uint32_t b = a;
        while (b < end && (int64_t)runs[b].start < late) b++;
        pd.a = a;
        pd.b = b;
        s->pending[kept++] = pd;
        prefetch_event(ds, runs, a, vh->pos);
        if (a + 1 < b) prefetch_event(ds, runs, a + 1, vh->pos);
    }
    s->pending_n = kept;
}

/* Third phase: settles each narrowed search with the time profiles (the
 * answer is in [a, b]) and starts a cursor on the first run in the window,
 * asking for its next event too, which drain reads next. */
static int settle_pending(const dataset *ds, const tt_run *runs, query_scratch *s, const day_span *days)
{
    for (size_t k = 0; k < s->pending_n; k++) {
        const pending *pd = &s->pending[k];
        const visit_hot *vh = pd->vh;
        const day_span *day = &days[pd->day];
        uint32_t a = pd->a, b = pd->b, end = vh->run_first + vh->run_count;
        int64_t lo = day->lo + pd->skip;
        assert(vh->run_first <= a && a <= b && b <= end && pd->day < MAX_DAY_SPANS);
        while (a < b) {
            uint32_t mid = a + (b - a) / 2;
            if ((int64_t)run_secs(ds, runs, mid, vh->pos) < lo) a = mid + 1;
            else b = mid;
        }
        if (a == end) continue;
        uint32_t secs = run_secs(ds, runs, a, vh->pos);
        if ((int64_t)secs >= day->hi) continue;
        if (a + 1 < end) prefetch_event(ds, runs, a + 1, vh->pos);
        cursor c = {day->base, a, end, vh->pos, pd->stop, vh->stop_sequence, day->day, pd->near, pd->arrival};
        if (heap_push(s, &c, (uint32_t)((int64_t)secs - day->lo), pd->stop_rank, vh->route_rank,
                      runs[a].trip_rank))
            return -1;
    }
    s->pending_n = 0;
    return 0;
}

/* Pops events in order into out until limit (+1 to learn truncation).
 * No assert inside the loop: it runs once per departure written, the
 * innermost loop of every query; the cursors and heap entries it reads were
 * checked when heap_push made them. */
static void drain(const dataset *ds, const tt_run *runs, query_scratch *s, int64_t from, int64_t to,
                  uint32_t limit, departure *out, uint32_t *count, bool *truncated)
{
    uint32_t n = 0;
    *truncated = false;
    /* The UTC offset in force over [offset_from, offset_until): a window
     * seldom crosses a transition, so most events skip the look-up. */
    int64_t offset_from = 1, offset_until = 0;
    int32_t offset = 0;
    while (s->heap_n) {
        heap_entry *top = &s->heap[0];
        if (n == limit) {
            *truncated = true;
            break;
        }
        cursor *c = &s->cur[top->cursor];
        const tt_run *r = &runs[c->run];
        departure *d = &out[n++];
        int64_t instant = from + (int64_t)(top->hi >> 32);
        if (instant < offset_from || instant >= offset_until)
            offset = dataset_utc_offset_span(ds, instant, &offset_from, &offset_until);
        d->instant = instant;
        d->utc_offset = offset;
        d->service_date = c->day;
        d->secs = (uint32_t)(instant - c->base);
        d->stop = c->stop;
        d->trip = r->trip;
        d->stop_sequence = c->stop_sequence;
        d->pos = c->pos;
        d->arrival = c->arrival;
        d->distance_m = near_distance(s, c->near);
        /* advance the cursor within its group; a group's runs never
         * overtake, so its next event is no earlier than this one */
        c->run++;
        if (c->run < c->run_end) {
            int64_t next = c->base + run_secs(ds, runs, c->run, c->pos);
            if (next < to) {
                /* and the event after it, which this cursor may need next */
                if (c->run + 1 < c->run_end) prefetch_event(ds, runs, c->run + 1, c->pos);
                heap_entry e = {(uint64_t)(next - from) << 32 | (uint32_t)top->hi,
                                (top->lo & 0xffffffff00000000ull) | runs[c->run].trip_rank, top->cursor};
                heap_replace_top(s->heap, s->heap_n, e);
                continue;
            }
        }
        s->heap_n--;
        if (s->heap_n) heap_replace_top(s->heap, s->heap_n, s->heap[s->heap_n]);
    }
    assert(n <= limit);
    *count = n;
}

/* drain for a scan (query_scan): hands the events of [from, to) in order,
 * QUERY_SCAN_BATCH at a time, to scan->visit until it says stop, with the
 * ranks that order ties. The same pops as drain's, kept apart so that drain
 * stays as it is. */
static void drain_visit(const dataset *ds, const tt_run *runs, query_scratch *s, int64_t from, int64_t to,
                        const query_scan *scan)
{
    int64_t offset_from = 1, offset_until = 0;
    int32_t offset = 0;
    departure batch[QUERY_SCAN_BATCH];
    query_rank ranks[QUERY_SCAN_BATCH];
    uint32_t n = 0;
    while (s->heap_n) {
        heap_entry *top = &s->heap[0];
        cursor *c = &s->cur[top->cursor];
        const tt_run *r = &runs[c->run];
        departure *d = &batch[n];
        int64_t instant = from + (int64_t)(top->hi >> 32);
        if (instant > *scan->until) break;
        if (instant < offset_from || instant >= offset_until)
            offset = dataset_utc_offset_span(ds, instant, &offset_from, &offset_until);
        d->instant = instant;
        d->utc_offset = offset;
        d->service_date = c->day;
        d->secs = (uint32_t)(instant - c->base);
        d->stop = c->stop;
        d->trip = r->trip;
        d->stop_sequence = c->stop_sequence;
        d->pos = c->pos;
        d->arrival = c->arrival;
        d->distance_m = near_distance(s, c->near);
        ranks[n++] = (query_rank){(uint32_t)top->hi, (uint32_t)(top->lo >> 32), (uint32_t)top->lo};
        if (n == QUERY_SCAN_BATCH) {
            if (!scan->visit(scan->ctx, batch, ranks, n)) {
                s->heap_n = 0;
                return;
            }
            n = 0;
        }
        c->run++;
        if (c->run < c->run_end) {
            int64_t next = c->base + run_secs(ds, runs, c->run, c->pos);
            if (next < to) {
                if (c->run + 1 < c->run_end) prefetch_event(ds, runs, c->run + 1, c->pos);
                heap_entry e = {(uint64_t)(next - from) << 32 | (uint32_t)top->hi,
                                (top->lo & 0xffffffff00000000ull) | runs[c->run].trip_rank, top->cursor};
                heap_replace_top(s->heap, s->heap_n, e);
                continue;
            }
        }
        s->heap_n--;
        if (s->heap_n) heap_replace_top(s->heap, s->heap_n, s->heap[s->heap_n]);
    }
    s->heap_n = 0;
    if (n) scan->visit(scan->ctx, batch, ranks, n);
}

/* The window a scan reads: [from, to) widened by the largest slack its
 * callback gives any of the stops searched. Each stop's rows are read from
 * its own `late` before the window (the stop's lead, returned): the rows of
 * the widened window before that are skipped (pending.skip). */
static uint32_t widen_by(uint32_t late, uint32_t early, int64_t *from, int64_t *to, uint32_t *late_max,
                         uint32_t *early_max)
{
    if (late > QUERY_SCAN_SLACK_MAX) late = QUERY_SCAN_SLACK_MAX;
    if (early > QUERY_SCAN_SLACK_MAX) early = QUERY_SCAN_SLACK_MAX;
    if (late > *late_max) {
        *from -= late - *late_max;
        *late_max = late;
    }
    if (early > *early_max) {
        *to += early - *early_max;
        *early_max = early;
    }
    return late;
}

/* widen_by the slack the scan's callback gives `stop`. */
static uint32_t widen_window(const query_scan *scan, uint32_t stop, int64_t *from, int64_t *to,
                             uint32_t *late_max, uint32_t *early_max)
{
    uint32_t late = 0, early = 0;
    scan->slack(scan->ctx, stop, &late, &early);
    return widen_by(late, early, from, to, late_max, early_max);
}

/* The lead the scan's callback gives `stop` (its `late`, capped as
 * widen_window caps it). */
static uint32_t scan_lead(const query_scan *scan, uint32_t stop)
{
    uint32_t late = 0, early = 0;
    scan->slack(scan->ctx, stop, &late, &early);
    return late > QUERY_SCAN_SLACK_MAX ? QUERY_SCAN_SLACK_MAX : late;
}

/* Out of memory while collecting: the scratch emptied for the next call. */
static int departures_oom(query_scratch *s, query_error *err)
{
    s->heap_n = s->cur_n = s->pending_n = 0;
    set_err(err, "", "out of memory");
    return QUERY_ENOMEM;
}

/* The visits picked, their runs settled and the events drained in order
 * into out: the common end of both departures questions. */
static int finish_departures(const dataset *ds, const tt_run *runs, query_scratch *s, const day_span *days,
                             int64_t from, int64_t to, uint32_t limit, departure *out, uint32_t *count,
                             bool *truncated, const query_scan *scan, scan_heap *heap, query_error *err)
{
    narrow_pending(ds, runs, s, days);
    if (settle_pending(ds, runs, s, days))
        return departures_oom(s, err);
    if (heap)
        *heap = (scan_heap){runs, from, to};   /* the caller drains it */
    else if (scan)
        drain_visit(ds, runs, s, from, to, scan);
    else
        drain(ds, runs, s, from, to, limit, out, count, truncated);
    return QUERY_OK;
}

/* The run array a query of `kind` searches (see run_secs). */
static const tt_run *runs_of(const dataset *ds, query_kind kind)
{
    return kind == QUERY_DEPARTURES ? ds->runs : ds->event_runs;
}

/* Picks the visits of `kind` at one stop: its departure visits (dv), its
 * arrival visits (ar), or both (the departures, and the arrival visits of
 * calls without a departure, which come first in ar). */
static inline __attribute__((always_inline)) int pick_stop(const dataset *ds, const tt_run *runs, query_scratch *s, query_kind kind, uint32_t stop,
                            grid_visits dv, const arrival_range *arrivals, uint32_t near, uint32_t skip,
                            const day_span *days, uint32_t ndays)
{
    if (kind != QUERY_ARRIVALS &&
        pick_visits(ds, runs, s, stop, ds->visit_hot + dv.visit_first, dv.visit_count, dv.id_rank, near, false, skip,
                    days, ndays))
        return -1;
    if (kind == QUERY_DEPARTURES)
        return 0;
    arrival_range ar = *arrivals;   /* read only when arrivals are asked for */
    assert(ar.only <= ar.count && (uint64_t)ar.first + ar.count <= ds->narr_visits);
    return pick_visits(ds, runs, s, stop, ds->arr_visit_hot + ar.first, kind == QUERY_BOTH ? ar.only : ar.count,
                       dv.id_rank, near, true, skip, days, ndays);
}

static inline bool kind_ok(query_kind kind, query_error *err)
{
    if (kind == QUERY_DEPARTURES || kind == QUERY_ARRIVALS || kind == QUERY_BOTH)
        return true;
    set_err(err, "kind", "kind must be departures, arrivals or both");
    return false;
}

/* stop_events, inlined into the departures question with `kind` a
 * constant, so that a board of departures tests no kind. */
static inline __attribute__((always_inline)) int stop_board(const dataset *ds, query_scratch *s, query_kind kind,
                                                            uint32_t stop, int64_t from, uint32_t window_s,
                                                            uint32_t limit, departure *out, uint32_t *count,
                                                            bool *truncated, const query_scan *scan,
                                                            scan_heap *heap, query_error *err)
{
    *count = 0;
    *truncated = false;
    if (!kind_ok(kind, err)) return QUERY_EINVAL;
    int rc = check_common(0, window_s, limit, false, true, err);
    if (rc != QUERY_OK) return rc;
    if (stop >= ds->meta->nstops) {
        set_err(err, "stop_id", "unknown stop");
        return QUERY_ENOTFOUND;
    }
    int64_t to = from + window_s;
    s->heap_n = s->cur_n = 0;
    const tt_run *runs = runs_of(ds, kind);
    const tt_stop *sp = &ds->stops[stop];
    assert((uint64_t)sp->children_first + sp->children_count <= ds->nchildren);
    uint32_t late = 0, lead = 0;   /* the largest lead, the stop's own */
    if (scan) {
        uint32_t early = 0;
        for (int step = 0; scan->prefetch_stop && step < 2; step++) {
            scan->prefetch_stop(scan->ctx, stop, step);
            for (uint32_t i = 0; i < sp->children_count; i++)
                scan->prefetch_stop(scan->ctx, ds->children[sp->children_first + i], step);
        }
        lead = widen_window(scan, stop, &from, &to, &late, &early);
        for (uint32_t i = 0; i < sp->children_count; i++)
            widen_window(scan, ds->children[sp->children_first + i], &from, &to, &late, &early);
    }
    day_span days[MAX_DAY_SPANS];
    uint32_t ndays = window_days(ds, from, to, days);
    if (pick_stop(ds, runs, s, kind, stop, grid_visits_of(sp), &ds->arr_stops[stop], NO_NEAR, late - lead, days,
                  ndays))
        goto oom;
    for (uint32_t i = 0; i < sp->children_count; i++) {
        uint32_t child = ds->children[sp->children_first + i];
        assert(child < ds->meta->nstops && ds->stops[child].parent == stop);
        /* a station's children: their leads asked again (no room kept for them) */
        uint32_t skip = scan ? late - scan_lead(scan, child) : 0;
        if (pick_stop(ds, runs, s, kind, child, grid_visits_of(&ds->stops[child]), &ds->arr_stops[child], NO_NEAR,
                      skip, days, ndays))
            goto oom;
    }
    return finish_departures(ds, runs, s, days, from, to, limit, out, count, truncated, scan, heap, err);
oom:
    return departures_oom(s, err);
}

int stop_events(const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop, int64_t from,
                uint32_t window_s, uint32_t limit, departure *out, uint32_t *count, bool *truncated,
                query_error *err)
{
    return stop_board(ds, s, kind, stop, from, window_s, limit, out, count, truncated, NULL, NULL, err);
}

int stop_departures(const dataset *ds, query_scratch *s, uint32_t stop, int64_t from, uint32_t window_s,
                    uint32_t limit, departure *out, uint32_t *count, bool *truncated, query_error *err)
{
    return stop_board(ds, s, QUERY_DEPARTURES, stop, from, window_s, limit, out, count, truncated, NULL, NULL,
                      err);
}

int stop_events_scan(const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop, int64_t from,
                     uint32_t window_s, const query_scan *scan, query_error *err)
{
    uint32_t count;
    bool truncated;
    return stop_board(ds, s, kind, stop, from, window_s, QUERY_LIMIT_MAX, NULL, &count, &truncated, scan, NULL, err);
}

/* Asks for the visit records of every stop found near a point: they lie
 * somewhere in a 1.6 MB array, so the misses overlap instead of each stop
 * waiting for its own. */
static void prefetch_visits(const visit_hot *hot, uint32_t first, uint32_t count)
{
    uintptr_t line = (uintptr_t)(hot + first) & ~(uintptr_t)63;
    uintptr_t end = (uintptr_t)(hot + first + count);
    for (; line < end; line += 64)
        __builtin_prefetch((const void *)line);
}

/* nearby_events, inlined as stop_board is. */
static inline __attribute__((always_inline)) int nearby_board(const dataset *ds, query_scratch *s,
                                                              query_kind kind, double lat, double lon,
                                                              double radius_m, int64_t from, uint32_t window_s,
                                                              uint32_t limit, departure *out, uint32_t *count,
                                                              bool *truncated, const query_scan *scan,
                                                              scan_heap *heap, query_error *err)
{
    *count = 0;
    *truncated = false;
    if (!kind_ok(kind, err)) return QUERY_EINVAL;
    int rc = check_point(lat, lon, err);
    if (rc == QUERY_OK) rc = check_common(radius_m, window_s, limit, true, true, err);
    if (rc != QUERY_OK) return rc;
    int64_t to = from + window_s;
    s->heap_n = s->cur_n = 0;
    const tt_run *runs = runs_of(ds, kind);
    if (collect_near(ds, s, lat, lon, radius_m, true, true)) goto oom;
    uint32_t late = 0;
    if (scan && scan->slack_points) {
        /* by grid point, all stops in one call: the stops near a point are a few lines of the scan's tables */
        size_t n = s->near_n;
        while (s->near_slack_cap < 3 * n)
            if (grow_scratch((void **)&s->near_slack, &s->near_slack_cap, sizeof *s->near_slack)) goto oom;
        uint32_t *points = s->near_slack, *lates = points + n, *earlies = lates + n;
        for (size_t i = 0; i < n; i++) points[i] = (uint32_t)(s->near[i].point - ds->grid_points);
        scan->slack_points(scan->ctx, points, n, lates, earlies);
        uint32_t early = 0;
        for (size_t i = 0; i < n; i++) s->near[i].lead = widen_by(lates[i], earlies[i], &from, &to, &late, &early);
    } else if (scan) {
        uint32_t early = 0;
        for (int step = 0; scan->prefetch_stop && step < 2; step++)
            for (size_t i = 0; i < s->near_n; i++) scan->prefetch_stop(scan->ctx, s->near[i].point->stop, step);
        for (size_t i = 0; i < s->near_n; i++)
            s->near[i].lead = widen_window(scan, s->near[i].point->stop, &from, &to, &late, &early);
    }
    day_span days[MAX_DAY_SPANS];
    uint32_t ndays = window_days(ds, from, to, days);
    for (size_t i = 0; i < s->near_n; i++) {
        size_t g = (size_t)(s->near[i].point - ds->grid_points);
        if (kind != QUERY_ARRIVALS)
            prefetch_visits(ds->visit_hot, ds->grid_visits[g].visit_first, ds->grid_visits[g].visit_count);
        if (kind != QUERY_DEPARTURES)
            prefetch_visits(ds->arr_visit_hot, ds->arr_grid[g].first,
                            kind == QUERY_BOTH ? ds->arr_grid[g].only : ds->arr_grid[g].count);
    }
    for (size_t i = 0; i < s->near_n; i++) {
        const grid_point *gp = s->near[i].point;
        assert(gp >= ds->grid_points && (uint64_t)(gp - ds->grid_points) < ds->ngrid_stops);
        size_t g = (size_t)(gp - ds->grid_points);
        if (pick_stop(ds, runs, s, kind, gp->stop, ds->grid_visits[g], &ds->arr_grid[g], (uint32_t)i,
                      scan ? late - s->near[i].lead : 0, days, ndays))
            goto oom;
    }
    return finish_departures(ds, runs, s, days, from, to, limit, out, count, truncated, scan, heap, err);
oom:
    return departures_oom(s, err);
}

int nearby_events(const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon, double radius_m,
                  int64_t from, uint32_t window_s, uint32_t limit, departure *out, uint32_t *count,
                  bool *truncated, query_error *err)
{
    return nearby_board(ds, s, kind, lat, lon, radius_m, from, window_s, limit, out, count, truncated, NULL, NULL,
                        err);
}

int nearby_events_scan(const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                       double radius_m, int64_t from, uint32_t window_s, const query_scan *scan, query_error *err)
{
    uint32_t count;
    bool truncated;
    return nearby_board(ds, s, kind, lat, lon, radius_m, from, window_s, QUERY_LIMIT_MAX, NULL, &count, &truncated,
                        scan, NULL, err);
}

int nearby_departures(const dataset *ds, query_scratch *s, double lat, double lon, double radius_m, int64_t from,
                      uint32_t window_s, uint32_t limit, departure *out, uint32_t *count, bool *truncated,
                      query_error *err)
{
    return nearby_board(ds, s, QUERY_DEPARTURES, lat, lon, radius_m, from, window_s, limit, out, count, truncated,
                        NULL, NULL, err);
}

int stop_events_heap(const dataset *ds, query_scratch *s, query_kind kind, uint32_t stop, int64_t from,
                     uint32_t window_s, const query_scan *scan, scan_heap *h, query_error *err)
{
    uint32_t count;
    bool truncated;
    return stop_board(ds, s, kind, stop, from, window_s, QUERY_LIMIT_MAX, NULL, &count, &truncated, scan, h, err);
}

int nearby_events_heap(const dataset *ds, query_scratch *s, query_kind kind, double lat, double lon,
                       double radius_m, int64_t from, uint32_t window_s, const query_scan *scan, scan_heap *h,
                       query_error *err)
{
    uint32_t count;
    bool truncated;
    return nearby_board(ds, s, kind, lat, lon, radius_m, from, window_s, QUERY_LIMIT_MAX, NULL, &count, &truncated,
                        scan, h, err);
}

size_t query_near_count(const query_scratch *s) { return s->near_n; }

nearby_stop query_near_stop(const query_scratch *s, size_t i)
{
    assert(i < s->near_n);
    return (nearby_stop){s->near[i].point->stop, s->near[i].distance_m};
}
