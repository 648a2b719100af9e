/* rt_overlay.c — TripUpdates matched to trip instances, delays propagated.
 *
 * Why it exists: see include/transit/rt_overlay.h. Layout: one entry per
 * matched trip instance, sorted by (trip, service date, start), each owning
 * a run of stop entries (by stop_sequence) with the delay already
 * propagated. An instance's stops before its first change and after its
 * last one all say the same (no prediction, or one delay carried to the
 * end): such a run at either end is kept as one entry (the head and tail
 * entries), so an instance keeps its updated span and two entries, not
 * every stop of the trip (a 64 MB feed updates 12 of 41 stops a trip:
 * 9.2M entries were 147 MB). A bitmap over trip indices answers "any
 * realtime for this trip?" with one bit test, so rows of trips without
 * realtime cost nothing more; the others read their trip's head (where its
 * first instance's entries are: most rows are of it, and find their entry
 * from their position in one more read), else where the trip's instances
 * start (trip_first), step over its other dates, and search its entries.
 *
 * ADDED trips live apart: a table of the trips (their ids in one text
 * buffer) and their departure events sorted by (stop, instant), with where
 * each stop's run starts, so a stop finds its few events in two reads and a
 * stop without any costs no more.
 */
#include "transit/rt_overlay.h"
#include "transit/gtfs.h"

#include "live/rt_assigned.h"
#include "live/rt_row_index.h"
#include "live/rt_trip_properties.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum {
    STOP_PREDICTED = 1,   /* delay is known */
    STOP_SKIPPED = 2,
    STOP_CANCELED = 4,
    STOP_ARR_PREDICTED = 8,   /* the arrival's delay (rt_arrival_entry) is known */
    STOP_HIDDEN = 16,         /* the instance is DELETED or REPLACED (also canceled) */
    STOP_MOVED = 32,          /* a platform change: served at an assigned stop (rt_assigned.h) */
    STOP_PROPS = 64,          /* the instance has TripProperties (rt_trip_properties.h) */
    STOP_WIDE = 128,          /* the entry's delays or arrival do not fit 16 bits: see wide[] */
};
/* bits 8-11 of a stop entry's flags: departure_occupancy_status + 1 (0: none) */
#define STOP_OCCUPANCY_SHIFT 8

/* A stop of an instance as propagate() works it out while the overlay is
 * built (full width), for the instance at hand only. */
typedef struct rt_full_stop {
    uint32_t stop_sequence;
    uint32_t secs;             /* scheduled departure of this instance, GTFS seconds */
    int32_t delay;
    uint32_t flags;
} rt_full_stop;

typedef struct rt_full_arrival {
    uint32_t secs;             /* scheduled arrival of this instance, GTFS seconds */
    int32_t delay;
} rt_full_arrival;

/* The same as kept, 16 bytes a stop where it was 24 (a 64 MB feed updates
 * 9 million stops): 12 here, the delay in 16 bits. The rare stop whose
 * delays (beyond 9 hours) or dwell (beyond 18 hours) do not fit has
 * STOP_WIDE and its full values in wide[], found by entry index. */
typedef struct rt_stop_entry {
    uint32_t stop_sequence;
    uint32_t secs;             /* scheduled departure of this instance, GTFS seconds */
    int16_t delay;             /* the departure's, seconds (0 with STOP_WIDE) */
    uint16_t flags;
} rt_stop_entry;

/* The arrival beside each stop entry (arr_stops[i] goes with stops[i]): kept
 * apart so that a departure row reads no more than it did. */
typedef struct rt_arrival_entry {
    uint16_t before;           /* scheduled departure minus scheduled arrival, seconds */
    int16_t delay;             /* the arrival's, seconds */
} rt_arrival_entry;

/* A STOP_WIDE entry's values. */
typedef struct rt_wide_entry {
    uint32_t k;                /* the entry's index in stops[] */
    uint32_t arr_secs;
    int32_t delay, arr_delay;
} rt_wide_entry;

/* A trip's first instance (the earliest date) where a row reads it in one
 * load, not three (bitmap, trip_first, trips[]): most rows are of it. Its
 * entries as rt_trip_entry says (head and span); `fast` is false where
 * they do not fit 16 bits (the row then asks the instances). A departure
 * row the head or tail entry answers is checked against the timetable
 * from here: its stop_sequence from its position where the run's
 * sequences follow one another (head_run, tail_run), its time from the
 * trip's own departure offsets, which the board that made the row has just
 * read. */
typedef struct rt_trip_head {
    int32_t service_date;
    uint32_t first_stop;               /* in stops[] */
    uint16_t head, span;               /* rt_trip_entry's */
    uint32_t late : 24;                /* the most any instance of the trip runs late, seconds
                                        * (capped at RT_OVERLAY_SLACK_MAX) */
    uint32_t has_tail : 1, fast : 1, head_run : 1, tail_run : 1;
    uint32_t start, stop_count;        /* the trip's departures: start + dep[pos], pos < stop_count */
    const int32_t *dep;                /* trip_departure_offsets; NULL: none. 32 bytes in all (64-byte
                                        * aligned), so a head never straddles two cache lines */
} rt_trip_head;
_Static_assert(sizeof(rt_trip_head) == 32, "a trip head is 32 bytes");
_Static_assert(RT_OVERLAY_SLACK_MAX < (1 << 24), "late fits its 24 bits");

/* An event predicted later than scheduled, in a stop's run of them: its
 * scheduled and predicted instants (from the overlay's late_base). */
typedef struct rt_late_event {
    int32_t sched, at;
} rt_late_event;

/* A stop's buckets of window starts (LEAD_BUCKET_S each, counted from the
 * overlay's late_base) that any of its late events reaches, in lead_back. */
typedef struct rt_lead_span {
    uint32_t first;            /* in lead_back */
    int32_t bucket;            /* the first bucket's number */
    uint32_t count;
} rt_lead_span;

/* A window starting in a bucket reads from the earliest late event that
 * reaches into the bucket, at most this much more than it needs to. */
#define LEAD_BUCKET_S 300
/* A bucket's lead is kept in whole minutes (rounded up: a board may read up
 * to a minute more than it needs), one byte a bucket: a feed of 20 days
 * over 4,500 stops has 26 million buckets. */
#define LEAD_UNIT_S 60
#define LEAD_NONE 0
#define LEAD_FAR UINT8_MAX

/* While the overlay is built, per stop: the earliest scheduled instant of
 * its late events and the latest predicted one (what its buckets span). */
typedef struct rt_late_span {
    int64_t first_sched, last_at;
} rt_late_span;

/* A matched trip instance. Its n stops (positions 0..n-1) read its
 * entries from first_stop on: positions [0, head) the head entry (when
 * head > 0; its stop_sequence the last of them), [head, head + span) one
 * entry each, [head + span, n) the tail entry (when any; its
 * stop_sequence the first of them). The head and tail entries carry the
 * scheduled times of those stops, not of every stop they answer for: they
 * are kept only for timetable trips without frequencies or platform
 * changes, whose one instance a date needs no time to be told apart
 * (rows are found by stop_sequence). Others keep every stop (head 0, span
 * n). */
typedef struct rt_trip_entry {
    uint32_t trip;
    int32_t service_date;
    int32_t start_secs;        /* frequency-based runs; -1 otherwise */
    uint32_t first_stop;       /* in stops[] */
    uint32_t stop_count;       /* the trip's stops, n */
    uint32_t head, span;
} rt_trip_entry;

static inline uint32_t tail_of(const rt_trip_entry *e) { return e->stop_count - e->head - e->span; }
/* Its entries in stops[]. */
static inline uint32_t kept_of(const rt_trip_entry *e) { return (e->head > 0) + e->span + (tail_of(e) > 0); }

/* What an ADDED trip's event is: a departure (riders board: every update
 * but the last), an arrival (riders alight: every update but the first),
 * and whether that arrival is at a call without a departure (the last). */
enum { ADDED_DEPARTURE = 1, ADDED_ARRIVAL = 2, ADDED_ARRIVAL_ONLY = 4 };

typedef struct rt_added_event {
    int64_t instant;           /* Unix seconds */
    uint32_t stop;             /* where it is served: the call's assigned stop, else its stop */
    uint32_t call;             /* in calls[] */
    uint32_t trip;             /* ntrips + index in added[] */
    uint32_t stop_sequence;
    uint32_t secs;             /* seconds after noon minus 12 h of the service date */
    uint32_t kind;             /* ADDED_* */
} rt_added_event;

struct rt_overlay {
    long refs;                 /* __atomic */
    dataset *ds;
    uint64_t feed_timestamp;
    uint64_t generation;
    uint64_t *trip_bits;
    uint32_t *trip_first;      /* per dataset trip: its first entry in trips[], or UINT32_MAX */
    rt_trip_head *heads;       /* per dataset trip with an entry: where its first instance's stops are */
    uint32_t ntrips;           /* the dataset's */
    rt_trip_entry *trips;
    uint32_t trip_count;
    rt_stop_entry *stops;
    rt_arrival_entry *arr_stops;   /* beside stops, stop_cap of them */
    uint32_t stop_count, stop_cap;
    rt_wide_entry *wide;       /* the STOP_WIDE entries' values, by k */
    uint32_t wide_count, wide_cap;
    rt_full_stop *scratch;     /* while building: the instance at hand, full width */
    rt_full_arrival *scratch_arr;
    uint32_t scratch_cap;
    rt_stop_update *update_stops;   /* while building: the update at hand's stops, unpacked */
    uint32_t update_stops_cap;
    /* ADDED trips */
    rt_added_trip *added;
    uint32_t added_count, added_cap;
    char *added_ids;           /* their trip ids, NUL-terminated, one after another */
    size_t added_ids_len, added_ids_cap;
    rt_added_call *calls;      /* each added trip's, from its first_call */
    uint32_t call_count, call_cap;
    uint32_t hidden_count;     /* instances DELETED or REPLACED */
    rt_added_event *events;    /* by stop, instant, trip */
    uint32_t event_count, event_cap;
    uint32_t *stop_events;     /* per dataset stop s: its events are [stop_events[s], stop_events[s + 1]) */
    uint32_t nstops;
    /* per dataset stop: the most any prediction there is later (late) or
     * earlier (early) than scheduled, seconds, capped (rt_overlay_stop_slack) */
    uint32_t *slack;           /* late, early: two per stop */
    uint32_t slack_late_max, slack_early_max;   /* over every stop */
    /* per dataset stop: where a board's window may start and how far back
     * it must read there (rt_overlay_stop_lead); NULL lead_of when the
     * table would be too large (the lead is then the stop's late slack) */
    rt_lead_span *lead_of;
    uint8_t *lead_back;        /* the spans' buckets: how long before the bucket's end the earliest
                                * late event reaching it is scheduled, LEAD_UNIT_S (LEAD_NONE:
                                * none; LEAD_FAR: that or more) */
    int64_t late_base;
    rt_late_span *late_spans;  /* while building: per dataset stop (note_late), or NULL */
    uint64_t late_count;       /* while building: the late events noted */
    int64_t late_lo, late_hi;  /* while building: their earliest scheduled and latest predicted instants */
    rt_vehicles *vehicles;     /* published with it, or NULL */
    rt_assigned *assigned;     /* platform changes, or NULL without any */
    rt_properties_set *properties;   /* TripProperties of timetable instances, or NULL without any */
    rt_row_index *row_index;   /* a row's answer in one read (rt_row_index.h), built last */
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

int32_t rt_nearest_service_date(const dataset *ds, uint32_t trip, uint32_t first_secs, int64_t now)
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

/* Sets the room for stop entries to exactly cap (cap >= stop_count). */
static bool resize_stops(rt_overlay *o, uint32_t cap)
{
    if (!cap) cap = 1;
    rt_stop_entry *s = realloc(o->stops, (size_t)cap * sizeof *s);
    if (!s) return false;
    o->stops = s;
    rt_arrival_entry *a = realloc(o->arr_stops, (size_t)cap * sizeof *a);
    if (!a) return false;
    o->arr_stops = a;
    o->stop_cap = cap;
    return true;
}

/* Room for the stops of every update naming a trip of the dataset, at
 * most, before any is built: grown by doubling, a 64 MB feed's entries left
 * a trail of smaller copies in the heap (cut to size at the end). */
static bool presize_stops(rt_overlay *o, const rt_feed *feed, const dataset *ds)
{
    uint64_t bound = 0;
    for (uint32_t i = 0; feed && i < feed->trip_update_count; i++) {
        const rt_trip_update *tu = &feed->trip_updates[i];
        uint32_t trip = tu->trip_id ? dataset_find_trip(ds, tu->trip_id, strlen(tu->trip_id)) : QUERY_NONE;
        uint32_t n = 0;
        query_error qerr;
        if (trip != QUERY_NONE && trip_detail(ds, trip, NULL, 0, &n, &qerr) == QUERY_OK) bound += n;
    }
    return bound > UINT32_MAX || resize_stops(o, (uint32_t)bound);
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
        rt_arrival_entry *a = realloc(o->arr_stops, (size_t)cap * sizeof *a);
        if (!a) return NULL;
        o->arr_stops = a;
        o->stop_cap = cap;
    }
    return o->stops + o->stop_count;
}

static bool grow(void **items, uint32_t *cap, uint32_t count, size_t size);

/* Room for the instance at hand (n stops) in the build's full-width
 * scratch; false when out of memory. */
static bool reserve_scratch(rt_overlay *o, uint32_t n)
{
    if (n <= o->scratch_cap) return true;
    rt_full_stop *s = realloc(o->scratch, (size_t)n * sizeof *s);
    if (!s) return false;
    o->scratch = s;
    rt_full_arrival *a = realloc(o->scratch_arr, (size_t)n * sizeof *a);
    if (!a) return false;
    o->scratch_arr = a;
    o->scratch_cap = n;
    return true;
}

/* Appends the scratch's entries [from, from + n) (of the instance at hand)
 * to the kept entries, each in 16 bits where it fits, else STOP_WIDE with
 * a wide[] record. false when out of memory. */
static bool pack_entries(rt_overlay *o, uint32_t from, uint32_t n)
{
    rt_stop_entry *s = reserve_stops(o, n);
    if (!s) return false;
    rt_arrival_entry *a = o->arr_stops + o->stop_count;
    for (uint32_t k = 0; k < n; k++) {
        const rt_full_stop *f = &o->scratch[from + k];
        const rt_full_arrival *fa = &o->scratch_arr[from + k];
        uint32_t before = f->secs - fa->secs;
        bool fits = f->secs >= fa->secs && before <= UINT16_MAX && f->delay >= INT16_MIN && f->delay <= INT16_MAX &&
                    fa->delay >= INT16_MIN && fa->delay <= INT16_MAX;
        assert(f->flags <= UINT16_MAX && !(f->flags & STOP_WIDE));
        if (fits) {
            s[k] = (rt_stop_entry){f->stop_sequence, f->secs, (int16_t)f->delay, (uint16_t)f->flags};
            a[k] = (rt_arrival_entry){(uint16_t)before, (int16_t)fa->delay};
            continue;
        }
        if (!grow((void **)&o->wide, &o->wide_cap, o->wide_count, sizeof *o->wide)) return false;
        o->wide[o->wide_count++] = (rt_wide_entry){o->stop_count + k, fa->secs, f->delay, fa->delay};
        s[k] = (rt_stop_entry){f->stop_sequence, f->secs, 0, (uint16_t)(f->flags | STOP_WIDE)};
        a[k] = (rt_arrival_entry){0, 0};
    }
    return true;
}

/* The wide[] record of STOP_WIDE entry k (appended in k order). */
static const rt_wide_entry *wide_of(const rt_overlay *o, uint32_t k)
{
    uint32_t a = 0, b = o->wide_count;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (o->wide[mid].k < k) a = mid + 1;
        else b = mid;
    }
    assert(a < o->wide_count && o->wide[a].k == k);
    return &o->wide[a];
}

/* Entry k at full width. */
static void unpack_entry(const rt_overlay *o, uint32_t k, rt_full_stop *f, rt_full_arrival *fa)
{
    const rt_stop_entry *s = &o->stops[k];
    const rt_arrival_entry *a = &o->arr_stops[k];
    *f = (rt_full_stop){s->stop_sequence, s->secs, s->delay, s->flags & ~(uint32_t)STOP_WIDE};
    *fa = (rt_full_arrival){s->secs - a->before, a->delay};
    if (s->flags & STOP_WIDE) {
        const rt_wide_entry *w = wide_of(o, k);
        f->delay = w->delay;
        *fa = (rt_full_arrival){w->arr_secs, w->arr_delay};
    }
}

/* Whether two stops of an instance say the same to any row (flags, delays). */
static bool same_answer(const rt_full_stop *a, const rt_full_arrival *aa, const rt_full_stop *b,
                        const rt_full_arrival *ba)
{
    return a->flags == b->flags && a->delay == b->delay && aa->delay == ba->delay;
}

/* The instance's (the scratch's n stops) head and span: its leading stops
 * that say what its first says, and those after them up to the trailing
 * run that says what its last says (rt_trip_entry). */
static void find_span(const rt_full_stop *f, const rt_full_arrival *fa, uint32_t n, uint32_t *head, uint32_t *span)
{
    uint32_t h = 1;
    while (h < n && same_answer(&f[h], &fa[h], &f[0], &fa[0])) h++;
    if (h >= n) {
        *head = n;
        *span = 0;
        return;
    }
    uint32_t end = n - 1;   /* the tail is [end, n) */
    while (end > h && same_answer(&f[end - 1], &fa[end - 1], &f[n - 1], &fa[n - 1])) end--;
    *head = h;
    *span = end - h;
}

/* The kept entry of instance e that answers a row at stop_sequence `seq`
 * (`pos` its position, a hint that saves the search), or UINT32_MAX; *timed
 * says whether the entry's scheduled times are that row's (a span entry),
 * so that they tell one instance of a date from another. */
static inline uint32_t entry_in(const rt_overlay *o, const rt_trip_entry *e, uint32_t pos, uint32_t seq, bool *timed)
{
    const rt_stop_entry *s = o->stops + e->first_stop;
    uint32_t base = e->head > 0;   /* the span's first entry */
    *timed = false;
    if (e->head && seq <= s[0].stop_sequence) return e->first_stop;
    if (tail_of(e) && seq >= s[base + e->span].stop_sequence) return e->first_stop + base + e->span;
    *timed = true;
    uint32_t a = base, b = base + e->span;
    if (pos >= e->head && pos - e->head < e->span && s[base + pos - e->head].stop_sequence == seq)
        return e->first_stop + base + pos - e->head;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (s[mid].stop_sequence < seq) a = mid + 1;
        else b = mid;
    }
    return a < base + e->span && s[a].stop_sequence == seq ? e->first_stop + a : UINT32_MAX;
}

/* Whether a row answered by a head or tail entry (which keeps no time of
 * each stop it stands for) is a row of the timetable: its stop_sequence at
 * its position (else, a stale position, anywhere in the trip) and its time
 * there. Such instances have no frequencies: the trip's own times. */
static bool row_in_timetable(const rt_overlay *o, const departure *d)
{
    trip_stop_time st;
    if (!trip_stop_at(o->ds, d->trip, d->pos, &st) || st.stop_sequence != d->stop_sequence) {
        uint32_t k = 0;
        while (trip_stop_at(o->ds, d->trip, k, &st) && st.stop_sequence != d->stop_sequence) k++;
        if (!trip_stop_at(o->ds, d->trip, k, &st)) return false;
    }
    return (d->arrival ? st.arrival_secs : st.departure_secs) == d->secs;
}

/* Instance e at full width, one entry per stop of the trip (st: its n
 * stop times), into the scratch: the head and tail entries stand for
 * each of their stops, at that stop's own sequence and times (such
 * instances have no frequencies: offset 0). false when out of memory. */
static bool expand_instance(rt_overlay *o, const rt_trip_entry *e, const trip_stop_time *st, uint32_t n)
{
    if (!reserve_scratch(o, n)) return false;
    uint32_t base = e->head > 0;
    for (uint32_t k = 0; k < n; k++) {
        bool span = k >= e->head && k - e->head < e->span;
        uint32_t idx = k < e->head ? 0 : span ? base + k - e->head : base + e->span;
        unpack_entry(o, e->first_stop + idx, &o->scratch[k], &o->scratch_arr[k]);
        if (span) continue;
        o->scratch[k].stop_sequence = st[k].stop_sequence;
        o->scratch[k].secs = st[k].departure_secs;
        o->scratch_arr[k].secs = st[k].arrival_secs;
    }
    return true;
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

/* Fills the instance's stop entries (and the arrivals beside them) from the
 * update. An arrival follows the departure's rules with the roles of the two
 * events swapped: an update's arrival wins, a missing one takes the
 * departure's delay; a carried delay makes an arrival no earlier than the
 * departure before it. */
static void propagate(const dataset *ds, const rt_trip_update *tu, const trip_stop_time *st, uint32_t n,
                      int32_t service_date, int32_t offset, rt_full_stop *out, rt_full_arrival *arr,
                      rt_overlay_stats *stats)
{
    for (uint32_t k = 0; k < n; k++) {
        arr[k] = (rt_full_arrival){(uint32_t)((int32_t)st[k].arrival_secs + offset), 0};
        out[k] = (rt_full_stop){st[k].stop_sequence, (uint32_t)((int32_t)st[k].departure_secs + offset), 0, 0};
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
            next_at = rt_update_stop_index(ds, st, n, &tu->stops[next], search_from);         \
            if (next_at >= (long)search_from) break;                                     \
            if (stats) stats->unmatched_stops++;                                         \
            next_at = -1;                                                                \
            next++;                                                                      \
        }                                                                                \
    } while (0)
    ADVANCE();
    for (uint32_t k = 0; k < n; k++) {
        int64_t sched_dep = dataset_instant(ds, service_date, out[k].secs);
        int64_t sched_arr = dataset_instant(ds, service_date, arr[k].secs);
        if (next_at == (long)k) {
            const rt_stop_update *u = &tu->stops[next];
            out[k].flags |= (uint32_t)(u->departure_occupancy & 15) << STOP_OCCUPANCY_SHIFT;
            switch (u->relationship) {
            case RT_STOP_SKIPPED:
                out[k].flags |= STOP_SKIPPED | STOP_CANCELED;
                break;
            case RT_STOP_NO_DATA:
            case RT_STOP_UNSCHEDULED:
                carry = false;
                break;
            case RT_STOP_SCHEDULED: {
                int32_t d;
                if (event_delay(&u->departure, sched_dep, &d) ||
                    event_delay(&u->arrival, sched_arr, &d)) {
                    carry = true;
                    delay = d;
                    out[k].flags |= STOP_PREDICTED;
                    out[k].delay = d;
                    last_pred = sched_dep + d;
                }
                if (event_delay(&u->arrival, sched_arr, &d) || event_delay(&u->departure, sched_dep, &d)) {
                    out[k].flags |= STOP_ARR_PREDICTED;
                    arr[k].delay = d;
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
        /* carried: never earlier than the departure before; the arrival too */
        if (!(out[k].flags & STOP_ARR_PREDICTED)) {
            int64_t arrives = sched_arr + delay;
            if (last_pred != INT64_MIN && arrives < last_pred) arrives = last_pred;
            int64_t da = arrives - sched_arr;
            arr[k].delay = da > INT32_MAX ? INT32_MAX : (int32_t)da;
            out[k].flags |= STOP_ARR_PREDICTED;
        }
        int64_t pred = sched_dep + delay;
        if (last_pred != INT64_MIN && pred < last_pred) pred = last_pred;
        int64_t d = pred - sched_dep;
        out[k].delay = d > INT32_MAX ? INT32_MAX : (int32_t)d;
        out[k].flags |= STOP_PREDICTED;
        last_pred = pred;
    }
#undef ADVANCE
}

/* Widens the slack of the instance's stops (st[k].stop) by its predictions. */
static void note_slack(rt_overlay *o, const trip_stop_time *st, uint32_t n, const rt_full_stop *out,
                       const rt_full_arrival *arr)
{
    for (uint32_t k = 0; k < n; k++) {
        if (st[k].stop >= o->nstops) continue;
        uint32_t *slack = o->slack + 2 * (size_t)st[k].stop;
        int32_t delays[2] = {(out[k].flags & STOP_PREDICTED) ? out[k].delay : 0,
                             (out[k].flags & STOP_ARR_PREDICTED) ? arr[k].delay : 0};
        for (int i = 0; i < 2; i++) {
            int64_t d = delays[i];
            uint32_t late = d > 0 ? (d > RT_OVERLAY_SLACK_MAX ? RT_OVERLAY_SLACK_MAX : (uint32_t)d) : 0;
            uint32_t early = d < 0 ? (-d > RT_OVERLAY_SLACK_MAX ? RT_OVERLAY_SLACK_MAX : (uint32_t)-d) : 0;
            if (late > slack[0]) slack[0] = late;
            if (early > slack[1]) slack[1] = early;
            if (late > o->slack_late_max) o->slack_late_max = late;
            if (early > o->slack_early_max) o->slack_early_max = early;
        }
    }
}

/* Room for one more element of an array of `size`-byte items. */
static bool grow(void **items, uint32_t *cap, uint32_t count, size_t size)
{
    if (count < *cap) return true;
    if (*cap >= UINT32_MAX / 2) return false;
    uint32_t n = *cap ? *cap * 2 : 64;
    void *p = realloc(*items, (size_t)n * size);
    if (!p) return false;
    *items = p;
    *cap = n;
    return true;
}

/* ------------------------------------------------------------ late events
 *
 * A board by predicted time reads the schedule from before its window, for
 * rows delayed into it. How far before, per stop: back to the earliest row
 * there scheduled before the window and predicted in it, not the stop's
 * largest delay, which any one late trip of the day sets. Each stop keeps,
 * per bucket of LEAD_BUCKET_S seconds of window starts, how long before
 * the bucket's end the earliest of its late events predicted at or after
 * the bucket's start and scheduled before its end (those that can reach a
 * window starting in it) is scheduled: two reads a stop, where a binary
 * search among its events made boards slower than they were (bench_query
 * --rt: 10.4 µs against 8.5). */

/* The late events of an instance (stops st[k].stop, entries out/arr, on
 * `date`) that a board moves later: predicted, not canceled, delay in
 * (0, RT_OVERLAY_SLACK_MAX] (what board_predicted.c moves a row by); an
 * arrival the same as its departure counts once. Calls each with its stop,
 * scheduled instant and delay. */
#define FOR_EACH_LATE(o, st, n, date, out, arr, STOP, SCHED, DELAY, ...)                                    \
    do {                                                                                                    \
        int64_t day_ = dataset_instant((o)->ds, (date), 0);   /* the instance's instants are day + secs */ \
        for (uint32_t k_ = 0; k_ < (n); k_++) {                                                             \
            if ((st)[k_].stop >= (o)->nstops || ((out)[k_].flags & STOP_CANCELED)) continue;                \
            int32_t delays_[2] = {((out)[k_].flags & STOP_PREDICTED) ? (out)[k_].delay : 0,                 \
                                  ((out)[k_].flags & STOP_ARR_PREDICTED) ? (arr)[k_].delay : 0};            \
            uint32_t secs_[2] = {(out)[k_].secs, (arr)[k_].secs};                                           \
            for (int i_ = 0; i_ < 2; i_++) {                                                                \
                if (delays_[i_] <= 0 || delays_[i_] > RT_OVERLAY_SLACK_MAX) continue;                       \
                if (i_ == 1 && delays_[1] == delays_[0] && secs_[1] == secs_[0]) continue;                  \
                uint32_t STOP = (st)[k_].stop;                                                              \
                int64_t SCHED = day_ + secs_[i_];                                                           \
                int32_t DELAY = delays_[i_];                                                                \
                __VA_ARGS__                                                                                 \
            }                                                                                               \
        }                                                                                                   \
    } while (0)

/* Widens the stops' late spans by the instance's late events: the first of
 * finish_late's two passes, which keeps no event (a 64 MB feed has millions:
 * a note each and a sorted copy of them were 160 MB while the overlay was
 * built). */
static void note_late(rt_overlay *o, const trip_stop_time *st, uint32_t n, int32_t date, const rt_full_stop *out,
                      const rt_full_arrival *arr)
{
    FOR_EACH_LATE(o, st, n, date, out, arr, stop, sched, delay, {
        rt_late_span *span = &o->late_spans[stop];
        if (sched < span->first_sched) span->first_sched = sched;
        if (sched + delay > span->last_at) span->last_at = sched + delay;
        if (sched < o->late_lo) o->late_lo = sched;
        if (sched + delay > o->late_hi) o->late_hi = sched + delay;
        o->late_count++;
    });
}

static int32_t bucket_of(int32_t rel)
{
    return rel >= 0 ? rel / LEAD_BUCKET_S : -(int32_t)((-(int64_t)rel + LEAD_BUCKET_S - 1) / LEAD_BUCKET_S);
}

/* Fills the stops' buckets from their late events, in a second pass over
 * the instances kept (their stops from the schedule, st: room for st_cap):
 * a bucket keeps the most any event reaching it was scheduled before its
 * end, the earliest such event's. Without events, or when their instants
 * span more than int32 seconds or the buckets would outnumber 16 x the
 * events + 1024, no table: every lead is the stop's late slack. Frees the
 * spans. false when out of memory. */
static bool finish_late(rt_overlay *o, trip_stop_time **st, uint32_t *st_cap)
{
    uint64_t n = o->late_count;
    int64_t lo = o->late_lo, hi = o->late_hi;
    bool ok = true;
    if (!n || hi - lo > INT32_MAX) goto done;
    o->late_base = lo;
    ok = false;
    if (!(o->lead_of = calloc((size_t)o->nstops + 1, sizeof *o->lead_of))) goto done;
    uint64_t total = 0;
    for (uint32_t s = 0; s < o->nstops; s++) {
        const rt_late_span *span = &o->late_spans[s];
        if (span->first_sched > span->last_at) continue;   /* no late event */
        int32_t first = bucket_of((int32_t)(span->first_sched - lo)), last = bucket_of((int32_t)(span->last_at - lo));
        o->lead_of[s] = (rt_lead_span){(uint32_t)total, first, (uint32_t)(last - first + 1)};
        total += o->lead_of[s].count;
    }
    if (total > 16 * n + 1024) {
        free(o->lead_of);
        o->lead_of = NULL;
        ok = true;
        goto done;
    }
    if (!(o->lead_back = calloc(total ? total : 1, sizeof *o->lead_back))) goto done;   /* LEAD_NONE */
    for (uint32_t i = 0; i < o->trip_count; i++) {
        const rt_trip_entry *e = &o->trips[i];
        uint32_t count = 0;
        query_error qerr;
        if (trip_detail(o->ds, e->trip, *st, *st_cap, &count, &qerr) != QUERY_OK || count != e->stop_count) continue;
        if (count > *st_cap) {
            trip_stop_time *bigger = realloc(*st, count * sizeof **st);
            if (!bigger) goto done;
            *st = bigger;
            *st_cap = count;
            trip_detail(o->ds, e->trip, *st, *st_cap, &count, &qerr);
        }
        if (!expand_instance(o, e, *st, count)) goto done;
        FOR_EACH_LATE(o, *st, count, e->service_date, o->scratch, o->scratch_arr, stop, sched, delay, {
            const rt_lead_span *span = &o->lead_of[stop];
            uint8_t *back = o->lead_back + span->first;
            int32_t rel = (int32_t)(sched - lo);
            int32_t b = bucket_of(rel) - span->bucket, end = bucket_of(rel + delay) - span->bucket;
            assert(b >= 0 && end < (int32_t)span->count);
            for (; b <= end; b++) {
                /* the bucket ends after the event is scheduled: at least 1 */
                int64_t before = ((int64_t)span->bucket + b + 1) * LEAD_BUCKET_S - rel;
                int64_t units = (before + LEAD_UNIT_S - 1) / LEAD_UNIT_S;
                uint8_t v = units >= LEAD_FAR ? LEAD_FAR : (uint8_t)units;
                if (v > back[b]) back[b] = v;
            }
        });
    }
    ok = true;
done:
    if (!ok) {
        free(o->lead_of);
        o->lead_of = NULL;
    }
    free(o->late_spans);
    o->late_spans = NULL;
    return ok;
}

void rt_overlay_prefetch_stop_lead(const rt_overlay *o, uint32_t stop, int64_t from, int step)
{
    if (stop >= o->nstops) return;
    if (step == 0) {
        __builtin_prefetch(&o->slack[2 * (size_t)stop]);
        if (o->lead_of) __builtin_prefetch(&o->lead_of[stop]);
        return;
    }
    if (!o->lead_of) return;
    const rt_lead_span *span = &o->lead_of[stop];
    int64_t rel = from - o->late_base;
    if (rel < INT32_MIN || rel > INT32_MAX) return;
    int64_t b = (int64_t)bucket_of((int32_t)rel) - span->bucket;
    if (b >= 0 && b < span->count) __builtin_prefetch(&o->lead_back[span->first + b]);
}

uint32_t rt_overlay_stop_lead(const rt_overlay *o, uint32_t stop, int64_t from)
{
    if (stop >= o->nstops) return 0;
    uint32_t late = o->slack[2 * (size_t)stop];
    if (!late || !o->lead_of) return late;
    const rt_lead_span *span = &o->lead_of[stop];
    int64_t rel = from - o->late_base;
    if (rel < INT32_MIN || rel > INT32_MAX) return 0;   /* outside every span */
    int32_t bucket = bucket_of((int32_t)rel);
    int64_t b = (int64_t)bucket - span->bucket;
    if (b < 0 || b >= span->count) return 0;
    uint32_t back = o->lead_back[span->first + b];
    if (back == LEAD_NONE) return 0;
    if (back == LEAD_FAR) return late;
    back *= LEAD_UNIT_S;
    /* the earliest is scheduled `back` before the bucket's end, the window
     * starts `ahead` before it */
    int64_t ahead = ((int64_t)bucket + 1) * LEAD_BUCKET_S - rel;
    if (back <= ahead) return 0;
    return back - ahead < late ? (uint32_t)(back - ahead) : late;
}

/* ------------------------------------------------------------ ADDED trips */

/* Appends a string (prefix + s) to added_ids; *field holds its offset plus
 * one until added_ids stops moving (resolve()), NULL for a NULL s. */
static bool keep_str(rt_overlay *o, const char *prefix, const char *s, const char **field)
{
    *field = NULL;
    if (!s) return true;
    size_t np = strlen(prefix), ni = strlen(s), need = o->added_ids_len + np + ni + 1;
    if (need > o->added_ids_cap) {
        size_t cap = o->added_ids_cap ? o->added_ids_cap : 4096;
        while (cap < need) cap *= 2;
        char *p = realloc(o->added_ids, cap);
        if (!p) return false;
        o->added_ids = p;
        o->added_ids_cap = cap;
    }
    *field = (const char *)(uintptr_t)(o->added_ids_len + 1);
    memcpy(o->added_ids + o->added_ids_len, prefix, np);
    memcpy(o->added_ids + o->added_ids_len + np, s, ni + 1);
    o->added_ids_len = need;
    return true;
}

static const char *resolve(const rt_overlay *o, const char *field)
{
    return field ? o->added_ids + (uintptr_t)field - 1 : NULL;
}

/* The instant an event states: its time, else the scheduled instant plus
 * its delay (RT_NO_TIME without a schedule or either). */
static int64_t event_instant(const rt_event *e, int64_t sched)
{
    if (!e->present) return RT_NO_TIME;
    if (e->has_time) return e->time;
    if (e->has_delay && sched != RT_NO_TIME) return sched + e->delay;
    return RT_NO_TIME;
}

/* A call of the trip being added; `assigned`: the stop a platform change
 * serves it at, or QUERY_NONE (also where it names the call's own stop);
 * flags: RT_CALL_*. */
static bool add_call(rt_overlay *o, uint32_t stop, uint32_t assigned, uint32_t stop_sequence, uint32_t flags,
                     int64_t arrival, int64_t departure)
{
    if (!grow((void **)&o->calls, &o->call_cap, o->call_count, sizeof *o->calls)) return false;
    o->calls[o->call_count++] = (rt_added_call){stop, assigned == stop ? QUERY_NONE : assigned, stop_sequence,
                                                flags, arrival, departure};
    return true;
}

/* Appends one event of the trip being added; false when out of memory. */
static bool add_event(rt_overlay *o, const rt_added_call *c, uint32_t trip, int64_t instant, int64_t day_start,
                      uint32_t kind)
{
    if (!grow((void **)&o->events, &o->event_cap, o->event_count, sizeof *o->events)) return false;
    uint32_t served = c->assigned_stop != QUERY_NONE ? c->assigned_stop : c->stop;
    o->events[o->event_count++] = (rt_added_event){instant, served, (uint32_t)(c - o->calls), trip,
                                                   c->stop_sequence, (uint32_t)(instant - day_start), kind};
    return true;
}

/* The calls from first_call on become the events of a new realtime-only
 * trip `a` (strings as keep_str offsets): a departure at each call with one,
 * an arrival at each with one (arrival only at the last call); a skipped
 * call's are canceled rows. A trip with no departure but skipped ones is
 * not shown: its calls and events are dropped. -1 when out of memory. */
static int finish_trip(rt_overlay *o, const dataset *ds, uint32_t first_call, rt_added_trip a,
                       rt_overlay_stats *stats)
{
    if ((uint64_t)o->ntrips + o->added_count >= QUERY_NONE) {   /* row trip indices are spent */
        o->call_count = first_call;
        stats->added_no_departure++;
        return 0;
    }
    int64_t day_start = dataset_instant(ds, a.service_date, 0);
    uint32_t trip = o->ntrips + o->added_count, first_event = o->event_count, departures = 0;
    for (uint32_t i = first_call; i < o->call_count; i++) {
        const rt_added_call *c = &o->calls[i];
        bool last = i + 1 == o->call_count;
        int64_t dep = last ? RT_NO_TIME : c->departure;
        int64_t arr = i == first_call ? RT_NO_TIME : c->arrival;
        if (dep != RT_NO_TIME && (dep - day_start < 0 || dep - day_start > INT32_MAX)) dep = RT_NO_TIME;
        if (arr != RT_NO_TIME && (arr - day_start < 0 || arr - day_start > INT32_MAX)) arr = RT_NO_TIME;
        o->calls[i].departure = dep;
        o->calls[i].arrival = arr;
        if (dep != RT_NO_TIME) {
            if (!add_event(o, c, trip, dep, day_start, ADDED_DEPARTURE)) return -1;
            departures += !(c->flags & RT_CALL_SKIPPED);
        }
        if (arr != RT_NO_TIME &&
            !add_event(o, c, trip, arr, day_start, ADDED_ARRIVAL | (dep == RT_NO_TIME ? ADDED_ARRIVAL_ONLY : 0)))
            return -1;
    }
    if (departures == 0) {
        o->event_count = first_event;   /* a trip with no departure is not shown, nor its arrivals */
        o->call_count = first_call;
        stats->added_no_departure++;
        return 0;
    }
    if (!grow((void **)&o->added, &o->added_cap, o->added_count, sizeof *o->added)) return -1;
    a.first_call = first_call;
    a.call_count = o->call_count - first_call;
    o->added[o->added_count++] = a;
    stats->added++;
    return 0;
}

/* The realtime-only trip's strings: the update's TripProperties, else the
 * scheduled trip's (ti, when there is one). */
static bool keep_properties(rt_overlay *o, const rt_trip_update *tu, const trip_info *ti, rt_added_trip *a)
{
    const char *headsign = tu->headsign ? tu->headsign : ti && ti->headsign && ti->headsign[0] ? ti->headsign : NULL;
    const char *shape = tu->shape_id ? tu->shape_id : ti && ti->shape_id && ti->shape_id[0] ? ti->shape_id : NULL;
    return keep_str(o, "", headsign, &a->headsign) && keep_str(o, "", shape, &a->shape_id) &&
           keep_str(o, "", tu->short_name, &a->short_name) &&
           keep_str(o, "", ti ? ti->id : NULL, &a->source_trip_id);
}

/* The calls an update's stop_time_updates state (ADDED, NEW, REPLACEMENT),
 * each at its stop_id's stop, else (st: the scheduled trip's stop times on
 * `date`, shifted by `offset`) at the scheduled stop of its stop_sequence:
 *  - SCHEDULED: at its time, else its scheduled time plus its delay;
 *  - NO_DATA (UNSCHEDULED alike): the vehicle calls there, with no realtime
 *    timing: at the scheduled time of its stop_sequence (a NEW trip has
 *    none: no call);
 *  - SKIPPED: the vehicle does not stop there: a skipped call at its time,
 *    else the scheduled one (none: no call).
 * A departure without a time takes the arrival's and the other way round.
 * StopTimeProperties.assigned_stop_id applies to each. */
static bool calls_from_updates(rt_overlay *o, const dataset *ds, const rt_trip_update *tu,
                               const trip_stop_time *st, uint32_t n, int32_t date, int32_t offset,
                               rt_overlay_stats *stats)
{
    uint32_t from = 0;   /* where the next update naming a stop_id only is looked for */
    for (uint32_t i = 0; i < tu->stop_count; i++) {
        const rt_stop_update *u = &tu->stops[i];
        long k = st && (u->has_stop_sequence || u->stop_id) ? rt_update_stop_index(ds, st, n, u, from) : -1;
        if (k >= 0) from = (uint32_t)k + 1;
        uint32_t stop = u->stop_id ? dataset_find_stop(ds, u->stop_id, strlen(u->stop_id))
                        : k >= 0   ? st[k].stop
                                   : QUERY_NONE;
        uint32_t assigned = rt_assigned_stop_named(ds, tu, i, &stats->unknown_assigned_stop, stats->problem,
                                                   sizeof stats->problem);
        /* a platform change of a scheduled stop time: the call keeps the
         * scheduled stop (the spec's stop_id, if given, is the assigned one) */
        if (assigned != QUERY_NONE && k >= 0 && u->has_stop_sequence) stop = st[k].stop;
        int64_t sched_dep = k >= 0 && st[k].departure_secs != GTFS_TIME_NONE
                                ? dataset_instant(ds, date, (uint32_t)((int32_t)st[k].departure_secs + offset))
                                : RT_NO_TIME;
        int64_t sched_arr = k >= 0 && st[k].arrival_secs != GTFS_TIME_NONE
                                ? dataset_instant(ds, date, (uint32_t)((int32_t)st[k].arrival_secs + offset))
                                : RT_NO_TIME;
        uint32_t flags = 0;
        int64_t dep = RT_NO_TIME, arr = RT_NO_TIME;
        if (u->relationship == RT_STOP_SCHEDULED || u->relationship == RT_STOP_SKIPPED) {
            dep = event_instant(&u->departure, sched_dep);
            arr = event_instant(&u->arrival, sched_arr);
        }
        if (u->relationship == RT_STOP_SKIPPED) flags |= RT_CALL_SKIPPED;
        if (u->relationship != RT_STOP_SCHEDULED && dep == RT_NO_TIME && arr == RT_NO_TIME) {
            dep = sched_dep;   /* no data, or skipped without a time: the schedule's */
            arr = sched_arr;
            flags |= RT_CALL_SCHEDULED_TIME;
        }
        if (dep == RT_NO_TIME) dep = arr;
        if (arr == RT_NO_TIME) arr = dep;
        if (stop == QUERY_NONE || dep == RT_NO_TIME) {
            if (u->relationship == RT_STOP_SCHEDULED || st)
                stats->unmatched_stops++;   /* a call that cannot be shown */
            continue;
        }
        uint32_t seq = u->has_stop_sequence ? u->stop_sequence : k >= 0 ? st[k].stop_sequence : i + 1;
        if (!add_call(o, stop, assigned, seq, flags, arr, dep)) return false;
    }
    return true;
}

/* Records an ADDED or NEW trip (see rt_overlay.h); -1 when out of memory. */
static int add_trip(rt_overlay *o, const dataset *ds, const rt_trip_update *tu, rt_overlay_stats *stats)
{
    uint32_t route = tu->route_id ? dataset_find_route(ds, tu->route_id, strlen(tu->route_id)) : QUERY_NONE;
    if (route == QUERY_NONE) {
        stats->added_no_route++;
        return 0;
    }
    int32_t date = tu->start_day;
    if (date == INT32_MIN) {
        int64_t first = RT_NO_TIME;
        for (uint32_t i = 0; i < tu->stop_count && first == RT_NO_TIME; i++) {
            first = event_instant(&tu->stops[i].departure, RT_NO_TIME);
            if (first == RT_NO_TIME) first = event_instant(&tu->stops[i].arrival, RT_NO_TIME);
        }
        if (first == RT_NO_TIME) {
            stats->added_no_departure++;
            return 0;
        }
        date = (int32_t)floor_div(first + dataset_utc_offset(ds, first), 86400);
    }
    uint32_t first_call = o->call_count;
    if (!calls_from_updates(o, ds, tu, NULL, 0, date, 0, stats)) return -1;
    rt_added_trip a = {.route = route, .direction_id = tu->direction_id, .service_date = date,
                       .relationship = tu->relationship, .start_secs = -1, .replaced_entry = UINT32_MAX};
    bool own_id = tu->trip_id && tu->trip_id[0];
    if (!keep_str(o, own_id ? "" : "rt:", own_id ? tu->trip_id : (tu->entity_id ? tu->entity_id : ""), &a.trip_id) ||
        !keep_properties(o, tu, NULL, &a))
        return -1;
    return finish_trip(o, ds, first_call, a, stats);
}

/* Records the REPLACEMENT of a scheduled instance (its stop times st, on
 * `date`, shifted by `offset`, a frequency-based run's from `start`; its
 * hidden entry's stops from the next stop entry): a realtime-only trip of
 * the same id; -1 when out of memory. */
static int add_replacement(rt_overlay *o, const dataset *ds, const rt_trip_update *tu, const trip_info *ti,
                           const trip_stop_time *st, uint32_t n, int32_t date, int32_t offset, int32_t start,
                           rt_overlay_stats *stats)
{
    uint32_t first_call = o->call_count;
    if (!calls_from_updates(o, ds, tu, st, n, date, offset, stats)) return -1;
    rt_added_trip a = {.route = ti->route, .direction_id = ti->direction_id, .service_date = date,
                       .relationship = RT_TRIP_REPLACEMENT, .start_secs = start,
                       .replaced_entry = o->stop_count};
    if (!keep_str(o, "", ti->id, &a.trip_id) || !keep_properties(o, tu, ti, &a)) return -1;
    uint32_t before = stats->added;
    if (finish_trip(o, ds, first_call, a, stats)) return -1;
    if (stats->added > before) stats->replaced++;
    return 0;
}

/* Records a DUPLICATED copy of a scheduled trip (stop times st): its
 * entries `out`/`arr` hold the copy's shifted times and propagated delays
 * (propagate()); -1 when out of memory. */
static int add_duplicate(rt_overlay *o, const dataset *ds, const rt_trip_update *tu, const trip_info *ti,
                         const trip_stop_time *st, uint32_t n, const rt_full_stop *out,
                         const rt_full_arrival *arr, rt_overlay_stats *stats)
{
    int32_t date = tu->new_start_day;
    uint32_t first_call = o->call_count;
    for (uint32_t k = 0; k < n; k++) {
        /* a skipped stop is a skipped call at its scheduled time; a stop no
         * update predicts, at the copy's scheduled time */
        uint32_t flags = (out[k].flags & STOP_SKIPPED) ? RT_CALL_SKIPPED : 0;
        if (!(out[k].flags & (STOP_PREDICTED | STOP_ARR_PREDICTED))) flags |= RT_CALL_SCHEDULED_TIME;
        int64_t dep = st[k].departure_secs == GTFS_TIME_NONE ? RT_NO_TIME
                      : dataset_instant(ds, date, out[k].secs) + ((out[k].flags & STOP_PREDICTED) ? out[k].delay : 0);
        int64_t at = st[k].arrival_secs == GTFS_TIME_NONE ? RT_NO_TIME
                     : dataset_instant(ds, date, arr[k].secs) + ((out[k].flags & STOP_ARR_PREDICTED) ? arr[k].delay : 0);
        if (dep == RT_NO_TIME) dep = at;
        if (at == RT_NO_TIME) at = dep;
        if (dep == RT_NO_TIME) continue;
        if (!add_call(o, st[k].stop, QUERY_NONE, st[k].stop_sequence, flags, at, dep)) return -1;
    }
    /* the copy's platform changes (the original keeps its stops), at the
     * calls their updates are placed at */
    rt_assigned_walk walk = {0, 0};
    uint32_t k, assigned;
    while (rt_assigned_next(&walk, ds, tu, st, n, &k, &assigned, &stats->unknown_assigned_stop, stats->problem,
                            sizeof stats->problem))
        for (uint32_t c = first_call; c < o->call_count; c++)
            if (o->calls[c].stop_sequence == st[k].stop_sequence) o->calls[c].assigned_stop = assigned;
    rt_added_trip a = {.route = ti->route, .direction_id = ti->direction_id, .service_date = date,
                       .relationship = RT_TRIP_DUPLICATED, .start_secs = -1, .replaced_entry = UINT32_MAX};
    if (!keep_str(o, "", tu->new_trip_id, &a.trip_id) || !keep_properties(o, tu, ti, &a)) return -1;
    uint32_t before = stats->added;
    if (finish_trip(o, ds, first_call, a, stats)) return -1;
    if (stats->added > before) stats->duplicated++;
    return 0;
}

/* An added trip instance as duplicates are found: sorted by these. */
typedef struct added_key {
    const char *trip_id;
    int32_t service_date;
    uint32_t k;                /* its index in added[], feed order */
} added_key;

static int compare_added_keys(const void *a, const void *b)
{
    const added_key *x = a, *y = b;
    int c = strcmp(x->trip_id, y->trip_id);
    if (c) return c;
    if (x->service_date != y->service_date) return x->service_date < y->service_date ? -1 : 1;
    return x->k < y->k ? -1 : 1;
}

static int compare_events(const void *a, const void *b)
{
    const rt_added_event *x = a, *y = b;
    if (x->stop != y->stop) return x->stop < y->stop ? -1 : 1;
    if (x->instant != y->instant) return x->instant < y->instant ? -1 : 1;
    if (x->trip != y->trip) return x->trip < y->trip ? -1 : 1;
    if (x->stop_sequence != y->stop_sequence) return x->stop_sequence < y->stop_sequence ? -1 : 1;
    return x->kind < y->kind ? -1 : x->kind > y->kind;
}

/* Points the added trips at their ids, drops a second update of the same
 * trip instance (trip_id and service date; the first in the feed stays; a
 * REPLACEMENT stays when its hidden instance is the one the overlay kept,
 * `kept` a bit per stop entry set at each kept instance's first), sorts the
 * events and marks their stops. */
static int finish_added(rt_overlay *o, const dataset *ds, const uint64_t *kept_entries, rt_overlay_stats *stats)
{
    o->nstops = dataset_stop_count(ds);
    if (!(o->stop_events = calloc((size_t)o->nstops + 1, sizeof *o->stop_events))) return -1;
    if (!o->added_count) return 0;
    for (uint32_t k = 0; k < o->added_count; k++)
    {
        rt_added_trip *a = &o->added[k];
        a->trip_id = resolve(o, a->trip_id);
        a->headsign = resolve(o, a->headsign);
        a->short_name = resolve(o, a->short_name);
        a->shape_id = resolve(o, a->shape_id);
        a->source_trip_id = resolve(o, a->source_trip_id);
    }
    added_key *keys = malloc((size_t)o->added_count * sizeof *keys);
    uint32_t *renumber = calloc(o->added_count, sizeof *renumber);
    if (!keys || !renumber) {
        free(keys);
        free(renumber);
        return -1;
    }
    /* a REPLACEMENT is of its instance: it goes with it when another
     * update of the instance came first (the instance's duplicate is counted
     * already); the others by trip_id and date */
    uint32_t nkeys = 0;
    for (uint32_t k = 0; k < o->added_count; k++) {
        uint32_t e = o->added[k].replaced_entry;
        if (e == UINT32_MAX)
            keys[nkeys++] = (added_key){o->added[k].trip_id, o->added[k].service_date, k};
        else if (!(kept_entries[e / 64] >> (e % 64) & 1))
            renumber[k] = UINT32_MAX - 1;
    }
    qsort(keys, nkeys, sizeof *keys, compare_added_keys);
    for (uint32_t i = 1; i < nkeys; i++)
        if (keys[i - 1].service_date == keys[i].service_date && strcmp(keys[i - 1].trip_id, keys[i].trip_id) == 0)
            renumber[keys[i].k] = UINT32_MAX;   /* a later copy: dropped */
    uint32_t kept = 0;
    for (uint32_t k = 0; k < o->added_count; k++) {
        if (renumber[k] >= UINT32_MAX - 1) {
            if (renumber[k] == UINT32_MAX) stats->duplicate++;
            else stats->replaced--;
            renumber[k] = UINT32_MAX;
            stats->added--;
            continue;
        }
        renumber[k] = kept;
        o->added[kept++] = o->added[k];
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < o->event_count; i++) {
        uint32_t k = renumber[o->events[i].trip - o->ntrips];
        if (k == UINT32_MAX) continue;   /* a dropped trip's (its calls stay, unread) */
        o->events[n] = o->events[i];
        o->events[n++].trip = o->ntrips + k;
    }
    o->added_count = kept;
    o->event_count = n;
    free(keys);
    free(renumber);
    qsort(o->events, o->event_count, sizeof *o->events, compare_events);
    /* counts per stop, then where each stop's run starts */
    for (uint32_t i = 0; i < o->event_count; i++) {
        assert(o->events[i].stop < o->nstops);
        assert(i == 0 || compare_events(&o->events[i - 1], &o->events[i]) <= 0);
        o->stop_events[o->events[i].stop + 1]++;
    }
    for (uint32_t st = 0; st < o->nstops; st++) o->stop_events[st + 1] += o->stop_events[st];
    assert(o->stop_events[o->nstops] == o->event_count);
    for (uint32_t i = 0; i < o->event_count; i++)   /* served at an assigned stop */
        stats->assigned += o->events[i].stop != o->calls[o->events[i].call].stop;
    return 0;
}

uint32_t rt_overlay_added_trip_count(const rt_overlay *o) { return o->added_count; }
uint32_t rt_overlay_hidden_count(const rt_overlay *o) { return o->hidden_count; }

const rt_added_trip *rt_overlay_find_added(const rt_overlay *o, const char *trip_id, int32_t service_date)
{
    const rt_added_trip *best = NULL;
    for (uint32_t k = 0; k < o->added_count; k++) {
        const rt_added_trip *a = &o->added[k];
        if (strcmp(a->trip_id, trip_id) != 0) continue;
        if (service_date != INT32_MIN ? a->service_date == service_date
                                      : !best || a->service_date < best->service_date)
            best = a;
    }
    return best;
}

const rt_added_call *rt_overlay_added_calls(const rt_overlay *o, const rt_added_trip *a)
{
    assert((uint64_t)a->first_call + a->call_count <= o->call_count);
    return o->calls + a->first_call;
}

bool rt_overlay_added_at_stop(const rt_overlay *o, uint32_t stop)
{
    return stop < o->nstops && o->stop_events[stop] != o->stop_events[stop + 1];
}

const rt_added_trip *rt_overlay_added_trip(const rt_overlay *o, const departure *d)
{
    if (d->trip < o->ntrips || d->trip - o->ntrips >= o->added_count) return NULL;
    return &o->added[d->trip - o->ntrips];
}

const rt_added_call *rt_overlay_added_call(const rt_overlay *o, const departure *d)
{
    const rt_added_trip *a = rt_overlay_added_trip(o, d);
    return a && d->pos < a->call_count ? &o->calls[a->first_call + d->pos] : NULL;
}

uint32_t rt_overlay_added_assigned_stop(const rt_overlay *o, const departure *d)
{
    const rt_added_trip *a = rt_overlay_added_trip(o, d);
    return a && d->pos < a->call_count ? o->calls[a->first_call + d->pos].assigned_stop : QUERY_NONE;
}

uint32_t rt_overlay_added_departures(const rt_overlay *o, uint32_t stop, int64_t from, int64_t to,
                                     departure *out, uint32_t max)
{
    return rt_overlay_added_events(o, QUERY_DEPARTURES, stop, from, to, out, max);
}

uint32_t rt_overlay_added_events(const rt_overlay *o, query_kind kind, uint32_t stop, int64_t from, int64_t to,
                                 departure *out, uint32_t max)
{
    uint32_t wanted = kind == QUERY_DEPARTURES ? ADDED_DEPARTURE
                      : kind == QUERY_ARRIVALS ? ADDED_ARRIVAL
                                               : ADDED_DEPARTURE | ADDED_ARRIVAL_ONLY;
    if (!rt_overlay_added_at_stop(o, stop)) return 0;
    uint32_t a = o->stop_events[stop], end = o->stop_events[stop + 1], b = end;
    assert(a < end && end <= o->event_count);
    while (a < b) {   /* the stop's first event at `from` or after */
        uint32_t mid = a + (b - a) / 2;
        if (o->events[mid].instant < from) a = mid + 1;
        else b = mid;
    }
    /* a stop's events are ordered by instant (finish_added) */
    assert(a == o->stop_events[stop] || o->events[a - 1].instant < from);
    uint32_t n = 0;
    for (; a < end && o->events[a].instant < to; a++) {
        const rt_added_event *e = &o->events[a];
        if (!(e->kind & wanted)) continue;
        if (n++ >= max) continue;
        assert(e->stop == stop && e->trip >= o->ntrips && e->trip - o->ntrips < o->added_count);
        const rt_added_trip *t = &o->added[e->trip - o->ntrips];
        out[n - 1] = (departure){.instant = e->instant,
                                 .utc_offset = dataset_utc_offset(o->ds, e->instant),
                                 .service_date = t->service_date,
                                 .secs = e->secs,
                                 .stop = o->calls[e->call].stop,   /* a moved row names its call's stop */
                                 .trip = e->trip,
                                 .stop_sequence = e->stop_sequence,
                                 .pos = e->call - t->first_call,
                                 .arrival = (e->kind & ADDED_DEPARTURE) == 0};
    }
    return n;
}

/* The instance's platform changes and TripProperties (its stop entries are
 * the next n from stop_count, filled by propagate(): an instance with a
 * platform change keeps an entry per stop). *moved: it has one. false when
 * out of memory. */
static bool note_instance(rt_overlay *o, const dataset *ds, const rt_trip_update *tu, const trip_stop_time *st,
                          uint32_t n, uint32_t trip, int32_t date, int32_t offset, bool *moved,
                          rt_overlay_stats *stats)
{
    *moved = false;
    bool assigns = false;
    for (uint32_t i = 0; i < tu->stop_count && !assigns; i++) assigns = tu->stops[i].assigned_stop_id != NULL;
    if (assigns) {
        if (!o->assigned && !(o->assigned = rt_assigned_new())) return false;
        uint32_t before = rt_assigned_noted(o->assigned);
        if (!rt_assigned_note(o->assigned, ds, tu, st, n, trip, date, offset, o->stop_count,
                              &stats->unknown_assigned_stop, stats->problem, sizeof stats->problem))
            return false;
        for (uint32_t i = before; i < rt_assigned_noted(o->assigned); i++) {
            uint32_t k = rt_assigned_entry(o->assigned, i) - o->stop_count;   /* in the scratch */
            assert(k < n);
            o->scratch[k].flags |= STOP_MOVED;
            *moved = true;
            rt_assigned_set_delays(o->assigned, i, (o->scratch[k].flags & STOP_PREDICTED) ? o->scratch[k].delay : 0,
                                   (o->scratch[k].flags & STOP_ARR_PREDICTED) ? o->scratch_arr[k].delay : 0);
        }
    }
    if (rt_properties_given(tu)) {   /* noted with the entries kept (keep_instance) */
        for (uint32_t k = 0; k < n; k++) o->scratch[k].flags |= STOP_PROPS;
        stats->properties++;
    }
    return true;
}

/* Keeps the instance at hand (the scratch's n stops): its head, span and
 * tail entries (an entry per stop where `whole`), and its TripProperties
 * over them. false when out of memory. */
static bool keep_instance(rt_overlay *o, const rt_trip_update *tu, uint32_t trip, int32_t date, int32_t start,
                          uint32_t n, bool whole)
{
    uint32_t head = 0, span = n;
    if (!whole) find_span(o->scratch, o->scratch_arr, n, &head, &span);
    rt_trip_entry e = {trip, date, start, o->stop_count, n, head, span};
    uint32_t from = head > 0 ? head - 1 : 0, kept = kept_of(&e);
    if (!pack_entries(o, from, kept)) return false;
    if (o->scratch[0].flags & STOP_PROPS) {
        if (!o->properties && !(o->properties = rt_properties_new())) return false;
        if (!rt_properties_note(o->properties, tu, o->stop_count, kept)) return false;
    }
    o->trips[o->trip_count++] = e;
    o->stop_count += kept;
    return true;
}

/* Indexes the platform changes of the instances kept (a second update of
 * an instance is dropped). false when out of memory. */
static bool finish_assigned(rt_overlay *o, rt_overlay_stats *stats)
{
    if (!rt_assigned_noted(o->assigned)) return true;
    uint64_t *kept = calloc((size_t)o->stop_count / 64 + 1, sizeof *kept);
    if (!kept) return false;
    for (uint32_t i = 0; i < o->trip_count; i++)
        for (uint32_t k = o->trips[i].first_stop; k < o->trips[i].first_stop + kept_of(&o->trips[i]); k++)
            kept[k / 64] |= (uint64_t)1 << (k % 64);
    bool ok = rt_assigned_finish(o->assigned, kept, o->stop_count);
    free(kept);
    stats->assigned = rt_overlay_moved_count(o);
    return ok;
}

const rt_assigned *rt_overlay_assigned(const rt_overlay *o) { return o->assigned; }

/* The stop entry of a timetable row (its instance's, at its stop_sequence,
 * at its time), or UINT32_MAX. The slow way (no head, no position): for the
 * rare rows whose look-up said there is more to ask. */
static uint32_t entry_of(const rt_overlay *o, const departure *d)
{
    if (d->trip >= o->ntrips || !(o->trip_bits[d->trip / 64] >> (d->trip % 64) & 1)) return UINT32_MAX;
    for (uint32_t i = o->trip_first[d->trip]; i < o->trip_count && o->trips[i].trip == d->trip; i++) {
        const rt_trip_entry *e = &o->trips[i];
        if (e->service_date != d->service_date) continue;
        bool timed;
        uint32_t k = entry_in(o, e, 0, d->stop_sequence, &timed);
        if (k == UINT32_MAX) continue;
        if (!timed) {
            if (row_in_timetable(o, d)) return k;
            continue;
        }
        rt_full_stop f;
        rt_full_arrival fa;
        unpack_entry(o, k, &f, &fa);
        if ((d->arrival ? fa.secs : f.secs) == d->secs) return k;
    }
    return UINT32_MAX;
}

uint32_t rt_overlay_assigned_stop(const rt_overlay *o, const departure *d)
{
    if (!o->assigned) return QUERY_NONE;
    uint32_t k = entry_of(o, d);
    return k == UINT32_MAX || !(o->stops[k].flags & STOP_MOVED) ? QUERY_NONE : rt_assigned_stop_of(o->assigned, k);
}

const rt_trip_properties *rt_overlay_row_properties(const rt_overlay *o, const departure *d)
{
    if (!o->properties) return NULL;
    uint32_t k = entry_of(o, d);
    return k == UINT32_MAX || !(o->stops[k].flags & STOP_PROPS)
               ? NULL : rt_properties_at(o->properties, rt_properties_of(o->properties, k));
}

/* The update with its stops at full width (a packed one's unpacked into the
 * build's room, *full pointing at them), for the rules below and
 * rt_assigned.c; NULL when out of memory. */
static const rt_trip_update *full_update(rt_overlay *o, const rt_trip_update *tu, rt_trip_update *full)
{
    if (tu->stops || !tu->packed_stops) return tu;
    if (tu->stop_count > o->update_stops_cap) {
        rt_stop_update *more = realloc(o->update_stops, (size_t)tu->stop_count * sizeof *more);
        if (!more) return NULL;
        o->update_stops = more;
        o->update_stops_cap = tu->stop_count;
    }
    *full = *tu;
    full->stops = (rt_stop_update *)rt_trip_update_stops(tu, o->update_stops);
    full->packed_stops = NULL;
    return full;
}

/* Whether the stop_sequences of trip positions [from, to) follow one
 * another (each the one before plus one). */
static bool sequences_run(const dataset *ds, uint32_t trip, uint32_t from, uint32_t to)
{
    trip_stop_time a, b;
    for (uint32_t p = from; p + 1 < to; p++)
        if (!trip_stop_at(ds, trip, p, &a) || !trip_stop_at(ds, trip, p + 1, &b) ||
            b.stop_sequence != a.stop_sequence + 1)
            return false;
    return true;
}

/* The head of instance e, its trip's first (`late`: the trip's). */
static rt_trip_head head_of(const rt_overlay *o, const rt_trip_entry *e, uint32_t late)
{
    bool fast = e->head <= UINT16_MAX && e->span <= UINT16_MAX;
    rt_trip_head h = {e->service_date, e->first_stop, fast ? (uint16_t)e->head : 0, fast ? (uint16_t)e->span : 0,
                      late, tail_of(e) > 0, fast, 0, 0, 0, 0, NULL};
    uint32_t start = 0, count = 0;
    const int32_t *dep = trip_departure_offsets(o->ds, e->trip, &start, &count);
    if (fast && dep && count == e->stop_count) {
        h.start = start;
        h.stop_count = count;
        h.dep = dep;
        h.head_run = e->head > 0 && sequences_run(o->ds, e->trip, 0, e->head);
        h.tail_run = tail_of(e) > 0 && sequences_run(o->ds, e->trip, e->head + e->span, e->stop_count);
    }
    return h;
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
    o->nstops = dataset_stop_count(ds);
    o->slack = calloc(2 * (size_t)o->nstops + 2, sizeof *o->slack);
    o->late_spans = malloc(((size_t)o->nstops + 1) * sizeof *o->late_spans);
    o->late_lo = INT64_MAX;
    o->late_hi = INT64_MIN;
    for (uint32_t s = 0; o->late_spans && s < o->nstops; s++) o->late_spans[s] = (rt_late_span){INT64_MAX, INT64_MIN};
    uint32_t nupdates = feed ? feed->trip_update_count : 0;
    o->trips = malloc((nupdates ? nupdates : 1) * sizeof *o->trips);
    uint32_t st_cap = 64;
    trip_stop_time *st = malloc(st_cap * sizeof *st);
    uint64_t *kept_entries = NULL;
    if (!o->trip_bits || !o->trips || !st || !o->slack || !o->late_spans || !presize_stops(o, feed, ds)) goto oom;

    for (uint32_t i = 0; i < nupdates; i++) {
        rt_trip_update full;
        const rt_trip_update *tu = full_update(o, &feed->trip_updates[i], &full);
        if (!tu) goto oom;
        uint32_t trip = tu->trip_id ? dataset_find_trip(ds, tu->trip_id, strlen(tu->trip_id)) : QUERY_NONE;
        if (trip == QUERY_NONE) {
            if (tu->relationship != RT_TRIP_ADDED && tu->relationship != RT_TRIP_NEW) stats->unknown_trip++;
            else if (add_trip(o, ds, tu, stats)) goto oom;
            continue;
        }
        if (tu->relationship == RT_TRIP_NEW) {
            stats->unknown_trip++;   /* NEW names a trip the schedule does not have */
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
        if (tu->relationship == RT_TRIP_DUPLICATED) {
            /* a copy at another time: the original is untouched */
            if (ti.frequency_based || dataset_find_trip(ds, tu->new_trip_id, strlen(tu->new_trip_id)) != QUERY_NONE) {
                stats->not_duplicable++;
                continue;
            }
            if (!reserve_scratch(o, n)) goto oom;
            int32_t shift = tu->new_start_secs - (int32_t)st[0].departure_secs;
            propagate(ds, tu, st, n, tu->new_start_day, shift, o->scratch, o->scratch_arr, stats);
            if (add_duplicate(o, ds, tu, &ti, st, n, o->scratch, o->scratch_arr, stats)) goto oom;
            continue;
        }
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
            date = rt_nearest_service_date(ds, trip, (uint32_t)((int32_t)st[0].departure_secs + offset), now);
            if (date == INT32_MIN) {
                stats->not_running++;
                continue;
            }
        } else if (!trip_runs_on(ds, trip, date)) {
            stats->not_running++;
            continue;
        }
        if (!reserve_scratch(o, n)) goto oom;
        rt_full_stop *out = o->scratch;
        rt_full_arrival *arr = o->scratch_arr;
        propagate(ds, tu, st, n, date, offset, out, arr, stats);
        if (tu->relationship == RT_TRIP_DELETED || tu->relationship == RT_TRIP_REPLACEMENT)
            for (uint32_t k = 0; k < n; k++) {
                out[k].flags = STOP_CANCELED | STOP_HIDDEN;
                out[k].delay = 0;
                arr[k].delay = 0;
            }
        if (tu->relationship == RT_TRIP_DELETED) stats->deleted++;
        if (tu->relationship == RT_TRIP_REPLACEMENT &&
            add_replacement(o, ds, tu, &ti, st, n, date, offset, start, stats))
            goto oom;
        bool moved = false;
        if (tu->relationship != RT_TRIP_DELETED && tu->relationship != RT_TRIP_REPLACEMENT &&
            !note_instance(o, ds, tu, st, n, trip, date, offset, &moved, stats))
            goto oom;
        note_slack(o, st, n, out, arr);
        note_late(o, st, n, date, out, arr);
        if (!keep_instance(o, tu, trip, date, start, n, ti.frequency_based || moved)) goto oom;
        if (tu->relationship == RT_TRIP_CANCELED || tu->relationship == RT_TRIP_DELETED) stats->canceled++;
    }
    if (o->stop_count < o->stop_cap && !resize_stops(o, o->stop_count)) goto oom;
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
    for (uint32_t i = 0; i < kept; i++)
        if (kept_of(&o->trips[i]) && (o->stops[o->trips[i].first_stop].flags & STOP_HIDDEN)) o->hidden_count++;
    if (!(o->trip_first = malloc(((size_t)o->ntrips + 1) * sizeof *o->trip_first))) goto oom;
    size_t heads_bytes = ((size_t)o->ntrips + 1) * sizeof *o->heads;
    if (!(o->heads = aligned_alloc(64, (heads_bytes + 63) & ~(size_t)63))) goto oom;
    memset(o->heads, 0, heads_bytes);
    memset(o->trip_first, 0xff, ((size_t)o->ntrips + 1) * sizeof *o->trip_first);
    for (uint32_t i = kept; i-- > 0;) {
        uint32_t t = o->trips[i].trip;
        o->trip_bits[t / 64] |= (uint64_t)1 << (t % 64);
        o->trip_first[t] = i;
        uint32_t late = i + 1 < kept && o->trips[i + 1].trip == t ? o->heads[t].late : 0;
        const rt_trip_entry *e = &o->trips[i];
        for (uint32_t k = e->first_stop; k < e->first_stop + kept_of(e); k++) {
            rt_full_stop f;
            rt_full_arrival fa;
            unpack_entry(o, k, &f, &fa);
            int32_t d = f.delay > fa.delay ? f.delay : fa.delay;
            if (d > 0 && (uint32_t)d > late) late = (uint32_t)d > RT_OVERLAY_SLACK_MAX ? RT_OVERLAY_SLACK_MAX : (uint32_t)d;
        }
        if (i == 0 || o->trips[i - 1].trip != t) o->heads[t] = head_of(o, e, late);   /* its first instance */
        else o->heads[t].late = late;
    }
    stats->matched = kept;
    if (!finish_assigned(o, stats)) goto oom;
    if (!finish_late(o, &st, &st_cap)) goto oom;
    /* the kept instances' first entries, for the REPLACEMENTs of them */
    if (!(kept_entries = calloc((size_t)o->stop_count / 64 + 1, sizeof *kept_entries))) goto oom;
    for (uint32_t i = 0; i < kept; i++)
        kept_entries[o->trips[i].first_stop / 64] |= (uint64_t)1 << (o->trips[i].first_stop % 64);
    if (finish_added(o, ds, kept_entries, stats)) goto oom;
    free(kept_entries);
    kept_entries = NULL;
    free(o->update_stops);
    o->update_stops = NULL;
    free(st);
    st = NULL;
    if (!(o->row_index = rt_row_index_build(o, ds))) goto oom;
    return o;
oom:
    free(st);
    free(kept_entries);
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
    rt_vehicles_release(o->vehicles);
    free(o->trip_bits);
    free(o->trip_first);
    free(o->heads);
    free(o->trips);
    free(o->stops);
    free(o->arr_stops);
    free(o->wide);
    free(o->scratch);
    free(o->scratch_arr);
    free(o->update_stops);
    free(o->added);
    free(o->added_ids);
    free(o->calls);
    free(o->events);
    free(o->stop_events);
    free(o->slack);
    free(o->lead_of);
    free(o->lead_back);
    free(o->late_spans);
    rt_assigned_free(o->assigned);
    rt_properties_free(o->properties);
    rt_row_index_free(o->row_index);
    free(o);
}

void rt_overlay_stop_slack(const rt_overlay *o, uint32_t stop, uint32_t *late_s, uint32_t *early_s)
{
    *late_s = stop < o->nstops ? o->slack[2 * (size_t)stop] : 0;
    *early_s = stop < o->nstops ? o->slack[2 * (size_t)stop + 1] : 0;
}

void rt_overlay_slack(const rt_overlay *o, uint32_t *late_s, uint32_t *early_s)
{
    *late_s = o->slack_late_max;
    *early_s = o->slack_early_max;
}

const dataset *rt_overlay_dataset(const rt_overlay *o) { return o->ds; }
uint64_t rt_overlay_feed_timestamp(const rt_overlay *o) { return o->feed_timestamp; }
uint32_t rt_overlay_trip_count(const rt_overlay *o) { return o->trip_count; }
void rt_overlay_set_generation(rt_overlay *o, uint64_t generation) { o->generation = generation; }
uint64_t rt_overlay_generation(const rt_overlay *o) { return o->generation; }

void rt_overlay_prefetch_trip(const rt_overlay *o, const departure *d)
{
    if (d->trip >= o->ntrips) return;
    __builtin_prefetch(&o->trip_bits[d->trip / 64]);
    __builtin_prefetch(&o->heads[d->trip]);
}

/* The entry of the trip's first instance a row at position pos reads
 * first (head, span or tail: rt_trip_entry), or UINT32_MAX past its end. */
static inline uint32_t head_entry(const rt_trip_head *h, uint32_t pos)
{
    if (pos < h->head) return h->first_stop;
    uint32_t base = h->first_stop + (h->head > 0);
    if (pos - h->head < h->span) return base + pos - h->head;
    return h->has_tail ? base + h->span : UINT32_MAX;
}

void rt_overlay_prefetch(const rt_overlay *o, const departure *d)
{
    if (d->trip >= o->ntrips || !(o->trip_bits[d->trip / 64] >> (d->trip % 64) & 1)) return;
    const rt_trip_head *h = &o->heads[d->trip];
    uint32_t k;
    if (h->service_date == d->service_date && h->fast && (k = head_entry(h, d->pos)) != UINT32_MAX) {
        __builtin_prefetch(&o->stops[k]);
        if (d->arrival) __builtin_prefetch(&o->arr_stops[k]);
    }
}

uint32_t rt_overlay_trip_dates(const rt_overlay *o, uint32_t trip, int32_t *dates, uint32_t max)
{
    if (trip >= o->ntrips || !(o->trip_bits[trip / 64] >> (trip % 64) & 1)) return 0;
    uint32_t n = 0;
    for (uint32_t i = o->trip_first[trip]; i < o->trip_count && o->trips[i].trip == trip; i++) {
        if (n < max) dates[n] = o->trips[i].service_date;
        n++;
    }
    return n;
}

const rt_row_index *rt_overlay_row_index(const rt_overlay *o) { return o->row_index; }

uint32_t rt_overlay_trip_late(const rt_overlay *o, uint32_t trip)
{
    if (trip >= o->ntrips || !(o->trip_bits[trip / 64] >> (trip % 64) & 1)) return 0;
    return o->heads[trip].late;
}

/* What a platform change or TripProperties add to a row (rare: the flags
 * say whether to look). */
static void fill_instance(uint32_t flags, rt_departure *out)
{
    out->moved = (flags & STOP_MOVED) != 0;
    out->has_properties = (flags & STOP_PROPS) != 0;
}

/* Fills `out` from stop entry `k` of an instance when it is the row's
 * (frequency-based instances differ by their times: checked against the
 * entry where it is `timed`, a span entry, else against the timetable);
 * false when not. */
enum {
    CHECK_ENTRY,       /* a span entry: the row's time is the entry's */
    CHECK_TIMETABLE,   /* a head or tail entry: the row is checked against the timetable */
    CHECKED,           /* ... where the look-up has checked it already */
};

static bool fill_wide(const rt_overlay *o, uint32_t k, const departure *d, int check, rt_departure *out);

static inline bool fill(const rt_overlay *o, uint32_t k, const departure *d, int check, rt_departure *out)
{
    const rt_stop_entry *s = &o->stops[k];
    if (__builtin_expect((s->flags & STOP_WIDE) != 0, 0)) return fill_wide(o, k, d, check, out);
    if (d->arrival) {
        const rt_arrival_entry *ae = &o->arr_stops[k];
        if (check == CHECK_ENTRY ? s->secs - ae->before != d->secs
                                 : check == CHECK_TIMETABLE && !row_in_timetable(o, d))
            return false;
        out->has_prediction = (s->flags & STOP_ARR_PREDICTED) != 0;
        out->delay_s = ae->delay;
    } else {
        if (check == CHECK_ENTRY ? s->secs != d->secs : check == CHECK_TIMETABLE && !row_in_timetable(o, d))
            return false;
        out->has_prediction = (s->flags & STOP_PREDICTED) != 0;
        out->delay_s = s->delay;
        out->occupancy = (uint8_t)(s->flags >> STOP_OCCUPANCY_SHIFT & 15);
    }
    out->realtime = true;
    out->canceled = (s->flags & STOP_CANCELED) != 0;
    out->skipped = (s->flags & STOP_SKIPPED) != 0;
    out->hidden = (s->flags & STOP_HIDDEN) != 0;
    if (__builtin_expect((s->flags & (STOP_MOVED | STOP_PROPS)) != 0, 0))
        fill_instance(s->flags, out);
    return true;
}

/* fill() for a STOP_WIDE entry, from its full values. */
static bool fill_wide(const rt_overlay *o, uint32_t k, const departure *d, int check, rt_departure *out)
{
    rt_full_stop f;
    rt_full_arrival fa;
    unpack_entry(o, k, &f, &fa);
    if (check == CHECK_ENTRY ? (d->arrival ? fa.secs : f.secs) != d->secs
                             : check == CHECK_TIMETABLE && !row_in_timetable(o, d))
        return false;
    out->has_prediction = (f.flags & (d->arrival ? STOP_ARR_PREDICTED : STOP_PREDICTED)) != 0;
    out->delay_s = d->arrival ? fa.delay : f.delay;
    if (!d->arrival) out->occupancy = (uint8_t)(f.flags >> STOP_OCCUPANCY_SHIFT & 15);
    out->realtime = true;
    out->canceled = (f.flags & STOP_CANCELED) != 0;
    out->skipped = (f.flags & STOP_SKIPPED) != 0;
    out->hidden = (f.flags & STOP_HIDDEN) != 0;
    fill_instance(f.flags, out);
    return true;
}

bool rt_overlay_lookup(const rt_overlay *o, const departure *d, rt_departure *out)
{
    memset(out, 0, sizeof *out);
    if (d->trip >= o->ntrips || !(o->trip_bits[d->trip / 64] >> (d->trip % 64) & 1)) return false;
    /* the row of the trip's first instance, from the position it names: one
     * read (its stop_sequence says whether the position is right) */
    const rt_trip_head *h = &o->heads[d->trip];
    if (h->service_date == d->service_date && h->fast) {
        uint32_t k = head_entry(h, d->pos), pos = d->pos;
        if (k != UINT32_MAX) {
            uint32_t seq = o->stops[k].stop_sequence;
            if (pos >= h->head && pos - h->head < h->span) {
                if (seq == d->stop_sequence && fill(o, k, d, CHECK_ENTRY, out)) return true;
            } else if (!d->arrival && h->dep && pos < h->stop_count &&
                       (pos < h->head ? h->head_run && seq - (h->head - 1 - pos) == d->stop_sequence
                                      : h->tail_run && seq + (pos - h->head - h->span) == d->stop_sequence) &&
                       (uint32_t)((int64_t)h->start + h->dep[pos]) == d->secs && fill(o, k, d, CHECKED, out)) {
                return true;
            }
        }
    }
    /* the trip's instances lie side by side from trip_first, by date then start */
    uint32_t lo = o->trip_first[d->trip];
    assert(lo < o->trip_count && o->trips[lo].trip == d->trip);
    while (lo < o->trip_count && o->trips[lo].trip == d->trip && o->trips[lo].service_date < d->service_date)
        lo++;
    for (; lo < o->trip_count && o->trips[lo].trip == d->trip && o->trips[lo].service_date == d->service_date;
         lo++) {
        const rt_trip_entry *e = &o->trips[lo];
        assert((uint64_t)e->first_stop + kept_of(e) <= o->stop_count);
        /* the row's position finds its entry in one read; a row made
         * elsewhere (pos 0 or stale) falls back to its stop_sequence */
        bool timed;
        uint32_t k = entry_in(o, e, d->pos, d->stop_sequence, &timed);
        if (k != UINT32_MAX && fill(o, k, d, timed ? CHECK_ENTRY : CHECK_TIMETABLE, out)) return true;
    }
    memset(out, 0, sizeof *out);
    return false;
}

void rt_overlay_set_vehicles(rt_overlay *o, rt_vehicles *v)
{
    rt_vehicles_release(o->vehicles);
    o->vehicles = v;
}

const rt_vehicles *rt_overlay_vehicles(const rt_overlay *o) { return o ? o->vehicles : NULL; }
