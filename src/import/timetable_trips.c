/* timetable_trips.c — trips folded into patterns, time profiles and run
 * groups, for timetable.bin.
 *
 * Why it exists: this is the book's "Stop Time Import" made exact. Each
 * trip's rows were folded into a pattern and time profiles while they were
 * read (trip_stream.c; 2.4M rows become a few thousand arrays); here the
 * patterns and profiles are numbered in trip order, each trip gets its runs,
 * and runs are grouped so that each group's departures are sorted at every
 * stop, which is what lets a query binary-search a group.
 */
#include "import/timetable_write_internal.h"
#include "import/stop_times_spill.h"
#include "import/trip_stream.h"

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

typedef TB_VEC(run_tmp) run_vec;

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

/* The state of tt_build_trips while it goes through the trips in order. */
typedef struct trip_fold {
    tt_builder *b;
    tt_out *o;
    const trip_stream *s;
    const uint32_t *trip_rank, *route_rank;
    uint32_t *freq_first, *freqs;   /* frequencies indices grouped by trip */
    uint32_t *pattern_of, *profile_of; /* local pattern / profile → its number here, TT_NONE until met */
    run_vec runs;
    uint32_t max_secs;              /* the latest time any run reaches */
    uint64_t kept;                  /* stop times of the usable trips */
} trip_fold;

/* The rows held of a feed not grouped by trip, folded trip by trip as a
 * grouped feed's are while read; the rows are freed after. 0 or -1. */
static int fold_held_rows(tt_builder *b, trip_stream *s)
{
    uint32_t ntrips = (uint32_t)b->trips.n;
    uint32_t *first = NULL, *order = NULL;
    TB_VEC(tb_stop_time) rows = {0};
    TB_VEC(double) dists = {0};
    int rc = -1;
    if (group_by_key(b->stop_times.v, b->stop_times.n, sizeof *b->stop_times.v, offsetof(tb_stop_time, trip), ntrips,
                     &first, &order))
        goto out;
    for (uint32_t t = 0; t < ntrips; t++) {
        uint32_t cnt = first[t + 1] - first[t];
        if (cnt == 0) continue;
        if (tb_grow((void **)&rows.v, &rows.cap, sizeof *rows.v, cnt) ||
            (b->have_dist && tb_grow((void **)&dists.v, &dists.cap, sizeof *dists.v, cnt)))
            goto out;
        for (uint32_t k = 0; k < cnt; k++) {
            uint32_t r = order[first[t] + k];
            rows.v[k] = b->stop_times.v[r];
            if (b->have_dist) dists.v[k] = b->dists.v[r];
        }
        if (ts_fold_trip(b, s, t, rows.v, b->have_dist ? dists.v : NULL, cnt)) goto out;
    }
    free(b->stop_times.v);
    free(b->dists.v);
    memset(&b->stop_times, 0, sizeof b->stop_times);
    memset(&b->dists, 0, sizeof b->dists);
    rc = 0;
out:
    free(first);
    free(order);
    free(rows.v);
    free(dists.v);
    return rc;
}

static int cmp_event_trip(const void *x, const void *y)
{
    const ts_event *a = x, *b = y;
    if (a->trip != b->trip) return a->trip < b->trip ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Reports trip t's problems, as they were found. */
static void report_events(tt_builder *b, const ts_event *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *id = tb_str(b, b->trips.v[e[i].trip].id);
        switch (e[i].code) {
        case TS_DUPLICATE_SEQUENCE:
            diag_add(b->diag, DIAG_BAD_SEQUENCE, "stop_times.txt", 0, "trip '%s': duplicate stop_sequence %u", id,
                     e[i].seq);
            break;
        case TS_ONE_STOP_TIME:
            diag_add(b->diag, DIAG_UNTIMED_TRIP, "stop_times.txt", 0, "trip '%s' has only one stop time", id);
            break;
        case TS_UNTIMED_ENDS:
            diag_add(b->diag, DIAG_UNTIMED_TRIP, "stop_times.txt", 0,
                     "trip '%s': the first and last stop must have times", id);
            break;
        default:
            diag_add(b->diag, DIAG_BAD_SEQUENCE, "stop_times.txt", 0,
                     "trip '%s': times go backwards at stop_sequence %u", id, e[i].seq);
            break;
        }
    }
}

/* The number in o of local pattern p, copied there on first sight; TT_NONE
 * when out of memory. */
static uint32_t number_pattern(trip_fold *f, uint32_t p)
{
    if (f->pattern_of[p] != TT_NONE) return f->pattern_of[p];
    tt_out *o = f->o;
    uint32_t len = ts_pattern_len(f->s, p);
    const char *key = ts_pattern_key(f->s, p);
    uint32_t route;
    memcpy(&route, key, sizeof route);
    tt_pattern *pt = TB_PUSH(o->patterns);
    if (!pt) return TT_NONE;
    pt->first = (uint32_t)o->pattern_stops.n;
    pt->len = len;
    pt->route = route;
    pt->pad = 0;
    for (uint32_t k = 0; k < len; k++) {
        uint32_t w[4];
        memcpy(w, key + (1 + 4 * (size_t)k) * sizeof(uint32_t), sizeof w);
        tt_pattern_stop *ps = TB_PUSH(o->pattern_stops);
        if (!ps) return TT_NONE;
        ps->stop = w[0];
        ps->stop_sequence = w[1];
        ps->pickup_type = (uint8_t)w[2];
        ps->drop_off_type = (uint8_t)w[3];
        ps->pad[0] = ps->pad[1] = 0;
    }
    return f->pattern_of[p] = (uint32_t)(o->patterns.n - 1);
}

/* The offset in o->profiles of local profile p, copied there on first
 * sight; TT_NONE when out of memory. */
static uint32_t number_profile(trip_fold *f, uint32_t p)
{
    if (f->profile_of[p] != TT_NONE) return f->profile_of[p];
    tt_out *o = f->o;
    uint32_t len = ts_profile_len(f->s, p);
    if (o->profiles.n + len > o->profiles.cap &&
        tb_grow((void **)&o->profiles.v, &o->profiles.cap, sizeof(uint32_t), o->profiles.n + len))
        return TT_NONE;
    memcpy(o->profiles.v + o->profiles.n, ts_profile(f->s, p), len * sizeof(uint32_t));
    f->profile_of[p] = (uint32_t)o->profiles.n;
    o->profiles.n += len;
    return f->profile_of[p];
}

/* The runs of trip t, whose latest time is trip_max: one at its start, or
 * one per headway of each of its frequencies.txt rows. 0 or -1. */
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

/* Trip t, folded while read: its problems reported, its pattern and
 * profiles numbered in trip order, its runs. 0 or -1. */
static int number_trip(trip_fold *f, uint32_t t)
{
    tb_trip *trip = &f->b->trips.v[t];
    if (trip->fold != TS_FOLDED) {
        trip->valid = false;
        diag_add(f->b->diag, DIAG_UNTIMED_TRIP, "trips.txt", 0, "trip '%s' has no stop times", tb_str(f->b, trip->id));
        return 0;
    }
    if (!trip->valid) return 0;
    uint32_t len = ts_pattern_len(f->s, trip->pattern);
    uint32_t latest = ts_trip_latest(f->s, trip);   /* from its local profiles, before they are numbered */
    trip->pattern = number_pattern(f, trip->pattern);
    uint32_t dep = number_profile(f, trip->dep_profile);
    trip->arr_profile = trip->arr_profile == trip->dep_profile ? dep : number_profile(f, trip->arr_profile);
    trip->dep_profile = dep;
    if (trip->pattern == TT_NONE || trip->dep_profile == TT_NONE || trip->arr_profile == TT_NONE) return -1;
    f->kept += len;
    return add_runs(f, t, trip, latest);
}

int tt_build_trips(tt_builder *b, tt_out *o, const uint32_t *trip_rank, const uint32_t *route_rank,
                   run_tmp **runs_out, size_t *nruns_out)
{
    uint32_t ntrips = (uint32_t)b->trips.n;
    trip_stream *s = b->stream;
    trip_fold f = {.b = b, .o = o, .s = s, .trip_rank = trip_rank, .route_rank = route_rank};
    int rc = -1;
    if (b->hold_rows && (sts_spilled(b) ? sts_merge_fold(b, s) : fold_held_rows(b, s))) {
        if (b->err[0]) return -1;   /* the runs' I/O, said so */
        goto out;
    }
    f.pattern_of = malloc(((size_t)s->patterns.count + 1) * sizeof *f.pattern_of);
    f.profile_of = malloc(((size_t)s->profiles.count + 1) * sizeof *f.profile_of);
    if (!f.pattern_of || !f.profile_of ||
        group_by_key(b->frequencies.v, b->frequencies.n, sizeof *b->frequencies.v, offsetof(tb_frequency, trip), ntrips,
                     &f.freq_first, &f.freqs))
        goto out;
    memset(f.pattern_of, 0xff, ((size_t)s->patterns.count + 1) * sizeof *f.pattern_of);
    memset(f.profile_of, 0xff, ((size_t)s->profiles.count + 1) * sizeof *f.profile_of);
    if (s->events.n) qsort(s->events.v, s->events.n, sizeof *s->events.v, cmp_event_trip);
    size_t ev = 0;
    for (uint32_t t = 0; t < ntrips; t++) {
        size_t e0 = ev;
        while (ev < s->events.n && s->events.v[ev].trip == t) ev++;
        if (ev > e0) report_events(b, s->events.v + e0, ev - e0);
        if (number_trip(&f, t)) goto out;
    }
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
    free(f.freq_first);
    free(f.freqs);
    free(f.pattern_of);
    free(f.profile_of);
    ts_free(s);     /* copied into o: the local patterns and profiles go */
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
