/* dataset_pools.c — the SQLite connections a dataset lends to requests.
 *
 * Why it exists: schedule.sqlite (search, feed metadata) and shapes.sqlite
 * (polylines) are read through connections that belong to one thread at a
 * time. Opening one per request would cost more than the request, and a
 * connection kept by a thread would keep a replaced version's file open, so
 * the dataset keeps the idle ones: a request takes one and gives it back,
 * and they close with the dataset. A spinlock guards the pools for the few
 * loads and stores a take or give makes.
 */
#include "store/dataset_internal.h"

#include <stdatomic.h>

#include "transit/stores.h"

static void lock(dataset *ds)
{
    while (atomic_flag_test_and_set_explicit(&ds->pool_lock, memory_order_acquire))
        ;
}

static void unlock(dataset *ds) { atomic_flag_clear_explicit(&ds->pool_lock, memory_order_release); }

schedule_db *dataset_take_schedule(dataset *ds, char *err, size_t errlen)
{
    schedule_db *db = NULL;
    lock(ds);
    if (ds->nschedule_idle > 0)
        db = ds->schedule_idle[--ds->nschedule_idle];
    unlock(ds);
    return db ? db : schedule_open(ds->dir, err, errlen);
}

void dataset_give_schedule(dataset *ds, schedule_db *db)
{
    bool kept = false;
    lock(ds);
    if (ds->nschedule_idle < DATASET_SCHEDULE_IDLE) {
        ds->schedule_idle[ds->nschedule_idle++] = db;
        kept = true;
    }
    unlock(ds);
    if (!kept)
        schedule_close(db);
}

shapes_db *dataset_take_shapes(dataset *ds, char *err, size_t errlen)
{
    shapes_db *db = NULL;
    lock(ds);
    if (ds->nshapes_idle > 0)
        db = ds->shapes_idle[--ds->nshapes_idle];
    unlock(ds);
    return db ? db : shapes_open(ds->dir, err, errlen);
}

void dataset_give_shapes(dataset *ds, shapes_db *db)
{
    bool kept = false;
    lock(ds);
    if (ds->nshapes_idle < DATASET_SCHEDULE_IDLE) {
        ds->shapes_idle[ds->nshapes_idle++] = db;
        kept = true;
    }
    unlock(ds);
    if (!kept)
        shapes_close(db);
}

void dataset_close_pools(dataset *ds)
{
    for (int i = 0; i < ds->nschedule_idle; i++)
        schedule_close(ds->schedule_idle[i]);
    for (int i = 0; i < ds->nshapes_idle; i++)
        shapes_close(ds->shapes_idle[i]);
    ds->nschedule_idle = ds->nshapes_idle = 0;
}
