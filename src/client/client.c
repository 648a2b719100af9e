/* client.c — the client library's queries (transit/client.h): a snapshot
 * opened on the phone, answered by the server's own api_* and engine calls.
 *
 * Why it exists: an offline phone must give the answers the server gives,
 * byte for byte, so this file adds no query logic of its own. It maps a GET
 * path to the api_* endpoint the server's route table (objc/TDRoutes.m) maps
 * it to, decodes the query string as libmicrohttpd does ('+' is a space,
 * %XX a byte) and calls the endpoint with no alerts and no realtime, as a
 * server without them would. The struct calls run the engine functions the
 * endpoints run, and point into the mapped snapshot instead of copying.
 */
#include "transit/client.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transit/api.h"
#include "transit/gtfs.h"
#include "transit/query.h"
#include "transit/stores.h"

#define MAX_PARAMS 32          /* the server's TD_MAX_PARAMS */
#define MAX_ROWS QUERY_LIMIT_MAX

struct transit_snapshot {
    pthread_mutex_t lock;
    dataset *ds;
    api_thread *api;
    query_scratch *scratch;
    json_writer out;
    departure rows[MAX_ROWS];
    nearby_stop near[MAX_ROWS];
    stop_id_buf ids[MAX_ROWS];
    trip_stop_time *stop_times;
    uint32_t stop_times_cap;
};

static void set_error(transit_error *err, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void set_error(transit_error *err, int status, const char *param, const char *fmt, ...)
{
    if (!err)
        return;
    err->status = status;
    snprintf(err->param, sizeof err->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

static void clear_error(transit_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

transit_snapshot *transit_open(const char *dir, transit_error *err)
{
    clear_error(err);
    char why[512];
    dataset *ds = dataset_open_trusted(dir, why, sizeof why);
    if (!ds) {
        set_error(err, 503, NULL, "%s", why);
        return NULL;
    }
    transit_snapshot *s = calloc(1, sizeof *s);
    if (s) {
        s->api = api_thread_new();
        s->scratch = query_scratch_new();
    }
    if (!s || !s->api || !s->scratch) {
        if (s) {
            api_thread_free(s->api);
            query_scratch_free(s->scratch);
            free(s);
        }
        dataset_close(ds);
        set_error(err, 503, NULL, "out of memory opening %s", dir);
        return NULL;
    }
    s->ds = ds;
    pthread_mutex_init(&s->lock, NULL);
    json_init(&s->out);
    return s;
}

void transit_close(transit_snapshot *s)
{
    if (!s)
        return;
    json_free(&s->out);
    api_thread_free(s->api);
    query_scratch_free(s->scratch);
    free(s->stop_times);
    dataset_close(s->ds);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

const char *transit_version(const transit_snapshot *s) { return dataset_version(s->ds); }

void transit_free(void *p) { free(p); }

/* ------------------------------------------------------------ the server's JSON */

/* The GET routes of objc/TDRoutes.m that api_* endpoints answer from the
 * snapshot ({id} is one percent-decoded segment). */
typedef struct client_route {
    const char *pattern;
    api_endpoint_fn endpoint;
} client_route;

static const client_route routes[] = {
    {"/v1/stops/nearby", api_stops_nearby},
    {"/v1/stops", api_stops_search},
    {"/v1/stops/{id}", api_stop},
    {"/v1/stops/{id}/departures", api_stop_departures},
    {"/v1/stops/{id}/arrivals", api_stop_arrivals},
    {"/v1/departures", api_departures},
    {"/v1/routes", api_routes},
    {"/v1/routes/{id}", api_route},
    {"/v1/trips/{id}", api_trip},
    {"/v1/shapes/{id}", api_shape},
    {"/v1/agencies", api_agencies},
    {"/v1/feed", api_feed},
};

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes s in place: %XX to its byte (a malformed escape stays as it is,
 * as libmicrohttpd leaves it), and '+' to a space when plus_is_space. */
static void url_decode(char *s, bool plus_is_space)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        int hi, lo;
        if (*r == '%' && (hi = hex_value(r[1])) >= 0 && (lo = hex_value(r[2])) >= 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 2;
        } else if (*r == '+' && plus_is_space) {
            *w++ = ' ';
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* Matches the decoded path against a pattern; *id and *id_len get the {id}
 * segment (pointing into path). */
static bool match_route(const char *pattern, char *path, size_t path_len, char **id, size_t *id_len)
{
    const char *brace = strstr(pattern, "{id}");
    if (!brace)
        return strlen(pattern) == path_len && memcmp(pattern, path, path_len) == 0;
    size_t head = (size_t)(brace - pattern);
    const char *tail = brace + 4;
    size_t tail_len = strlen(tail);
    if (path_len < head + tail_len + 1 || memcmp(path, pattern, head) != 0 ||
        memcmp(path + path_len - tail_len, tail, tail_len) != 0)
        return false;
    size_t len = path_len - head - tail_len;
    if (memchr(path + head, '/', len))
        return false;
    *id = path + head;
    *id_len = len;
    return true;
}

static int answer_problem(transit_snapshot *s, api_problem *prob, const char *instance)
{
    json_reset(&s->out);
    api_problem_write(prob, instance, &s->out);
    return prob->status;
}

/* The answer for `path` into s->out; the status. Under s->lock. */
static int answer_locked(transit_snapshot *s, const char *path, int64_t now)
{
    json_reset(&s->out);
    size_t n = strlen(path);
    char *copy = malloc(n + 1);
    api_problem prob;
    memset(&prob, 0, sizeof prob);
    if (!copy) {
        prob.status = 503;
        prob.title = "Service Unavailable";
        snprintf(prob.detail, sizeof prob.detail, "out of memory");
        return answer_problem(s, &prob, NULL);
    }
    memcpy(copy, path, n + 1);
    char *query = strchr(copy, '?');
    if (query)
        *query++ = '\0';
    char *hash = query ? strchr(query, '#') : strchr(copy, '#');
    if (hash)
        *hash = '\0';
    url_decode(copy, false);
    api_param params[MAX_PARAMS];
    int nparams = 0, status;
    for (char *p = query; p && *p;) {
        char *amp = strchr(p, '&');
        if (amp)
            *amp = '\0';
        if (*p) {
            if (nparams == MAX_PARAMS) {
                prob.status = 400;
                prob.title = "Bad Request";
                snprintf(prob.detail, sizeof prob.detail, "more than %d query parameters", MAX_PARAMS);
                status = answer_problem(s, &prob, copy);
                free(copy);
                return status;
            }
            char *eq = strchr(p, '=');
            if (eq)
                *eq++ = '\0';
            url_decode(p, true);
            if (eq)
                url_decode(eq, true);
            params[nparams].key = p;
            params[nparams].value = eq ? eq : "";
            nparams++;
        }
        p = amp ? amp + 1 : NULL;
    }
    size_t path_len = strlen(copy);
    const client_route *route = NULL;
    char *id = NULL;
    size_t id_len = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0] && !route; i++)
        if (match_route(routes[i].pattern, copy, path_len, &id, &id_len))
            route = &routes[i];
    if (!route) {
        prob.status = 404;
        prob.title = "Not Found";
        snprintf(prob.detail, sizeof prob.detail, "no resource at %.200s in an offline snapshot", copy);
        status = answer_problem(s, &prob, copy);
        free(copy);
        return status;
    }
    char id_buf[1024] = "";
    if (id)
        snprintf(id_buf, sizeof id_buf, "%.*s", (int)id_len, id);
    api_request req = {
        .params = params,
        .nparams = nparams,
        .id = id ? id_buf : NULL,
        .now = now ? now : (int64_t)time(NULL) / 60 * 60,   /* the server's: the minute */
        .alerts = NULL,
        .realtime = NULL,
    };
    int cache = -1;
    status = route->endpoint(s->api, s->ds, &req, &s->out, &prob, &cache);
    if (status >= 400) {
        if (!prob.title)
            prob.title = status == 404 ? "Not Found" : status == 400 ? "Bad Request" : "Service Unavailable";
        prob.status = status;
        status = answer_problem(s, &prob, copy);
    } else if (s->out.oom) {
        prob.status = status = 500;
        prob.title = "Internal Server Error";
        snprintf(prob.detail, sizeof prob.detail, "out of memory while writing the response");
        answer_problem(s, &prob, copy);
    }
    free(copy);
    return status;
}

int transit_get_json(transit_snapshot *s, const char *path, int64_t now, char **body, size_t *length)
{
    pthread_mutex_lock(&s->lock);
    int status = answer_locked(s, path ? path : "", now);
    *length = s->out.len;
    *body = malloc(s->out.len + 1);
    if (*body) {
        memcpy(*body, s->out.buf ? s->out.buf : "", s->out.len);
        (*body)[s->out.len] = '\0';
    }
    pthread_mutex_unlock(&s->lock);
    return status;
}

/* ------------------------------------------------------------ plain structs */

static int query_failed(int rc, const query_error *qe, transit_error *err)
{
    int status = rc == QUERY_EINVAL ? 400 : rc == QUERY_ENOTFOUND ? 404 : 503;
    set_error(err, status, qe->param, "%s", qe->message[0] ? qe->message : "the query failed");
    return status;
}

static bool check_limit(uint32_t limit, transit_error *err)
{
    if (limit >= QUERY_LIMIT_MIN && limit <= QUERY_LIMIT_MAX)
        return true;
    set_error(err, 400, "limit", "limit must be between %d and %d", QUERY_LIMIT_MIN, QUERY_LIMIT_MAX);
    return false;
}

static int64_t from_or_now(int64_t from) { return from ? from : (int64_t)time(NULL) / 60 * 60; }

static void fill_stop(const dataset *ds, uint32_t index, double distance, transit_stop *out)
{
    stop_info si;
    dataset_stop(ds, index, &si);
    stop_info parent = {0};
    if (si.parent != QUERY_NONE)
        dataset_stop(ds, si.parent, &parent);
    *out = (transit_stop){
        .id = si.id,
        .name = si.name,
        .code = si.code,
        .platform_code = si.platform_code,
        .parent_id = si.parent != QUERY_NONE ? parent.id : "",
        .lat = si.lat,
        .lon = si.lon,
        .distance_m = distance,
        .location_type = si.location_type,
        .wheelchair_boarding = si.wheelchair_boarding,
    };
}

int transit_nearby_stops(transit_snapshot *s, double lat, double lon, double radius_m, uint32_t limit,
                         transit_stop *out, uint32_t *count, bool *truncated, transit_error *err)
{
    clear_error(err);
    *count = 0;
    *truncated = false;
    if (!check_limit(limit, err))
        return 400;
    pthread_mutex_lock(&s->lock);
    query_error qe = {{0}, {0}};
    int rc = nearby_stops(s->ds, s->scratch, lat, lon, radius_m, limit, s->near, count, truncated, &qe);
    for (uint32_t i = 0; rc == QUERY_OK && i < *count; i++)
        fill_stop(s->ds, s->near[i].stop, s->near[i].distance_m, &out[i]);
    pthread_mutex_unlock(&s->lock);
    return rc == QUERY_OK ? 0 : query_failed(rc, &qe, err);
}

int transit_search_stops(transit_snapshot *s, const char *text, uint32_t limit, transit_stop *out,
                         uint32_t *count, bool *truncated, transit_error *err)
{
    clear_error(err);
    *count = 0;
    *truncated = false;
    if (!check_limit(limit, err))
        return 400;
    if (!text || !*text) {
        set_error(err, 400, "q", "q (the text to search for) must not be empty");
        return 400;
    }
    char why[256];
    pthread_mutex_lock(&s->lock);
    schedule_db *db = dataset_take_schedule(s->ds, why, sizeof why);
    int n = db ? schedule_stop_search(db, text, limit, s->ids, truncated, why, sizeof why) : -1;
    if (db)
        dataset_give_schedule(s->ds, db);
    uint32_t written = 0;
    for (int i = 0; i < n; i++) {
        uint32_t index = dataset_find_stop(s->ds, s->ids[i].id, strlen(s->ids[i].id));
        if (index != QUERY_NONE)
            fill_stop(s->ds, index, 0, &out[written++]);
    }
    pthread_mutex_unlock(&s->lock);
    if (n < 0) {
        set_error(err, 503, NULL, "stop search failed: %s", why);
        return 503;
    }
    *count = written;
    return 0;
}

static void fill_departure(const dataset *ds, const departure *d, transit_departure *out)
{
    stop_info si;
    trip_info ti;
    route_info ri;
    dataset_stop(ds, d->stop, &si);
    dataset_trip(ds, d->trip, &ti);
    dataset_route(ds, ti.route, &ri);
    int y;
    unsigned m, day;
    civil_from_days(d->service_date, &y, &m, &day);
    *out = (transit_departure){
        .time = d->instant,
        .utc_offset = d->utc_offset,
        .service_date = (int32_t)(y * 10000 + (int)m * 100 + (int)day),
        .arrival = d->arrival,
        .stop_id = si.id,
        .stop_name = si.name,
        .trip_id = ti.id,
        .headsign = ti.headsign,
        .route_id = ri.id,
        .route_short_name = ri.short_name,
        .route_long_name = ri.long_name,
        .route_color = ri.color,
        .route_text_color = ri.text_color,
        .route_type = ri.type,
        .stop_sequence = d->stop_sequence,
        .distance_m = d->distance_m,
        .wheelchair_accessible = ti.wheelchair_accessible,
        .bikes_allowed = ti.bikes_allowed,
    };
}

static query_kind kind_of(transit_kind k)
{
    return k == TRANSIT_ARRIVALS ? QUERY_ARRIVALS : k == TRANSIT_BOTH ? QUERY_BOTH : QUERY_DEPARTURES;
}

int transit_stop_departures(transit_snapshot *s, const char *stop_id, transit_kind kind, int64_t from,
                            uint32_t window_s, uint32_t limit, transit_departure *out, uint32_t *count,
                            bool *truncated, transit_error *err)
{
    clear_error(err);
    *count = 0;
    *truncated = false;
    if (!check_limit(limit, err))
        return 400;
    uint32_t stop = stop_id ? dataset_find_stop(s->ds, stop_id, strlen(stop_id)) : QUERY_NONE;
    if (stop == QUERY_NONE) {
        set_error(err, 404, NULL, "no stop '%.100s' in version %s", stop_id ? stop_id : "",
                  dataset_version(s->ds));
        return 404;
    }
    pthread_mutex_lock(&s->lock);
    query_error qe = {{0}, {0}};
    int rc = stop_events(s->ds, s->scratch, kind_of(kind), stop, from_or_now(from), window_s, limit,
                         s->rows, count, truncated, &qe);
    for (uint32_t i = 0; rc == QUERY_OK && i < *count; i++)
        fill_departure(s->ds, &s->rows[i], &out[i]);
    pthread_mutex_unlock(&s->lock);
    return rc == QUERY_OK ? 0 : query_failed(rc, &qe, err);
}

int transit_nearby_departures(transit_snapshot *s, double lat, double lon, double radius_m,
                              transit_kind kind, int64_t from, uint32_t window_s, uint32_t limit,
                              transit_departure *out, uint32_t *count, bool *truncated,
                              transit_error *err)
{
    clear_error(err);
    *count = 0;
    *truncated = false;
    if (!check_limit(limit, err))
        return 400;
    pthread_mutex_lock(&s->lock);
    query_error qe = {{0}, {0}};
    int rc = nearby_events(s->ds, s->scratch, kind_of(kind), lat, lon, radius_m, from_or_now(from),
                           window_s, limit, s->rows, count, truncated, &qe);
    for (uint32_t i = 0; rc == QUERY_OK && i < *count; i++)
        fill_departure(s->ds, &s->rows[i], &out[i]);
    pthread_mutex_unlock(&s->lock);
    return rc == QUERY_OK ? 0 : query_failed(rc, &qe, err);
}

int transit_trip_detail(transit_snapshot *s, const char *trip_id, transit_trip *trip,
                        transit_stop_time *out, uint32_t max, uint32_t *count, transit_error *err)
{
    clear_error(err);
    *count = 0;
    uint32_t index = trip_id ? dataset_find_trip(s->ds, trip_id, strlen(trip_id)) : QUERY_NONE;
    if (index == QUERY_NONE) {
        set_error(err, 404, NULL, "no trip '%.100s' in version %s", trip_id ? trip_id : "",
                  dataset_version(s->ds));
        return 404;
    }
    pthread_mutex_lock(&s->lock);
    trip_info ti;
    route_info ri;
    dataset_trip(s->ds, index, &ti);
    dataset_route(s->ds, ti.route, &ri);
    uint32_t total = 0;
    query_error qe = {{0}, {0}};
    int rc = trip_detail(s->ds, index, s->stop_times, s->stop_times_cap, &total, &qe);
    if (rc == QUERY_OK && total > s->stop_times_cap) {
        trip_stop_time *grown = realloc(s->stop_times, total * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&s->lock);
            set_error(err, 503, NULL, "out of memory");
            return 503;
        }
        s->stop_times = grown;
        s->stop_times_cap = total;
        rc = trip_detail(s->ds, index, s->stop_times, s->stop_times_cap, &total, &qe);
    }
    if (rc != QUERY_OK) {
        pthread_mutex_unlock(&s->lock);
        return query_failed(rc, &qe, err);
    }
    *trip = (transit_trip){
        .id = ti.id,
        .route_id = ri.id,
        .service_id = ti.service_id,
        .headsign = ti.headsign,
        .shape_id = ti.shape_id,
        .block_id = ti.block_id,
        .direction_id = ti.direction_id,
        .frequency_based = ti.frequency_based,
        .stop_times = total,
        .wheelchair_accessible = ti.wheelchair_accessible,
        .bikes_allowed = ti.bikes_allowed,
    };
    uint32_t n = total < max ? total : max;
    for (uint32_t i = 0; i < n; i++) {
        const trip_stop_time *st = &s->stop_times[i];
        stop_info si;
        dataset_stop(s->ds, st->stop, &si);
        out[i] = (transit_stop_time){
            .stop_id = si.id,
            .stop_name = si.name,
            .lat = si.lat,
            .lon = si.lon,
            .stop_sequence = st->stop_sequence,
            .arrival_secs = st->arrival_secs,
            .departure_secs = st->departure_secs,
            .pickup_type = st->pickup_type,
            .drop_off_type = st->drop_off_type,
        };
    }
    *count = n;
    pthread_mutex_unlock(&s->lock);
    return 0;
}
