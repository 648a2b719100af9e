/* dataset_check.c — refuses, once per dataset_open, a timetable.bin whose
 * indexes are not in the orders the engine relies on.
 *
 * Why it exists: dataset_validate_indices checks bounds; the look-ups and
 * the departure search also assume orders: STOP_BY_ID, TRIP_BY_ID and
 * ROUTE_BY_ID in the byte order of the ids, each record's id_rank its place
 * there, children pointing back to their parent, each stop's routes
 * ascending, the UTC offset changes in time order, a group's runs in the order
 * of their starts (the search gallops over them), every visit's first
 * departure no later than its last, and the grid cells one ascending run of
 * points. The importer writes them so, but the file is read from disk: a
 * damaged or crafted one (the checksum covers accidents, not intent) must be
 * refused with a message, not trip an assert or give wrong answers. One pass
 * over each array, a few milliseconds at open on the largest feed.
 */
#include "store/dataset_internal.h"

#include <stdio.h>
#include <string.h>

/* Whether record ids (string offsets) taken in index order ascend strictly. */
static bool ids_ascend(const dataset *ds, uint32_t prev_id, uint32_t id)
{
    return strcmp(ds->strings + prev_id, ds->strings + id) < 0;
}

static int refuse(char *err, size_t errlen, const char *path, const char *what, uint64_t at)
{
    snprintf(err, errlen, "%s: damaged: %s (at %llu)", path, what, (unsigned long long)at);
    return -1;
}

static int check_ids(const dataset *ds, char *err, size_t errlen, const char *path)
{
    const tt_meta *m = ds->meta;
    for (uint32_t k = 0; k < m->nstops; k++) {
        const tt_stop *s = &ds->stops[ds->stop_by_id[k]];
        if (s->id_rank != k || (k > 0 && !ids_ascend(ds, ds->stops[ds->stop_by_id[k - 1]].id, s->id)))
            return refuse(err, errlen, path, "stop ids out of order", k);
        for (uint32_t c = 0; c < s->children_count; c++)
            if (ds->stops[ds->children[s->children_first + c]].parent != ds->stop_by_id[k])
                return refuse(err, errlen, path, "a child stop names another parent", k);
    }
    for (uint32_t k = 0; k < m->ntrips; k++) {
        const tt_trip *t = &ds->trips[ds->trip_by_id[k]];
        if (t->id_rank != k || (k > 0 && !ids_ascend(ds, ds->trips[ds->trip_by_id[k - 1]].id, t->id)))
            return refuse(err, errlen, path, "trip ids out of order", k);
    }
    for (uint32_t k = 1; k < m->nroutes; k++)
        if (!ids_ascend(ds, ds->routes[ds->route_by_id[k - 1]].id, ds->routes[ds->route_by_id[k]].id))
            return refuse(err, errlen, path, "route ids out of order", k);
    /* dataset_stop_routes merges a station's lists, each ascending */
    for (uint32_t k = 0; k < m->nstops; k++) {
        const tt_stop *s = &ds->stops[k];
        for (uint32_t i = 1; i < s->routes_count; i++)
            if (ds->stop_routes[s->routes_first + i - 1] >= ds->stop_routes[s->routes_first + i])
                return refuse(err, errlen, path, "a stop's routes out of order", k);
    }
    return 0;
}

int dataset_check_orders(const dataset *ds, char *err, size_t errlen, const char *path)
{
    const tt_meta *m = ds->meta;
    if (check_ids(ds, err, errlen, path) != 0)
        return -1;
    for (uint32_t g = 0; g < m->ngroups; g++) {
        const tt_group *gr = &ds->groups[g];
        for (uint32_t r = gr->run_first + 1; r < gr->run_first + gr->run_count; r++)
            if (ds->runs[r - 1].start > ds->runs[r].start)
                return refuse(err, errlen, path, "a group's runs out of order", r);
    }
    for (uint64_t v = 0; v < ds->nvisits; v++) {
        const visit_hot *vh = &ds->visit_hot[v];
        if (vh->first_secs > vh->last_secs || vh->min_off > vh->max_off || vh->run_count == 0)
            return refuse(err, errlen, path, "a visit's departures out of order", v);
    }
    /* the UTC offset search starts at a transition at the beginning of time */
    if (ds->tz[0].at != INT64_MIN)
        return refuse(err, errlen, path, "the first UTC offset does not start at the beginning of time", 0);
    for (uint32_t i = 1; i < m->ntz; i++)
        if (ds->tz[i - 1].at >= ds->tz[i].at)
            return refuse(err, errlen, path, "UTC offset changes out of order", i);
    uint64_t ncells = (uint64_t)m->grid_nx * m->grid_ny;
    if (ncells > 0 && ds->grid_cells[ncells] != ds->ngrid_stops)
        return refuse(err, errlen, path, "the grid's last cell", ncells);
    for (uint64_t c = 0; c < ncells; c++)
        if (ds->grid_cells[c] > ds->grid_cells[c + 1])
            return refuse(err, errlen, path, "grid cells out of order", c);
    return 0;
}
