/* timetable_write.c — turns the builder's model into timetable.bin.
 *
 * Why it exists: this is the book's "Stop Time Import" made exact. Rows are
 * grouped per trip with an O(n) counting sort, non-timepoints interpolated,
 * trips folded into shared patterns and time profiles (2.4M rows become a few
 * thousand arrays), runs grouped so that each group's departures are sorted at
 * every stop, and the indexes the queries need (per-stop visits, id order,
 * spatial grid, service bitmaps, day bases) laid out as flat sections.
 */
#include "import/tt_builder.h"
#include "import/tt_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "transit/gtfs.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Everything the layout produces, section by section. */
typedef struct tt_out {
    tt_meta meta;
    tt_stop *stops;
    uint32_t *stop_by_id, *children, *stop_routes, *grid_cells, *grid_stops;
    size_t nchildren, nstop_routes, ngrid_cells, ngrid_stops;
    tt_route *routes;
    uint32_t *route_by_id;
    tt_trip *trips;
    uint32_t *trip_by_id;
    tt_service *services;
    uint64_t *service_bits;
    TB_VEC(tt_pattern) patterns;
    TB_VEC(tt_pattern_stop) pattern_stops;
    TB_VEC(uint32_t) profiles;
    TB_VEC(tt_group) groups;
    TB_VEC(tt_run) runs;
    tt_visit *visits;
    size_t nvisits;
    int64_t *daybase;
    size_t ndaybase;
    TB_VEC(tt_tz_transition) tz;
} tt_out;

static int fail_oom(tt_builder *b)
{
    snprintf(b->err, b->errlen, "out of memory while building the timetable");
    return -1;
}

/* ------------------------------------------------------------ id ranks */

/* qsort has no context argument in C11; the comparator's context is per thread. */
static _Thread_local const char *g_sort_strings;
static _Thread_local const uint32_t *g_sort_keys;

static int cmp_by_string(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(g_sort_strings + g_sort_keys[x], g_sort_strings + g_sort_keys[y]);
    return c ? c : (x < y ? -1 : x > y);
}

/* Sorts indices 0..n-1 by the string offset keys[i]; writes order into out. */
static void sort_by_string(const char *strings, const uint32_t *keys, uint32_t n, uint32_t *out)
{
    for (uint32_t i = 0; i < n; i++) out[i] = i;
    g_sort_strings = strings;
    g_sort_keys = keys;
    qsort(out, n, sizeof *out, cmp_by_string);
}

/* ------------------------------------------------------------ trips → patterns, profiles, runs */

typedef struct run_tmp {
    uint32_t pattern, service, start, trip, trip_rank, dep_profile, route_rank, chain;
} run_tmp;

static int cmp_run_tmp(const void *a, const void *b)
{
    const run_tmp *x = a, *y = b;
    if (x->pattern != y->pattern) return x->pattern < y->pattern ? -1 : 1;
    if (x->service != y->service) return x->service < y->service ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->trip_rank < y->trip_rank ? -1 : x->trip_rank > y->trip_rank;
}

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0)) ? q - 1 : q;
}

/* Fills empty times between timed positions. t[] holds arrival (when
 * use_arrival) or departure times per position, GTFS_TIME_NONE when empty.
 * Interpolates from the departure of the timed stop before to the arrival of
 * the timed stop after. */
static void interpolate(uint32_t *arr, uint32_t *dep, const double *dist, uint32_t len)
{
    uint32_t i = 0;
    while (i < len) {
        if (dep[i] != GTFS_TIME_NONE) {
            i++;
            continue;
        }
        uint32_t a = i - 1; /* timed before (position 0 is timed) */
        uint32_t z = i;
        while (dep[z] == GTFS_TIME_NONE) z++; /* timed after (the last is timed) */
        int64_t t0 = dep[a], t1 = arr[z];
        bool by_dist = dist != NULL;
        if (by_dist) {
            for (uint32_t k = a; k <= z; k++)
                if (isnan(dist[k])) by_dist = false;
            if (by_dist && !(dist[z] > dist[a])) by_dist = false;
        }
        for (uint32_t k = a + 1; k < z; k++) {
            int64_t t;
            if (by_dist)
                t = t0 + (int64_t)floor((double)(t1 - t0) * (dist[k] - dist[a]) / (dist[z] - dist[a]));
            else
                t = t0 + floor_div((t1 - t0) * (int64_t)(k - a), (int64_t)(z - a));
            if (t < 0) t = 0;
            arr[k] = dep[k] = (uint32_t)t;
        }
        i = z + 1;
    }
}

typedef struct trip_scratch {
    uint32_t *arr, *dep;
    double *dist;
    uint32_t *key;        /* pattern key: route, then 4 words per position */
    int32_t *prof;
    uint32_t cap;
} trip_scratch;

static int scratch_reserve(trip_scratch *s, uint32_t len)
{
    if (len <= s->cap) return 0;
    uint32_t c = s->cap ? s->cap : 64;
    while (c < len) c *= 2;
    uint32_t *arr = realloc(s->arr, c * sizeof *arr);
    if (!arr) return -1;
    s->arr = arr;
    uint32_t *dep = realloc(s->dep, c * sizeof *dep);
    if (!dep) return -1;
    s->dep = dep;
    double *dist = realloc(s->dist, c * sizeof *dist);
    if (!dist) return -1;
    s->dist = dist;
    uint32_t *key = realloc(s->key, (1 + 4 * (size_t)c) * sizeof *key);
    if (!key) return -1;
    s->key = key;
    int32_t *prof = realloc(s->prof, c * sizeof *prof);
    if (!prof) return -1;
    s->prof = prof;
    s->cap = c;
    return 0;
}

static uint32_t intern_profile(tt_out *o, strmap *profiles, const int32_t *prof, uint32_t len)
{
    int ins;
    uint32_t e = strmap_put(profiles, prof, len * sizeof *prof, (uint32_t)o->profiles.n, &ins);
    if (e == UINT32_MAX) return TT_NONE;
    if (ins) {
        if (o->profiles.n + len > o->profiles.cap &&
            tb_grow((void **)&o->profiles.v, &o->profiles.cap, sizeof(uint32_t), o->profiles.n + len))
            return TT_NONE;
        memcpy(o->profiles.v + o->profiles.n, prof, len * sizeof *prof);
        o->profiles.n += len;
    }
    return strmap_value(profiles, e);
}

static int build_trips(tt_builder *b, tt_out *o, const uint32_t *trip_rank, const uint32_t *route_rank,
                       run_tmp **runs_out, size_t *nruns_out)
{
    size_t n = b->stop_times.n;
    uint32_t ntrips = (uint32_t)b->trips.n;
    uint32_t *first = calloc((size_t)ntrips + 1, sizeof *first);
    uint32_t *perm = malloc((n ? n : 1) * sizeof *perm);
    if (!first || !perm) {
        free(first);
        free(perm);
        return fail_oom(b);
    }
    /* counting sort by trip: stable, so file order within a trip is kept */
    for (size_t i = 0; i < n; i++) first[b->stop_times.v[i].trip + 1]++;
    for (uint32_t t = 0; t < ntrips; t++) first[t + 1] += first[t];
    {
        uint32_t *pos = malloc(((size_t)ntrips + 1) * sizeof *pos);
        if (!pos) {
            free(first);
            free(perm);
            return fail_oom(b);
        }
        memcpy(pos, first, ((size_t)ntrips + 1) * sizeof *pos);
        for (size_t i = 0; i < n; i++) perm[pos[b->stop_times.v[i].trip]++] = (uint32_t)i;
        free(pos);
    }
    strmap patterns = {0}, profiles = {0};
    if (strmap_init(&patterns, 1024) || strmap_init(&profiles, 1 << 14)) {
        strmap_free(&patterns);   /* the first may have succeeded */
        strmap_free(&profiles);
        free(first);
        free(perm);
        return fail_oom(b);
    }
    /* frequencies by trip */
    uint32_t *freq_first = calloc((size_t)ntrips + 1, sizeof *freq_first);
    tb_frequency *freqs = malloc((b->frequencies.n ? b->frequencies.n : 1) * sizeof *freqs);
    TB_VEC(run_tmp) runs = {0};
    trip_scratch s = {0};
    int rc = -1;
    if (!freq_first || !freqs) goto out;
    for (size_t i = 0; i < b->frequencies.n; i++) freq_first[b->frequencies.v[i].trip + 1]++;
    for (uint32_t t = 0; t < ntrips; t++) freq_first[t + 1] += freq_first[t];
    {
        uint32_t *pos = malloc(((size_t)ntrips + 1) * sizeof *pos);
        if (!pos) goto out;
        memcpy(pos, freq_first, ((size_t)ntrips + 1) * sizeof *pos);
        for (size_t i = 0; i < b->frequencies.n; i++) freqs[pos[b->frequencies.v[i].trip]++] = b->frequencies.v[i];
        free(pos);
    }

    uint32_t max_secs = 0;
    uint64_t kept = 0;
    for (uint32_t t = 0; t < ntrips; t++) {
        tb_trip *trip = &b->trips.v[t];
        uint32_t *slice = perm + first[t];
        uint32_t cnt = first[t + 1] - first[t];
        trip->valid = false;
        /* sort the trip's rows by stop_sequence: insertion sort, rows are nearly always in order */
        for (uint32_t i = 1; i < cnt; i++) {
            uint32_t v = slice[i], key = b->stop_times.v[v].seq;
            uint32_t j = i;
            while (j > 0 && b->stop_times.v[slice[j - 1]].seq > key) {
                slice[j] = slice[j - 1];
                j--;
            }
            slice[j] = v;
        }
        /* drop duplicate stop_sequence values */
        uint32_t len = 0;
        for (uint32_t i = 0; i < cnt; i++) {
            if (len && b->stop_times.v[slice[len - 1]].seq == b->stop_times.v[slice[i]].seq) {
                diag_add(b->diag, DIAG_BAD_SEQUENCE, "stop_times.txt", 0, "trip '%s': duplicate stop_sequence %u",
                         tb_str(b, trip->id), b->stop_times.v[slice[i]].seq);
                continue;
            }
            slice[len++] = slice[i];
        }
        if (len == 0) {
            diag_add(b->diag, DIAG_UNTIMED_TRIP, "trips.txt", 0, "trip '%s' has no stop times", tb_str(b, trip->id));
            continue;
        }
        if (len < 2) {
            diag_add(b->diag, DIAG_UNTIMED_TRIP, "stop_times.txt", 0, "trip '%s' has only one stop time",
                     tb_str(b, trip->id));
            continue;
        }
        if (scratch_reserve(&s, len)) goto out;
        for (uint32_t k = 0; k < len; k++) {
            const tb_stop_time *st = &b->stop_times.v[slice[k]];
            s.arr[k] = st->arr;
            s.dep[k] = st->dep;
            s.dist[k] = b->have_dist ? b->dists.v[slice[k]] : NAN;
        }
        if (s.dep[0] == GTFS_TIME_NONE || s.dep[len - 1] == GTFS_TIME_NONE) {
            diag_add(b->diag, DIAG_UNTIMED_TRIP, "stop_times.txt", 0,
                     "trip '%s': the first and last stop must have times", tb_str(b, trip->id));
            continue;
        }
        interpolate(s.arr, s.dep, b->have_dist ? s.dist : NULL, len);
        for (uint32_t k = 1; k < len; k++) {
            if (s.arr[k] < s.dep[k - 1] || s.dep[k] < s.arr[k]) {
                diag_add(b->diag, DIAG_BAD_SEQUENCE, "stop_times.txt", 0,
                         "trip '%s': times go backwards at stop_sequence %u", tb_str(b, trip->id),
                         b->stop_times.v[slice[k]].seq);
                break;
            }
        }
        /* pattern */
        s.key[0] = trip->route;
        for (uint32_t k = 0; k < len; k++) {
            const tb_stop_time *st = &b->stop_times.v[slice[k]];
            s.key[1 + 4 * k] = st->stop;
            s.key[2 + 4 * k] = st->seq;
            s.key[3 + 4 * k] = st->pickup;
            s.key[4 + 4 * k] = st->drop_off;
        }
        int ins;
        uint32_t pe = strmap_put(&patterns, s.key, (1 + 4 * (size_t)len) * sizeof(uint32_t),
                                 (uint32_t)o->patterns.n, &ins);
        if (pe == UINT32_MAX) goto out;
        if (ins) {
            tt_pattern *p = TB_PUSH(o->patterns);
            if (!p) goto out;
            p->first = (uint32_t)o->pattern_stops.n;
            p->len = len;
            p->route = trip->route;
            p->pad = 0;
            for (uint32_t k = 0; k < len; k++) {
                tt_pattern_stop *ps = TB_PUSH(o->pattern_stops);
                if (!ps) goto out;
                ps->stop = s.key[1 + 4 * k];
                ps->stop_sequence = s.key[2 + 4 * k];
                ps->pickup_type = (uint8_t)s.key[3 + 4 * k];
                ps->drop_off_type = (uint8_t)s.key[4 + 4 * k];
                ps->pad[0] = ps->pad[1] = 0;
            }
        }
        trip->pattern = strmap_value(&patterns, pe);
        /* profiles: offsets from the first departure */
        uint32_t start = s.dep[0];
        for (uint32_t k = 0; k < len; k++) s.prof[k] = (int32_t)(s.dep[k] - start);
        trip->dep_profile = intern_profile(o, &profiles, s.prof, len);
        bool same = true;
        for (uint32_t k = 0; k < len; k++) {
            s.prof[k] = (int32_t)s.arr[k] - (int32_t)start;
            if (s.arr[k] != s.dep[k]) same = false;
        }
        trip->arr_profile = same ? trip->dep_profile : intern_profile(o, &profiles, s.prof, len);
        if (trip->dep_profile == TT_NONE || trip->arr_profile == TT_NONE) goto out;
        trip->start = start;
        trip->valid = true;
        kept += len;
        uint32_t trip_max = 0;
        for (uint32_t k = 0; k < len; k++) {
            if (s.arr[k] > trip_max) trip_max = s.arr[k];
            if (s.dep[k] > trip_max) trip_max = s.dep[k];
        }
        /* runs */
        uint32_t f0 = freq_first[t], f1 = freq_first[t + 1];
        if (f0 == f1) {
            run_tmp *r = TB_PUSH(runs);
            if (!r) goto out;
            *r = (run_tmp){trip->pattern, trip->service, start, t, trip_rank[t], trip->dep_profile,
                           route_rank[trip->route], 0};
            if (trip_max > max_secs) max_secs = trip_max;
        } else {
            trip->frequency_based = true;
            for (uint32_t fi = f0; fi < f1; fi++) {
                for (uint32_t st = freqs[fi].start; st < freqs[fi].end; st += freqs[fi].headway) {
                    run_tmp *r = TB_PUSH(runs);
                    if (!r) goto out;
                    *r = (run_tmp){trip->pattern, trip->service, st, t, trip_rank[t], trip->dep_profile,
                                   route_rank[trip->route], 0};
                    uint32_t m = st + (trip_max - start);
                    if (m > max_secs) max_secs = m;
                }
            }
        }
    }
    o->meta.max_secs = max_secs;
    o->meta.stop_times = kept;
    b->stats->stop_times_kept = kept;
    *runs_out = runs.v;
    *nruns_out = runs.n;
    runs.v = NULL;
    rc = 0;
out:
    if (rc != 0) fail_oom(b);
    free(runs.v);
    free(first);
    free(perm);
    free(freq_first);
    free(freqs);
    free(s.arr);
    free(s.dep);
    free(s.dist);
    free(s.key);
    free(s.prof);
    strmap_free(&patterns);
    strmap_free(&profiles);
    return rc;
}

/* Whether run y can follow run x in one group: at every position, x's
 * (time, trip rank) is strictly before y's. */
static bool fifo_ok(const tt_out *o, const run_tmp *x, const run_tmp *y, uint32_t len)
{
    if (x->dep_profile == y->dep_profile) return true; /* sorted by (start, rank) already */
    const int32_t *px = (const int32_t *)o->profiles.v + x->dep_profile;
    const int32_t *py = (const int32_t *)o->profiles.v + y->dep_profile;
    for (uint32_t k = 0; k < len; k++) {
        int64_t tx = (int64_t)x->start + px[k], ty = (int64_t)y->start + py[k];
        if (tx > ty || (tx == ty && x->trip_rank >= y->trip_rank)) return false;
    }
    return true;
}

static int build_groups(tt_builder *b, tt_out *o, run_tmp *runs, size_t nruns)
{
    qsort(runs, nruns, sizeof *runs, cmp_run_tmp);
    uint32_t *chain_last = NULL; /* per open chain of the current key: last run index */
    uint32_t *chain_id = NULL;
    size_t chain_cap = 0;
    uint32_t next_chain = 0;
    int rc = -1;
    for (size_t i = 0; i < nruns;) {
        size_t j = i;
        while (j < nruns && runs[j].pattern == runs[i].pattern && runs[j].service == runs[i].service) j++;
        uint32_t len = o->patterns.v[runs[i].pattern].len;
        size_t nch = 0;
        for (size_t r = i; r < j; r++) {
            size_t c = 0;
            while (c < nch && !fifo_ok(o, &runs[chain_last[c]], &runs[r], len)) c++;
            if (c == nch) {
                if (nch == chain_cap) {
                    size_t cap = chain_cap ? chain_cap * 2 : 16;
                    uint32_t *a = realloc(chain_last, cap * sizeof *a);
                    if (!a) goto out;
                    chain_last = a;
                    uint32_t *bb = realloc(chain_id, cap * sizeof *bb);
                    if (!bb) goto out;
                    chain_id = bb;
                    chain_cap = cap;
                }
                chain_id[nch] = next_chain++;
                nch++;
            }
            chain_last[c] = (uint32_t)r;
            runs[r].chain = chain_id[c];
        }
        i = j;
    }
    /* counting sort runs by chain (stable: keeps (start, rank) order) */
    uint32_t ngroups = next_chain;
    uint32_t *gfirst = calloc((size_t)ngroups + 1, sizeof *gfirst);
    if (!gfirst) goto out;
    if (tb_grow((void **)&o->runs.v, &o->runs.cap, sizeof(tt_run), nruns ? nruns : 1) ||
        tb_grow((void **)&o->groups.v, &o->groups.cap, sizeof(tt_group), ngroups ? ngroups : 1)) {
        free(gfirst);
        goto out;
    }
    for (size_t r = 0; r < nruns; r++) gfirst[runs[r].chain + 1]++;
    for (uint32_t g = 0; g < ngroups; g++) gfirst[g + 1] += gfirst[g];
    for (uint32_t g = 0; g < ngroups; g++) {
        o->groups.v[g].run_first = gfirst[g];
        o->groups.v[g].run_count = gfirst[g + 1] - gfirst[g];
    }
    for (size_t r = 0; r < nruns; r++) {
        uint32_t g = runs[r].chain;
        tt_group *gr = &o->groups.v[g];
        gr->pattern = runs[r].pattern;
        gr->service = runs[r].service;
        gr->route_rank = runs[r].route_rank;
        gr->pad = 0;
        o->runs.v[gfirst[g]++] = (tt_run){runs[r].start, runs[r].dep_profile, runs[r].trip, runs[r].trip_rank};
    }
    free(gfirst);
    o->runs.n = nruns;
    o->groups.n = ngroups;
    rc = 0;
out:
    if (rc) fail_oom(b);
    free(chain_last);
    free(chain_id);
    return rc;
}

/* ------------------------------------------------------------ per-stop indexes */

static int build_visits(tt_builder *b, tt_out *o)
{
    uint32_t nstops = (uint32_t)b->stops.n;
    uint32_t *count = calloc((size_t)nstops + 1, sizeof *count);
    if (!count) return fail_oom(b);
    size_t total = 0;
    for (size_t g = 0; g < o->groups.n; g++) {
        const tt_pattern *p = &o->patterns.v[o->groups.v[g].pattern];
        for (uint32_t k = 0; k + 1 < p->len; k++) {
            const tt_pattern_stop *ps = &o->pattern_stops.v[p->first + k];
            if (ps->pickup_type == 1) continue;
            count[ps->stop + 1]++;
            total++;
        }
    }
    for (uint32_t i = 0; i < nstops; i++) count[i + 1] += count[i];
    o->visits = malloc((total ? total : 1) * sizeof *o->visits);
    if (!o->visits) {
        free(count);
        return fail_oom(b);
    }
    for (uint32_t i = 0; i < nstops; i++) {
        o->stops[i].visit_first = count[i];
        o->stops[i].visit_count = count[i + 1] - count[i];
    }
    for (size_t g = 0; g < o->groups.n; g++) {
        const tt_pattern *p = &o->patterns.v[o->groups.v[g].pattern];
        for (uint32_t k = 0; k + 1 < p->len; k++) {
            const tt_pattern_stop *ps = &o->pattern_stops.v[p->first + k];
            if (ps->pickup_type == 1) continue;
            o->visits[count[ps->stop]++] = (tt_visit){(uint32_t)g, k};
        }
    }
    o->nvisits = total;
    free(count);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int build_stop_routes(tt_builder *b, tt_out *o)
{
    size_t n = o->pattern_stops.n;
    uint64_t *pairs = malloc((n ? n : 1) * sizeof *pairs);
    if (!pairs) return fail_oom(b);
    size_t m = 0;
    for (size_t p = 0; p < o->patterns.n; p++) {
        const tt_pattern *pt = &o->patterns.v[p];
        for (uint32_t k = 0; k < pt->len; k++)
            pairs[m++] = (uint64_t)o->pattern_stops.v[pt->first + k].stop << 32 | pt->route;
    }
    qsort(pairs, m, sizeof *pairs, cmp_u64);
    o->stop_routes = malloc((m ? m : 1) * sizeof *o->stop_routes);
    if (!o->stop_routes) {
        free(pairs);
        return fail_oom(b);
    }
    size_t out = 0;
    for (size_t i = 0; i < m; i++) {
        if (i && pairs[i] == pairs[i - 1]) continue;
        uint32_t stop = (uint32_t)(pairs[i] >> 32);
        if (o->stops[stop].routes_count == 0) o->stops[stop].routes_first = (uint32_t)out;
        o->stops[stop].routes_count++;
        o->stop_routes[out++] = (uint32_t)pairs[i];
    }
    o->nstop_routes = out;
    free(pairs);
    return 0;
}

static int build_children(tt_builder *b, tt_out *o)
{
    uint32_t nstops = (uint32_t)b->stops.n;
    uint32_t *count = calloc((size_t)nstops + 1, sizeof *count);
    if (!count) return fail_oom(b);
    size_t total = 0;
    for (uint32_t i = 0; i < nstops; i++)
        if (b->stops.v[i].parent != TT_NONE) count[b->stops.v[i].parent + 1]++, total++;
    for (uint32_t i = 0; i < nstops; i++) count[i + 1] += count[i];
    o->children = malloc((total ? total : 1) * sizeof *o->children);
    if (!o->children) {
        free(count);
        return fail_oom(b);
    }
    for (uint32_t i = 0; i < nstops; i++) {
        o->stops[i].children_first = count[i];
        o->stops[i].children_count = count[i + 1] - count[i];
    }
    /* children in id order */
    for (uint32_t r = 0; r < nstops; r++) {
        uint32_t i = o->stop_by_id[r];
        if (b->stops.v[i].parent != TT_NONE) o->children[count[b->stops.v[i].parent]++] = i;
    }
    o->nchildren = total;
    free(count);
    return 0;
}

#define GRID_CELL_M 250.0
#define GRID_MAX_CELLS (1u << 22)
#define METERS_PER_DEG_LAT 111194.93

static int build_grid(tt_builder *b, tt_out *o)
{
    double lat0 = 90, lat1 = -90, lon0 = 180, lon1 = -180;
    uint32_t n = 0;
    for (size_t i = 0; i < b->stops.n; i++) {
        const tb_stop *s = &b->stops.v[i];
        if (s->location_type > 1 || isnan(s->lat)) continue;
        if (s->lat < lat0) lat0 = s->lat;
        if (s->lat > lat1) lat1 = s->lat;
        if (s->lon < lon0) lon0 = s->lon;
        if (s->lon > lon1) lon1 = s->lon;
        n++;
    }
    if (n == 0) lat0 = lat1 = lon0 = lon1 = 0;
    double coslat = cos((lat0 + lat1) / 2 * M_PI / 180);
    if (coslat < 0.01) coslat = 0.01;
    double dlat = GRID_CELL_M / METERS_PER_DEG_LAT, dlon = dlat / coslat;
    double nx = floor((lon1 - lon0) / dlon) + 1, ny = floor((lat1 - lat0) / dlat) + 1;
    if (nx * ny > GRID_MAX_CELLS) {
        double f = sqrt(nx * ny / GRID_MAX_CELLS) * 1.01;
        dlat *= f;
        dlon *= f;
        nx = floor((lon1 - lon0) / dlon) + 1;
        ny = floor((lat1 - lat0) / dlat) + 1;
    }
    tt_meta *m = &o->meta;
    m->grid_lat0 = lat0;
    m->grid_lon0 = lon0;
    m->grid_dlat = dlat;
    m->grid_dlon = dlon;
    m->grid_nx = (uint32_t)nx;
    m->grid_ny = (uint32_t)ny;
    size_t ncells = (size_t)m->grid_nx * m->grid_ny;
    o->grid_cells = calloc(ncells + 1, sizeof *o->grid_cells);
    o->grid_stops = malloc((n ? n : 1) * sizeof *o->grid_stops);
    uint32_t *cell_of = malloc((b->stops.n ? b->stops.n : 1) * sizeof *cell_of);
    if (!o->grid_cells || !o->grid_stops || !cell_of) {
        free(cell_of);
        return fail_oom(b);
    }
    for (size_t i = 0; i < b->stops.n; i++) {
        const tb_stop *s = &b->stops.v[i];
        cell_of[i] = UINT32_MAX;
        if (s->location_type > 1 || isnan(s->lat)) continue;
        uint32_t cx = (uint32_t)floor((s->lon - lon0) / dlon), cy = (uint32_t)floor((s->lat - lat0) / dlat);
        if (cx >= m->grid_nx) cx = m->grid_nx - 1;
        if (cy >= m->grid_ny) cy = m->grid_ny - 1;
        cell_of[i] = cy * m->grid_nx + cx;
        o->grid_cells[cell_of[i] + 1]++;
    }
    for (size_t c = 0; c < ncells; c++) o->grid_cells[c + 1] += o->grid_cells[c];
    uint32_t *pos = malloc((ncells + 1) * sizeof *pos);
    if (!pos) {
        free(cell_of);
        return fail_oom(b);
    }
    memcpy(pos, o->grid_cells, (ncells + 1) * sizeof *pos);
    /* stops in id order within a cell, so ties in distance need no extra work */
    for (uint32_t r = 0; r < b->stops.n; r++) {
        uint32_t i = o->stop_by_id[r];
        if (cell_of[i] != UINT32_MAX) o->grid_stops[pos[cell_of[i]]++] = i;
    }
    free(pos);
    free(cell_of);
    o->ngrid_cells = ncells + 1;
    o->ngrid_stops = n;
    return 0;
}

/* ------------------------------------------------------------ service calendar and time */

static int build_services(tt_builder *b, tt_out *o)
{
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (size_t i = 0; i < b->calendars.n; i++) {
        if (b->calendars.v[i].start < lo) lo = b->calendars.v[i].start;
        if (b->calendars.v[i].end > hi) hi = b->calendars.v[i].end;
    }
    for (size_t i = 0; i < b->calendar_dates.n; i++) {
        if (b->calendar_dates.v[i].date < lo) lo = b->calendar_dates.v[i].date;
        if (b->calendar_dates.v[i].date > hi) hi = b->calendar_dates.v[i].date;
    }
    if (lo > hi) {
        snprintf(b->err, b->errlen, "calendar.txt/calendar_dates.txt: no service dates");
        return -1;
    }
    if (hi - lo > 366 * 50) {
        snprintf(b->err, b->errlen, "calendar.txt/calendar_dates.txt: service dates span more than 50 years");
        return -1;
    }
    uint32_t ndays = (uint32_t)(hi - lo + 1);
    uint32_t words = (ndays + 63) / 64;
    uint32_t nsvc = (uint32_t)b->services.n;
    o->meta.first_day = lo;
    o->meta.ndays = ndays;
    o->meta.service_words = words;
    o->services = calloc(nsvc, sizeof *o->services);
    o->service_bits = calloc((size_t)nsvc * words, sizeof *o->service_bits);
    if (!o->services || !o->service_bits) return fail_oom(b);
    for (uint32_t i = 0; i < nsvc; i++) o->services[i].id = b->services.v[i];
    for (size_t i = 0; i < b->calendars.n; i++) {
        const tb_calendar *c = &b->calendars.v[i];
        uint64_t *bits = o->service_bits + (size_t)c->service * words;
        for (int32_t d = c->start; d <= c->end; d++)
            if (c->weekdays & (1u << weekday_from_days(d))) bits[(d - lo) / 64] |= 1ull << ((d - lo) % 64);
    }
    for (int pass = 1; pass <= 2; pass++) {
        for (size_t i = 0; i < b->calendar_dates.n; i++) {
            const tb_calendar_date *c = &b->calendar_dates.v[i];
            if (c->type != pass) continue;
            uint64_t *bits = o->service_bits + (size_t)c->service * words;
            uint64_t bit = 1ull << ((c->date - lo) % 64);
            if (pass == 1) bits[(c->date - lo) / 64] |= bit;
            else bits[(c->date - lo) / 64] &= ~bit;
        }
    }
    return 0;
}

static int build_time(tt_builder *b, tt_out *o)
{
    uint32_t lookback = o->meta.max_secs / 86400 + 1;
    o->meta.lookback = lookback;
    o->ndaybase = (size_t)o->meta.ndays + lookback;
    o->daybase = malloc(o->ndaybase * sizeof *o->daybase);
    if (!o->daybase) return fail_oom(b);
    for (size_t i = 0; i < o->ndaybase; i++) {
        int64_t day = (int64_t)o->meta.first_day - lookback + (int64_t)i;
        o->daybase[i] = tz_local_to_instant(&b->zone, day * 86400 + 43200) - 43200;
    }
    /* UTC offset transitions over the covered instants, with a year's margin
     * either side so that "now" near the feed's range formats correctly */
    int64_t lo = o->daybase[0] - 366 * 86400LL;
    int64_t hi = o->daybase[o->ndaybase - 1] + o->meta.max_secs + 366 * 86400LL;
    int32_t off = tz_offset_at(&b->zone, lo);
    tt_tz_transition *t = TB_PUSH(o->tz);
    if (!t) return fail_oom(b);
    *t = (tt_tz_transition){INT64_MIN, off, 0};
    for (int64_t at = lo + 3600; at <= hi; at += 3600) {
        int32_t now = tz_offset_at(&b->zone, at);
        if (now == off) continue;
        int64_t a = at - 3600, z = at; /* offset(a) == off, offset(z) != off */
        while (z - a > 1) {
            int64_t mid = a + (z - a) / 2;
            if (tz_offset_at(&b->zone, mid) == off) a = mid;
            else z = mid;
        }
        t = TB_PUSH(o->tz);
        if (!t) return fail_oom(b);
        *t = (tt_tz_transition){z, now, 0};
        off = now;
    }
    return 0;
}

/* ------------------------------------------------------------ writing */

typedef struct section_src {
    const void *data;
    uint64_t size;
    uint32_t elem;
} section_src;

static int write_file(tt_builder *b, const char *path, const tt_out *o, const section_src *src, uint64_t *bytes)
{
    tt_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, TT_MAGIC, 8);
    h.format_version = TT_FORMAT_VERSION;
    h.byte_order = TT_BYTE_ORDER;
    h.header_size = sizeof h;
    h.nsections = TT_SEC_COUNT;
    uint64_t off = (sizeof h + TT_ALIGN - 1) / TT_ALIGN * TT_ALIGN;
    static const unsigned char zeros[TT_ALIGN];
    /* bytes between the header and the first section are zeros and covered by the crc */
    uint32_t crc = tt_crc32(tt_crc32_init(), zeros, off - sizeof h);
    for (int i = 0; i < TT_SEC_COUNT; i++) {
        h.sections[i] = (tt_section){(uint32_t)i, src[i].elem, off, src[i].size};
        crc = tt_crc32(crc, src[i].data, src[i].size);
        uint64_t end = off + src[i].size;
        uint64_t pad = (TT_ALIGN - end % TT_ALIGN) % TT_ALIGN;
        crc = tt_crc32(crc, zeros, pad);
        off = end + pad;
    }
    h.file_size = off;
    h.checksum = crc;
    (void)o;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(b->err, b->errlen, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    FILE *fp = fdopen(fd, "wb");
    if (!fp) {
        close(fd);
        snprintf(b->err, b->errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    setvbuf(fp, NULL, _IOFBF, 1 << 20);
    int ok = fwrite(&h, sizeof h, 1, fp) == 1;
    uint64_t pos = sizeof h;
    for (int i = 0; i < TT_SEC_COUNT && ok; i++) {
        uint64_t gap = h.sections[i].offset - pos;
        if (gap) ok = fwrite(zeros, 1, gap, fp) == gap;
        if (ok && src[i].size) ok = fwrite(src[i].data, 1, src[i].size, fp) == src[i].size;
        pos = h.sections[i].offset + src[i].size;
    }
    if (ok && pos < h.file_size) ok = fwrite(zeros, 1, h.file_size - pos, fp) == h.file_size - pos;
    if (ok) ok = fflush(fp) == 0 && fsync(fileno(fp)) == 0;
    if (fclose(fp) != 0) ok = 0;
    if (!ok) {
        snprintf(b->err, b->errlen, "%s: write failed: %s", path, strerror(errno));
        unlink(path);
        return -1;
    }
    *bytes = h.file_size;
    return 0;
}

static void out_free(tt_out *o)
{
    free(o->stops);
    free(o->stop_by_id);
    free(o->children);
    free(o->stop_routes);
    free(o->grid_cells);
    free(o->grid_stops);
    free(o->routes);
    free(o->route_by_id);
    free(o->trips);
    free(o->trip_by_id);
    free(o->services);
    free(o->service_bits);
    free(o->patterns.v);
    free(o->pattern_stops.v);
    free(o->profiles.v);
    free(o->groups.v);
    free(o->runs.v);
    free(o->visits);
    free(o->daybase);
    free(o->tz.v);
}

/* Every count read from the feed fits the format's uint32_t fields (checked
 * before layout_and_write narrows them). */
static int check_read_counts(tt_builder *b)
{
    const struct { size_t n; const char *where, *what; } c[] = {
        {b->stops.n, "stops.txt", "stops"},
        {b->routes.n, "routes.txt", "routes"},
        {b->trips.n, "trips.txt", "trips"},
        {b->stop_times.n, "stop_times.txt", "stop times"},
        {b->services.n, "calendar.txt/calendar_dates.txt", "services"},
        {b->agencies.n, "agency.txt", "agencies"},
        {b->frequencies.n, "frequencies.txt", "frequencies"},
        {b->strings_len, "the feed", "bytes of strings"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        if (tt_check_count(c[i].n, TT_MAX_COUNT, c[i].where, c[i].what, b->err, b->errlen) != 0)
            return -1;
    return 0;
}

/* The same for what the build derived (patterns, runs, visits...). */
static int check_built_counts(tt_builder *b, const tt_out *o)
{
    const struct { size_t n; const char *what; } c[] = {
        {o->runs.n, "runs"},
        {o->patterns.n, "patterns"},
        {o->pattern_stops.n, "pattern stops"},
        {o->profiles.n, "time profile entries"},
        {o->groups.n, "trip groups"},
        {o->nvisits, "stop visits"},
        {o->nchildren, "child stops"},
        {o->nstop_routes, "stop routes"},
        {o->ngrid_stops, "grid entries"},
        {o->tz.n, "time zone transitions"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        if (tt_check_count(c[i].n, TT_MAX_COUNT, "timetable.bin", c[i].what, b->err, b->errlen) != 0)
            return -1;
    return 0;
}

static int layout_and_write(tt_builder *b, const char *path)
{
    tt_out o;
    memset(&o, 0, sizeof o);
    int rc = -1;
    uint32_t nstops = (uint32_t)b->stops.n, nroutes = (uint32_t)b->routes.n, ntrips = (uint32_t)b->trips.n;
    uint32_t *keys = malloc(((size_t)(nstops > ntrips ? (nstops > nroutes ? nstops : nroutes) : (ntrips > nroutes ? ntrips : nroutes)) + 1) * sizeof *keys);
    uint32_t *trip_rank = malloc(((size_t)ntrips + 1) * sizeof *trip_rank);
    uint32_t *route_rank = malloc(((size_t)nroutes + 1) * sizeof *route_rank);
    uint32_t *order = malloc(((size_t)nroutes + 1) * sizeof *order);
    o.stops = calloc((size_t)nstops + 1, sizeof *o.stops);
    o.stop_by_id = malloc(((size_t)nstops + 1) * sizeof *o.stop_by_id);
    o.routes = calloc((size_t)nroutes + 1, sizeof *o.routes);
    o.route_by_id = malloc(((size_t)nroutes + 1) * sizeof *o.route_by_id);
    o.trip_by_id = malloc(((size_t)ntrips + 1) * sizeof *o.trip_by_id);
    run_tmp *runs = NULL;
    size_t nruns = 0;
    if (!keys || !trip_rank || !route_rank || !order || !o.stops || !o.stop_by_id || !o.routes || !o.route_by_id ||
        !o.trip_by_id) {
        fail_oom(b);
        goto out;
    }
    double t0 = now_seconds();
    /* id orders and ranks */
    for (uint32_t i = 0; i < nstops; i++) keys[i] = b->stops.v[i].id;
    sort_by_string(b->strings, keys, nstops, o.stop_by_id);
    for (uint32_t i = 0; i < nroutes; i++) keys[i] = b->routes.v[i].id;
    sort_by_string(b->strings, keys, nroutes, o.route_by_id);
    for (uint32_t i = 0; i < nroutes; i++) keys[i] = b->routes.v[i].short_name;
    sort_by_string(b->strings, keys, nroutes, order);
    for (uint32_t r = 0, rank = 0; r < nroutes; r++) {
        if (r && strcmp(tb_str(b, keys[order[r]]), tb_str(b, keys[order[r - 1]])) != 0) rank = r;
        route_rank[order[r]] = rank;
    }
    for (uint32_t i = 0; i < ntrips; i++) keys[i] = b->trips.v[i].id;
    sort_by_string(b->strings, keys, ntrips, o.trip_by_id);
    for (uint32_t r = 0; r < ntrips; r++) trip_rank[o.trip_by_id[r]] = r;

    if (build_trips(b, &o, trip_rank, route_rank, &runs, &nruns)) goto out;
    if (nruns == 0) {
        snprintf(b->err, b->errlen, "stop_times.txt: no trip has usable stop times");
        goto out;
    }
    if (build_groups(b, &o, runs, nruns)) goto out;

    for (uint32_t i = 0; i < nstops; i++) {
        const tb_stop *s = &b->stops.v[i];
        tt_stop *d = &o.stops[i];
        d->lat = s->lat;
        d->lon = s->lon;
        d->id = s->id;
        d->name = s->name;
        d->parent = s->parent;
        d->location_type = s->location_type;
        d->code = s->code;
        d->desc = s->desc;
        d->platform_code = s->platform_code;
        d->wheelchair_boarding = s->wheelchair_boarding;
    }
    for (uint32_t r = 0; r < nstops; r++) o.stops[o.stop_by_id[r]].id_rank = r;
    for (uint32_t i = 0; i < nroutes; i++) {
        o.routes[i] = b->routes.v[i];
        o.routes[i].short_name_rank = route_rank[i];
    }
    o.trips = calloc((size_t)ntrips + 1, sizeof *o.trips);
    if (!o.trips) {
        fail_oom(b);
        goto out;
    }
    for (uint32_t i = 0; i < ntrips; i++) {
        const tb_trip *s = &b->trips.v[i];
        tt_trip *d = &o.trips[i];
        d->id = s->id;
        d->service_id_str = s->service_id_str;
        d->headsign = s->headsign;
        d->shape_id = s->shape_id;
        d->route = s->route;
        d->service = s->service;
        d->pattern = s->valid ? s->pattern : TT_NONE;
        d->dep_profile = s->valid ? s->dep_profile : TT_NONE;
        d->arr_profile = s->valid ? s->arr_profile : TT_NONE;
        d->start = s->start;
        d->id_rank = trip_rank[i];
        d->direction_id = s->direction_id;
        d->frequency_based = s->frequency_based;
    }
    if (build_visits(b, &o) || build_stop_routes(b, &o) || build_children(b, &o) || build_grid(b, &o) ||
        build_services(b, &o) || build_time(b, &o))
        goto out;

    if (check_built_counts(b, &o)) goto out;

    tt_meta *m = &o.meta;
    m->tz_name = b->tz_name;
    m->nstops = nstops;
    m->nroutes = nroutes;
    m->ntrips = ntrips;
    m->nruns = (uint32_t)o.runs.n;
    m->npatterns = (uint32_t)o.patterns.n;
    m->ngroups = (uint32_t)o.groups.n;
    m->nservices = (uint32_t)b->services.n;
    m->nagencies = (uint32_t)b->agencies.n;
    m->ntz = (uint32_t)o.tz.n;
    m->imported_at = (int64_t)time(NULL);
    b->stats->build_seconds = now_seconds() - t0;

    double t1 = now_seconds();
    section_src src[TT_SEC_COUNT] = {
        [TT_SEC_META] = {&o.meta, sizeof o.meta, sizeof o.meta},
        [TT_SEC_STRINGS] = {b->strings, b->strings_len, 1},
        [TT_SEC_STOPS] = {o.stops, (uint64_t)nstops * sizeof(tt_stop), sizeof(tt_stop)},
        [TT_SEC_STOP_BY_ID] = {o.stop_by_id, (uint64_t)nstops * 4, 4},
        [TT_SEC_STOP_CHILDREN] = {o.children, o.nchildren * 4, 4},
        [TT_SEC_STOP_ROUTES] = {o.stop_routes, o.nstop_routes * 4, 4},
        [TT_SEC_GRID_CELLS] = {o.grid_cells, o.ngrid_cells * 4, 4},
        [TT_SEC_GRID_STOPS] = {o.grid_stops, o.ngrid_stops * 4, 4},
        [TT_SEC_ROUTES] = {o.routes, (uint64_t)nroutes * sizeof(tt_route), sizeof(tt_route)},
        [TT_SEC_ROUTE_BY_ID] = {o.route_by_id, (uint64_t)nroutes * 4, 4},
        [TT_SEC_AGENCIES] = {b->agencies.v, b->agencies.n * sizeof(tt_agency), sizeof(tt_agency)},
        [TT_SEC_TRIPS] = {o.trips, (uint64_t)ntrips * sizeof(tt_trip), sizeof(tt_trip)},
        [TT_SEC_TRIP_BY_ID] = {o.trip_by_id, (uint64_t)ntrips * 4, 4},
        [TT_SEC_SERVICES] = {o.services, b->services.n * sizeof(tt_service), sizeof(tt_service)},
        [TT_SEC_SERVICE_BITS] = {o.service_bits, b->services.n * (uint64_t)m->service_words * 8, 8},
        [TT_SEC_PATTERNS] = {o.patterns.v, o.patterns.n * sizeof(tt_pattern), sizeof(tt_pattern)},
        [TT_SEC_PATTERN_STOPS] = {o.pattern_stops.v, o.pattern_stops.n * sizeof(tt_pattern_stop),
                                  sizeof(tt_pattern_stop)},
        [TT_SEC_PROFILES] = {o.profiles.v, o.profiles.n * 4, 4},
        [TT_SEC_GROUPS] = {o.groups.v, o.groups.n * sizeof(tt_group), sizeof(tt_group)},
        [TT_SEC_RUNS] = {o.runs.v, o.runs.n * sizeof(tt_run), sizeof(tt_run)},
        [TT_SEC_VISITS] = {o.visits, o.nvisits * sizeof(tt_visit), sizeof(tt_visit)},
        [TT_SEC_DAYBASE] = {o.daybase, o.ndaybase * 8, 8},
        [TT_SEC_TZ] = {o.tz.v, o.tz.n * sizeof(tt_tz_transition), sizeof(tt_tz_transition)},
    };
    if (write_file(b, path, &o, src, &b->stats->bytes)) goto out;
    b->stats->write_seconds = now_seconds() - t1;
    timetable_stats *st = b->stats;
    st->nstops = nstops;
    st->nroutes = nroutes;
    st->ntrips = ntrips;
    st->nruns = m->nruns;
    st->npatterns = m->npatterns;
    st->ngroups = m->ngroups;
    st->nservices = m->nservices;
    rc = 0;
out:
    free(keys);
    free(trip_rank);
    free(route_rank);
    free(order);
    free(runs);
    out_free(&o);
    return rc;
}

int timetable_build(const feed_t *feed, const char *path, const timetable_options *opt, diag *d, timetable_stats *st,
                    char *err, size_t errlen)
{
    static const timetable_options no_options;
    tt_builder b;
    memset(&b, 0, sizeof b);
    b.opt = opt ? opt : &no_options;
    memset(st, 0, sizeof *st);
    b.feed = feed;
    b.diag = d;
    b.stats = st;
    b.err = err;
    b.errlen = errlen;
    err[0] = 0;
    double t0 = now_seconds();
    int rc = tb_read_feed(&b);
    st->parse_seconds = now_seconds() - t0;
    if (rc == 0) rc = check_read_counts(&b);
    if (rc == 0) rc = layout_and_write(&b, path);
    tb_free(&b);
    return rc;
}
