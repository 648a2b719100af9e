/* rt_row_index.h — a row's realtime in one cache line: per trip with
 * realtime, its earliest instance's stop entries as runs of positions.
 *
 * Why it exists: rt_overlay_lookup reads two cache lines a row (the trip's
 * head, then its stop entry: 16 bytes among 12.8 MB on the realtime
 * benchmark's feed), one after the other. A board by predicted time reads
 * 60-70 rows, so these are about 130 misses a board, and a server's caches,
 * shared with its sockets, libmicrohttpd and the other processes, hold far
 * less of them than a loop of queries does (bench_query --evict). Along a
 * trip the entries repeat: no prediction before the first update, then one
 * delay carried to the end, a skipped stop between. Kept as runs (the
 * first position each holds from, and what the look-up says there), six
 * to a 64-byte slot a trip, a row's answer is one read, its slot found by
 * a rank over the trip bits (11 KB on Brooklyn, which stay cached).
 *
 * Built beside the overlay (rt_overlay_build keeps it) through the
 * overlay's own API: for every position of each trip's earliest instance,
 * what rt_overlay_lookup says of that row, so an answer here is always the
 * look-up's. Where it cannot be (a frequency-based trip, more than six
 * runs: no slot; an arrival row, a row of another instance, a position
 * past the trip's length) the look-up answers, with its own prefetches. Boards (engine/) take an overlay's index
 * with rt_overlay_row_index once a board and ask it for each row. The same
 * look-ups, of every instance, fill the stops' leads in grid order
 * (rt_grid_leads.h) that nearby boards read instead of the overlay's.
 */
#ifndef LIVE_RT_ROW_INDEX_H
#define LIVE_RT_ROW_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "live/rt_grid_leads.h"
#include "transit/query.h"
#include "transit/rt_overlay.h"

/* The layout, here so that a board inlines a row's look-up (the inline
 * functions at the end): a bit per dataset trip (the trips kept: the
 * overlay has an instance of them and it fits a slot), the number of bits
 * set before each 64-bit word (so a trip's slot is its rank: two reads of
 * 11 KB on Brooklyn, which stay cached, and a popcount), and one 64-byte
 * slot per kept trip. The rows of other trips go to the overlay's look-up
 * (and its prefetches): a feed whose delays change at every stop costs a
 * bit test a row more, and no memory. */

/* What the look-up says of a row, packed (the rt_departure members). */
enum {
    RT_ROW_PREDICTION = 1,
    RT_ROW_CANCELED = 2,
    RT_ROW_SKIPPED = 4,
    RT_ROW_HIDDEN = 8,
    RT_ROW_MOVED = 16,
    RT_ROW_PROPERTIES = 32,
};

/* From position first_pos on (to the next run's), the rows of the slot's
 * instance are looked up as this. */
typedef struct rt_row_run {
    uint16_t first_pos;
    uint8_t flags;             /* RT_ROW_* */
    uint8_t occupancy;         /* rt_departure.occupancy */
    int32_t delay;             /* rt_departure.delay_s */
} rt_row_run;

#define RT_ROW_SLOT_RUNS 6

/* A kept trip's slot: its earliest instance, as runs (at least one). */
typedef struct rt_row_slot {
    int32_t service_date;      /* the earliest instance's */
    uint32_t late;             /* rt_overlay_trip_late */
    uint16_t npos;             /* the trip's positions the runs cover */
    uint8_t nruns;
    uint8_t more_dates;        /* the trip has instances on other dates: their rows ask the look-up */
    uint32_t unused;
    rt_row_run runs[RT_ROW_SLOT_RUNS];
} rt_row_slot;

_Static_assert(sizeof(rt_row_slot) == 64, "a slot is one cache line");

typedef struct rt_row_index {
    uint32_t ntrips;
    uint64_t *bits;            /* ntrips / 64 + 1 words */
    uint32_t *rank;            /* per word: the bits set before it */
    rt_row_slot *slots;        /* 64-byte aligned, in trip order */
    uint32_t nslots;
    rt_grid_leads *leads;      /* the stops' leads in grid order (rt_grid_leads.h), or NULL */
} rt_row_index;

/* The index of overlay `o` of dataset `ds`, read through the overlay's
 * API (rt_overlay_trip_dates, rt_overlay_lookup, rt_overlay_trip_late);
 * NULL when out of memory. */
rt_row_index *rt_row_index_build(const rt_overlay *o, const dataset *ds);
void rt_row_index_free(rt_row_index *ix);
/* Bytes it holds, and the trips it keeps a slot for. */
size_t rt_row_index_bytes(const rt_row_index *ix);
uint32_t rt_row_index_kept(const rt_row_index *ix);

/* rt_overlay_lookup(o, d, out) for a row of the timetable (its pos and
 * stop_sequence the trip's own), answered from the index where it can be. */
bool rt_row_index_lookup(const rt_row_index *ix, const rt_overlay *o, const departure *d, rt_departure *out);
/* Starts loading what rt_row_index_lookup reads for `d`, in two steps as
 * the overlay's (rt_overlay_prefetch_trip, then rt_overlay_prefetch): the
 * second only does something for rows the overlay answers. */
void rt_row_index_prefetch(const rt_row_index *ix, const rt_overlay *o, const departure *d);
void rt_row_index_prefetch_entry(const rt_row_index *ix, const rt_overlay *o, const departure *d);
/* rt_overlay_trip_late, from the same slot. */
uint32_t rt_row_index_trip_late(const rt_row_index *ix, const rt_overlay *o, uint32_t trip);
/* The stops' leads for boards of departures by predicted time, in grid
 * order (rt_grid_leads.h), built with the index from the same look-ups;
 * NULL where they could not be (boards then ask the overlay). */
const rt_grid_leads *rt_row_index_leads(const rt_row_index *ix);

/* The slot the rows of `trip` are answered from, or NULL (the overlay's
 * look-up answers them): found once a row for the two below. */
static inline const rt_row_slot *rt_row_index_slot(const rt_row_index *ix, uint32_t trip)
{
    if (trip >= ix->ntrips) return NULL;
    uint64_t word = ix->bits[trip / 64];
    if (!(word >> (trip % 64) & 1)) return NULL;
    return &ix->slots[ix->rank[trip / 64] + (uint32_t)__builtin_popcountll(word & (((uint64_t)1 << (trip % 64)) - 1))];
}

/* rt_overlay_trip_late of `trip`, whose slot (or NULL) is `slot`. */
static inline uint32_t rt_row_slot_late(const rt_row_slot *slot, const rt_overlay *o, uint32_t trip)
{
    return slot ? slot->late : rt_overlay_trip_late(o, trip);
}

/* What a slot says of the row of its trip on service_date at position pos
 * (an arrival row when `arrival`), without a departure: the run that
 * answers it; or NULL, with *ask true when the overlay's look-up must
 * answer (another instance, an arrival, a position past the runs), false
 * when the overlay has no instance of the row (the look-up's answer:
 * nothing). */
static inline const rt_row_run *rt_row_slot_run(const rt_row_slot *slot, int32_t service_date, uint32_t pos,
                                                bool arrival, bool *ask)
{
    if (slot->service_date != service_date) {
        *ask = slot->more_dates;   /* else the trip's one instance is of another date */
        return NULL;
    }
    *ask = arrival || pos >= slot->npos;
    if (*ask) return NULL;
    uint32_t i = slot->nruns - 1u;
    while (i > 0 && slot->runs[i].first_pos > pos) i--;
    return &slot->runs[i];
}

/* rt_row_index_lookup with the row's slot (or NULL) found. */
static inline bool rt_row_slot_lookup(const rt_row_slot *slot, const rt_overlay *o, const departure *d,
                                      rt_departure *out)
{
    if (!slot) return rt_overlay_lookup(o, d, out);
    bool ask;
    const rt_row_run *run = rt_row_slot_run(slot, d->service_date, d->pos, d->arrival, &ask);
    if (ask) return rt_overlay_lookup(o, d, out);
    if (!run) {
        *out = (rt_departure){0};
        return false;
    }
    *out = (rt_departure){
        .realtime = true,
        .canceled = (run->flags & RT_ROW_CANCELED) != 0,
        .skipped = (run->flags & RT_ROW_SKIPPED) != 0,
        .hidden = (run->flags & RT_ROW_HIDDEN) != 0,
        .has_prediction = (run->flags & RT_ROW_PREDICTION) != 0,
        .delay_s = run->delay,
        .occupancy = run->occupancy,
        .moved = (run->flags & RT_ROW_MOVED) != 0,
        .has_properties = (run->flags & RT_ROW_PROPERTIES) != 0,
    };
    return true;
}

#endif
