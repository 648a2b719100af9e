/* api.h — the v1 JSON API as plain C: parameters in, response body out.
 *
 * Why it exists: the HTTP resources (objc/) and the `transitd query` CLI must
 * give byte-identical answers. Both call these functions: validate the
 * parameters (an unknown or bad parameter is a 400 whose detail names it),
 * run the query against the dataset, and stream the JSON into a reusable
 * buffer. No HTTP here, no Objective-C, no allocation once the per-thread
 * context is warm.
 */
#ifndef TRANSIT_API_H
#define TRANSIT_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "transit/alert_view.h"
#include "transit/rfc3339.h"
#include "transit/json_writer.h"
#include "transit/query.h"
#include "transit/rt_overlay.h"
#include "transit/stores.h"

typedef struct api_param {
    const char *key, *value;   /* URL-decoded, NUL-terminated */
} api_param;

typedef struct api_request {
    const api_param *params;
    int nparams;
    const char *id;            /* the {id} path segment, URL-decoded, or NULL */
    int64_t now;               /* Unix seconds: the default for `time` */
    const alert_view *alerts;  /* the alerts to show (resolved against the dataset), or NULL */
    const rt_overlay *realtime;  /* realtime predictions; NULL when the server ingests none
                                  * (departure rows then leave out the realtime members) */
    /* The language of the names (translations.h): with `translations` and a
     * `language` of at least 1 (an index of its tags), stop, route and agency
     * names and headsigns are that language's; else the feed's own. */
    const struct dataset_translations *translations;
    int language;
    /* The languages alert texts are chosen in (alert_text.h): the front end's
     * ranking of Accept-Language among the alerts' languages, with the feed's
     * language as fallback; the endpoints note there the languages they wrote.
     * NULL: none asked (the feed's language, else the untagged translation,
     * else the first). */
    struct alert_language *alert_language;
} api_request;

/* An RFC 9457 problem: filled when an endpoint returns a status >= 400. */
typedef struct api_problem {
    int status;
    const char *title;         /* static: "Bad Request", "Not Found", ... */
    char detail[256];          /* precise enough to fix the request */
    char param[48];            /* offending parameter, or "" */
    char pointer[160];         /* JSON pointer of the offending body member, or "" */
} api_problem;

/* Per-thread context: the dataset is borrowed for the request; the rest is
 * owned and reused across requests. */
typedef struct api_thread api_thread;
api_thread *api_thread_new(void);
void api_thread_free(api_thread *t);

/* Endpoints. Each returns the HTTP status (200, 400, 404, 503) and writes
 * either the body into `out` (200) or the problem into `prob`. On a status
 * other than 200, `out` may hold a partial body: json_reset it before
 * api_problem_write.
 * `cache_seconds` is set to the Cache-Control max-age for a 200. */
typedef int (*api_endpoint_fn)(api_thread *t, dataset *ds, const api_request *req,
                               json_writer *out, api_problem *prob, int *cache_seconds);

int api_stops_nearby(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                     api_problem *prob, int *cache_seconds);           /* GET /v1/stops/nearby */
int api_stops_search(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                     api_problem *prob, int *cache_seconds);           /* GET /v1/stops?q= */
int api_stop(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
             api_problem *prob, int *cache_seconds);                   /* GET /v1/stops/{id} */
int api_stop_departures(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                        api_problem *prob, int *cache_seconds);        /* GET /v1/stops/{id}/departures */
int api_stop_arrivals(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                      api_problem *prob, int *cache_seconds);          /* GET /v1/stops/{id}/arrivals */
int api_departures(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                   api_problem *prob, int *cache_seconds);             /* GET /v1/departures */
int api_routes(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
               api_problem *prob, int *cache_seconds);                 /* GET /v1/routes */
int api_route(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
              api_problem *prob, int *cache_seconds);                  /* GET /v1/routes/{id} */
int api_trip(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
             api_problem *prob, int *cache_seconds);                   /* GET /v1/trips/{id} */
int api_shape(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
              api_problem *prob, int *cache_seconds);                  /* GET /v1/shapes/{id} */
int api_agencies(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                 api_problem *prob, int *cache_seconds);               /* GET /v1/agencies */
int api_feed(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
             api_problem *prob, int *cache_seconds);                   /* GET /v1/feed */
/* The alerts of req->alerts (ds may be NULL): the list, filtered by the
 * selectors they name and by activity at an instant, in id order with an
 * `after` cursor; and one alert by id. */
int api_alerts(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
               api_problem *prob, int *cache_seconds);                 /* GET /v1/alerts */
int api_alert(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
              api_problem *prob, int *cache_seconds);                  /* GET /v1/alerts/{id} */

/* The vehicles of req->realtime's vehicle set (rt_vehicles.h; none without
 * realtime), by id, filtered by `bbox` (minLon,minLat,maxLon,maxLat) and
 * `route`, paged by `after` like the alerts. */
int api_vehicles(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                 api_problem *prob, int *cache_seconds);               /* GET /v1/vehicles */

/* The manifest of the served version (GET /v1/dataset): version, created,
 * feed_validity, files with size and SHA-256 (transit/snapshot.h).
 * `profile=phone` lists only the files the client library reads
 * (api_dataset_phone_file); `include=shapes` adds shapes.sqlite to it. */
int api_dataset(api_thread *t, dataset *ds, const api_request *req, json_writer *out,
                api_problem *prob, int *cache_seconds);                /* GET /v1/dataset */
struct snapshot_manifest;
struct feed_validity;
/* Whether a phone snapshot carries the file of this name. */
bool api_dataset_phone_file(const char *name, bool with_shapes);
/* The dataset's manifest, derived once and kept with the dataset; NULL with
 * err when its files cannot be read. */
const struct snapshot_manifest *api_dataset_manifest(dataset *ds, char *err, size_t errlen);
/* The manifest's JSON; validity may be NULL (then left out). */
void api_dataset_manifest_write(json_writer *out, const struct snapshot_manifest *m,
                                const struct feed_validity *validity);

/* GET /v1/dataset/{version}/{file}?from=OLD: the served version's file as a
 * zstd patch against the same file of version OLD, which must still be in
 * the data directory beside the served one (transit/snapshot_delta.h).
 * 200 and *out (a reference: api_delta_release it), or 400 (from is not a
 * version name), 404 (no such file, or OLD or its file is gone: the client
 * fetches the whole file), 500; the problem in prob. Patches are cached. */
typedef struct api_delta api_delta;
int api_dataset_delta(dataset *ds, const char *from, const char *name, api_delta **out,
                      api_problem *prob);
const unsigned char *api_delta_bytes(const api_delta *d, size_t *len);
void api_delta_release(api_delta *d);
/* Empties the patch cache (at exit, so that leak checkers see nothing). */
void api_dataset_delta_forget_all(void);

/* Writes a problem as application/problem+json into out. */
void api_problem_write(const api_problem *prob, const char *instance_path, json_writer *out);
/* The same, leaving the object open for extension members (RFC 9457 §3.2);
 * the caller ends it with json_object_end. */
void api_problem_begin(const api_problem *prob, const char *instance_path, json_writer *out);

/* Parses the `time` parameter: RFC 3339 with offset or Z, or a local
 * date-time without offset (YYYY-MM-DDTHH:MM[:SS]) read in the feed timezone.
 * Returns 0 and the instant, or -1. */
int api_parse_time(const dataset *ds, const char *s, int64_t *instant);

#endif
