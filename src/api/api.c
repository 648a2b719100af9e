/* api.c — the per-thread context, the writers the endpoints share, and the
 * stop and departures endpoints.
 *
 * Why it exists: the HTTP server and `transitd query` must answer alike, so
 * the whole of an endpoint short of HTTP framing lives in src/api/. Every
 * endpoint first checks its parameters (api_params.c: unknown, duplicate,
 * missing, malformed or out of range → 400 naming the parameter), then looks
 * up ids (unknown → 404), then streams the body. All working memory belongs
 * to the api_thread made here and is reused, so a warm thread answers
 * without allocating. The stops and departures endpoints are here, beside
 * the thread's arrays they fill; the whole-feed ones are in api_reference.c,
 * the alerts in api_alerts.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "api/departure_json.h"
#include "transit/feed_validity.h"

#define CACHE_DEPARTURES 30
#define CACHE_STOP_WITH_ALERTS 60   /* a stop's detail shows the alerts active now */
#define STOP_LIMIT_DEFAULT 20
#define DEPARTURE_LIMIT_DEFAULT 50

static bool grow_indices(api_thread *t, uint32_t need);

api_thread *api_thread_new(void)
{
    api_thread *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->scratch = query_scratch_new();
    /* Start with room for typical stops and trips so the engine is never
     * handed a NULL array, and most threads never grow them. */
    t->marks = alert_marks_new();
    t->board = board_scratch_new();
    t->network = network_scratch_new();
    if (!t->scratch || !t->marks || !t->board || !t->network || !grow_indices(t, 64) ||
        !api_grow_stop_times(t, 32)) {
        api_thread_free(t);
        return NULL;
    }
    return t;
}

void api_thread_free(api_thread *t)
{
    if (!t)
        return;
    if (t->scratch)
        query_scratch_free(t->scratch);
    free(t->stop_times);
    free(t->indices);
    free(t->text);
    alert_marks_free(t->marks);
    board_scratch_free(t->board);
    network_scratch_free(t->network);
    free(t);
}

/* ------------------------------------------------------------ the version's stores */

/* Borrows a schedule.sqlite connection of the dataset's version (give it back
 * with dataset_give_schedule before returning): the connections belong to the
 * dataset, so they close with it and never keep a replaced version's file. */
int api_take_schedule(dataset *ds, schedule_db **db, api_problem *prob)
{
    char err[256] = "";
    *db = dataset_take_schedule(ds, err, sizeof err);
    if (!*db)
        return api_fail(prob, 503, "", "the schedule database cannot be opened: %s", err);
    return 0;
}

/* Grows *items, an array of `elem`-byte elements, to hold `need` of them:
 * capacity doubles from `first`. False when out of memory (*items intact). */
static bool grow_array(void **items, uint32_t *cap, uint32_t need, uint32_t first, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *p = realloc(*items, n * elem);
    if (!p)
        return false;
    *items = p;
    *cap = n;
    return true;
}

static bool grow_indices(api_thread *t, uint32_t need)
{
    void *items = t->indices;
    bool ok = grow_array(&items, &t->indices_cap, need, 64, sizeof *t->indices);
    t->indices = items;
    return ok;
}

bool api_grow_stop_times(api_thread *t, uint32_t need)
{
    void *items = t->stop_times;
    bool ok = grow_array(&items, &t->stop_times_cap, need, 32, sizeof *t->stop_times);
    t->stop_times = items;
    return ok;
}

/* ------------------------------------------------------------ writers */

/* Optional text: null when the feed leaves it empty. */
void api_kv_optional(json_writer *w, const char *key, const char *s)
{
    json_key(w, key);
    if (s && s[0])
        json_str(w, s);
    else
        json_null_value(w);
}

/* Text the feed should carry: "" rather than null when it does not. */
void api_kv_text(json_writer *w, const char *key, const char *s)
{
    json_kv_string(w, key, s ? s : "");
}

static void kv_distance(json_writer *w, double metres)
{
    json_kv_int(w, "distance_m", (int64_t)(metres + 0.5));
}

/* id, name, lat, lon, [distance_m], location_type, parent_station */
static void write_stop_fields(json_writer *w, const dataset *ds, const stop_info *st,
                              const double *distance_m)
{
    api_kv_text(w, "id", st->id);
    api_kv_text(w, "name", st->name);
    json_kv_double(w, "lat", st->lat, API_COORD_DECIMALS);
    json_kv_double(w, "lon", st->lon, API_COORD_DECIMALS);
    if (distance_m)
        kv_distance(w, *distance_m);
    json_kv_int(w, "location_type", st->location_type);
    json_key(w, "parent_station");
    if (st->parent != QUERY_NONE) {
        stop_info parent;
        dataset_stop(ds, st->parent, &parent);
        json_str(w, parent.id);
    } else {
        json_null_value(w);
    }
}

void api_write_route(json_writer *w, const route_info *r)
{
    json_object_begin(w);
    api_write_route_fields(w, r);
    json_object_end(w);
}

/* The members of a Route object, which the stop's and the route's detail
 * extend. */
void api_write_route_fields(json_writer *w, const route_info *r)
{
    api_kv_text(w, "id", r->id);
    api_kv_optional(w, "agency_id", r->agency_id);
    api_kv_text(w, "short_name", r->short_name);
    api_kv_text(w, "long_name", r->long_name);
    json_kv_int(w, "type", r->type);
    api_kv_optional(w, "color", r->color);
    api_kv_optional(w, "text_color", r->text_color);
}

/* {"key":[ — the opening of a response that is one named list. */
void api_begin_list(json_writer *w, const char *key)
{
    json_object_begin(w);
    json_key(w, key);
    json_array_begin(w);
}

/* ]} — closes what api_begin_list opened. */
void api_end_list(json_writer *w)
{
    json_array_end(w);
    json_object_end(w);
}

/* Starts the response's alert marks: the request's view when it was
 * resolved against this dataset and holds alerts; returns the marks for the
 * departure rows, or NULL when no alert can apply. */
static alert_marks *begin_alerts(api_thread *t, const api_request *req, const dataset *ds)
{
    const alert_view *v = req->alerts;
    bool usable = v && alert_view_dataset(v) == ds && alert_view_count(v) > 0;
    alert_marks_begin(t->marks, usable ? v : NULL);
    return usable ? t->marks : NULL;
}

/* What a board's next link is made of (api_cursor.c): asked for only when
 * the page was cut. */
typedef struct board_next {
    const api_request *req;
    board_link link;
    const char *endpoint;       /* what the cursor is bound to, with the parameters */
    query_kind kind;
    board_order order;
    bool wheelchair;
    double lat, lon;
    long radius, limit;
    const board_page_key *after;  /* the request's cursor, or NULL */
} board_next;

/* Whether the board's rows are ordered by predicted time (board_predicted.h). */
static bool by_prediction(const api_request *req, board_order order)
{
    return req->realtime && order == BOARD_BY_PREDICTION;
}

/* ],"truncated":B,"next":L[,"warning":"..."],"alerts":[…]} — closes a
 * departures list with the link to the rows after it (null when none follow)
 * and the alerts its rows (or its stop) showed. The warning comes only with
 * an empty list whose window lies outside the feed's service, so a normal
 * answer pays one comparison and no bytes. */
static void end_departures(api_thread *t, json_writer *w, dataset *ds, query_kind kind, const board *b,
                           int64_t from, long window_minutes, const board_next *next)
{
    json_array_end(w);
    json_kv_bool(w, "truncated", b->truncated);
    board_page_key last;
    if (b->truncated && api_board_key_after(ds, b, by_prediction(next->req, next->order), next->after, &last)) {
        uint64_t binding = api_board_binding(next->endpoint, next->link.id, next->kind, next->order,
                                             next->wheelchair, next->lat, next->lon, next->radius, from,
                                             window_minutes);
        api_write_board_next(w, next->req, &next->link, from, window_minutes, next->limit, binding, &last);
    } else {
        json_kv_null(w, "next");
    }
    char warning[256];
    static const char *const what[] = {"departures", "arrivals", "departures or arrivals"};
    if (b->count == 0 && feed_validity_events_warning(ds, from, (uint32_t)window_minutes * 60, what[kind], warning,
                                                      sizeof warning))
        json_kv_string(w, "warning", warning);
    alert_language local;
    alert_marks_write(t->marks, w, api_alert_language(next->req, ds, &local));
    json_object_end(w);
}

/* Which board a request asks for: a stop's, or the one near a point. */
typedef struct board_query {
    bool nearby;
    uint32_t stop;
    double lat, lon, radius_m;
} board_query;

static int run_board(api_thread *t, const dataset *ds, query_kind kind, const board_query *q, int64_t from,
                     uint32_t window_s, uint32_t limit, const board_sources *src, board *out, query_error *err)
{
    if (q->nearby)
        return board_nearby(t->board, ds, t->scratch, kind, q->lat, q->lon, q->radius_m, from, window_s, limit,
                            src, out, err);
    return board_stop(t->board, ds, t->scratch, kind, q->stop, from, window_s, limit, src, out, err);
}

/* One page of a board. Without a cursor: the board as asked. With one: the
 * rows after the cursor's row up to `limit`, found by asking from its
 * instant for enough rows to step over those earlier pages showed there,
 * then joined again so that only the page's rows mark alerts. 0, or a
 * problem (410 when the rows at the cursor's instant grew past what a page
 * can step over, as a new dataset may make them). */
static int board_page(api_thread *t, const dataset *ds, const api_request *req, query_kind kind,
                      board_order order, bool wheelchair, const board_query *q, int64_t from, long window,
                      long limit, const board_page_key *after, board *out, api_problem *prob)
{
    query_error err = {0};
    board_sources src = {req->realtime, begin_alerts(t, req, ds), order, wheelchair};
    if (!after) {
        int rc = run_board(t, ds, kind, q, from, (uint32_t)window * 60, (uint32_t)limit, &src, out, &err);
        return rc == QUERY_OK ? 0 : api_query_problem(prob, rc, &err);
    }
    int64_t end = from + (int64_t)window * 60;
    uint64_t want = (uint64_t)limit + after->skip;
    uint32_t fetch = want > QUERY_LIMIT_MAX ? QUERY_LIMIT_MAX : (uint32_t)want;
    board_sources unmarked = {req->realtime, NULL, order, wheelchair};
    board all;
    int rc = run_board(t, ds, kind, q, after->instant, (uint32_t)(end - after->instant), fetch, &unmarked, &all,
                       &err);
    if (rc != QUERY_OK)
        return api_query_problem(prob, rc, &err);
    uint32_t shown = api_board_rows_shown(ds, &all, by_prediction(req, order), after);
    uint32_t n = all.count - shown;
    bool more = all.truncated;
    if (n == 0 && more)
        return api_fail(prob, 410, "cursor",
                        "the board changed under the cursor: more rows share its instant than a page can step "
                        "over; start again without cursor");
    if (n > (uint32_t)limit) {
        n = (uint32_t)limit;
        more = true;
    }
    board_join(ds, all.deps + shown, n, &src, t->page_rows, out);
    out->truncated = more;
    out->arrivals = all.arrivals;
    return 0;
}

/* The board's rows into the open departures array; a problem (503) when
 * the rows' texts could not be derived. */
static int write_board(json_writer *out, dataset *ds, const api_request *req, const board *b, bool near_point,
                       api_problem *prob)
{
    char err[160];
    if (departure_json_write_items(out, ds, b, near_point, req->translations, req->language, err, sizeof err) != 0)
        return api_fail(prob, 503, "", "%s", err);
    return 0;
}

static void write_stop(json_writer *w, const dataset *ds, const stop_info *st,
                       const double *distance_m)
{
    json_object_begin(w);
    write_stop_fields(w, ds, st, distance_m);
    json_object_end(w);
}

int api_finish(json_writer *out, api_problem *prob, int *cache_seconds, int seconds)
{
    if (out->oom)
        return api_fail(prob, 503, "", "out of memory while writing the response");
    *cache_seconds = seconds;
    return 200;
}

/* A list page of rows [offset, offset + limit) out of the first `count`
 * rows the engine gave when asked for `fetch` (it cut more when
 * `engine_truncated`): how many the page shows, and whether a next page can
 * follow (lists page through their first QUERY_LIMIT_MAX rows). */
static uint32_t list_page(uint32_t count, bool engine_truncated, uint32_t offset, long limit, bool *truncated,
                          bool *has_next)
{
    uint32_t shown = count > offset ? count - offset : 0;
    if (shown > (uint32_t)limit)
        shown = (uint32_t)limit;
    *truncated = engine_truncated || offset + shown < count;
    *has_next = *truncated && offset + shown < QUERY_LIMIT_MAX && shown > 0;
    return shown;
}

/* ],"truncated":B,"next":L} — closes a list page. */
static void end_list_page(json_writer *w, const api_request *req, const dataset *ds, bool truncated,
                          bool has_next, const board_link *link, const char *endpoint, long limit,
                          uint32_t next_offset)
{
    json_array_end(w);
    json_kv_bool(w, "truncated", truncated);
    if (has_next)
        api_write_list_next(w, req, ds, link, endpoint, limit, next_offset);
    else
        json_kv_null(w, "next");
    json_object_end(w);
}

/* How many rows to ask the engine for: the page's and those before it. */
static uint32_t list_fetch(uint32_t offset, long limit)
{
    uint64_t want = (uint64_t)offset + (uint64_t)limit;
    return want > QUERY_LIMIT_MAX ? QUERY_LIMIT_MAX : (uint32_t)want;
}

/* ------------------------------------------------------------ endpoints */

int api_stops_nearby(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                     api_problem *prob, int *cache_seconds)
{
    static const char *const allowed[] = {"lat", "lon", "radius", "limit", "cursor", NULL};
    static const char *const kept[] = {"lat", "lon", "radius", NULL};
    double lat, lon;
    long radius, limit;
    if (api_check_params(req, allowed, prob) || api_get_coordinate(req, "lat", 90, &lat, prob) ||
        api_get_coordinate(req, "lon", 180, &lon, prob) || api_get_radius(req, &radius, prob) ||
        api_get_limit(req, STOP_LIMIT_DEFAULT, &limit, prob))
        return prob->status;
    if (!ds)
        return api_no_dataset(prob);
    uint32_t offset;
    if (api_get_list_cursor(req, ds, "stops_nearby", &offset, prob))
        return prob->status;
    uint32_t count = 0;
    bool engine_truncated = false, truncated, has_next;
    query_error err = {0};
    int rc = nearby_stops(ds, t->scratch, lat, lon, (double)radius, list_fetch(offset, limit), t->nearby,
                          &count, &engine_truncated, &err);
    if (rc != QUERY_OK)
        return api_query_problem(prob, rc, &err);
    uint32_t shown = list_page(count, engine_truncated, offset, limit, &truncated, &has_next);
    api_begin_list(out, "stops");
    for (uint32_t i = offset; i < offset + shown; i++) {
        stop_info st;
        dataset_stop(ds, t->nearby[i].stop, &st);
        api_name_stop(req, t->nearby[i].stop, &st);
        write_stop(out, ds, &st, &t->nearby[i].distance_m);
    }
    board_link link = {"/v1/stops/nearby", NULL, "", kept};
    end_list_page(out, req, ds, truncated, has_next, &link, "stops_nearby", limit, offset + shown);
    return api_finish(out, prob, cache_seconds, CACHE_STATIC);
}

int api_stops_search(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                     api_problem *prob, int *cache_seconds)
{
    static const char *const allowed[] = {"q", "limit", "cursor", NULL};
    static const char *const kept[] = {"q", NULL};
    long limit;
    if (api_check_params(req, allowed, prob))
        return prob->status;
    const char *q = api_param_value(req, "q");
    if (!q)
        return api_missing_param(prob, "q");
    const char *c = q;
    while (*c == ' ' || *c == '\t')
        c++;
    if (!*c)
        return api_fail(prob, 400, "q", "q must not be empty");
    if (api_get_limit(req, STOP_LIMIT_DEFAULT, &limit, prob))
        return prob->status;
    if (!ds)
        return api_no_dataset(prob);
    uint32_t offset;
    if (api_get_list_cursor(req, ds, "stops_search", &offset, prob))
        return prob->status;
    schedule_db *db;
    if (api_take_schedule(ds, &db, prob))
        return prob->status;
    bool engine_truncated = false, truncated, has_next;
    char err[256] = "";
    uint32_t fetch = list_fetch(offset, limit);
    int n = schedule_stop_search(db, q, fetch, t->found_ids, &engine_truncated, err, sizeof err);
    dataset_give_schedule(ds, db);
    if (n < 0)
        return api_fail(prob, 503, "q", "the stop search failed: %s", err);
    /* in another language: the stops its names match first, then the feed's
     * names' matches not among them */
    uint32_t found = 0;
    if (!grow_indices(t, fetch))
        return api_fail(prob, 503, "", "out of memory searching stops");
    if (req->translations && req->language > 0) {
        bool more = false;
        found = translations_find_stops(req->translations, req->language, q, t->indices, fetch, &more);
        engine_truncated = engine_truncated || more;
    }
    for (int i = 0; i < n; i++) {
        const char *id = t->found_ids[i].id;
        uint32_t stop = dataset_find_stop(ds, id, strlen(id));
        bool seen = stop == QUERY_NONE;   /* both stores come from one import; cannot differ */
        for (uint32_t k = 0; k < found && !seen; k++)
            seen = t->indices[k] == stop;
        if (seen)
            continue;
        if (found == fetch) {
            engine_truncated = true;
            break;
        }
        t->indices[found++] = stop;
    }
    uint32_t shown = list_page(found, engine_truncated, offset, limit, &truncated, &has_next);
    api_begin_list(out, "stops");
    for (uint32_t i = offset; i < offset + shown; i++) {
        uint32_t stop = t->indices[i];
        stop_info st;
        dataset_stop(ds, stop, &st);
        api_name_stop(req, stop, &st);
        write_stop(out, ds, &st, NULL);
    }
    board_link link = {"/v1/stops", NULL, "", kept};
    end_list_page(out, req, ds, truncated, has_next, &link, "stops_search", limit, offset + shown);
    return api_finish(out, prob, cache_seconds, CACHE_STATIC);
}

static int find_stop(const dataset *ds, const char *id, uint32_t *stop, api_problem *prob)
{
    *stop = dataset_find_stop(ds, id, strlen(id));
    if (*stop == QUERY_NONE)
        return api_fail(prob, 404, "stop_id", "stop '%s' not found", id);
    return 0;
}

/* dataset_stop_children or dataset_stop_routes. */
typedef uint32_t (*stop_list_fn)(const dataset *ds, uint32_t stop, uint32_t *out, uint32_t max,
                                 uint32_t *total);

/* Fills t->indices with a stop's `what` (children or routes), growing it to
 * hold them all; *n is their count. */
static int list_of_stop(api_thread *t, const dataset *ds, uint32_t stop, stop_list_fn list,
                        const char *what, const char *stop_id, uint32_t *n, api_problem *prob)
{
    uint32_t total = 0;
    *n = list(ds, stop, t->indices, t->indices_cap, &total);
    if (total > *n) {
        if (!grow_indices(t, total))
            return api_fail(prob, 503, "", "out of memory listing the %s of stop '%s'", what,
                            stop_id);
        *n = list(ds, stop, t->indices, t->indices_cap, &total);
    }
    return 0;
}

int api_stop(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
             api_problem *prob, int *cache_seconds)
{
    uint32_t stop;
    if (api_check_request(req, api_no_params, "stop_id", ds, prob) ||
        find_stop(ds, req->id, &stop, prob))
        return prob->status;
    /* everything a stop's detail needs is in the mapped timetable; SQLite only
     * for the feed of a merged dataset (api_feeds.c) */
    stop_info st;
    dataset_stop(ds, stop, &st);
    api_name_stop(req, stop, &st);

    json_object_begin(out);
    json_key(out, "stop");
    json_object_begin(out);
    write_stop_fields(out, ds, &st, NULL);
    api_kv_optional(out, "code", st.code);
    api_kv_optional(out, "desc", st.desc);
    api_kv_optional(out, "platform_code", st.platform_code);
    json_kv_int(out, "wheelchair_boarding", st.wheelchair_boarding);
    api_kv_record_feed(out, ds, "stop", st.id);

    uint32_t n;
    if (list_of_stop(t, ds, stop, dataset_stop_children, "children", req->id, &n, prob))
        return prob->status;
    json_key(out, "children");
    json_array_begin(out);
    for (uint32_t i = 0; i < n; i++) {
        stop_info child;
        dataset_stop(ds, t->indices[i], &child);
        api_name_stop(req, t->indices[i], &child);
        json_str(out, child.id);
    }
    json_array_end(out);

    if (list_of_stop(t, ds, stop, dataset_stop_routes, "routes", req->id, &n, prob))
        return prob->status;
    const stop_headsign *heads;
    uint32_t nheads;
    query_error err = {0};
    int rc = stop_headsigns(ds, t->network, stop, &heads, &nheads, &err);
    if (rc != QUERY_OK)
        return api_query_problem(prob, rc, &err);
    json_key(out, "routes");
    json_array_begin(out);
    /* both lists go by route index: each route's headsigns are the next run */
    uint32_t h = 0;
    for (uint32_t i = 0; i < n; i++) {
        route_info r;
        dataset_route(ds, t->indices[i], &r);
        api_name_route(req, t->indices[i], &r);
        json_object_begin(out);
        api_write_route_fields(out, &r);
        json_key(out, "headsigns");
        json_array_begin(out);
        while (h < nheads && heads[h].route < t->indices[i])
            h++;
        for (; h < nheads && heads[h].route == t->indices[i]; h++)
            json_str(out, api_name_headsign_text(req, heads[h].headsign));
        json_array_end(out);
        json_object_end(out);
    }
    json_array_end(out);
    json_object_end(out);
    /* the alerts about the stop or the routes serving it (t->indices), now */
    if (begin_alerts(t, req, ds))
        alert_marks_stop(t->marks, ds, stop, t->indices, n, req->now);
    alert_language local;
    alert_marks_write(t->marks, out, api_alert_language(req, ds, &local));
    json_object_end(out);
    return api_finish(out, prob, cache_seconds,
                      req->alerts && alert_view_count(req->alerts) ? CACHE_STOP_WITH_ALERTS
                                                                   : CACHE_STATIC);
}

/* A stop's board: GET /v1/stops/{id}/departures (kind from the parameter,
 * rows under "departures") and GET /v1/stops/{id}/arrivals (arrivals, rows
 * under "arrivals"). */
static int stop_board(api_thread *t, dataset *ds, const api_request *req, json_writer *out, api_problem *prob,
                      int *cache_seconds, bool arrivals_endpoint)
{
    static const char *const allowed[] = {"time",     "window",     "limit",  "kind",
                                          "realtime", "wheelchair", "cursor", NULL};
    static const char *const allowed_arrivals[] = {"time", "window", "limit", "realtime", "wheelchair", "cursor",
                                                   NULL};
    static const char *const kept[] = {"kind", "realtime", "wheelchair", NULL};
    long window, limit;
    time_param tp;
    query_kind kind = QUERY_ARRIVALS;
    board_order order;
    bool wheelchair;
    if (api_check_params(req, arrivals_endpoint ? allowed_arrivals : allowed, prob) ||
        api_need_id(req, "stop_id", prob) || api_get_time_syntax(req, &tp, prob) ||
        api_get_window(req, &window, prob) || api_get_limit(req, DEPARTURE_LIMIT_DEFAULT, &limit, prob) ||
        (!arrivals_endpoint && api_get_kind(req, &kind, prob)) || api_get_realtime_order(req, &order, prob) ||
        api_get_wheelchair(req, &wheelchair, prob))
        return prob->status;
    if (!ds)
        return api_no_dataset(prob);
    uint32_t stop;
    if (find_stop(ds, req->id, &stop, prob))
        return prob->status;
    int64_t from = api_resolve_time(ds, req, &tp);
    board_next next = {req, {"/v1/stops/", req->id, arrivals_endpoint ? "/arrivals" : "/departures", kept},
                       arrivals_endpoint ? "arrivals" : "departures", kind, order, wheelchair, 0, 0, 0, limit,
                       NULL};
    board_page_key after;
    bool paged = false;
    if (api_param_value(req, "cursor") &&
        api_get_board_cursor(req,
                             api_board_binding(next.endpoint, req->id, kind, order, wheelchair, 0, 0, 0, from,
                                               window),
                             from, from + window * 60, &after, &paged, prob))
        return prob->status;
    next.after = paged ? &after : NULL;
    board_query q = {false, stop, 0, 0, 0};
    board b;
    if (board_page(t, ds, req, kind, order, wheelchair, &q, from, window, limit, next.after, &b, prob))
        return prob->status;
    stop_info st;
    dataset_stop(ds, stop, &st);
    api_name_stop(req, stop, &st);
    json_object_begin(out);
    json_key(out, "stop");
    json_object_begin(out);
    api_kv_text(out, "id", st.id);
    api_kv_text(out, "name", st.name);
    json_object_end(out);
    json_key(out, arrivals_endpoint ? "arrivals" : "departures");
    json_array_begin(out);
    if (write_board(out, ds, req, &b, false, prob))
        return prob->status;
    end_departures(t, out, ds, kind, &b, from, window, &next);
    return api_finish(out, prob, cache_seconds, CACHE_DEPARTURES);
}

int api_stop_departures(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                        api_problem *prob, int *cache_seconds)
{
    return stop_board(t, ds, req, out, prob, cache_seconds, false);
}

int api_stop_arrivals(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                      api_problem *prob, int *cache_seconds)
{
    return stop_board(t, ds, req, out, prob, cache_seconds, true);
}

int api_departures(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                   api_problem *prob, int *cache_seconds)
{
    static const char *const allowed[] = {"lat", "lon", "radius", "time", "window", "limit", "kind",
                                          "realtime", "wheelchair", "cursor", NULL};
    static const char *const kept[] = {"lat", "lon", "radius", "kind", "realtime", "wheelchair", NULL};
    double lat, lon;
    long radius, window, limit;
    time_param tp;
    query_kind kind;
    board_order order;
    bool wheelchair;
    if (api_check_params(req, allowed, prob) || api_get_coordinate(req, "lat", 90, &lat, prob) ||
        api_get_coordinate(req, "lon", 180, &lon, prob) || api_get_radius(req, &radius, prob) ||
        api_get_time_syntax(req, &tp, prob) || api_get_window(req, &window, prob) ||
        api_get_limit(req, DEPARTURE_LIMIT_DEFAULT, &limit, prob) || api_get_kind(req, &kind, prob) ||
        api_get_realtime_order(req, &order, prob) || api_get_wheelchair(req, &wheelchair, prob))
        return prob->status;
    if (!ds)
        return api_no_dataset(prob);
    int64_t from = api_resolve_time(ds, req, &tp);
    board_next next = {req, {"/v1/departures", NULL, "", kept}, "nearby", kind, order, wheelchair, lat, lon,
                       radius, limit, NULL};
    board_page_key after;
    bool paged = false;
    if (api_param_value(req, "cursor") &&
        api_get_board_cursor(req,
                             api_board_binding(next.endpoint, NULL, kind, order, wheelchair, lat, lon, radius, from,
                                               window),
                             from, from + window * 60, &after, &paged, prob))
        return prob->status;
    next.after = paged ? &after : NULL;
    board_query q = {true, 0, lat, lon, (double)radius};
    board b;
    if (board_page(t, ds, req, kind, order, wheelchair, &q, from, window, limit, next.after, &b, prob))
        return prob->status;
    api_begin_list(out, "departures");
    if (write_board(out, ds, req, &b, true, prob))
        return prob->status;
    end_departures(t, out, ds, kind, &b, from, window, &next);
    return api_finish(out, prob, cache_seconds, CACHE_DEPARTURES);
}
