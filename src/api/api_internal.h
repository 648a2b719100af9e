/* api_internal.h — what the endpoint files of src/api/ share, and no one else.
 *
 * Why it exists: the v1 endpoints are split by concern (api.c: the thread
 * context, the shared writers, stops and departures; api_params.c: problems
 * and parameters; api_reference.c: routes, trips, agencies, feed;
 * api_alerts.c: alerts), yet all of them check parameters, fail with a
 * problem and write through the same few helpers. Those helpers are declared
 * here, with the per-thread context they work in; transit/api.h stays the
 * only interface outside the folder.
 */
#ifndef TRANSIT_API_INTERNAL_H
#define TRANSIT_API_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "transit/api.h"
#include "transit/board.h"
#include "transit/network.h"
#include "transit/translations.h"

#define CACHE_STATIC 86400   /* what changes only with the dataset */
#define CACHE_REALTIME_TRIP 30   /* a trip as realtime has it: the next feed may change it */
#define API_COORD_DECIMALS 6 /* latitudes and longitudes: about 0.1 m */

struct api_thread {
    query_scratch *scratch;
    board_scratch *board;           /* the departure boards' rows */
    nearby_stop nearby[QUERY_LIMIT_MAX];
    stop_id_buf found_ids[QUERY_LIMIT_MAX];
    trip_stop_time *stop_times;     /* grows to the longest trip seen */
    uint32_t stop_times_cap;
    uint32_t *indices;              /* children / routes of a stop; grows */
    uint32_t indices_cap;
    char *text;                     /* a polyline being encoded; grows */
    size_t text_cap;
    alert_marks *marks;             /* the alerts a response shows */
    network_scratch *network;       /* route patterns, a stop's headsigns */
    board_row page_rows[QUERY_LIMIT_MAX];  /* a page's rows joined again (api_cursor.c) */
};

/* ------------------------------------------------------------ problems (api_params.c) */

/* Fills *prob with `status`, its title, the offending parameter (NULL or ""
 * for none) and the detail; returns status, so a failing check is
 * `return api_fail(...)`. */
int api_fail(api_problem *prob, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Maps an engine error (rc, err) to a problem: 400, 404 or 503. */
int api_query_problem(api_problem *prob, int rc, const query_error *err);

/* 503: the server has no dataset to answer from. */
int api_no_dataset(api_problem *prob);

/* ------------------------------------------------------------ board pages (api_cursor.c) */

#define API_CURSOR_ID_MAX 255     /* bytes of a stop_id, route_short_name or trip_id in a cursor */
#define API_NEXT_LINK_MAX 8192

/* The last row a page showed, by value; skip counts the rows at its instant
 * that this and earlier pages showed. */
typedef struct board_page_key {
    int64_t instant;
    uint32_t skip;
    char stop_id[API_CURSOR_ID_MAX + 1];
    char route_short_name[API_CURSOR_ID_MAX + 1];
    char trip_id[API_CURSOR_ID_MAX + 1];
} board_page_key;

/* Where a board's next link points: path_head, the id percent-encoded (when
 * not NULL), path_tail; then the parameters named in `kept` as the request
 * gave them, and time, window, limit and cursor. */
typedef struct board_link {
    const char *path_head, *id, *path_tail;
    const char *const *kept;
} board_link;

/* What a cursor is bound to: the endpoint, its id and every parameter but
 * limit (from is the resolved time). */
uint64_t api_board_binding(const char *endpoint, const char *id, query_kind kind, board_order order,
                           bool wheelchair, double lat, double lon, long radius, int64_t from, long window_minutes);
/* `cursor`: *given, and the row it continues after (0, or a 400 naming
 * cursor when it is not one this server wrote for this binding and window). */
int api_get_board_cursor(const api_request *req, uint64_t binding, int64_t from, int64_t end,
                         board_page_key *after, bool *given, api_problem *prob);
/* How many of b's first rows are at or before `after` (shown already);
 * by_prediction: the rows are ordered by predicted time (board_predicted.h). */
uint32_t api_board_rows_shown(const dataset *ds, const board *b, bool by_prediction, const board_page_key *after);
/* The key of b's last row, carrying `previous`'s skip on when it is at the
 * same instant; false when b is empty or an id is too long for a cursor. */
bool api_board_key_after(const dataset *ds, const board *b, bool by_prediction, const board_page_key *previous,
                         board_page_key *out);
/* "next":"<link>" (or null when the link would not fit). */
void api_write_board_next(json_writer *w, const api_request *req, const board_link *link, int64_t from,
                          long window_minutes, long limit, uint64_t binding, const board_page_key *last);

/* `cursor` of a list page: *offset (0 without one), or a 400 naming cursor
 * when it is not one this server wrote for these parameters, a 410 when it
 * was written for another dataset. */
int api_get_list_cursor(const api_request *req, const dataset *ds, const char *endpoint, uint32_t *offset,
                        api_problem *prob);
/* "next":"<link>" to the list page starting at `offset` (null when the link
 * would not fit); the link repeats the parameters in link->kept and limit. */
void api_write_list_next(json_writer *w, const api_request *req, const dataset *ds, const board_link *link,
                         const char *endpoint, long limit, uint32_t offset);

/* The languages alert texts are written in for req (api_alerts.c): its
 * alert_language, else a `local` one with none asked and the feed's language
 * (translations.h) as fallback, filled only when an alert of the view offers a
 * choice (else NULL). */
alert_language *api_alert_language(const api_request *req, dataset *ds, alert_language *local);

/* "next":"<link>" for a list that pages by id (the alerts): the parameters
 * in link->kept, limit, and after=<the last id shown>. */
void api_write_next_after(json_writer *w, const api_request *req, const board_link *link, long limit,
                          const char *after);

/* ------------------------------------------------------------ parameters (api_params.c) */

/* The allowed list of an endpoint that takes no query parameters. */
extern const char *const api_no_params[];

/* The syntax of `time`, checked before the dataset is needed. */
typedef struct time_param {
    bool given, has_offset;
    int64_t local;
    int32_t offset;
} time_param;

/* Each returns 0, or the status of the problem it filled in *prob. */
int api_check_params(const api_request *req, const char *const *allowed, api_problem *prob);
int api_missing_param(api_problem *prob, const char *name);
int api_need_id(const api_request *req, const char *what, api_problem *prob);
int api_check_request(const api_request *req, const char *const *allowed, const char *id_name,
                      const dataset *ds, api_problem *prob);
int api_get_coordinate(const api_request *req, const char *name, double limit, double *out,
                       api_problem *prob);
int api_get_int(const api_request *req, const char *name, long def, long min, long max,
                const char *what, long *out, api_problem *prob);
int api_get_radius(const api_request *req, long *out, api_problem *prob);
int api_get_window(const api_request *req, long *out, api_problem *prob);
int api_get_limit(const api_request *req, long def, long *out, api_problem *prob);
int api_get_time_syntax(const api_request *req, time_param *tp, api_problem *prob);
/* `kind`: departures (the default), arrivals or both. */
int api_get_kind(const api_request *req, query_kind *out, api_problem *prob);
/* realtime=predicted (the default) or scheduled: which time chooses a board's rows. */
int api_get_realtime_order(const api_request *req, board_order *out, api_problem *prob);
/* /v1/trips/{id} for a realtime-only trip (api_trip_realtime.c): the one on
 * `date` when has_date; 404 when the overlay has none of that id. */
int api_realtime_trip(api_thread *t, dataset *ds, const api_request *req, bool has_date, int32_t date,
                      bool with_shape, json_writer *out, api_problem *prob, int *cache_seconds);
/* `wheelchair`: 1 keeps only the rows a wheelchair can take (board_sources.wheelchair), 0 or absent all. */
int api_get_wheelchair(const api_request *req, bool *out, api_problem *prob);
/* `include`: a comma-separated list of the NULL-terminated `names` (at most
 * 16), each at most once; bit i of *out says names[i] was asked for. */
int api_get_include(const api_request *req, const char *const *names, unsigned *out, api_problem *prob);

/* The value of parameter `name`, "" when given without one, NULL when absent. */
const char *api_param_value(const api_request *req, const char *name);

/* The instant `time` names (checked by api_get_time_syntax), else req->now. */
int64_t api_resolve_time(const dataset *ds, const api_request *req, const time_param *tp);

/* ------------------------------------------------------------ the thread and stores (api.c) */

/* Borrows a schedule.sqlite connection of the dataset's version: give it
 * back with dataset_give_schedule. 503 when it cannot be opened. */
int api_take_schedule(dataset *ds, schedule_db **db, api_problem *prob);

/* Grows t->stop_times to hold `need`; false when out of memory. */
bool api_grow_stop_times(api_thread *t, uint32_t need);

/* ------------------------------------------------------------ shapes (api_shapes.c) */

/* "shape": the trip's shape from shapes.sqlite, else the line through its
 * n stop times' stops. 0, or the status of the problem (503). */
int api_write_trip_shape(api_thread *t, dataset *ds, const trip_info *tr, const trip_stop_time *st, uint32_t n,
                         json_writer *out, api_problem *prob);

/* ------------------------------------------------------------ writers (api.c) */

void api_kv_optional(json_writer *w, const char *key, const char *s);
void api_kv_text(json_writer *w, const char *key, const char *s);
void api_write_route(json_writer *w, const route_info *r);
void api_write_route_fields(json_writer *w, const route_info *r);
/* api_feeds.c: "feed": the name of the feed of a record of a merged dataset
 * (kind "stop", "route", "trip", "agency"); nothing for a one-feed dataset. */
void api_kv_record_feed(json_writer *out, dataset *ds, const char *kind, const char *id);
/* api_feeds.c: "feeds": [...] of a merged dataset; nothing for one feed. */
void api_write_feed_list(json_writer *out, schedule_db *db);
void api_begin_list(json_writer *w, const char *key);
void api_end_list(json_writer *w);

/* The end of every endpoint: 200 with the response's max-age, or 503 when
 * the writer ran out of memory. */
int api_finish(json_writer *out, api_problem *prob, int *cache_seconds, int seconds);

/* ------------------------------------------------------------ names in the request's language */

/* The record's names in req's language (translations.h), where it has them. */
static inline void api_name_stop(const api_request *req, uint32_t stop, stop_info *st)
{
    st->name = translated(req->translations, req->language, TRANSLATED_STOP_NAME, stop, st->name);
}

/* A trip's call's stop members (stop_id, stop_name in req's language, lat,
 * lon, platform_code), for scheduled and realtime-only trips alike. */
void api_kv_call_stop(json_writer *out, const api_request *req, const dataset *ds, uint32_t stop);

/* A timetable trip's instance as realtime has it, for /v1/trips/{id}
 * (api_trip_instance.c): the instance of `date` (has_date), else the one
 * nearest now; its TripProperties, platform changes and vehicle. */
typedef struct api_trip_instance {
    const rt_overlay *rt;      /* NULL: no realtime instance (no overlay, a frequency-based trip) */
    uint32_t trip;
    int32_t service_date;
    bool realtime;             /* the overlay has the instance */
    const rt_trip_properties *properties;   /* or NULL */
    const rt_vehicles *vehicles;
    long vehicle;              /* index in vehicles, or -1 */
} api_trip_instance;
void api_trip_instance_find(const api_request *req, const dataset *ds, uint32_t trip, const trip_info *tr,
                            const trip_stop_time *st, uint32_t n, bool has_date, int32_t date,
                            api_trip_instance *out);
/* "assigned_stop":{id, name, platform_code, lat, lon} of stop time `pos`
 * when a platform change moved it; nothing otherwise. */
void api_trip_instance_stop(json_writer *out, const api_request *req, const dataset *ds,
                            const api_trip_instance *ti, const trip_stop_time *st, uint32_t n, uint32_t pos);
/* "assigned_stop":{id, name, platform_code, lat, lon} of stop index `stop`
 * (a timetable instance's stop time, a realtime-only trip's call). */
void api_kv_assigned_stop(json_writer *out, const api_request *req, const dataset *ds, uint32_t stop);
/* "vehicle":{…} (the object departure rows show) when one serves the instance. */
void api_trip_instance_vehicle(json_writer *out, const api_trip_instance *ti);

static inline void api_name_route(const api_request *req, uint32_t route, route_info *r)
{
    r->short_name = translated(req->translations, req->language, TRANSLATED_ROUTE_SHORT_NAME, route, r->short_name);
    r->long_name = translated(req->translations, req->language, TRANSLATED_ROUTE_LONG_NAME, route, r->long_name);
}

static inline void api_name_trip(const api_request *req, uint32_t trip, trip_info *tr)
{
    tr->headsign = translated(req->translations, req->language, TRANSLATED_TRIP_HEADSIGN, trip, tr->headsign);
}

/* A headsign that stands for several trips (a stop's or a route pattern's list)
 * in req's language (translation_of_text). */
static inline const char *api_name_headsign_text(const api_request *req, const char *headsign)
{
    return translated_text(req->translations, req->language, TRANSLATED_TRIP_HEADSIGN, headsign);
}

static inline void api_name_agency(const api_request *req, uint32_t agency, agency_info *a)
{
    a->name = translated(req->translations, req->language, TRANSLATED_AGENCY_NAME, agency, a->name);
}

#endif
