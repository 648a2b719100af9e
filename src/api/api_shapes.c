/* api_shapes.c — the geometry endpoints: GET /v1/shapes/{id}, and a trip's
 * shape (GET /v1/trips/{id}?include=shape).
 *
 * Why it exists: a map draws a trip or route as a line. A shape is served as
 * Google's encoded polyline (precision 5, polyline.h) with its length in
 * metres, read as one row of shapes.sqlite, where the import encoded it
 * (shapes_write.c). A trip whose feed gives no shape, or names a shape_id
 * shapes.txt lacks, gets the line through its stops' coordinates, marked
 * "source":"stops" (a feed's own is "source":"feed"), so a client always has
 * something to draw and knows how rough it is.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "transit/polyline.h"

/* {"id":…,"source":…,"points":…,"length_m":…,"polyline":"…"} */
static void write_shape(json_writer *w, const char *id, const char *source, uint32_t points, double length_m,
                        const char *polyline, size_t polyline_len)
{
    json_object_begin(w);
    json_key(w, "id");
    if (id)
        json_str(w, id);
    else
        json_null_value(w);
    json_kv_string(w, "source", source);
    json_kv_int(w, "points", points);
    json_kv_int(w, "length_m", (int64_t)(length_m + 0.5));
    json_key(w, "polyline");
    json_string_n(w, polyline, polyline_len);   /* '\\' is among its characters */
    json_object_end(w);
}

static int take_shapes(dataset *ds, shapes_db **db, api_problem *prob)
{
    char err[256] = "";
    *db = dataset_take_shapes(ds, err, sizeof err);
    if (!*db)
        return api_fail(prob, 503, "", "the shapes database cannot be opened: %s", err);
    return 0;
}

int api_shape(api_thread *t, dataset *ds, const api_request *req, json_writer *out, api_problem *prob,
              int *cache_seconds)
{
    (void)t;
    shapes_db *db;
    if (api_check_request(req, api_no_params, "shape_id", ds, prob) || take_shapes(ds, &db, prob))
        return prob->status;
    shape_line line;
    char err[256] = "";
    int found = shapes_line(db, req->id, &line, err, sizeof err);
    if (found == 1) {
        json_object_begin(out);
        json_key(out, "shape");
        write_shape(out, req->id, "feed", line.points, line.length_m, line.polyline, line.polyline_len);
        json_object_end(out);
    }
    dataset_give_shapes(ds, db);
    if (found < 0)
        return api_fail(prob, 503, "", "the shape cannot be read: %s", err);
    if (found == 0)
        return api_fail(prob, 404, "shape_id", "shape '%s' not found", req->id);
    return api_finish(out, prob, cache_seconds, CACHE_STATIC);
}

/* The line through the trip's stops, into t->text. */
static int write_stops_shape(api_thread *t, const dataset *ds, const trip_stop_time *st, uint32_t n,
                             json_writer *out, api_problem *prob)
{
    size_t need = (size_t)n * POLYLINE_POINT_MAX + 1;
    if (need > t->text_cap) {
        char *text = realloc(t->text, need);
        if (!text)
            return api_fail(prob, 503, "", "out of memory drawing a trip's shape");
        t->text = text;
        t->text_cap = need;
    }
    polyline pl;
    polyline_begin(&pl);
    char *o = t->text;
    double length = 0, lat = 0, lon = 0;
    for (uint32_t i = 0; i < n; i++) {
        stop_info s;
        dataset_stop(ds, st[i].stop, &s);
        o = polyline_put(&pl, o, s.lat, s.lon);
        if (i)
            length += polyline_distance_m(lat, lon, s.lat, s.lon);
        lat = s.lat;
        lon = s.lon;
    }
    write_shape(out, NULL, "stops", n, length, t->text, (size_t)(o - t->text));
    return 0;
}

int api_write_trip_shape(api_thread *t, dataset *ds, const trip_info *tr, const trip_stop_time *st, uint32_t n,
                         json_writer *out, api_problem *prob)
{
    json_key(out, "shape");
    if (tr->shape_id[0]) {
        shapes_db *db;
        if (take_shapes(ds, &db, prob))
            return prob->status;
        shape_line line;
        char err[256] = "";
        int found = shapes_line(db, tr->shape_id, &line, err, sizeof err);
        if (found == 1)
            write_shape(out, tr->shape_id, "feed", line.points, line.length_m, line.polyline, line.polyline_len);
        dataset_give_shapes(ds, db);
        if (found < 0)
            return api_fail(prob, 503, "", "the trip's shape cannot be read: %s", err);
        if (found == 1)
            return 0;
    }
    return write_stops_shape(t, ds, st, n, out, prob);
}
