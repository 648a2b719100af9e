/* trip_stream.c — stop_times folded trip by trip while they are read (see
 * trip_stream.h): each trip's rows ordered by stop_sequence, untimed ones
 * interpolated, and the trip reduced to a local pattern, time profiles, its
 * start and its latest time, so that its raw rows can be forgotten.
 */
#include "import/trip_stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "transit/gtfs.h"

int ts_init(trip_stream *s)
{
    memset(s, 0, sizeof *s);
    s->open = TT_NONE;
    if (strmap_init(&s->patterns, 1024) || strmap_init(&s->profiles, 1 << 14)) {
        ts_free(s);
        return -1;
    }
    s->ready = true;
    return 0;
}

void ts_free(trip_stream *s)
{
    free(s->rows.v);
    free(s->dists.v);
    free(s->events.v);
    free(s->profile_max.v);
    free(s->order);
    free(s->arr);
    free(s->dep);
    free(s->key);
    free(s->dist);
    free(s->prof);
    strmap_free(&s->patterns);
    strmap_free(&s->profiles);
    memset(s, 0, sizeof *s);
    s->open = TT_NONE;
}

int ts_reset(trip_stream *s)
{
    ts_free(s);
    return ts_init(s);
}

static int reserve(trip_stream *s, uint32_t len)
{
    if (len <= s->cap) return 0;
    uint32_t c = s->cap ? s->cap : 64;
    while (c < len) c *= 2;
    uint32_t *order = realloc(s->order, c * sizeof *order);
    if (!order) return -1;
    s->order = order;
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

static int add_event(trip_stream *s, uint32_t trip, uint32_t code, uint32_t seq)
{
    ts_event *e = TB_PUSH(s->events);
    if (!e) return -1;
    *e = (ts_event){trip, code, seq, (uint32_t)(s->events.n - 1)};
    return 0;
}

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0)) ? q - 1 : q;
}

/* Fills empty times between timed positions: from the departure of the
 * timed stop before to the arrival of the timed stop after, by distance
 * when every position between has one, else by position. */
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

/* s->order[0..cnt) = the rows by stop_sequence, stably (a repeated one
 * dropped, with an event); returns how many are left, or UINT32_MAX when
 * out of memory. */
static uint32_t order_rows(trip_stream *s, uint32_t t, const tb_stop_time *rows, uint32_t cnt)
{
    uint32_t *o = s->order;
    /* insertion sort: rows are nearly always in order */
    for (uint32_t i = 0; i < cnt; i++) {
        uint32_t key = rows[i].seq, j = i;
        while (j > 0 && rows[o[j - 1]].seq > key) {
            o[j] = o[j - 1];
            j--;
        }
        o[j] = i;
    }
    uint32_t len = 0;
    for (uint32_t i = 0; i < cnt; i++) {
        if (len && rows[o[len - 1]].seq == rows[o[i]].seq) {
            if (add_event(s, t, TS_DUPLICATE_SEQUENCE, rows[o[i]].seq)) return UINT32_MAX;
            continue;
        }
        o[len++] = o[i];
    }
    return len;
}

/* The local profile of prof[0..len), interned on first sight (with its
 * largest offset); UINT32_MAX when out of memory. */
static uint32_t intern_profile(trip_stream *s, uint32_t len)
{
    int ins;
    uint32_t p = strmap_put(&s->profiles, s->prof, len * sizeof *s->prof, 0, &ins);
    if (p == UINT32_MAX || !ins) return p;
    int32_t *max = TB_PUSH(s->profile_max);
    if (!max) return UINT32_MAX;
    *max = s->prof[0];
    for (uint32_t k = 1; k < len; k++)
        if (s->prof[k] > *max) *max = s->prof[k];
    return p;
}

int ts_fold_trip(tt_builder *b, trip_stream *s, uint32_t t, const tb_stop_time *rows, const double *dists,
                 uint32_t cnt)
{
    tb_trip *trip = &b->trips.v[t];
    trip->valid = false;
    trip->fold = cnt ? TS_FOLDED : TS_UNSEEN;
    if (cnt == 0) return 0;
    if (reserve(s, cnt)) return -1;
    uint32_t len = order_rows(s, t, rows, cnt);
    if (len == UINT32_MAX) return -1;
    if (len < 2) return add_event(s, t, TS_ONE_STOP_TIME, 0);
    for (uint32_t k = 0; k < len; k++) {
        const tb_stop_time *st = &rows[s->order[k]];
        s->arr[k] = st->arr;
        s->dep[k] = st->dep;
        s->dist[k] = dists ? dists[s->order[k]] : NAN;
    }
    if (s->dep[0] == GTFS_TIME_NONE || s->dep[len - 1] == GTFS_TIME_NONE) return add_event(s, t, TS_UNTIMED_ENDS, 0);
    interpolate(s->arr, s->dep, dists ? s->dist : NULL, len);
    for (uint32_t k = 1; k < len; k++) {
        if (s->arr[k] < s->dep[k - 1] || s->dep[k] < s->arr[k]) {
            if (add_event(s, t, TS_BACKWARDS, rows[s->order[k]].seq)) return -1;
            break;
        }
    }
    /* the pattern: route, then stop, stop_sequence, pickup, drop-off */
    uint32_t *key = s->key;
    key[0] = trip->route;
    for (uint32_t k = 0; k < len; k++) {
        const tb_stop_time *st = &rows[s->order[k]];
        key[1 + 4 * k] = st->stop;
        key[2 + 4 * k] = st->seq;
        key[3 + 4 * k] = st->pickup;
        key[4 + 4 * k] = st->drop_off;
    }
    int ins;
    trip->pattern = strmap_put(&s->patterns, key, (1 + 4 * (size_t)len) * sizeof *key, 0, &ins);
    /* the profiles: offsets from the first departure, one when the arrivals
     * are the departures */
    uint32_t start = s->dep[0];
    for (uint32_t k = 0; k < len; k++) s->prof[k] = (int32_t)(s->dep[k] - start);
    trip->dep_profile = intern_profile(s, len);
    bool same = true;
    for (uint32_t k = 0; k < len; k++) {
        s->prof[k] = (int32_t)s->arr[k] - (int32_t)start;
        if (s->arr[k] != s->dep[k]) same = false;
    }
    trip->arr_profile = same ? trip->dep_profile : intern_profile(s, len);
    if (trip->pattern == UINT32_MAX || trip->dep_profile == UINT32_MAX || trip->arr_profile == UINT32_MAX) return -1;
    trip->start = start;
    trip->valid = true;
    return 0;
}

int ts_close_open(tt_builder *b, trip_stream *s)
{
    if (s->open == TT_NONE) return 0;
    uint32_t t = s->open;
    s->open = TT_NONE;
    int rc = ts_fold_trip(b, s, t, s->rows.v, b->have_dist ? s->dists.v : NULL, (uint32_t)s->rows.n);
    s->rows.n = s->dists.n = 0;
    return rc;
}

uint32_t ts_pattern_len(const trip_stream *s, uint32_t local)
{
    return (strmap_key_len(&s->patterns, local) / (uint32_t)sizeof(uint32_t) - 1) / 4;
}

const char *ts_pattern_key(const trip_stream *s, uint32_t local) { return strmap_key(&s->patterns, local); }

const char *ts_profile(const trip_stream *s, uint32_t local) { return strmap_key(&s->profiles, local); }

uint32_t ts_profile_len(const trip_stream *s, uint32_t local)
{
    return strmap_key_len(&s->profiles, local) / (uint32_t)sizeof(int32_t);
}

uint32_t ts_trip_latest(const trip_stream *s, const tb_trip *trip)
{
    /* the departure profile starts at 0, so the larger maximum is >= 0 */
    int32_t dep = s->profile_max.v[trip->dep_profile], arr = s->profile_max.v[trip->arr_profile];
    return trip->start + (uint32_t)(dep > arr ? dep : arr);
}
