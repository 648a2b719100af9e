/* rt_row_index.c — a row's realtime in one cache line; see rt_row_index.h
 * (which lays the index out, so that boards inline a row's look-up).
 */
#include "live/rt_row_index.h"

#include <stdlib.h>
#include <string.h>

static uint8_t pack(const rt_departure *r)
{
    return (uint8_t)((r->has_prediction ? RT_ROW_PREDICTION : 0) | (r->canceled ? RT_ROW_CANCELED : 0) |
                     (r->skipped ? RT_ROW_SKIPPED : 0) | (r->hidden ? RT_ROW_HIDDEN : 0) | (r->moved ? RT_ROW_MOVED : 0) |
                     (r->has_properties ? RT_ROW_PROPERTIES : 0));
}

/* What the look-up says of each row of trip t's instance on `date` (the
 * rows as the timetable gives them: the look-up reads no instant): found[p]
 * is false where it does not answer. Notes in `leads` (when not NULL) the
 * rows a board by predicted time moves. */
static void look_up_instance(const rt_overlay *o, const dataset *ds, uint32_t t, int32_t date,
                             const trip_stop_time *st, uint32_t n, rt_departure *rts, bool *found,
                             rt_grid_leads *leads)
{
    int64_t day = leads ? dataset_instant(ds, date, 0) : 0;   /* a row's instant is day + its seconds */
    for (uint32_t p = 0; p < n; p++) {
        departure d = {0, 0, date, st[p].departure_secs, st[p].stop, t, st[p].stop_sequence, p, false, 0};
        const rt_departure *r = &rts[p];
        found[p] = rt_overlay_lookup(o, &d, &rts[p]);
        if (leads && found[p] && r->has_prediction && !r->canceled && r->delay_s <= RT_OVERLAY_SLACK_MAX &&
            r->delay_s >= -RT_OVERLAY_SLACK_MAX)
            rt_grid_leads_note(leads, st[p].stop, day + st[p].departure_secs, r->delay_s);
    }
}

/* Fills trip t's slot from what the look-up says at each position of its
 * earliest instance (look_up_instance), as runs; false when that does not
 * fit in a slot. */
static bool fill_slot(rt_row_slot *slot, const rt_overlay *o, uint32_t t, int32_t date, uint32_t ndates,
                      const rt_departure *rts, const bool *found, uint32_t n)
{
    memset(slot, 0, sizeof *slot);
    slot->service_date = date;
    slot->late = rt_overlay_trip_late(o, t);
    slot->more_dates = ndates > 1;
    if (n == 0 || n > UINT16_MAX) return false;
    uint32_t runs = 0;
    for (uint32_t p = 0; p < n; p++) {
        const rt_departure *r = &rts[p];
        if (!found[p]) return false;   /* not this instance's row: the look-up decides */
        rt_row_run run = {(uint16_t)p, pack(r), r->occupancy, r->delay_s};
        if (runs && slot->runs[runs - 1].flags == run.flags && slot->runs[runs - 1].occupancy == run.occupancy &&
            slot->runs[runs - 1].delay == run.delay)
            continue;
        if (runs == RT_ROW_SLOT_RUNS) return false;
        slot->runs[runs++] = run;
    }
    slot->npos = (uint16_t)n;
    slot->nruns = (uint8_t)runs;
    return true;
}

/* Appends a slot (slots are kept in trip order, so a trip's rank among the
 * kept ones is its slot). false when out of memory. */
static bool append_slot(rt_row_index *ix, uint32_t *cap, const rt_row_slot *slot)
{
    if (ix->nslots == *cap) {
        uint32_t more = *cap ? 2 * *cap : 1024;
        rt_row_slot *grown = aligned_alloc(64, (size_t)more * sizeof *grown);
        if (!grown) return false;
        if (ix->nslots) memcpy(grown, ix->slots, (size_t)ix->nslots * sizeof *grown);
        free(ix->slots);
        ix->slots = grown;
        *cap = more;
    }
    ix->slots[ix->nslots++] = *slot;
    return true;
}

/* The leads' table for the overlay's instances (NULL: none, boards ask the
 * overlay): its dates first, and whether a frequency-based trip has any. */
static rt_grid_leads *new_leads(const rt_overlay *o, const dataset *ds, uint32_t ntrips)
{
    int32_t first = INT32_MAX, last = INT32_MIN;
    int32_t dates[64];
    for (uint32_t t = 0; t < ntrips; t++) {
        uint32_t n = rt_overlay_trip_dates(o, t, dates, 64);
        if (!n) continue;
        trip_info ti;
        dataset_trip(ds, t, &ti);
        if (ti.frequency_based || n > 64) return NULL;
        /* by date, earliest first */
        if (dates[0] < first) first = dates[0];
        if (dates[n - 1] > last) last = dates[n - 1];
    }
    if (first > last) return NULL;
    uint32_t late, early;
    rt_overlay_slack(o, &late, &early);
    return rt_grid_leads_new(ds, first, last, late);
}

rt_row_index *rt_row_index_build(const rt_overlay *o, const dataset *ds)
{
    rt_row_index *ix = calloc(1, sizeof *ix);
    if (!ix) return NULL;
    dataset_counts counts;
    dataset_get_counts(ds, &counts);
    ix->ntrips = counts.trips;
    size_t words = (size_t)ix->ntrips / 64 + 1;
    ix->bits = calloc(words, sizeof *ix->bits);
    ix->rank = calloc(words, sizeof *ix->rank);
    uint32_t st_cap = 64, slot_cap = 0;
    trip_stop_time *st = malloc(st_cap * sizeof *st);
    rt_departure *rts = malloc(st_cap * sizeof *rts);
    bool *found = malloc(st_cap * sizeof *found);
    if (!ix->bits || !ix->rank || !st || !rts || !found) goto oom;
    ix->leads = new_leads(o, ds, ix->ntrips);
    for (uint32_t t = 0; t < ix->ntrips; t++) {
        int32_t dates[64];
        uint32_t ndates = rt_overlay_trip_dates(o, t, dates, 64);
        if (!ndates) continue;
        trip_info ti;
        dataset_trip(ds, t, &ti);
        /* a frequency-based trip's instances differ by their times: the look-up answers its rows */
        if (ti.frequency_based) continue;
        uint32_t n = 0;
        query_error qerr;
        if (trip_detail(ds, t, st, st_cap, &n, &qerr) != QUERY_OK) continue;
        if (n > st_cap) {
            trip_stop_time *more_st = realloc(st, n * sizeof *st);
            if (!more_st) goto oom;
            st = more_st;
            rt_departure *more_rts = realloc(rts, n * sizeof *rts);
            if (!more_rts) goto oom;
            rts = more_rts;
            bool *more_found = realloc(found, n * sizeof *found);
            if (!more_found) goto oom;
            found = more_found;
            st_cap = n;
            if (trip_detail(ds, t, st, st_cap, &n, &qerr) != QUERY_OK) continue;
        }
        /* every instance's rows for the leads (new_leads made none for a trip of more than 64 dates),
         * the earliest's last, for the slot */
        for (uint32_t k = ix->leads ? ndates : 1; k-- > 1;)
            look_up_instance(o, ds, t, dates[k], st, n, rts, found, ix->leads);
        look_up_instance(o, ds, t, dates[0], st, n, rts, found, ix->leads);
        rt_row_slot slot;
        if (!fill_slot(&slot, o, t, dates[0], ndates, rts, found, n)) continue;
        if (!append_slot(ix, &slot_cap, &slot)) goto oom;
        ix->bits[t / 64] |= (uint64_t)1 << (t % 64);
    }
    for (size_t w = 1; w < words; w++)
        ix->rank[w] = ix->rank[w - 1] + (uint32_t)__builtin_popcountll(ix->bits[w - 1]);
    if (ix->leads && !rt_grid_leads_finish(ix->leads)) {
        rt_grid_leads_free(ix->leads);
        ix->leads = NULL;
    }
    free(st);
    free(rts);
    free(found);
    return ix;
oom:
    free(st);
    free(rts);
    free(found);
    rt_row_index_free(ix);
    return NULL;
}

void rt_row_index_free(rt_row_index *ix)
{
    if (!ix) return;
    free(ix->bits);
    free(ix->rank);
    free(ix->slots);
    rt_grid_leads_free(ix->leads);
    free(ix);
}

size_t rt_row_index_bytes(const rt_row_index *ix)
{
    if (!ix) return 0;
    size_t words = (size_t)ix->ntrips / 64 + 1;
    return sizeof *ix + words * (sizeof *ix->bits + sizeof *ix->rank) + (size_t)ix->nslots * sizeof *ix->slots +
           rt_grid_leads_bytes(ix->leads);
}

const rt_grid_leads *rt_row_index_leads(const rt_row_index *ix) { return ix ? ix->leads : NULL; }

uint32_t rt_row_index_kept(const rt_row_index *ix) { return ix ? ix->nslots : 0; }

void rt_row_index_prefetch(const rt_row_index *ix, const rt_overlay *o, const departure *d)
{
    const rt_row_slot *slot = rt_row_index_slot(ix, d->trip);
    if (slot) __builtin_prefetch(slot);
    else rt_overlay_prefetch_trip(o, d);
}

void rt_row_index_prefetch_entry(const rt_row_index *ix, const rt_overlay *o, const departure *d)
{
    if (!rt_row_index_slot(ix, d->trip)) rt_overlay_prefetch(o, d);
}

uint32_t rt_row_index_trip_late(const rt_row_index *ix, const rt_overlay *o, uint32_t trip)
{
    return rt_row_slot_late(rt_row_index_slot(ix, trip), o, trip);
}

bool rt_row_index_lookup(const rt_row_index *ix, const rt_overlay *o, const departure *d, rt_departure *out)
{
    return rt_row_slot_lookup(rt_row_index_slot(ix, d->trip), o, d, out);
}
