/* dataset_check.c — asserts, once per dataset_open, the orders the engine
 * relies on but dataset_validate_indices does not check (it checks bounds).
 *
 * Why it exists: the look-ups and the departure search assume sorted
 * indexes: STOP_BY_ID and TRIP_BY_ID in the byte order of the ids, each
 * record's id_rank its place there, a group's runs in the order of their
 * starts (the search gallops over them), every visit's first departure no
 * later than its last, and the grid cells one ascending run of points. The
 * importer writes them so; an importer bug would give wrong answers, not a
 * crash, so the asserts are the only net. One pass over each array, the
 * cost of a few milliseconds at open on the largest feed; with NDEBUG it
 * compiles to nothing.
 */
#include "store/dataset_internal.h"

#include <assert.h>
#include <string.h>

#ifdef NDEBUG
void dataset_assert_orders(const dataset *ds) { (void)ds; }
#else
/* Whether record ids (string offsets) taken in index order ascend strictly. */
static int ids_ascend(const dataset *ds, uint32_t prev_id, uint32_t id)
{
    return strcmp(ds->strings + prev_id, ds->strings + id) < 0;
}

void dataset_assert_orders(const dataset *ds)
{
    const tt_meta *m = ds->meta;
    for (uint32_t k = 0; k < m->nstops; k++) {
        const tt_stop *s = &ds->stops[ds->stop_by_id[k]];
        assert(s->id_rank == k);
        assert(k == 0 || ids_ascend(ds, ds->stops[ds->stop_by_id[k - 1]].id, s->id));
        for (uint32_t c = 0; c < s->children_count; c++)
            assert(ds->stops[ds->children[s->children_first + c]].parent == ds->stop_by_id[k]);
    }
    for (uint32_t k = 0; k < m->ntrips; k++) {
        const tt_trip *t = &ds->trips[ds->trip_by_id[k]];
        assert(t->id_rank == k);
        assert(k == 0 || ids_ascend(ds, ds->trips[ds->trip_by_id[k - 1]].id, t->id));
    }
    for (uint32_t k = 1; k < m->nroutes; k++)
        assert(ids_ascend(ds, ds->routes[ds->route_by_id[k - 1]].id, ds->routes[ds->route_by_id[k]].id));
    for (uint32_t g = 0; g < m->ngroups; g++) {
        const tt_group *gr = &ds->groups[g];
        for (uint32_t r = gr->run_first + 1; r < gr->run_first + gr->run_count; r++)
            assert(ds->runs[r - 1].start <= ds->runs[r].start);
    }
    for (uint64_t v = 0; v < ds->nvisits; v++) {
        const visit_hot *vh = &ds->visit_hot[v];
        assert(vh->first_secs <= vh->last_secs && vh->min_off <= vh->max_off && vh->run_count > 0);
    }
    uint64_t ncells = (uint64_t)m->grid_nx * m->grid_ny;
    assert(ncells == 0 || ds->grid_cells[ncells] == ds->ngrid_stops);
    for (uint64_t c = 0; c < ncells; c++)
        assert(ds->grid_cells[c] <= ds->grid_cells[c + 1]);
}
#endif
