/* rt_overlay.c — TripUpdates matched to trip instances, delays propagated.
 *
 * Why it exists: see include/transit/rt_overlay.h. Layout: one entry per
 * matched trip instance, sorted by (trip, service date, start), each owning
 * a run of stop entries (one per stop of the trip, by stop_sequence) with
 * the delay already propagated. A bitmap over trip indices answers "any
 * realtime for this trip?" with one bit test, so rows of trips without
 * realtime cost nothing more; the others read where the trip's instances
 * start (trip_first), step over its other dates, and binary-search its
 * stops.
 */
#include "transit/rt_overlay.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum {
    STOP_PREDICTED = 1,   /* delay is known */
    STOP_SKIPPED = 2,
    STOP_CANCELED = 4,
};

typedef struct rt_stop_entry {
    uint32_t stop_sequence;
    uint32_t secs;             /* scheduled departure of this instance, GTFS seconds */
    int32_t delay;
    uint32_t flags;
} rt_stop_entry;

typedef struct rt_trip_entry {
    uint32_t trip;
    int32_t service_date;
    int32_t start_secs;        /* frequency-based runs; -1 otherwise */
    uint32_t first_stop, stop_count;   /* in stops[] */
} rt_trip_entry;

struct rt_overlay {
    long refs;                 /* __atomic */
    dataset *ds;
    uint64_t feed_timestamp;
    uint64_t generation;
    uint64_t *trip_bits;
    uint32_t *trip_first;      /* per dataset trip: its first entry in trips[], or UINT32_MAX */
    uint32_t ntrips;           /* the dataset's */
    rt_trip_entry *trips;
    uint32_t trip_count;
    rt_stop_entry *stops;
    uint32_t stop_count, stop_cap;
};

static int compare_entries(const void *a, const void *b)
{
    const rt_trip_entry *x = a, *y = b;
    if (x->trip != y->trip) return x->trip < y->trip ? -1 : 1;
    if (x->service_date != y->service_date) return x->service_date < y->service_date ? -1 : 1;
    if (x->start_secs != y->start_secs) return x->start_secs < y->start_secs ? -1 : 1;
    return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The service date of an update without start_date: of yesterday, today
 * and tomorrow (feed timezone), the one the trip runs on whose first
 * departure is nearest now. INT32_MIN when it runs on none. */
static int32_t nearest_service_date(const dataset *ds, uint32_t trip, uint32_t first_secs, int64_t now)
{
    int32_t today = (int32_t)floor_div(now + dataset_utc_offset(ds, now), 86400);
    int32_t best = INT32_MIN;
    int64_t best_gap = INT64_MAX;
    for (int32_t d = today - 1; d <= today + 1; d++) {
        if (!trip_runs_on(ds, trip, d)) continue;
        int64_t gap = dataset_instant(ds, d, first_secs) - now;
        if (gap < 0) gap = -gap;
        if (gap < best_gap) {
            best_gap = gap;
            best = d;
        }
    }
    return best;
}

static rt_stop_entry *reserve_stops(rt_overlay *o, uint32_t n)
{
    if (o->stop_count + (uint64_t)n > UINT32_MAX) return NULL;
    if (o->stop_count + n > o->stop_cap) {
        uint32_t cap = o->stop_cap ? o->stop_cap : 1024;
        while (cap < o->stop_count + n) cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
        rt_stop_entry *s = realloc(o->stops, (size_t)cap * sizeof *s);
        if (!s) return NULL;
        o->stops = s;
        o->stop_cap = cap;
    }
    return o->stops + o->stop_count;
}

/* The delay an event states for a stop scheduled at `sched` (Unix seconds). */
static bool event_delay(const rt_event *e, int64_t sched, int32_t *delay)
{
    if (!e->present) return false;
    if (e->has_time) {
        int64_t d = e->time - sched;
        if (d < INT32_MIN || d > INT32_MAX) return false;
        *delay = (int32_t)d;
        return true;
    }
    if (e->has_delay) {
        *delay = e->delay;
        return true;
    }
    return false;
}

/* The stop of the trip an update names: by stop_sequence, else the first
 * stop with its stop_id at or after `from`. -1 when none. */
static long find_stop_index(const dataset *ds, const trip_stop_time *st, uint32_t n, const rt_stop_update *u,
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

/* Fills the instance's stop entries from the update. */
static void propagate(const dataset *ds, const rt_trip_update *tu, const trip_stop_time *st, uint32_t n,
                      int32_t service_date, int32_t offset, rt_stop_entry *out, rt_overlay_stats *stats)
{
    for (uint32_t k = 0; k < n; k++) {
        out[k] = (rt_stop_entry){st[k].stop_sequence, (uint32_t)((int32_t)st[k].departure_secs + offset), 0, 0};
        if (tu->relationship == RT_TRIP_CANCELED || tu->relationship == RT_TRIP_DELETED)
            out[k].flags = STOP_CANCELED;
    }
    if (tu->relationship == RT_TRIP_CANCELED || tu->relationship == RT_TRIP_DELETED) return;

    /* Which update, if any, each stop has. */
    bool carry = tu->has_delay;
    int32_t delay = tu->delay;
    int64_t last_pred = INT64_MIN;
    uint32_t next = 0;   /* the next update to place */
    long next_at = -1;
    uint32_t search_from = 0;
    /* Find where the next update lands (skipping updates naming no stop). */
#define ADVANCE()                                                                        \
    do {                                                                                 \
        next_at = -1;                                                                    \
        while (next < tu->stop_count) {                                                  \
            next_at = find_stop_index(ds, st, n, &tu->stops[next], search_from);         \
            if (next_at >= (long)search_from) break;                                     \
            if (stats) stats->unmatched_stops++;                                         \
            next_at = -1;                                                                \
            next++;                                                                      \
        }                                                                                \
    } while (0)
    ADVANCE();
    for (uint32_t k = 0; k < n; k++) {
        int64_t sched_dep = dataset_instant(ds, service_date, out[k].secs);
        if (next_at == (long)k) {
            const rt_stop_update *u = &tu->stops[next];
            switch (u->relationship) {
            case RT_STOP_SKIPPED:
                out[k].flags |= STOP_SKIPPED | STOP_CANCELED;
                break;
            case RT_STOP_NO_DATA:
            case RT_STOP_UNSCHEDULED:
                carry = false;
                break;
            case RT_STOP_SCHEDULED: {
                int64_t sched_arr = dataset_instant(ds, service_date,
                                                    (uint32_t)((int32_t)st[k].arrival_secs + offset));
                int32_t d;
                if (event_delay(&u->departure, sched_dep, &d) ||
                    event_delay(&u->arrival, sched_arr, &d)) {
                    carry = true;
                    delay = d;
                    out[k].flags |= STOP_PREDICTED;
                    out[k].delay = d;
                    last_pred = sched_dep + d;
                }
                break;
            }
            }
            search_from = k + 1;
            next++;
            ADVANCE();
            if (out[k].flags & (STOP_PREDICTED | STOP_SKIPPED)) continue;
            if (!carry) continue;
        } else if (!carry) {
            continue;
        }
        if (out[k].flags & STOP_PREDICTED) continue;
        /* carried: never earlier than the departure before */
        int64_t pred = sched_dep + delay;
        if (last_pred != INT64_MIN && pred < last_pred) pred = last_pred;
        int64_t d = pred - sched_dep;
        out[k].delay = d > INT32_MAX ? INT32_MAX : (int32_t)d;
        out[k].flags |= STOP_PREDICTED;
        last_pred = pred;
    }
#undef ADVANCE
}

rt_overlay *rt_overlay_build(const rt_feed *feed, dataset *ds, int64_t now, rt_overlay_stats *stats)
{
    rt_overlay_stats local = {0};
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    rt_overlay *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->refs = 1;
    o->ds = dataset_retain(ds);
    o->feed_timestamp = feed ? feed->timestamp : 0;
    dataset_counts counts;
    dataset_get_counts(ds, &counts);
    o->ntrips = counts.trips;
    o->trip_bits = calloc((size_t)o->ntrips / 64 + 1, sizeof *o->trip_bits);
    uint32_t nupdates = feed ? feed->trip_update_count : 0;
    o->trips = malloc((nupdates ? nupdates : 1) * sizeof *o->trips);
    uint32_t st_cap = 64;
    trip_stop_time *st = malloc(st_cap * sizeof *st);
    if (!o->trip_bits || !o->trips || !st) goto oom;

    for (uint32_t i = 0; i < nupdates; i++) {
        const rt_trip_update *tu = &feed->trip_updates[i];
        uint32_t trip = tu->trip_id ? dataset_find_trip(ds, tu->trip_id, strlen(tu->trip_id)) : QUERY_NONE;
        if (trip == QUERY_NONE) {
            if (tu->relationship == RT_TRIP_ADDED) stats->added_unshown++;
            else stats->unknown_trip++;
            continue;
        }
        uint32_t n = 0;
        query_error qerr;
        if (trip_detail(ds, trip, st, st_cap, &n, &qerr) != QUERY_OK) {
            stats->unknown_trip++;
            continue;
        }
        if (n > st_cap) {
            trip_stop_time *bigger = realloc(st, n * sizeof *st);
            if (!bigger) goto oom;
            st = bigger;
            st_cap = n;
            trip_detail(ds, trip, st, st_cap, &n, &qerr);
        }
        if (n == 0) {
            stats->unknown_trip++;
            continue;
        }
        trip_info ti;
        dataset_trip(ds, trip, &ti);
        int32_t offset = 0, start = -1;
        if (ti.frequency_based) {
            if (tu->start_secs < 0) {
                stats->bad_start_time++;
                continue;
            }
            start = tu->start_secs;
            offset = start - (int32_t)st[0].departure_secs;
        }
        int32_t date = tu->start_day;
        if (date == INT32_MIN) {
            date = nearest_service_date(ds, trip, (uint32_t)((int32_t)st[0].departure_secs + offset), now);
            if (date == INT32_MIN) {
                stats->not_running++;
                continue;
            }
        } else if (!trip_runs_on(ds, trip, date)) {
            stats->not_running++;
            continue;
        }
        rt_stop_entry *out = reserve_stops(o, n);
        if (!out) goto oom;
        propagate(ds, tu, st, n, date, offset, out, stats);
        o->trips[o->trip_count++] = (rt_trip_entry){trip, date, start, o->stop_count, n};
        o->stop_count += n;
        if (tu->relationship == RT_TRIP_CANCELED || tu->relationship == RT_TRIP_DELETED) stats->canceled++;
    }
    qsort(o->trips, o->trip_count, sizeof *o->trips, compare_entries);
    /* a second update for the same instance: the first one in the feed stays
     * (qsort is not stable, so keep the entry whose stops come first) */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < o->trip_count; i++) {
        if (kept && compare_entries(&o->trips[kept - 1], &o->trips[i]) == 0) {
            stats->duplicate++;
            if (o->trips[i].first_stop < o->trips[kept - 1].first_stop) o->trips[kept - 1] = o->trips[i];
            continue;
        }
        o->trips[kept++] = o->trips[i];
    }
    o->trip_count = kept;
    if (!(o->trip_first = malloc(((size_t)o->ntrips + 1) * sizeof *o->trip_first))) goto oom;
    memset(o->trip_first, 0xff, ((size_t)o->ntrips + 1) * sizeof *o->trip_first);
    for (uint32_t i = kept; i-- > 0;) {
        uint32_t t = o->trips[i].trip;
        o->trip_bits[t / 64] |= (uint64_t)1 << (t % 64);
        o->trip_first[t] = i;
    }
    stats->matched = kept;
    free(st);
    return o;
oom:
    free(st);
    rt_overlay_release(o);
    return NULL;
}

rt_overlay *rt_overlay_retain(rt_overlay *o)
{
    if (o) __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
    return o;
}

void rt_overlay_release(rt_overlay *o)
{
    if (!o || __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    dataset_release(o->ds);
    free(o->trip_bits);
    free(o->trip_first);
    free(o->trips);
    free(o->stops);
    free(o);
}

const dataset *rt_overlay_dataset(const rt_overlay *o) { return o->ds; }
uint64_t rt_overlay_feed_timestamp(const rt_overlay *o) { return o->feed_timestamp; }
uint32_t rt_overlay_trip_count(const rt_overlay *o) { return o->trip_count; }
void rt_overlay_set_generation(rt_overlay *o, uint64_t generation) { o->generation = generation; }
uint64_t rt_overlay_generation(const rt_overlay *o) { return o->generation; }

void rt_overlay_prefetch(const rt_overlay *o, const departure *d)
{
    if (d->trip >= o->ntrips || !(o->trip_bits[d->trip / 64] >> (d->trip % 64) & 1)) return;
    uint32_t i = o->trip_first[d->trip];
    const rt_trip_entry *e = &o->trips[i];
    if (e->service_date == d->service_date && d->pos < e->stop_count)
        __builtin_prefetch(&o->stops[e->first_stop + d->pos]);
}

bool rt_overlay_lookup(const rt_overlay *o, const departure *d, rt_departure *out)
{
    memset(out, 0, sizeof *out);
    if (d->trip >= o->ntrips || !(o->trip_bits[d->trip / 64] >> (d->trip % 64) & 1)) return false;
    /* the trip's instances lie side by side from trip_first, by date then start */
    uint32_t lo = o->trip_first[d->trip];
    while (lo < o->trip_count && o->trips[lo].trip == d->trip && o->trips[lo].service_date < d->service_date)
        lo++;
    for (; lo < o->trip_count && o->trips[lo].trip == d->trip && o->trips[lo].service_date == d->service_date;
         lo++) {
        const rt_trip_entry *e = &o->trips[lo];
        const rt_stop_entry *s = o->stops + e->first_stop;
        /* the row's position in the trip finds the stop in one read; a row
         * made elsewhere (pos 0 or stale) falls back to a binary search */
        uint32_t a = d->pos, b = e->stop_count;
        if (a < b && s[a].stop_sequence == d->stop_sequence)
            b = a;
        else
            a = 0;
        while (a < b) {
            uint32_t mid = a + (b - a) / 2;
            if (s[mid].stop_sequence < d->stop_sequence) a = mid + 1;
            else b = mid;
        }
        if (a == e->stop_count || s[a].stop_sequence != d->stop_sequence) continue;
        /* a frequency-based trip's instances differ by their times */
        if (s[a].secs != d->secs) continue;
        out->realtime = true;
        out->canceled = (s[a].flags & STOP_CANCELED) != 0;
        out->skipped = (s[a].flags & STOP_SKIPPED) != 0;
        out->has_prediction = (s[a].flags & STOP_PREDICTED) != 0;
        out->delay_s = s[a].delay;
        return true;
    }
    return false;
}
