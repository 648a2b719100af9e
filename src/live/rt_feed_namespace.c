/* rt_feed_namespace.c — a GTFS-Realtime feed's ids in one feed's namespace
 * of a merged dataset (rt_feed_namespace.h).
 *
 * Why it exists: the id rule of the merge lives in the import, the ids a
 * realtime source sends are its own feed's; this is where the two meet,
 * once per decoded feed, so the overlay and the alert view look ids up as
 * they always do.
 */
#include "transit/rt_feed_namespace.h"

#include <stdio.h>
#include <string.h>

typedef struct renamer {
    rt_feed *feed;
    const char *name;
    rt_id_exists_fn exists;
    void *ctx;
    long renamed;
    bool oom;
} renamer;

/* *id as "<feed>:<id>" when the dataset has that; unchanged otherwise. */
static void rename_id(renamer *r, rt_id_kind kind, const char **id)
{
    if (!*id || !**id || r->oom)
        return;
    char qualified[512];
    int n = snprintf(qualified, sizeof qualified, "%s:%s", r->name, *id);
    if (n < 0 || (size_t)n >= sizeof qualified || !r->exists(r->ctx, kind, qualified))
        return;
    const char *copy = rt_feed_add_string(r->feed, qualified);
    if (!copy) {
        r->oom = true;
        return;
    }
    *id = copy;
    r->renamed++;
}

static void rename_stop_id(void *r, const char **id) { rename_id(r, RT_ID_STOP, id); }

long rt_feed_namespace(rt_feed *feed, const char *feed_name, rt_id_exists_fn exists, void *ctx)
{
    if (!feed || !feed_name || !*feed_name)
        return 0;
    renamer r = {.feed = feed, .name = feed_name, .exists = exists, .ctx = ctx};
    for (uint32_t i = 0; i < feed->trip_update_count; i++) {
        rt_trip_update *tu = &feed->trip_updates[i];
        rename_id(&r, RT_ID_TRIP, &tu->trip_id);
        rename_id(&r, RT_ID_ROUTE, &tu->route_id);
        rt_trip_update_map_stop_ids(tu, rename_stop_id, &r);
    }
    for (uint32_t i = 0; i < feed->alert_count; i++) {
        rt_alert *a = &feed->alerts[i];
        for (uint32_t k = 0; k < a->selector_count; k++) {
            rt_selector *s = &a->selectors[k];
            rename_id(&r, RT_ID_AGENCY, &s->agency_id);
            rename_id(&r, RT_ID_ROUTE, &s->route_id);
            rename_id(&r, RT_ID_STOP, &s->stop_id);
            rename_id(&r, RT_ID_TRIP, &s->trip_id);
        }
    }
    return r.oom ? -1 : r.renamed;
}
