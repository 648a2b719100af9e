/* TDLandingResource.m — GET /: the landing page.
 *
 * Why it exists: someone who opens the server's address in a browser should
 * learn what it is, which dataset it serves and whether that feed is still in
 * effect, and find the API reference, the raw OpenAPI document, the metrics
 * and example queries that work against this very dataset. The page is
 * www/index.html, a template (site.h) filled here on each request; it is
 * complete without JavaScript, so curl shows the same facts.
 */
#import "TDResource.h"
#import "TDServer.h"

#include <stdio.h>
#include <string.h>

#include "transit/feed_validity.h"
#include "transit/gtfs.h"
#include "transit/site.h"
#include "transit/version.h"

/* Example values when no dataset is loaded yet. */
#define NO_STOP "STOP_ID"
#define NO_LAT "52.52000"
#define NO_LON "13.40500"

@interface TDLandingResource : TDResource
@end

/* The values the landing page shows, as text. */
typedef struct landing_values {
    char dataset_version[64];
    char status[32], status_class[16], summary[320];
    char start[11], end[11], today[11], days[24];
    char timezone[64];
    char stops[16], routes[16], trips[16];
    char stop_id[256], stop_id_url[768], stop_name[256];
    char lat[24], lon[24], query_url[96];
} landing_values;

/* A stop to show in the example queries: from the middle of the stop list,
 * the first stop or station with a position; QUERY_NONE when there is none. */
static uint32_t example_stop(const dataset *ds)
{
    uint32_t n = dataset_stop_count(ds);
    for (uint32_t k = 0; k < n; k++) {
        stop_info st;
        uint32_t i = (n / 2 + k) % n;
        dataset_stop(ds, i, &st);
        if ((st.location_type == 0 || st.location_type == 1) && (st.lat != 0 || st.lon != 0))
            return i;
    }
    return QUERY_NONE;
}

/* The first word of a stop name, URL-encoded: a search that finds it. */
static void example_query(const char *name, char *out, size_t cap)
{
    char word[24];
    size_t n = 0;
    while (name[n] && name[n] != ' ' && name[n] != ',' && n < sizeof word - 1)
        n++;
    memcpy(word, name, n);
    word[n] = '\0';
    if (!site_url_encode(word, out, cap))
        snprintf(out, cap, "a");
}

static void fill_values(const dataset *ds, int64_t now, landing_values *v)
{
    memset(v, 0, sizeof *v);
    snprintf(v->stop_id, sizeof v->stop_id, NO_STOP);
    snprintf(v->stop_id_url, sizeof v->stop_id_url, NO_STOP);
    snprintf(v->lat, sizeof v->lat, NO_LAT);
    snprintf(v->lon, sizeof v->lon, NO_LON);
    snprintf(v->query_url, sizeof v->query_url, "a");
    if (!ds) {
        snprintf(v->dataset_version, sizeof v->dataset_version, "none loaded");
        snprintf(v->status, sizeof v->status, "no dataset");
        snprintf(v->status_class, sizeof v->status_class, "none");
        snprintf(v->summary, sizeof v->summary,
                 "No dataset is loaded yet: import a feed into the data directory "
                 "(transitd import FEED --data DIR); the API answers 503 until then.");
        return;
    }
    snprintf(v->dataset_version, sizeof v->dataset_version, "%s", dataset_version(ds));
    snprintf(v->timezone, sizeof v->timezone, "%s", dataset_timezone(ds));
    feed_validity fv;
    feed_validity_at(ds, now, &fv);
    format_date(fv.start, v->start);
    format_date(fv.end, v->end);
    format_date(fv.today, v->today);
    snprintf(v->days, sizeof v->days, "%d", (int)fv.days_until_expiry);
    if (feed_validity_warning(&fv, v->summary, sizeof v->summary)) {
        snprintf(v->status, sizeof v->status, fv.expired ? "expired" : "not yet in effect");
        snprintf(v->status_class, sizeof v->status_class, "bad");
    } else {
        snprintf(v->status, sizeof v->status, "in effect");
        snprintf(v->status_class, sizeof v->status_class, "ok");
        snprintf(v->summary, sizeof v->summary,
                 "The feed is in effect: service dates %s to %s, %d day%s until it expires.",
                 v->start, v->end, (int)fv.days_until_expiry,
                 fv.days_until_expiry == 1 ? "" : "s");
    }
    dataset_counts counts;
    dataset_get_counts(ds, &counts);
    snprintf(v->stops, sizeof v->stops, "%u", counts.stops);
    snprintf(v->routes, sizeof v->routes, "%u", counts.routes);
    snprintf(v->trips, sizeof v->trips, "%u", counts.trips);
    uint32_t stop = example_stop(ds);
    if (stop != QUERY_NONE) {
        stop_info st;
        dataset_stop(ds, stop, &st);
        snprintf(v->stop_id, sizeof v->stop_id, "%s", st.id);
        if (!site_url_encode(st.id, v->stop_id_url, sizeof v->stop_id_url))
            snprintf(v->stop_id_url, sizeof v->stop_id_url, NO_STOP);
        snprintf(v->stop_name, sizeof v->stop_name, "%s", st.name);
        snprintf(v->lat, sizeof v->lat, "%.5f", st.lat);
        snprintf(v->lon, sizeof v->lon, "%.5f", st.lon);
        example_query(st.name, v->query_url, sizeof v->query_url);
    }
}

@implementation TDLandingResource

- (void)get:(TDRequest *)req
{
    const site_file *page = site_find(server->pages, "index.html");
    if (!page) {
        td_request_problem(req, 404, NULL, "no web pages were found at start-up (%.200s)",
                           server->pagesSource);
        return;
    }
    landing_values v;
    dataset *ds = serving_acquire_dataset(server->state);
    fill_values(ds, req->now, &v);
    if (ds)
        dataset_release(ds);
    const site_var vars[] = {
        {"transitd_version", TRANSITD_VERSION},
        {"dataset_version", v.dataset_version},
        {"feed_status", v.status},
        {"feed_status_class", v.status_class},
        {"feed_summary", v.summary},
        {"feed_start", v.start},
        {"feed_end", v.end},
        {"feed_today", v.today},
        {"feed_days_until_expiry", v.days},
        {"feed_timezone", v.timezone},
        {"count_stops", v.stops},
        {"count_routes", v.routes},
        {"count_trips", v.trips},
        {"example_stop_id", v.stop_id},
        {"example_stop_id_url", v.stop_id_url},
        {"example_stop_name", v.stop_name},
        {"example_lat", v.lat},
        {"example_lon", v.lon},
        {"example_query_url", v.query_url},
    };
    int nvars = (int)(sizeof vars / sizeof vars[0]);
    size_t need = site_render(page->bytes, page->len, vars, nvars, req->text, req->textCap);
    if (need >= req->textCap) {
        if (!td_request_reserve_text(req, need + 1)) {
            td_request_problem(req, 500, NULL, "out of memory while rendering the landing page");
            return;
        }
        need = site_render(page->bytes, page->len, vars, nvars, req->text, req->textCap);
    }
    req->responseBody = req->text;
    req->responseLength = need;
    req->contentType = page->content_type;
    req->cacheSeconds = 60;
}

@end
