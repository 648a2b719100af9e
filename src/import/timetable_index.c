/* timetable_index.c — the timetable.bin sections derived from stops,
 * patterns and calendars.
 *
 * Why it exists: a query starts from a stop, a place or a day, never from a
 * trip. These are the flat indexes that make each of those one lookup: per
 * stop its visits (group and position, where it can be boarded), the routes
 * serving it and its children; a spatial grid of the stops; one bitmap of
 * days per service; and per day the instant of its local noon minus 12 h,
 * with the zone's UTC offset transitions.
 */
#include "import/timetable_write_internal.h"

#include "import/traffic_days.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/gtfs.h"

/* ------------------------------------------------------------ per-stop indexes */

int tt_build_visits(tt_builder *b, tt_out *o)
{
    uint32_t nstops = (uint32_t)b->stops.n;
    uint32_t *count = calloc((size_t)nstops + 1, sizeof *count);
    if (!count) return tt_fail_oom(b);
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
        return tt_fail_oom(b);
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

int tt_build_stop_routes(tt_builder *b, tt_out *o)
{
    size_t n = o->pattern_stops.n;
    uint64_t *pairs = malloc((n ? n : 1) * sizeof *pairs);
    if (!pairs) return tt_fail_oom(b);
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
        return tt_fail_oom(b);
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

int tt_build_children(tt_builder *b, tt_out *o)
{
    uint32_t nstops = (uint32_t)b->stops.n;
    uint32_t *count = calloc((size_t)nstops + 1, sizeof *count);
    if (!count) return tt_fail_oom(b);
    size_t total = 0;
    for (uint32_t i = 0; i < nstops; i++)
        if (b->stops.v[i].parent != TT_NONE) count[b->stops.v[i].parent + 1]++, total++;
    for (uint32_t i = 0; i < nstops; i++) count[i + 1] += count[i];
    o->children = malloc((total ? total : 1) * sizeof *o->children);
    if (!o->children) {
        free(count);
        return tt_fail_oom(b);
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

int tt_build_grid(tt_builder *b, tt_out *o)
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
        return tt_fail_oom(b);
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
        return tt_fail_oom(b);
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

int tt_build_services(tt_builder *b, tt_out *o)
{
    traffic_days td = b->days;    /* computed by tb_read_feed; taken over */
    memset(&b->days, 0, sizeof b->days);
    o->meta.first_day = td.first_day;
    o->meta.ndays = td.ndays;
    o->meta.service_words = td.words;
    o->meta.ndaysets = td.nsets;
    o->day_sets = td.sets;      /* both taken over */
    o->service_days = td.set_of;
    td.sets = NULL;
    td.set_of = NULL;
    traffic_days_free(&td);
    return 0;
}

int tt_build_time(tt_builder *b, tt_out *o)
{
    uint32_t lookback = o->meta.max_secs / 86400 + 1;
    o->meta.lookback = lookback;
    o->ndaybase = (size_t)o->meta.ndays + lookback;
    o->daybase = malloc(o->ndaybase * sizeof *o->daybase);
    if (!o->daybase) return tt_fail_oom(b);
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
    if (!t) return tt_fail_oom(b);
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
        if (!t) return tt_fail_oom(b);
        *t = (tt_tz_transition){z, now, 0};
        off = now;
    }
    return 0;
}
