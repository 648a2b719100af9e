/* api_trip_instance.c — what realtime says of a timetable trip's instance,
 * for /v1/trips/{id}.
 *
 * Why it exists: a trip's detail is the schedule's, but the instance a
 * rider looks at may have TripProperties of its own (a headsign, short name
 * and shape standing in for the trip's), platform changes (a stop time
 * served at an assigned stop) and a vehicle serving it. The instance is the
 * one of `date`, else of yesterday, today and tomorrow the one whose first
 * departure is nearest now (the rule for updates without start_date). The
 * overlay's row look-up (rt_overlay.h) answers for each stop time; the
 * vehicle is the object departure rows show (rt_vehicles.h). A
 * frequency-based trip's detail is its template: no instance.
 */
#include "api/api_internal.h"

/* The departure row of stop time `pos` of the instance (what the overlay's
 * look-ups take). */
static departure stop_time_row(const api_trip_instance *ti, const trip_stop_time *st, uint32_t pos)
{
    return (departure){.service_date = ti->service_date,
                       .secs = st[pos].departure_secs,
                       .stop = st[pos].stop,
                       .trip = ti->trip,
                       .stop_sequence = st[pos].stop_sequence,
                       .pos = pos};
}

void api_trip_instance_find(const api_request *req, const dataset *ds, uint32_t trip, const trip_info *tr,
                            const trip_stop_time *st, uint32_t n, bool has_date, int32_t date,
                            api_trip_instance *out)
{
    memset(out, 0, sizeof *out);
    out->vehicle = -1;
    const rt_overlay *rt = req->realtime;
    if (!rt || rt_overlay_dataset(rt) != ds || tr->frequency_based || n == 0)
        return;
    out->service_date = has_date ? date : rt_nearest_service_date(ds, trip, st[0].departure_secs, req->now);
    if (out->service_date == INT32_MIN)
        return;
    out->rt = rt;
    out->trip = trip;
    departure first = stop_time_row(out, st, 0);
    rt_departure r;
    if (rt_overlay_lookup(rt, &first, &r)) {
        out->realtime = true;
        out->properties = r.has_properties ? rt_overlay_row_properties(rt, &first) : NULL;
    }
    const rt_vehicles *vehicles = rt_overlay_vehicles(rt);
    if (rt_vehicles_count(vehicles)) {
        departure d = {.service_date = out->service_date, .secs = st[0].departure_secs, .trip = trip};
        out->vehicle = rt_vehicles_find_row(vehicles, &d);
        out->vehicles = vehicles;
    }
}

void api_trip_instance_stop(json_writer *out, const api_request *req, const dataset *ds,
                            const api_trip_instance *ti, const trip_stop_time *st, uint32_t n, uint32_t pos)
{
    if (!ti->realtime)
        return;
    if (pos >= n)
        return;
    departure row = stop_time_row(ti, st, pos);
    rt_departure r;
    if (!rt_overlay_lookup(ti->rt, &row, &r) || !r.moved)
        return;
    uint32_t stop = rt_overlay_assigned_stop(ti->rt, &row);
    if (stop != QUERY_NONE)
        api_kv_assigned_stop(out, req, ds, stop);
}

void api_kv_assigned_stop(json_writer *out, const api_request *req, const dataset *ds, uint32_t stop)
{
    stop_info si;
    dataset_stop(ds, stop, &si);
    api_name_stop(req, stop, &si);
    json_key(out, "assigned_stop");
    json_object_begin(out);
    api_kv_text(out, "id", si.id);
    api_kv_text(out, "name", si.name);
    api_kv_optional(out, "platform_code", si.platform_code);
    json_kv_double(out, "lat", si.lat, API_COORD_DECIMALS);
    json_kv_double(out, "lon", si.lon, API_COORD_DECIMALS);
    json_object_end(out);
}

void api_trip_instance_vehicle(json_writer *out, const api_trip_instance *ti)
{
    if (ti->vehicle < 0)
        return;
    size_t len;
    const char *json = rt_vehicles_json(ti->vehicles, (uint32_t)ti->vehicle, true, &len);
    json_key(out, "vehicle");
    json_raw(out, json, len);
}
