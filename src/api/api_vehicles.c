/* api_vehicles.c — GET /v1/vehicles: the vehicles the realtime feed places,
 * filtered by an area or a route.
 *
 * Why it exists: a map of "where is my bus" needs positions, not only
 * predicted times. The list is the request's vehicle set (rt_vehicles.h,
 * published with the realtime overlay), ordered by vehicle id and paged by
 * it like the alerts (`after`), so a page stays right across realtime
 * updates; each vehicle's JSON was written when the set was built.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"

#define VEHICLE_LIST_DEFAULT 100
#define VEHICLE_LIST_MAX 1000

typedef struct bbox {
    double min_lon, min_lat, max_lon, max_lat;
} bbox;

/* One coordinate of a bbox, exactly as docs/openapi.json's pattern has it:
 * an optional minus, whole degrees without needless digits (at most `max`:
 * 180 or 90, whose fraction may only be zeros), an optional fraction. */
static bool parse_coordinate(const char *s, size_t len, int max, double *out)
{
    size_t i = s[0] == '-' ? 1 : 0, digits = 0;
    while (i + digits < len && s[i + digits] >= '0' && s[i + digits] <= '9')
        digits++;
    if (digits == 0 || digits > 3)
        return false;
    int whole = 0;
    for (size_t k = 0; k < digits; k++)
        whole = whole * 10 + (s[i + k] - '0');
    /* three digits only for 100..179 (and 180); two may lead with 0 as the pattern allows */
    if ((digits == 3 && (s[i] != '1' || whole > max)) || whole > max)
        return false;
    size_t at = i + digits;
    if (at < len) {
        if (s[at] != '.' || at + 1 == len)
            return false;
        for (size_t k = at + 1; k < len; k++)
            if (s[k] < '0' || s[k] > '9' || (whole == max && s[k] != '0'))
                return false;
    }
    char text[48];
    if (len >= sizeof text)
        return false;
    memcpy(text, s, len);
    text[len] = '\0';
    *out = strtod(text, NULL);
    return true;
}

/* bbox=minLon,minLat,maxLon,maxLat (WGS 84 degrees; minLon > maxLon: the
 * box crosses the antimeridian). */
static int get_bbox(const api_request *req, bool *given, bbox *out, api_problem *prob)
{
    const char *s = api_param_value(req, "bbox");
    *given = s != NULL;
    if (!s)
        return 0;
    double v[4];
    const char *p = s;
    for (int i = 0; i < 4; i++) {
        size_t n = strcspn(p, ",");
        if (!parse_coordinate(p, n, i % 2 ? 90 : 180, &v[i]) || (i < 3 && p[n] != ',') ||
            (i == 3 && p[n] != '\0'))
            return api_fail(prob, 400, "bbox",
                            "bbox must be four decimal degrees minLon,minLat,maxLon,maxLat (longitudes "
                            "-180..180, latitudes -90..90), e.g. -74.05,40.6,-73.9,40.7");
        p += n + (i < 3);
    }
    if (v[1] > v[3])
        return api_fail(prob, 400, "bbox", "bbox minLat (%.6g) is above maxLat (%.6g)", v[1], v[3]);
    *out = (bbox){v[0], v[1], v[2], v[3]};
    return 0;
}

static bool in_bbox(const bbox *b, const rt_vehicle *v)
{
    if (!v->has_position || v->latitude < b->min_lat || v->latitude > b->max_lat)
        return false;
    if (b->min_lon <= b->max_lon)
        return v->longitude >= b->min_lon && v->longitude <= b->max_lon;
    return v->longitude >= b->min_lon || v->longitude <= b->max_lon;   /* across the antimeridian */
}

int api_vehicles(api_thread *t, dataset *ds, const api_request *req, json_writer *out, api_problem *prob,
                 int *cache_seconds)
{
    (void)t;
    static const char *const allowed[] = {"bbox", "route", "limit", "after", NULL};
    long limit;
    bool has_bbox;
    bbox box;
    if (api_check_params(req, allowed, prob) ||
        api_get_int(req, "limit", VEHICLE_LIST_DEFAULT, 1, VEHICLE_LIST_MAX, "an integer", &limit, prob) ||
        get_bbox(req, &has_bbox, &box, prob))
        return prob->status;
    const char *route_id = api_param_value(req, "route");
    uint32_t route = QUERY_NONE;
    if (route_id) {
        if (!route_id[0])
            return api_fail(prob, 400, "route", "route must name a route_id");
        if (!ds)
            return api_no_dataset(prob);
        if ((route = dataset_find_route(ds, route_id, strlen(route_id))) == QUERY_NONE)
            return api_fail(prob, 404, "route", "there is no route '%.200s'", route_id);
    }
    const char *after = api_param_value(req, "after");
    /* the set of the overlay of this dataset (another one's matched other trips) */
    const rt_vehicles *v = req->realtime && rt_overlay_dataset(req->realtime) == ds ? rt_overlay_vehicles(req->realtime)
                                                                                   : NULL;
    uint32_t n = rt_vehicles_count(v), written = 0;
    bool truncated = false;
    const char *last = NULL;
    api_begin_list(out, "vehicles");
    for (uint32_t i = after && v ? rt_vehicles_after(v, after) : 0; i < n; i++) {
        if (route != QUERY_NONE && rt_vehicles_route(v, i) != route)
            continue;
        if (has_bbox && !in_bbox(&box, rt_vehicles_at(v, i)))
            continue;
        if (written == (uint32_t)limit) {
            truncated = true;
            break;
        }
        size_t len;
        const char *json = rt_vehicles_json(v, i, false, &len);
        json_raw(out, json, len);
        last = rt_vehicles_at(v, i)->key;
        written++;
    }
    json_array_end(out);
    json_kv_bool(out, "truncated", truncated);
    if (truncated) {
        static const char *const kept[] = {"bbox", "route", NULL};
        board_link link = {"/v1/vehicles", NULL, "", kept};
        json_kv_string(out, "next_after", last);
        api_write_next_after(out, req, &link, limit, last);
    } else {
        json_kv_null(out, "next");
    }
    json_object_end(out);
    return api_finish(out, prob, cache_seconds, 0);
}
