/* board_moved.c — ranks and accessibility of rows moved by a platform
 * change; see board_moved.h.
 */
#include "engine/board_moved.h"

#include "engine/board_accessible.h"
#include "store/dataset_internal.h"

query_rank board_row_rank(const dataset *ds, const departure *d)
{
    const tt_trip *t = &ds->trips[d->trip];
    return (query_rank){ds->stops[d->stop].id_rank, ds->routes[t->route].short_name_rank, t->id_rank};
}

bool board_moved_accessible(const dataset *ds, const departure *d, uint32_t assigned_stop)
{
    departure at = *d;
    at.stop = assigned_stop;
    return board_row_accessible(ds, &at);
}
