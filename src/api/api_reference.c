/* api_reference.c — the endpoints of the feed's reference data: routes, one
 * route, one trip, agencies and the feed itself.
 *
 * Why it exists: these answers change only with the dataset (cached a day,
 * the feed an hour) and take no search: each lists or looks up what the
 * mapped timetable holds, or reads schedule.sqlite's feed metadata. They
 * share little with the stops and departures endpoints beyond the checks
 * and writers of api_internal.h, so they live apart from them.
 */
#include <stdio.h>
#include <string.h>

#include "api/api_internal.h"
#include "transit/feed_validity.h"
#include "transit/gtfs.h"

#define CACHE_FEED 3600   /* its feed_validity changes with the date */

/* Writes element `i` of a whole-feed list. */
typedef void (*write_item_fn)(json_writer *w, const dataset *ds, const api_request *req, uint32_t i);

#define LIST_LIMIT_MAX 10000

/* An endpoint that lists every item of a kind, {"key":[...],"next":L}: all
 * of them, or with `limit` pages of that many, each page's next link
 * (api_cursor.c) leading to the one after it. */
static int list_all(const dataset *ds, const api_request *req, json_writer *out,
                    api_problem *prob, int *cache_seconds, const char *key,
                    uint32_t (*count)(const dataset *ds), write_item_fn write_item)
{
    static const char *const allowed[] = {"limit", "cursor", NULL};
    static const char *const kept[] = {NULL};
    long limit;
    uint32_t offset;
    if (api_check_request(req, allowed, NULL, ds, prob) ||
        api_get_int(req, "limit", LIST_LIMIT_MAX, 1, LIST_LIMIT_MAX, "an integer", &limit, prob) ||
        api_get_list_cursor(req, ds, key, &offset, prob))
        return prob->status;
    api_begin_list(out, key);
    uint32_t n = count(ds);
    uint32_t stop = offset < n ? (n - offset > (uint32_t)limit ? offset + (uint32_t)limit : n) : offset;
    for (uint32_t i = offset; i < stop; i++)
        write_item(out, ds, req, i);
    json_array_end(out);
    char path[32];
    snprintf(path, sizeof path, "/v1/%s", key);
    board_link link = {path, NULL, "", kept};
    if (stop < n)
        api_write_list_next(out, req, ds, &link, key, limit, stop);
    else
        json_kv_null(out, "next");
    json_object_end(out);
    return api_finish(out, prob, cache_seconds, CACHE_STATIC);
}

static void write_route_at(json_writer *w, const dataset *ds, const api_request *req, uint32_t i)
{
    route_info r;
    dataset_route(ds, i, &r);
    api_name_route(req, i, &r);
    api_write_route(w, &r);
}

int api_routes(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
               api_problem *prob, int *cache_seconds)
{
    (void)t;
    return list_all(ds, req, out, prob, cache_seconds, "routes", dataset_route_count,
                    write_route_at);
}

/* {"stop_id":…,"stop_name":…,"lat":…,"lon":…} of a pattern's stop. */
static void write_pattern_stop(json_writer *w, const dataset *ds, const api_request *req, uint32_t stop)
{
    stop_info st;
    dataset_stop(ds, stop, &st);
    api_name_stop(req, stop, &st);
    json_object_begin(w);
    api_kv_text(w, "stop_id", st.id);
    api_kv_text(w, "stop_name", st.name);
    json_kv_double(w, "lat", st.lat, API_COORD_DECIMALS);
    json_kv_double(w, "lon", st.lon, API_COORD_DECIMALS);
    json_object_end(w);
}

int api_route(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
              api_problem *prob, int *cache_seconds)
{
    if (api_check_request(req, api_no_params, "route_id", ds, prob))
        return prob->status;
    uint32_t route = dataset_find_route(ds, req->id, strlen(req->id));
    if (route == QUERY_NONE)
        return api_fail(prob, 404, "route_id", "route '%s' not found", req->id);
    network_route nr;
    query_error err = {0};
    int rc = route_patterns(ds, t->network, route, &nr, &err);
    if (rc != QUERY_OK)
        return api_query_problem(prob, rc, &err);
    route_info r;
    dataset_route(ds, route, &r);
    api_name_route(req, route, &r);
    json_object_begin(out);
    json_key(out, "route");
    json_object_begin(out);
    api_write_route_fields(out, &r);
    api_kv_record_feed(out, ds, "route", r.id);
    json_key(out, "patterns");
    json_array_begin(out);
    for (uint32_t i = 0; i < nr.npatterns; i++) {
        const route_pattern *p = &nr.patterns[i];
        json_object_begin(out);
        json_key(out, "direction_id");
        if (p->direction_id == 0 || p->direction_id == 1)
            json_int(out, p->direction_id);
        else
            json_null_value(out);
        json_key(out, "headsigns");
        json_array_begin(out);
        for (uint32_t k = 0; k < p->nheadsigns; k++)
            json_str(out, api_name_headsign_text(req, nr.headsigns[p->headsigns_first + k]));
        json_array_end(out);
        json_kv_int(out, "trips", p->trips);
        json_key(out, "stops");
        json_array_begin(out);
        for (uint32_t k = 0; k < p->nstops; k++)
            write_pattern_stop(out, ds, req, nr.stops[p->stops_first + k]);
        json_array_end(out);
        json_object_end(out);
    }
    json_array_end(out);
    json_object_end(out);
    json_object_end(out);
    return api_finish(out, prob, cache_seconds, CACHE_STATIC);
}

static void kv_date(json_writer *w, const char *key, int32_t days)
{
    char date[11];
    format_date(days, date);
    json_kv_string(w, key, date);
}

static void kv_instant(json_writer *w, const char *key, int64_t instant, int32_t offset)
{
    char text[26];
    rfc3339_format_instant(instant, offset, text);
    json_kv_string(w, key, text);
}

static void kv_secs(json_writer *w, const char *key, uint32_t secs)
{
    if (secs == GTFS_TIME_NONE)
        json_kv_null(w, key);
    else
        json_kv_int(w, key, secs);
}

static void kv_secs_instant(json_writer *w, const dataset *ds, const char *key, int32_t date,
                            uint32_t secs)
{
    if (secs == GTFS_TIME_NONE) {
        json_kv_null(w, key);
        return;
    }
    int64_t instant = dataset_instant(ds, date, secs);
    kv_instant(w, key, instant, dataset_utc_offset(ds, instant));
}

void api_kv_call_stop(json_writer *out, const api_request *req, const dataset *ds, uint32_t stop)
{
    stop_info st;
    dataset_stop(ds, stop, &st);
    api_name_stop(req, stop, &st);
    api_kv_text(out, "stop_id", st.id);
    api_kv_text(out, "stop_name", st.name);
    json_kv_double(out, "lat", st.lat, API_COORD_DECIMALS);
    json_kv_double(out, "lon", st.lon, API_COORD_DECIMALS);
    api_kv_optional(out, "platform_code", st.platform_code);
}

int api_trip(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
             api_problem *prob, int *cache_seconds)
{
    static const char *const allowed[] = {"date", "include", NULL};
    static const char *const includes[] = {"shape", NULL};
    unsigned include = 0;
    if (api_check_params(req, allowed, prob) || api_need_id(req, "trip_id", prob) ||
        api_get_include(req, includes, &include, prob))
        return prob->status;
    const char *date_text = api_param_value(req, "date");
    int32_t date = 0;
    if (date_text && parse_iso_date(date_text, strlen(date_text), &date) != 0)
        return api_fail(prob, 400, "date", "date must be a calendar date YYYY-MM-DD");
    if (!ds)
        return api_no_dataset(prob);
    uint32_t trip = dataset_find_trip(ds, req->id, strlen(req->id));
    if (trip == QUERY_NONE)   /* a trip only the realtime feed has, or 404 */
        return api_realtime_trip(t, ds, req, date_text != NULL, date, include & 1, out, prob, cache_seconds);
    if (date_text && req->realtime && rt_overlay_dataset(req->realtime) == ds) {
        /* that day's instance REPLACED: the replacement is where it calls
         * (not of a frequency-based trip, whose detail is its template: a
         * day may have several runs, each replaced or not) */
        const rt_added_trip *a = rt_overlay_find_added(req->realtime, req->id, date);
        if (a && a->relationship == RT_TRIP_REPLACEMENT && a->start_secs < 0)
            return api_realtime_trip(t, ds, req, true, date, include & 1, out, prob, cache_seconds);
    }
    uint32_t count = 0;
    query_error err = {0};
    int rc = trip_detail(ds, trip, t->stop_times, t->stop_times_cap, &count, &err);
    if (rc == QUERY_OK && count > t->stop_times_cap) {
        if (!api_grow_stop_times(t, count))
            return api_fail(prob, 503, "", "out of memory reading trip '%s'", req->id);
        rc = trip_detail(ds, trip, t->stop_times, t->stop_times_cap, &count, &err);
    }
    if (rc != QUERY_OK)
        return api_query_problem(prob, rc, &err);

    trip_info tr;
    route_info rt;
    dataset_trip(ds, trip, &tr);
    dataset_route(ds, tr.route, &rt);
    api_name_trip(req, trip, &tr);
    api_name_route(req, tr.route, &rt);
    /* the instance's TripProperties stand in for the trip's */
    api_trip_instance inst;
    api_trip_instance_find(req, ds, trip, &tr, t->stop_times, count, date_text != NULL, date, &inst);
    const char *short_name = NULL;
    if (inst.properties) {
        if (inst.properties->headsign)
            tr.headsign = inst.properties->headsign;
        if (inst.properties->shape_id)
            tr.shape_id = inst.properties->shape_id;
        short_name = inst.properties->short_name;
    }
    json_object_begin(out);
    json_key(out, "trip");
    json_object_begin(out);
    api_kv_text(out, "id", tr.id);
    api_kv_text(out, "route_id", rt.id);
    api_kv_text(out, "service_id", tr.service_id);
    api_kv_optional(out, "headsign", tr.headsign);
    json_key(out, "direction_id");
    if (tr.direction_id == 0 || tr.direction_id == 1)
        json_int(out, tr.direction_id);
    else
        json_null_value(out);
    api_kv_optional(out, "shape_id", tr.shape_id);
    json_kv_int(out, "wheelchair_accessible", tr.wheelchair_accessible);
    json_kv_int(out, "bikes_allowed", tr.bikes_allowed);
    api_kv_record_feed(out, ds, "trip", tr.id);
    if (date_text)
        json_kv_bool(out, "runs_on_date", trip_runs_on(ds, trip, date));
    if (short_name)
        api_kv_text(out, "trip_short_name", short_name);
    api_trip_instance_vehicle(out, &inst);
    json_key(out, "stop_times");
    json_array_begin(out);
    for (uint32_t i = 0; i < count; i++) {
        const trip_stop_time *s = &t->stop_times[i];
        json_object_begin(out);
        api_kv_call_stop(out, req, ds, s->stop);
        json_kv_int(out, "stop_sequence", s->stop_sequence);
        kv_secs(out, "arrival_secs", s->arrival_secs);
        kv_secs(out, "departure_secs", s->departure_secs);
        if (date_text) {
            kv_secs_instant(out, ds, "arrival", date, s->arrival_secs);
            kv_secs_instant(out, ds, "departure", date, s->departure_secs);
        }
        api_trip_instance_stop(out, req, ds, &inst, t->stop_times, count, i);
        json_object_end(out);
    }
    json_array_end(out);
    if ((include & 1) && api_write_trip_shape(t, ds, &tr, t->stop_times, count, out, prob))
        return prob->status;
    json_object_end(out);
    json_object_end(out);
    /* on a realtime server the next feed may give the instance properties,
     * platform changes or a vehicle: cached as briefly as boards */
    bool live = inst.rt != NULL;
    return api_finish(out, prob, cache_seconds, live ? CACHE_REALTIME_TRIP : CACHE_STATIC);
}

static void write_agency_at(json_writer *w, const dataset *ds, const api_request *req, uint32_t i)
{
    agency_info a;
    dataset_agency(ds, i, &a);
    api_name_agency(req, i, &a);
    json_object_begin(w);
    api_kv_optional(w, "id", a.id);
    api_kv_text(w, "name", a.name);
    api_kv_text(w, "url", a.url);
    api_kv_text(w, "timezone", a.timezone);
    api_kv_optional(w, "lang", a.lang);
    api_kv_optional(w, "phone", a.phone);
    json_object_end(w);
}

int api_agencies(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                 api_problem *prob, int *cache_seconds)
{
    (void)t;
    return list_all(ds, req, out, prob, cache_seconds, "agencies", dataset_agency_count,
                    write_agency_at);
}

int api_feed(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
             api_problem *prob, int *cache_seconds)
{
    (void)t;
    schedule_db *db;
    if (api_check_request(req, api_no_params, NULL, ds, prob) || api_take_schedule(ds, &db, prob))
        return prob->status;
    feed_meta meta;
    memset(&meta, 0, sizeof meta);
    if (schedule_feed_meta(db, &meta) != 0)
        memset(&meta, 0, sizeof meta);
    dataset_counts counts;
    dataset_get_counts(ds, &counts);
    char imported[21];
    rfc3339_format_utc(counts.imported_at, imported);

    json_object_begin(out);
    json_key(out, "feed");
    json_object_begin(out);
    api_kv_text(out, "version", dataset_version(ds));
    api_kv_optional(out, "publisher_name", meta.publisher_name);
    kv_date(out, "start_date", counts.first_date);
    kv_date(out, "end_date", counts.last_date);
    api_kv_text(out, "timezone", dataset_timezone(ds));
    json_kv_string(out, "imported_at", imported);
    json_key(out, "counts");
    json_object_begin(out);
    json_kv_int(out, "stops", counts.stops);
    json_kv_int(out, "routes", counts.routes);
    json_kv_int(out, "trips", counts.trips);
    json_kv_int(out, "stop_times", (int64_t)counts.stop_times);
    json_object_end(out);
    api_write_feed_list(out, db);
    dataset_give_schedule(ds, db);
    json_object_end(out);
    feed_validity validity;
    feed_validity_at(ds, req->now, &validity);
    feed_validity_write(out, &validity);
    json_object_end(out);
    return api_finish(out, prob, cache_seconds, CACHE_FEED);
}

