/* timetable_trips.c — trips folded into patterns, time profiles and run
 * groups, for timetable.bin.
 *
 * Why it exists: this is the book's "Stop Time Import" made exact. Rows are
 * grouped per trip with an O(n) counting sort, non-timepoints interpolated,
 * trips folded into shared patterns and time profiles (2.4M rows become a few
 * thousand arrays), and runs grouped so that each group's departures are
 * sorted at every stop, which is what lets a query binary-search a group.
 */
#include "import/timetable_write_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transit/gtfs.h"

static int cmp_run_tmp(const void *a, const void *b)
{
    const run_tmp *x = a, *y = b;
    if (x->pattern != y->pattern) return x->pattern < y->pattern ? -1 : 1;
    if (x->days != y->days) return x->days < y->days ? -1 : 1;
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

typedef TB_VEC(run_tmp) run_vec;

/* The state of tt_build_trips while it goes through the trips. */
typedef struct trip_fold {
    tt_builder *b;
    tt_out *o;
    const uint32_t *trip_rank, *route_rank;
    uint32_t *row_first, *rows;     /* stop_times indices grouped by trip */
    uint32_t *freq_first, *freqs;   /* frequencies indices grouped by trip */
    strmap patterns, profiles;
    trip_scratch s;
    run_vec runs;
    uint32_t max_secs;              /* the latest time any run reaches */
    uint64_t kept;                  /* stop times of the usable trips */
} trip_fold;

/* Groups the n elements of `base` (each `stride` bytes, with a uint32_t key
 * below nkeys at `key_offset`) by key with a stable counting sort, O(n +
 * nkeys): key k's element indices are (*order)[(*first)[k] .. (*first)[k+1]),
 * in array order. 0, or -1 when out of memory. */
static int group_by_key(const void *base, size_t n, size_t stride, size_t key_offset,
                        uint32_t nkeys, uint32_t **first, uint32_t **order)
{
    const char *bytes = base;   /* NULL when n is 0: no offset is applied then */
    uint32_t *f = calloc((size_t)nkeys + 1, sizeof *f);
    uint32_t *o = malloc((n ? n : 1) * sizeof *o);
    uint32_t *pos = malloc(((size_t)nkeys + 1) * sizeof *pos);
    *first = f;
    *order = o;
    if (!f || !o || !pos) {
        free(pos);
        return -1;
    }
    uint32_t key;
    for (size_t i = 0; i < n; i++) {
        memcpy(&key, bytes + i * stride + key_offset, sizeof key);
        f[key + 1]++;
    }
    for (uint32_t k = 0; k < nkeys; k++) f[k + 1] += f[k];
    memcpy(pos, f, ((size_t)nkeys + 1) * sizeof *pos);
    for (size_t i = 0; i < n; i++) {
        memcpy(&key, bytes + i * stride + key_offset, sizeof key);
        o[pos[key]++] = (uint32_t)i;
    }
    free(pos);
    return 0;
}

/* Sorts the trip's rows (cnt of them at slice) by stop_sequence, dropping a
 * repeated stop_sequence (counted); returns how many are left. */
static uint32_t order_trip_rows(tt_builder *b, const tb_trip *trip, uint32_t *slice, uint32_t cnt)
{
    /* insertion sort: rows are nearly always in order */
    for (uint32_t i = 1; i < cnt; i++) {
        uint32_t v = slice[i], key = b->stop_times.v[v].seq;
        uint32_t j = i;
        while (j > 0 && b->stop_times.v[slice[j - 1]].seq > key) {
            slice[j] = slice[j - 1];
            j--;
        }
        slice[j] = v;
    }
    uint32_t len = 0;
    for (uint32_t i = 0; i < cnt; i++) {
        if (len && b->stop_times.v[slice[len - 1]].seq == b->stop_times.v[slice[i]].seq) {
            diag_add(b->diag, DIAG_BAD_SEQUENCE, "stop_times.txt", 0, "trip '%s': duplicate stop_sequence %u",
                     tb_str(b, trip->id), b->stop_times.v[slice[i]].seq);
            continue;
        }
        slice[len++] = slice[i];
    }
    return len;
}

/* The times of the trip's len ordered rows into s->arr and s->dep, the
 * untimed ones interpolated. 1 when the trip is usable, 0 when it is not
 * (counted), -1 when out of memory. Times that go backwards are counted
 * but kept. */
static int load_trip_times(tt_builder *b, const tb_trip *trip, const uint32_t *slice, uint32_t len,
                           trip_scratch *s)
{
    if (len == 0) {
        diag_add(b->diag, DIAG_UNTIMED_TRIP, "trips.txt", 0, "trip '%s' has no stop times", tb_str(b, trip->id));
        return 0;
    }
    if (len < 2) {
        diag_add(b->diag, DIAG_UNTIMED_TRIP, "stop_times.txt", 0, "trip '%s' has only one stop time",
                 tb_str(b, trip->id));
        return 0;
    }
    if (scratch_reserve(s, len)) return -1;
    for (uint32_t k = 0; k < len; k++) {
        const tb_stop_time *st = &b->stop_times.v[slice[k]];
        s->arr[k] = st->arr;
        s->dep[k] = st->dep;
        s->dist[k] = b->have_dist ? b->dists.v[slice[k]] : NAN;
    }
    if (s->dep[0] == GTFS_TIME_NONE || s->dep[len - 1] == GTFS_TIME_NONE) {
        diag_add(b->diag, DIAG_UNTIMED_TRIP, "stop_times.txt", 0,
                 "trip '%s': the first and last stop must have times", tb_str(b, trip->id));
        return 0;
    }
    interpolate(s->arr, s->dep, b->have_dist ? s->dist : NULL, len);
    for (uint32_t k = 1; k < len; k++) {
        if (s->arr[k] < s->dep[k - 1] || s->dep[k] < s->arr[k]) {
            diag_add(b->diag, DIAG_BAD_SEQUENCE, "stop_times.txt", 0,
                     "trip '%s': times go backwards at stop_sequence %u", tb_str(b, trip->id),
                     b->stop_times.v[slice[k]].seq);
            break;
        }
    }
    return 1;
}

/* The trip's pattern (its route, then stop, stop_sequence, pickup and
 * drop-off per position), added to o->patterns on first sight. Its index,
 * or TT_NONE when out of memory. */
static uint32_t intern_pattern(trip_fold *f, const tb_trip *trip, const uint32_t *slice, uint32_t len)
{
    tt_out *o = f->o;
    uint32_t *key = f->s.key;
    key[0] = trip->route;
    for (uint32_t k = 0; k < len; k++) {
        const tb_stop_time *st = &f->b->stop_times.v[slice[k]];
        key[1 + 4 * k] = st->stop;
        key[2 + 4 * k] = st->seq;
        key[3 + 4 * k] = st->pickup;
        key[4 + 4 * k] = st->drop_off;
    }
    int ins;
    uint32_t pe = strmap_put(&f->patterns, key, (1 + 4 * (size_t)len) * sizeof(uint32_t),
                             (uint32_t)o->patterns.n, &ins);
    if (pe == UINT32_MAX) return TT_NONE;
    if (ins) {
        tt_pattern *p = TB_PUSH(o->patterns);
        if (!p) return TT_NONE;
        p->first = (uint32_t)o->pattern_stops.n;
        p->len = len;
        p->route = trip->route;
        p->pad = 0;
        for (uint32_t k = 0; k < len; k++) {
            tt_pattern_stop *ps = TB_PUSH(o->pattern_stops);
            if (!ps) return TT_NONE;
            ps->stop = key[1 + 4 * k];
            ps->stop_sequence = key[2 + 4 * k];
            ps->pickup_type = (uint8_t)key[3 + 4 * k];
            ps->drop_off_type = (uint8_t)key[4 + 4 * k];
            ps->pad[0] = ps->pad[1] = 0;
        }
    }
    return strmap_value(&f->patterns, pe);
}

/* The trip's departure and arrival profiles: offsets from its first
 * departure, one profile when they are the same. 0 or -1 (out of memory). */
static int intern_profiles(trip_fold *f, tb_trip *trip, uint32_t len)
{
    trip_scratch *s = &f->s;
    uint32_t start = s->dep[0];
    for (uint32_t k = 0; k < len; k++) s->prof[k] = (int32_t)(s->dep[k] - start);
    trip->dep_profile = intern_profile(f->o, &f->profiles, s->prof, len);
    bool same = true;
    for (uint32_t k = 0; k < len; k++) {
        s->prof[k] = (int32_t)s->arr[k] - (int32_t)start;
        if (s->arr[k] != s->dep[k]) same = false;
    }
    trip->arr_profile = same ? trip->dep_profile : intern_profile(f->o, &f->profiles, s->prof, len);
    return trip->dep_profile == TT_NONE || trip->arr_profile == TT_NONE ? -1 : 0;
}

/* The runs of trip t: one at its start, or one per headway of each of its
 * frequencies.txt rows. trip_max is its latest time. 0 or -1. */
static int add_runs(trip_fold *f, uint32_t t, tb_trip *trip, uint32_t trip_max)
{
    const tb_frequency *fv = f->b->frequencies.v;
    uint32_t f0 = f->freq_first[t], f1 = f->freq_first[t + 1];
    if (f0 == f1) {
        run_tmp *r = TB_PUSH(f->runs);
        if (!r) return -1;
        *r = (run_tmp){trip->pattern, f->o->service_days[trip->service], trip->start, t, f->trip_rank[t], trip->dep_profile,
                       f->route_rank[trip->route], 0};
        if (trip_max > f->max_secs) f->max_secs = trip_max;
        return 0;
    }
    trip->frequency_based = true;
    for (uint32_t fi = f0; fi < f1; fi++) {
        const tb_frequency *fq = &fv[f->freqs[fi]];
        for (uint32_t st = fq->start; st < fq->end; st += fq->headway) {
            run_tmp *r = TB_PUSH(f->runs);
            if (!r) return -1;
            *r = (run_tmp){trip->pattern, f->o->service_days[trip->service], st, t, f->trip_rank[t], trip->dep_profile,
                           f->route_rank[trip->route], 0};
            uint32_t m = st + (trip_max - trip->start);
            if (m > f->max_secs) f->max_secs = m;
        }
    }
    return 0;
}

/* Folds trip t: its rows ordered and timed, its pattern, profiles and runs.
 * A trip that cannot be used is counted and left invalid. 0 or -1. */
static int fold_trip(trip_fold *f, uint32_t t)
{
    tb_trip *trip = &f->b->trips.v[t];
    uint32_t *slice = f->rows + f->row_first[t];
    trip->valid = false;
    uint32_t len = order_trip_rows(f->b, trip, slice, f->row_first[t + 1] - f->row_first[t]);
    int usable = load_trip_times(f->b, trip, slice, len, &f->s);
    if (usable <= 0) return usable;
    trip->pattern = intern_pattern(f, trip, slice, len);
    if (trip->pattern == TT_NONE || intern_profiles(f, trip, len)) return -1;
    trip->start = f->s.dep[0];
    trip->valid = true;
    f->kept += len;
    uint32_t trip_max = 0;
    for (uint32_t k = 0; k < len; k++) {
        if (f->s.arr[k] > trip_max) trip_max = f->s.arr[k];
        if (f->s.dep[k] > trip_max) trip_max = f->s.dep[k];
    }
    return add_runs(f, t, trip, trip_max);
}

int tt_build_trips(tt_builder *b, tt_out *o, const uint32_t *trip_rank, const uint32_t *route_rank,
                   run_tmp **runs_out, size_t *nruns_out)
{
    uint32_t ntrips = (uint32_t)b->trips.n;
    trip_fold f = {.b = b, .o = o, .trip_rank = trip_rank, .route_rank = route_rank};
    int rc = -1;
    if (group_by_key(b->stop_times.v, b->stop_times.n, sizeof *b->stop_times.v, offsetof(tb_stop_time, trip),
                     ntrips, &f.row_first, &f.rows) ||
        strmap_init(&f.patterns, 1024) || strmap_init(&f.profiles, 1 << 14) ||
        group_by_key(b->frequencies.v, b->frequencies.n, sizeof *b->frequencies.v,
                     offsetof(tb_frequency, trip), ntrips, &f.freq_first, &f.freqs))
        goto out;
    for (uint32_t t = 0; t < ntrips; t++)
        if (fold_trip(&f, t)) goto out;
    o->meta.max_secs = f.max_secs;
    o->meta.stop_times = f.kept;
    b->stats->stop_times_kept = f.kept;
    *runs_out = f.runs.v;
    *nruns_out = f.runs.n;
    f.runs.v = NULL;
    rc = 0;
out:
    if (rc != 0) tt_fail_oom(b);
    free(f.runs.v);
    free(f.row_first);
    free(f.rows);
    free(f.freq_first);
    free(f.freqs);
    free(f.s.arr);
    free(f.s.dep);
    free(f.s.dist);
    free(f.s.key);
    free(f.s.prof);
    strmap_free(&f.patterns);
    strmap_free(&f.profiles);
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

int tt_build_groups(tt_builder *b, tt_out *o, run_tmp *runs, size_t nruns)
{
    qsort(runs, nruns, sizeof *runs, cmp_run_tmp);
    uint32_t *chain_last = NULL; /* per open chain of the current key: last run index */
    uint32_t *chain_id = NULL;
    size_t chain_cap = 0;
    uint32_t next_chain = 0;
    int rc = -1;
    for (size_t i = 0; i < nruns;) {
        size_t j = i;
        while (j < nruns && runs[j].pattern == runs[i].pattern && runs[j].days == runs[i].days) j++;
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
        gr->days = runs[r].days;
        gr->route_rank = runs[r].route_rank;
        gr->pad = 0;
        o->runs.v[gfirst[g]++] = (tt_run){runs[r].start, runs[r].dep_profile, runs[r].trip, runs[r].trip_rank};
    }
    free(gfirst);
    o->runs.n = nruns;
    o->groups.n = ngroups;
    rc = 0;
out:
    if (rc) tt_fail_oom(b);
    free(chain_last);
    free(chain_id);
    return rc;
}
