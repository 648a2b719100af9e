/* api_trip_realtime.c — /v1/trips/{id} for a trip only the realtime feed has.
 *
 * Why it exists: a NEW (or ADDED) trip, a DUPLICATED copy and a REPLACEMENT
 * are not in the mapped timetable, so api_trip (api_reference.c) finds no
 * trip of that id; the realtime overlay (rt_overlay.h) keeps where each of
 * them calls. This answers with those calls, in the shape of a timetable
 * trip, marked "realtime_only": true, and is cached as briefly as boards.
 */
#include <string.h>

#include "api/api_internal.h"
#include "api/departure_json.h"
#include "transit/rfc3339.h"


static void kv_time(json_writer *w, const dataset *ds, const char *secs_key, const char *key, int64_t instant,
                    int64_t day_start)
{
    if (instant == RT_NO_TIME) {
        json_kv_null(w, secs_key);
        json_kv_null(w, key);
        return;
    }
    json_kv_int(w, secs_key, instant - day_start);
    char text[26];
    rfc3339_format_instant(instant, dataset_utc_offset(ds, instant), text);
    json_kv_string(w, key, text);
}

static const char *relationship_name(rt_trip_relationship r)
{
    switch (r) {
    case RT_TRIP_NEW: return "NEW";
    case RT_TRIP_DUPLICATED: return "DUPLICATED";
    case RT_TRIP_REPLACEMENT: return "REPLACEMENT";
    default: return "ADDED";
    }
}

/* include=shape of a realtime-only trip: TripProperties.shape_id's (else
 * the scheduled trip's) from shapes.txt, else the line through the stops
 * it is served at. */
static int write_shape(api_thread *t, dataset *ds, const rt_added_trip *a, const rt_added_call *calls,
                       json_writer *out, api_problem *prob)
{
    if (a->call_count > t->stop_times_cap && !api_grow_stop_times(t, a->call_count))
        return api_fail(prob, 503, "", "out of memory reading trip '%s'", a->trip_id);
    for (uint32_t i = 0; i < a->call_count; i++)
        t->stop_times[i] = (trip_stop_time){
            .stop = calls[i].assigned_stop != QUERY_NONE ? calls[i].assigned_stop : calls[i].stop,
            .stop_sequence = calls[i].stop_sequence};
    trip_info tr = {.id = a->trip_id, .shape_id = a->shape_id ? a->shape_id : ""};
    return api_write_trip_shape(t, ds, &tr, t->stop_times, a->call_count, out, prob);
}

int api_realtime_trip(api_thread *t, dataset *ds, const api_request *req, bool has_date, int32_t date,
                      bool with_shape, json_writer *out, api_problem *prob, int *cache_seconds)
{
    const rt_overlay *rt = req->realtime;
    const rt_added_trip *a = rt && rt_overlay_dataset(rt) == ds
                                 ? rt_overlay_find_added(rt, req->id, has_date ? date : INT32_MIN)
                                 : NULL;
    if (!a)
        return api_fail(prob, 404, "trip_id", "trip '%s' not found", req->id);
    route_info route;
    dataset_route(ds, a->route, &route);
    api_name_route(req, a->route, &route);
    int64_t day_start = dataset_instant(ds, a->service_date, 0);
    json_object_begin(out);
    json_key(out, "trip");
    json_object_begin(out);
    api_kv_text(out, "id", a->trip_id);
    api_kv_text(out, "route_id", route.id);
    json_kv_null(out, "service_id");
    api_kv_optional(out, "headsign", departure_json_added_headsign(ds, req->translations, req->language, a));
    json_key(out, "direction_id");
    if (a->direction_id == 0 || a->direction_id == 1)
        json_int(out, a->direction_id);
    else
        json_null_value(out);
    api_kv_optional(out, "shape_id", a->shape_id);
    json_kv_int(out, "wheelchair_accessible", 0);   /* the feed says nothing of its accessibility */
    json_kv_int(out, "bikes_allowed", 0);
    if (has_date)
        json_kv_bool(out, "runs_on_date", true);
    json_kv_bool(out, "realtime_only", true);
    json_kv_string(out, "trip_relationship", relationship_name(a->relationship));
    api_kv_optional(out, "trip_short_name", a->short_name);
    api_kv_optional(out, "source_trip_id", a->source_trip_id);
    /* the service date as the local date at its noon */
    int64_t noon = dataset_instant(ds, a->service_date, 43200);
    char noon_text[26];
    rfc3339_format_instant(noon, dataset_utc_offset(ds, noon), noon_text);
    noon_text[10] = '\0';
    json_kv_string(out, "service_date", noon_text);
    json_key(out, "stop_times");
    json_array_begin(out);
    const rt_added_call *calls = rt_overlay_added_calls(rt, a);
    for (uint32_t i = 0; i < a->call_count; i++) {
        const rt_added_call *c = &calls[i];
        json_object_begin(out);
        api_kv_call_stop(out, req, ds, c->stop);
        if (c->assigned_stop != QUERY_NONE)   /* a platform change: served there instead */
            api_kv_assigned_stop(out, req, ds, c->assigned_stop);
        json_kv_int(out, "stop_sequence", c->stop_sequence);
        kv_time(out, ds, "arrival_secs", "arrival", c->arrival, day_start);
        kv_time(out, ds, "departure_secs", "departure", c->departure, day_start);
        if (c->flags & RT_CALL_SKIPPED)   /* the vehicle does not stop there */
            json_kv_bool(out, "skipped", true);
        json_object_end(out);
    }
    json_array_end(out);
    if (with_shape && write_shape(t, ds, a, calls, out, prob))
        return prob->status;
    json_object_end(out);
    json_object_end(out);
    return api_finish(out, prob, cache_seconds, CACHE_REALTIME_TRIP);
}
