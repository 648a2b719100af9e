/* board_predicted.c — a board chosen, ordered and cut by predicted times.
 *
 * Why it exists: see board_predicted.h. The schedule's rows come from the
 * board's merge in scheduled order (query_heap.h: the scan sets it up, this
 * file drains it); at each pop the row's trip slot in the overlay's row
 * index (asked for when its cursor reached the row, a few pops before)
 * says whether it can be in the window and by how much it moves, and
 * those predicted in the window go, as a 32-byte key (the predicted
 * instant, the ranks, the cursor and run it came from, what the overlay
 * said), into a sorted list of at most limit + 1 (insertion from its end,
 * where rows mostly belong). Only the rows of the answer are made into
 * departures, from their cursors, at the end.
 * The scan reads each stop's rows from its earliest row scheduled before
 * the window and predicted in it (rt_overlay_stop_lead), so the rows before
 * the window it pops are few; what that reads at each stop is asked
 * for at every stop of the board first (prefetch_stop), so that the misses
 * overlap instead of queuing stop after stop.
 * A row scheduled at s is predicted no earlier than s - early (the largest
 * early running of the stops searched), so once the list is full and
 * s - early is past the limit-th row's predicted instant, no later row can
 * enter the first `limit` and the drain stops. Ties on the predicted instant
 * are broken by the ranks the merge gives (the contract's strings, ranked
 * at open), and by the strings themselves where an ADDED trip's row, which
 * has no rank, is one of the two.
 */
#include "engine/board_predicted.h"

#include "engine/board_accessible.h"
#include "engine/board_moved.h"
#include "engine/query_heap.h"
#include "live/rt_grid_leads.h"
#include "live/rt_row_index.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* rt_departure's booleans in a key: the row index's RT_ROW_* flags, and */
enum {
    KEY_REALTIME = 64,         /* rt_departure.realtime */
    KEY_SHIFTED = 128,         /* the row's predicted instant is its scheduled one + delay */
};

/* A row in the board's order: its predicted instant (from the window's
 * start) and ranks packed as two integers compared as one (as query.c's
 * heap), where it came from, and what the overlay said of it. */
typedef struct board_key {
    uint64_t hi;               /* seconds from the window's start << 32 | stop rank */
    uint64_t lo;               /* route rank << 32 | trip rank */
    uint32_t row;              /* a scan row: its cursor (query_heap.h); else ROW_EXTRA | its slot in extras */
    uint32_t run;              /* a scan row: the run its cursor was at */
    int32_t delay;             /* rt_departure.delay_s */
    uint8_t flags;             /* RT_ROW_* | KEY_* */
    uint8_t occupancy;         /* rt_departure.occupancy */
    uint8_t ranked;            /* 1: the ranks are set (not an ADDED trip's row) */
    uint8_t unused;
} board_key;

_Static_assert(sizeof(board_key) == 32, "a key is half a cache line");

#define ROW_EXTRA 0x80000000u

struct predicted_scratch {
    board_key order[QUERY_LIMIT_MAX + 1];
    /* the rows that do not come from the scan (platform changes, ADDED
     * trips): limit + 1 held, and a spare for the row being placed */
    departure extras[QUERY_LIMIT_MAX + 2];
    departure added[QUERY_LIMIT_MAX + 1];
    const rt_row_slot **slots; /* per cursor of the scan: its row's slot in the row index, or NULL */
    size_t slots_cap;
    uint32_t *stops;           /* a station's children */
    uint32_t stops_cap;
    departure *moved;          /* a stop's rows moved there by a platform change */
    uint32_t moved_cap;
    bool by_schedule;          /* choose by scheduled time (predicted_scratch_by_schedule) */
};

predicted_scratch *predicted_scratch_new(void) { return calloc(1, sizeof(predicted_scratch)); }

void predicted_scratch_by_schedule(predicted_scratch *p, bool by_schedule) { p->by_schedule = by_schedule; }

void predicted_scratch_free(predicted_scratch *p)
{
    if (!p) return;
    free(p->slots);
    free(p->stops);
    free(p->moved);
    free(p);
}

/* One board's choice in progress. */
typedef struct choice {
    predicted_scratch *p;
    const dataset *ds;
    const rt_overlay *rt;
    const rt_row_index *rows;  /* the overlay's: each row's look-up in one read */
    const rt_grid_leads *leads;   /* the stops' leads in grid order (nearby departures), or NULL */
    const query_scratch *s;    /* the scan's cursors, which a scan row's key names */
    const tt_run *runs;        /* the scan's run array */
    int64_t from, to;
    uint32_t limit;
    uint32_t early;            /* the largest early slack of the stops searched */
    uint32_t n;                /* keys held, at most limit + 1 */
    bool more;                 /* rows beyond the keys are in the window (ADDED overflow) */
    uint32_t spare, next_slot; /* the extras slot the next extra row is built in; the next never used */
    int64_t until;             /* the drain's end: no row scheduled later can be among the first `limit` */
} choice;

/* The departure of a scan row (without its UTC offset: finish sets it). */
static departure scan_row(const choice *c, const board_key *k)
{
    const cursor *cu = &c->s->cur[k->row];
    int64_t instant = c->from + (int64_t)(k->hi >> 32) - ((k->flags & KEY_SHIFTED) ? k->delay : 0);
    return (departure){instant,
                       0,
                       cu->day,
                       (uint32_t)(instant - cu->base),
                       cu->stop,
                       c->runs[k->run].trip,
                       cu->stop_sequence,
                       cu->pos,
                       cu->arrival != 0,
                       near_distance(c->s, cu->near)};
}

/* A key's row: an extra as it was put in, a scan row from its cursor. */
static departure row_of(const choice *c, const board_key *k)
{
    return (k->row & ROW_EXTRA) ? c->p->extras[k->row & ~ROW_EXTRA] : scan_row(c, k);
}

/* What the overlay said of a row with flags f (RT_ROW_* | KEY_REALTIME),
 * without its delay and occupancy: a table, so that a row of the answer
 * copies 16 bytes instead of setting seven booleans one by one. */
#define RT_OF_FLAGS(f)                                                                                        \
    {.realtime = ((f) & KEY_REALTIME) != 0, .canceled = ((f) & RT_ROW_CANCELED) != 0,                       \
     .skipped = ((f) & RT_ROW_SKIPPED) != 0, .hidden = ((f) & RT_ROW_HIDDEN) != 0,                           \
     .has_prediction = ((f) & RT_ROW_PREDICTION) != 0, .moved = ((f) & RT_ROW_MOVED) != 0,                   \
     .has_properties = ((f) & RT_ROW_PROPERTIES) != 0}
#define RT_OF_4(f) RT_OF_FLAGS(f), RT_OF_FLAGS((f) + 1), RT_OF_FLAGS((f) + 2), RT_OF_FLAGS((f) + 3)
#define RT_OF_16(f) RT_OF_4(f), RT_OF_4((f) + 4), RT_OF_4((f) + 8), RT_OF_4((f) + 12)
#define RT_OF_64(f) RT_OF_16(f), RT_OF_16((f) + 16), RT_OF_16((f) + 32), RT_OF_16((f) + 48)
static const rt_departure rt_of_flags[128] = {RT_OF_64(0), RT_OF_64(64)};

/* What the overlay said of a row, from its key. */
static inline rt_departure rt_of(const board_key *k)
{
    rt_departure r = rt_of_flags[k->flags & 127];
    r.delay_s = k->delay;
    r.occupancy = k->occupancy;
    return r;
}

/* rt_of's inverse: the flags of what the overlay said. */
static uint8_t flags_of(const rt_departure *r)
{
    return (uint8_t)((r->realtime ? KEY_REALTIME : 0) | (r->has_prediction ? RT_ROW_PREDICTION : 0) |
                     (r->canceled ? RT_ROW_CANCELED : 0) | (r->skipped ? RT_ROW_SKIPPED : 0) |
                     (r->hidden ? RT_ROW_HIDDEN : 0) | (r->moved ? RT_ROW_MOVED : 0) |
                     (r->has_properties ? RT_ROW_PROPERTIES : 0));
}

/* The strings a row is ordered by after its instant (rt_merge.c's rule). */
typedef struct row_key {
    const char *stop_id, *route_short_name, *trip_id;
} row_key;

static row_key key_of(const choice *c, const departure *d)
{
    stop_info s;
    route_info r;
    dataset_stop(c->ds, d->stop, &s);
    const rt_added_trip *added = rt_overlay_added_trip(c->rt, d);
    if (added) {
        dataset_route(c->ds, added->route, &r);
        return (row_key){s.id, r.short_name, added->trip_id};
    }
    trip_info t;
    dataset_trip(c->ds, d->trip, &t);
    dataset_route(c->ds, t.route, &r);
    return (row_key){s.id, r.short_name, t.id};
}

/* Two rows at the same predicted instant, one without ranks: by the strings. */
static bool strings_before(const choice *c, const board_key *a, const board_key *b)
{
    departure da = row_of(c, a), db = row_of(c, b);
    row_key x = key_of(c, &da), y = key_of(c, &db);
    int k = strcmp(x.stop_id, y.stop_id);
    if (!k) k = strcmp(x.route_short_name, y.route_short_name);
    if (!k) k = strcmp(x.trip_id, y.trip_id);
    return k < 0;
}

static inline __attribute__((always_inline)) bool key_before(const choice *c, const board_key *a, const board_key *b)
{
    /* an ADDED trip's row has no ranks: a tie on the instant with one is
     * broken by the strings */
    if ((a->ranked & b->ranked) || (a->hi >> 32) != (b->hi >> 32))
        return (a->hi < b->hi) | ((a->hi == b->hi) & (a->lo < b->lo));
    return strings_before(c, a, b);
}

/* The predicted instant of the i-th key in the board's order. */
static inline int64_t nth_at(const choice *c, uint32_t i) { return c->from + (int64_t)(c->p->order[i].hi >> 32); }

#define INSERT_OUT UINT32_MAX          /* the row is not among the first limit + 1 */
#define INSERT_NONE (UINT32_MAX - 1)   /* it is, and no row was pushed out */

/* Places key k among the keys, after those it does not come before (so
 * equal rows keep the order they came in); the (limit + 1)-th is as far as
 * the list goes. Returns the row a key pushed past it held, or INSERT_OUT,
 * INSERT_NONE. */
static inline __attribute__((always_inline)) uint32_t insert(choice *c, const board_key *k)
{
    board_key *order = c->p->order;
    /* rows come by scheduled time and a prediction moves them by minutes,
     * so a row's place is a few entries from the end: found from there,
     * each entry passed moved up as it is passed (no search, no memmove) */
    bool full = c->n == c->limit + 1;
    if (full && !key_before(c, k, &order[c->limit])) return INSERT_OUT;
    uint32_t out = full ? order[c->limit].row : INSERT_NONE;
    uint32_t i = full ? c->limit : c->n++;
    while (i > 0 && key_before(c, k, &order[i - 1])) {
        order[i] = order[i - 1];
        i--;
    }
    order[i] = *k;
    return out;
}

/* insert for a row of the scan, while every key held is ranked (the extras
 * come after the scan): the order is the two integers alone, the instant's
 * first (they almost never tie), compared as two words and the place
 * walked down by pointer (as a 128-bit number indexed from the end, the
 * drain kept both in memory: 16 instructions an entry passed, now 11). n
 * keys are held, at most limit + 1; returns how many are held after. */
static inline __attribute__((always_inline)) uint32_t insert_ranked(board_key *order, uint32_t n, uint32_t limit,
                                                        const board_key *k)
{
    uint64_t hi = k->hi, lo = k->lo;
    board_key *at = &order[n];
    if (n == limit + 1) {
        at = &order[limit];
        if (hi > at->hi || (hi == at->hi && lo >= at->lo)) return n;
    } else {
        n++;
    }
    for (; at > order; at--) {
        const board_key *prev = at - 1;
        if (hi > prev->hi || (hi == prev->hi && lo >= prev->lo)) break;
        *at = *prev;
    }
    *at = *k;
    return n;
}

/* A row that does not come from the scan (an ADDED trip's, one a platform
 * change moved), predicted at `at`, among the keys. */
static void insert_extra(choice *c, const departure *d, const rt_departure *rt, int64_t at, query_rank rank,
                         bool ranked)
{
    c->p->extras[c->spare] = *d;
    board_key k = {(uint64_t)(at - c->from) << 32 | rank.stop,
                   (uint64_t)rank.route << 32 | rank.trip,
                   ROW_EXTRA | c->spare,
                   0,
                   rt->delay_s,
                   flags_of(rt),
                   rt->occupancy,
                   ranked,
                   0};
    uint32_t out = insert(c, &k);
    if (out == INSERT_OUT) return;   /* the spare stays spare */
    /* the extra pushed out gives its slot to the next one */
    c->spare = out != INSERT_NONE && (out & ROW_EXTRA) ? out & ~ROW_EXTRA : c->next_slot++;
}

static void slack_of(void *ctx, uint32_t stop, uint32_t *late, uint32_t *early)
{
    choice *c = ctx;
    if (c->p->by_schedule) {
        *late = *early = 0;
        return;
    }
    rt_overlay_stop_slack(c->rt, stop, late, early);
    /* back to the earliest row there delayed into the window, not the
     * stop's largest delay */
    *late = rt_overlay_stop_lead(c->rt, stop, c->from);
    if (*early > c->early) c->early = *early;
}

/* What slack_of reads at each stop (rt_overlay_stop_lead), asked for every
 * stop searched before slack_of runs on the first, in the two steps its
 * reads depend on each other by. */
static void prefetch_stop(void *ctx, uint32_t stop, int step)
{
    const choice *c = ctx;
    if (!c->p->by_schedule) rt_overlay_prefetch_stop_lead(c->rt, stop, c->from, step);
}

/* slack_of for all the stops of a nearby board of departures, from the
 * leads in grid order (rt_grid_leads.h): the stops near a point are a few
 * lines there. */
static void slack_at_points(void *ctx, const uint32_t *points, size_t n, uint32_t *late, uint32_t *early)
{
    choice *c = ctx;
    rt_grid_leads_slack_points(c->leads, points, n, c->from, late, early);
    for (size_t i = 0; i < n; i++)
        if (early[i] > c->early) c->early = early[i];
}

/* The slot of a cursor's row of `trip` (NULL: the overlay's look-up answers
 * it), and what its look-up reads asked for: the cursor's row is popped a
 * few pops later. */
static inline const rt_row_slot *ask_slot(const choice *c, const cursor *cu, uint32_t trip)
{
    const rt_row_slot *slot = rt_row_index_slot(c->rows, trip);
    if (slot) __builtin_prefetch(slot);
    if (!slot || cu->arrival) rt_overlay_prefetch_trip(c->rt, &(departure){.trip = trip});
    return slot;
}

/* A scan row's departure for the overlay's look-up (its UTC offset and
 * distance, which the look-up does not read, left out). */
static departure lookup_row(const cursor *cu, uint32_t trip, int64_t instant)
{
    return (departure){instant, 0, cu->day, (uint32_t)(instant - cu->base), cu->stop, trip, cu->stop_sequence,
                       cu->pos, cu->arrival != 0, 0};
}

/* Drains the merge the scan set up (h): each row popped, in scheduled
 * order, is chosen or not by its predicted instant, until no later row can
 * be among the first `limit`. QUERY_OK or QUERY_ENOMEM. Built twice (drain
 * below). */
static inline __attribute__((always_inline)) int drain_rows(choice *c, query_scratch *s, const scan_heap *h,
                                                            bool wheelchair, query_error *err)
{
    predicted_scratch *p = c->p;
    if (s->cur_n > p->slots_cap) {
        size_t cap = s->cur_n * 2;
        const rt_row_slot **slots = realloc(p->slots, cap * sizeof *slots);
        if (!slots) {
            s->heap_n = 0;
            if (err) *err = (query_error){"", "out of memory"};
            return QUERY_ENOMEM;
        }
        p->slots = slots;
        p->slots_cap = cap;
    }
    assert(s->cur_n < ROW_EXTRA);
    const dataset *ds = c->ds;
    const rt_overlay *rt = c->rt;
    const tt_run *runs = h->runs;
    const rt_row_slot **slots = p->slots;
    c->s = s;
    c->runs = runs;
    /* every cursor's first row: its slot asked for before the first pop */
    for (size_t i = 0; i < s->cur_n; i++) slots[i] = ask_slot(c, &s->cur[i], runs[s->cur[i].run].trip);
    bool moves = rt_overlay_moved_count(rt) != 0, by_schedule = p->by_schedule;
    int64_t from = h->from, to = h->to;   /* the merge's */
    int64_t window_from = c->from, window_to = c->to, until = c->until;
    uint32_t n = c->n, limit = c->limit;
    assert(n == 0);   /* the scan's rows come first: every key held is ranked */
    while (s->heap_n) {
        heap_entry *top = &s->heap[0];
        uint32_t ci = top->cursor;
        cursor *cu = &s->cur[ci];
        int64_t instant = from + (int64_t)(top->hi >> 32);
        if (instant > until) break;
        const rt_row_slot *slot = slots[ci];
        uint32_t run = cu->run;
        do {
            if (wheelchair && !board_row_accessible(ds, &(departure){.stop = cu->stop, .trip = runs[run].trip}))
                break;
            /* before the window, and its trip never late enough to reach it */
            if (instant < window_from &&
                (int64_t)(slot ? slot->late : rt_overlay_trip_late(rt, runs[run].trip)) < window_from - instant)
                break;
            bool ask = true;
            const rt_row_run *r = slot ? rt_row_slot_run(slot, cu->day, cu->pos, cu->arrival, &ask) : NULL;
            board_key k = {0, top->lo, ci, run, 0, 0, 0, 1, 0};
            if (r) {
                k.flags = r->flags | KEY_REALTIME;
                k.delay = r->delay;
                k.occupancy = r->occupancy;
            } else if (ask) {
                departure d = lookup_row(cu, runs[run].trip, instant);
                rt_departure found;
                rt_overlay_lookup(rt, &d, &found);
                k.flags = flags_of(&found);
                k.delay = found.delay_s;
                k.occupancy = found.occupancy;
            }
            if (k.flags & RT_ROW_HIDDEN) break;              /* DELETED, REPLACED */
            if (moves && (k.flags & RT_ROW_MOVED)) break;   /* served at its assigned stop (add_moved) */
            int64_t at = instant;
            if ((k.flags & (RT_ROW_PREDICTION | RT_ROW_CANCELED)) == RT_ROW_PREDICTION && !by_schedule &&
                k.delay <= RT_OVERLAY_SLACK_MAX && k.delay >= -RT_OVERLAY_SLACK_MAX) {
                at += k.delay;
                k.flags |= KEY_SHIFTED;
            }
            if (at < window_from || at >= window_to) break;
            k.hi = (uint64_t)(at - window_from) << 32 | (uint32_t)top->hi;
            n = insert_ranked(p->order, n, limit, &k);
            if (n > limit) until = nth_at(c, limit - 1) + (int64_t)c->early;
        } while (0);
        /* advance the cursor within its group (query.c's drain). `until`
         * only comes down, so a next row scheduled after it is never
         * popped: the cursor leaves the merge there, its slot never asked
         * for (the last rows of most cursors at the end of a board) */
        cu->run++;
        if (cu->run < cu->run_end) {
            int64_t next = cu->base + run_secs(ds, runs, cu->run, cu->pos);
            if (next < to && next <= until) {
                if (cu->run + 1 < cu->run_end) prefetch_event(ds, runs, cu->run + 1, cu->pos);
                const tt_run *nr = &runs[cu->run];
                slots[ci] = ask_slot(c, cu, nr->trip);
                heap_entry e = {(uint64_t)(next - from) << 32 | (uint32_t)top->hi,
                                (top->lo & 0xffffffff00000000ull) | nr->trip_rank, ci};
                heap_replace_top(s->heap, s->heap_n, e);
                continue;
            }
        }
        s->heap_n--;
        if (s->heap_n) heap_replace_top(s->heap, s->heap_n, s->heap[s->heap_n]);
    }
    s->heap_n = 0;
    c->n = n;
    c->until = until;
    return QUERY_OK;
}

static int drain_portable(choice *c, query_scratch *s, const scan_heap *h, bool wheelchair, query_error *err)
{
    return drain_rows(c, s, h, wheelchair, err);
}

#if defined(__x86_64__) && defined(__linux__) && (defined(__clang__) || defined(__GNUC__))
/* Each row's slot is a rank over the trip bits: a popcount a row
 * (rt_row_index_slot), a cursor's first row and each row popped. The
 * x86-64 baseline has no popcount instruction, so the compiler writes one
 * as 17 instructions (about 1,300 a nearby board); every x86-64 processor
 * since 2008 has one. So the drain is also built with it, and chosen once
 * the processor is known to have it. */
__attribute__((target("popcnt"))) static int drain_popcnt(choice *c, query_scratch *s, const scan_heap *h,
                                                          bool wheelchair, query_error *err)
{
    return drain_rows(c, s, h, wheelchair, err);
}

static int drain(choice *c, query_scratch *s, const scan_heap *h, bool wheelchair, query_error *err)
{
    if (__builtin_cpu_supports("popcnt")) return drain_popcnt(c, s, h, wheelchair, err);
    return drain_portable(c, s, h, wheelchair, err);
}
#else
#define drain drain_portable
#endif

/* The ADDED trips' rows at `stop` in the window, among the keys. */
static void add_added(choice *c, query_kind kind, uint32_t stop, double distance_m)
{
    if (!rt_overlay_added_at_stop(c->rt, stop)) return;
    uint32_t room = c->limit + 1;
    uint32_t all = rt_overlay_added_events(c->rt, kind, stop, c->from, c->to, c->p->added, room);
    uint32_t got = all < room ? all : room;
    if (all > got) c->more = true;
    static const rt_departure added = {.realtime = true};
    for (uint32_t i = 0; i < got; i++) {
        departure d = c->p->added[i];
        d.distance_m = distance_m;
        insert_extra(c, &d, &added, d.instant, (query_rank){0, 0, 0}, false);
    }
}

/* The rows a platform change moved to `stop` (rt_overlay.h), among the
 * keys by the same rules as the scan's rows. QUERY_OK or QUERY_ENOMEM. */
static int add_moved(choice *c, query_kind kind, uint32_t stop, double distance_m, bool wheelchair)
{
    if (!rt_overlay_moved_at_stop(c->rt, stop)) return QUERY_OK;
    uint32_t late, early;
    rt_overlay_moved_slack(c->rt, &late, &early);
    if (c->p->by_schedule) late = early = 0;
    int64_t from = c->from - late, to = c->to + early;
    predicted_scratch *p = c->p;
    uint32_t all = rt_overlay_moved_events(c->rt, kind, stop, from, to, p->moved, p->moved_cap);
    if (all > p->moved_cap) {
        departure *rows = realloc(p->moved, (size_t)all * sizeof *rows);
        if (!rows) return QUERY_ENOMEM;
        p->moved = rows;
        p->moved_cap = all;
        all = rt_overlay_moved_events(c->rt, kind, stop, from, to, p->moved, p->moved_cap);
    }
    for (uint32_t i = 0; i < all; i++) {
        departure *d = &p->moved[i];
        d->distance_m = distance_m;
        rt_departure rt;
        if (!rt_overlay_lookup(c->rt, d, &rt) || rt.hidden || !rt.moved) continue;
        if (wheelchair && !board_moved_accessible(c->ds, d, stop)) continue;
        int64_t at = d->instant;
        if (rt.has_prediction && !rt.canceled && !p->by_schedule && rt.delay_s <= RT_OVERLAY_SLACK_MAX &&
            rt.delay_s >= -RT_OVERLAY_SLACK_MAX)
            at += rt.delay_s;
        if (at < c->from || at >= c->to) continue;
        insert_extra(c, d, &rt, at, board_row_rank(c->ds, d), true);
    }
    return QUERY_OK;
}

/* The first `limit` keys made into the answer's rows: a scan row from its
 * cursor and run. */
static void finish(const choice *c, departure *deps, rt_departure *rts, uint32_t *count, bool *truncated)
{
    uint32_t n = c->n < c->limit ? c->n : c->limit;
    /* the UTC offset in force over [offset_from, offset_until) (query.c's drain) */
    int64_t offset_from = 1, offset_until = 0;
    int32_t offset = 0;
    for (uint32_t i = 0; i < n; i++) {
        const board_key *k = &c->p->order[i];
        if (k->row & ROW_EXTRA) {
            deps[i] = c->p->extras[k->row & ~ROW_EXTRA];
        } else {
            deps[i] = scan_row(c, k);
            if (deps[i].instant < offset_from || deps[i].instant >= offset_until)
                offset = dataset_utc_offset_span(c->ds, deps[i].instant, &offset_from, &offset_until);
            deps[i].utc_offset = offset;
        }
        rts[i] = rt_of(k);
    }
    *count = n;
    *truncated = c->n > c->limit || c->more;
}

/* add_moved at a stop and, for a station, at its platforms. */
static int add_moved_at_stop(choice *c, query_kind kind, uint32_t stop, bool wheelchair)
{
    int rc = add_moved(c, kind, stop, 0, wheelchair);
    stop_info si;
    dataset_stop(c->ds, stop, &si);
    if (rc != QUERY_OK || si.location_type != 1) return rc;
    predicted_scratch *p = c->p;
    uint32_t all = 0, got = dataset_stop_children(c->ds, stop, p->stops, p->stops_cap, &all);
    if (all > got) {
        uint32_t *stops = realloc(p->stops, (size_t)all * sizeof *stops);
        if (!stops) return QUERY_ENOMEM;
        p->stops = stops;
        p->stops_cap = all;
        got = dataset_stop_children(c->ds, stop, p->stops, p->stops_cap, &all);
    }
    for (uint32_t i = 0; i < got && rc == QUERY_OK; i++) rc = add_moved(c, kind, p->stops[i], 0, wheelchair);
    return rc;
}

/* A board's choice before its scan. */
static choice choice_of(predicted_scratch *p, const dataset *ds, const rt_overlay *rt, const rt_grid_leads *leads,
                        int64_t from, uint32_t window_s, uint32_t limit)
{
    return (choice){.p = p,
                    .ds = ds,
                    .rt = rt,
                    .rows = rt_overlay_row_index(rt),
                    .leads = leads,
                    .from = from,
                    .to = from + (int64_t)window_s,
                    .limit = limit,
                    .spare = 0,
                    .next_slot = 1,
                    .until = INT64_MAX};
}

static const int64_t scan_to_the_end = INT64_MAX;

int board_predicted_stop(predicted_scratch *p, const dataset *ds, query_scratch *s, const rt_overlay *rt,
                         query_kind kind, uint32_t stop, int64_t from, uint32_t window_s, uint32_t limit,
                         bool wheelchair, departure *deps, rt_departure *rts, uint32_t *count, bool *truncated,
                         query_error *err)
{
    *count = 0;
    *truncated = false;
    choice c = choice_of(p, ds, rt, NULL, from, window_s, limit);
    query_scan scan = {slack_of, NULL, &c, &scan_to_the_end, prefetch_stop, NULL};
    scan_heap heap;
    int rc = stop_events_heap(ds, s, kind, stop, from, window_s, &scan, &heap, err);
    if (rc == QUERY_OK) rc = drain(&c, s, &heap, wheelchair, err);
    if (rc != QUERY_OK) return rc;
    if (rt_overlay_moved_count(rt) && (rc = add_moved_at_stop(&c, kind, stop, wheelchair)) != QUERY_OK) return rc;
    if (!wheelchair && rt_overlay_added_trip_count(rt)) {
        add_added(&c, kind, stop, 0);
        stop_info si;
        dataset_stop(ds, stop, &si);
        if (si.location_type == 1) {
            uint32_t all = 0, got = dataset_stop_children(ds, stop, p->stops, p->stops_cap, &all);
            if (all > got) {
                uint32_t *stops = realloc(p->stops, (size_t)all * sizeof *stops);
                if (!stops) return QUERY_ENOMEM;
                p->stops = stops;
                p->stops_cap = all;
                got = dataset_stop_children(ds, stop, p->stops, p->stops_cap, &all);
            }
            for (uint32_t i = 0; i < got; i++) add_added(&c, kind, p->stops[i], 0);
        }
    }
    finish(&c, deps, rts, count, truncated);
    return QUERY_OK;
}

int board_predicted_nearby(predicted_scratch *p, const dataset *ds, query_scratch *s, const rt_overlay *rt,
                           query_kind kind, double lat, double lon, double radius_m, int64_t from,
                           uint32_t window_s, uint32_t limit, bool wheelchair, departure *deps, rt_departure *rts,
                           uint32_t *count, bool *truncated, query_error *err)
{
    *count = 0;
    *truncated = false;
    /* departures by predicted time: each stop's lead from the table in grid order (arrivals ask the overlay) */
    const rt_grid_leads *leads =
        kind == QUERY_DEPARTURES && !p->by_schedule ? rt_row_index_leads(rt_overlay_row_index(rt)) : NULL;
    choice c = choice_of(p, ds, rt, leads, from, window_s, limit);
    query_scan scan = {slack_of, NULL, &c, &scan_to_the_end, prefetch_stop, leads ? slack_at_points : NULL};
    scan_heap heap;
    int rc = nearby_events_heap(ds, s, kind, lat, lon, radius_m, from, window_s, &scan, &heap, err);
    if (rc == QUERY_OK) rc = drain(&c, s, &heap, wheelchair, err);
    if (rc != QUERY_OK) return rc;
    if (rt_overlay_moved_count(rt)) {
        size_t near = query_near_count(s);
        for (size_t i = 0; i < near; i++) {
            nearby_stop ns = query_near_stop(s, i);
            if ((rc = add_moved(&c, kind, ns.stop, ns.distance_m, wheelchair)) != QUERY_OK) return rc;
        }
    }
    if (!wheelchair && rt_overlay_added_trip_count(rt)) {
        size_t near = query_near_count(s);
        for (size_t i = 0; i < near; i++) {
            nearby_stop ns = query_near_stop(s, i);
            add_added(&c, kind, ns.stop, ns.distance_m);
        }
    }
    finish(&c, deps, rts, count, truncated);
    return QUERY_OK;
}
