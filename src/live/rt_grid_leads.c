/* rt_grid_leads.c — stops' leads and early slack in grid order; see
 * rt_grid_leads.h.
 *
 * Layout: per grid point its slack (the most any noted row there runs late,
 * in whole minutes rounded up; the most it runs early, seconds), and per
 * LEADS_BUCKET_S bucket of window starts a byte for every grid point
 * (bucket-major, so the stops of one board in one bucket lie side by side):
 * how long before the bucket's end, in whole minutes rounded up, the
 * earliest row there that reaches into the bucket is scheduled (0: none;
 * LEADS_FAR: that long or longer, read the late slack). A window starting
 * `ahead` seconds before its bucket's end reads that many minutes less
 * ahead, never more than the late slack: the rows it needs, exactly as the
 * overlay's own table (rt_overlay_stop_lead) works it out.
 */
#include "live/rt_grid_leads.h"

#include "store/dataset_internal.h"
#include "transit/rt_overlay.h"

#include <stdlib.h>

#define LEADS_BUCKET_S 300
#define LEADS_UNIT_S 60
#define LEADS_FAR UINT8_MAX
#define EARLY_FAR UINT16_MAX   /* at least this many seconds: read as RT_OVERLAY_SLACK_MAX */
#define NO_POINT UINT32_MAX

typedef struct point_slack {
    uint16_t late_min;         /* the most a row here runs late, minutes rounded up */
    uint16_t early_s;          /* the most a row here runs early, seconds (EARLY_FAR: that or more) */
} point_slack;

struct rt_grid_leads {
    int64_t base;              /* bucket 0 starts here */
    uint32_t nbuckets, npoints;
    point_slack *points;       /* npoints */
    uint8_t *back;             /* nbuckets * npoints, bucket-major */
    uint32_t *point_of;        /* while building: per dataset stop, its grid point or NO_POINT */
    uint32_t nstops;
    bool ok;                   /* every row noted fitted */
};

rt_grid_leads *rt_grid_leads_new(const dataset *ds, int32_t first_date, int32_t last_date, uint32_t late_max)
{
    uint64_t npoints = ds->ngrid_stops;
    if (!npoints || npoints >= NO_POINT || first_date > last_date) return NULL;
    int64_t base = dataset_instant(ds, first_date, 0);
    int64_t hi = dataset_instant(ds, last_date, ds->meta->max_secs) + late_max;
    uint64_t nbuckets = (uint64_t)((hi - base) / LEADS_BUCKET_S) + 1;
    if (hi < base || nbuckets * npoints + npoints * sizeof(point_slack) > RT_GRID_LEADS_MAX_BYTES) return NULL;
    rt_grid_leads *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->base = base;
    g->nbuckets = (uint32_t)nbuckets;
    g->npoints = (uint32_t)npoints;
    g->nstops = ds->meta->nstops;
    g->ok = true;
    g->points = calloc(npoints, sizeof *g->points);
    g->back = calloc(nbuckets * npoints, 1);
    g->point_of = malloc(((size_t)g->nstops + 1) * sizeof *g->point_of);
    if (!g->points || !g->back || !g->point_of) {
        rt_grid_leads_free(g);
        return NULL;
    }
    for (uint32_t s = 0; s < g->nstops; s++) g->point_of[s] = NO_POINT;
    for (uint32_t p = 0; p < g->npoints; p++) {
        uint32_t stop = ds->grid_points[p].stop;
        if (stop < g->nstops) g->point_of[stop] = p;
    }
    return g;
}

void rt_grid_leads_note(rt_grid_leads *g, uint32_t stop, int64_t scheduled, int32_t delay_s)
{
    if (!g->point_of || stop >= g->nstops || g->point_of[stop] == NO_POINT || delay_s == 0) return;
    uint32_t p = g->point_of[stop];
    point_slack *ps = &g->points[p];
    if (delay_s < 0) {
        int64_t early = -(int64_t)delay_s;
        uint16_t e = early >= EARLY_FAR ? EARLY_FAR : (uint16_t)early;
        if (e > ps->early_s) ps->early_s = e;
        return;
    }
    uint32_t minutes = ((uint32_t)delay_s + LEADS_UNIT_S - 1) / LEADS_UNIT_S;
    if (minutes > UINT16_MAX) minutes = UINT16_MAX;
    if (minutes > ps->late_min) ps->late_min = (uint16_t)minutes;
    int64_t rel = scheduled - g->base;
    if (rel < 0 || (rel + delay_s) / LEADS_BUCKET_S >= g->nbuckets) {
        g->ok = false;   /* outside the dates the table was made for */
        return;
    }
    /* every bucket of window starts the row can reach: from its own (a
     * window starting after it is scheduled) to its predicted instant's */
    for (int64_t b = rel / LEADS_BUCKET_S, end = (rel + delay_s) / LEADS_BUCKET_S; b <= end; b++) {
        int64_t before = (b + 1) * LEADS_BUCKET_S - rel;   /* at least 1 */
        int64_t units = (before + LEADS_UNIT_S - 1) / LEADS_UNIT_S;
        uint8_t v = units >= LEADS_FAR ? LEADS_FAR : (uint8_t)units;
        uint8_t *cell = &g->back[(size_t)b * g->npoints + p];
        if (v > *cell) *cell = v;
    }
}

bool rt_grid_leads_finish(rt_grid_leads *g)
{
    free(g->point_of);
    g->point_of = NULL;
    return g->ok;
}

void rt_grid_leads_free(rt_grid_leads *g)
{
    if (!g) return;
    free(g->points);
    free(g->back);
    free(g->point_of);
    free(g);
}

size_t rt_grid_leads_bytes(const rt_grid_leads *g)
{
    if (!g) return 0;
    return sizeof *g + (size_t)g->npoints * sizeof *g->points + (size_t)g->nbuckets * g->npoints;
}

/* The bucket of window starts `from` falls in, or -1 outside the table
 * (where no row noted reaches). */
static inline int64_t bucket_of(const rt_grid_leads *g, int64_t from)
{
    int64_t rel = from - g->base;
    if (rel <= 0 || rel >= (int64_t)g->nbuckets * LEADS_BUCKET_S) return -1;
    return rel / LEADS_BUCKET_S;
}

/* The slack at a point, the window's bucket b (bucket_of) and ahead (how
 * many seconds before the bucket's end the window starts) found. */
static inline void slack_in(const rt_grid_leads *g, uint32_t point, int64_t b, int64_t ahead, uint32_t *lead,
                            uint32_t *early)
{
    *lead = *early = 0;
    if (point >= g->npoints) return;
    point_slack ps = g->points[point];
    *early = ps.early_s == EARLY_FAR ? RT_OVERLAY_SLACK_MAX : ps.early_s;
    uint32_t late = (uint32_t)ps.late_min * LEADS_UNIT_S;
    if (!late || b < 0) return;   /* no row here runs late, or none reaches this window */
    uint8_t back = g->back[(size_t)b * g->npoints + point];
    if (back == LEADS_FAR) {
        *lead = late;
        return;
    }
    /* the earliest is scheduled `back` minutes before the bucket's end, the
     * window starts `ahead` seconds before it */
    int64_t need = (int64_t)back * LEADS_UNIT_S - ahead;
    if (need > 0) *lead = need < late ? (uint32_t)need : late;
}

/* How many seconds before the end of its bucket b a window from `from` starts. */
static inline int64_t ahead_of(const rt_grid_leads *g, int64_t b, int64_t from)
{
    return (b + 1) * LEADS_BUCKET_S - (from - g->base);
}

void rt_grid_leads_slack_points(const rt_grid_leads *g, const uint32_t *points, size_t n, int64_t from,
                                uint32_t *lead, uint32_t *early)
{
    int64_t b = bucket_of(g, from);
    const uint8_t *back = b >= 0 ? g->back + (size_t)b * g->npoints : NULL;
    for (size_t i = 0; i < n; i++) {
        if (points[i] >= g->npoints) continue;
        __builtin_prefetch(&g->points[points[i]]);
        if (back) __builtin_prefetch(&back[points[i]]);
    }
    int64_t ahead = ahead_of(g, b, from);
    for (size_t i = 0; i < n; i++) slack_in(g, points[i], b, ahead, &lead[i], &early[i]);
}
