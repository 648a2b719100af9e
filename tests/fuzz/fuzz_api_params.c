/* fuzz_api_params.c — libFuzzer target for the request-parameter parsing of
 * the HTTP API (src/api/api_params.c): lat, lon, radius, time, window,
 * limit, kind, realtime, include, q, ids, unknown and repeated parameters, on every
 * GET endpoint (the fixture has no shapes.sqlite: shapes answer 503).
 *
 * Why it exists: the Objective-C layer only splits and URL-decodes the query
 * string; every value is parsed and range-checked by the C endpoints, which
 * then query the dataset with it. The input is "E k=v&k=v..." where byte E
 * picks the endpoint and a key "_id" stands for the {id} path segment.
 * The dataset is built once from a small real feed: $TRANSITD_FUZZ_FEED, else
 * ../shared/gtfs/cairns_translink_2014.zip (run from the repository root).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transit/api.h"
#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/json_writer.h"
#include "transit/query.h"
#include "transit/timetable.h"

static dataset *ds;
static api_thread *thread;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *feed_path = getenv("TRANSITD_FUZZ_FEED");
    if (!feed_path)
        feed_path = "../shared/gtfs/cairns_translink_2014.zip";
    char dir[256], path[300], err[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/fuzz-api-%ld", tmp ? tmp : "/tmp", (long)getpid());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/timetable.bin", dir);
    feed_t *feed = feed_open(feed_path, err, sizeof err);
    if (!feed) {
        fprintf(stderr, "fuzz_api_params: %s (set TRANSITD_FUZZ_FEED)\n", err);
        exit(1);
    }
    diag d;
    diag_init(&d);
    timetable_stats st;
    if (timetable_build(feed, path, NULL, &d, &st, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_api_params: %s\n", err);
        exit(1);
    }
    diag_destroy(&d);
    feed_close(feed);
    ds = dataset_open(dir, err, sizeof err);
    thread = api_thread_new();
    if (!ds || !thread) {
        fprintf(stderr, "fuzz_api_params: %s\n", err);
        exit(1);
    }
    return 0;
}

static const api_endpoint_fn ENDPOINTS[] = {
    api_stops_nearby, api_stops_search, api_stop,  api_stop_departures, api_departures,
    api_routes,       api_route,        api_trip,  api_agencies,        api_feed,
    api_stop_arrivals, api_shape,
};
enum { NENDPOINTS = sizeof ENDPOINTS / sizeof *ENDPOINTS, MAX_PARAMS = 16 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    api_endpoint_fn fn = ENDPOINTS[data[0] % NENDPOINTS];
    /* one NUL-terminated copy, cut at '&' and '=' in place */
    char *q = malloc(size);
    memcpy(q, data + 1, size - 1);
    q[size - 1] = '\0';
    api_param params[MAX_PARAMS];
    int n = 0;
    const char *id = NULL;
    char *s = q;
    while (*s && n < MAX_PARAMS) {
        char *amp = strchr(s, '&');
        if (amp)
            *amp = '\0';
        char *eq = strchr(s, '=');
        const char *value = "";
        if (eq) {
            *eq = '\0';
            value = eq + 1;
        }
        if (strcmp(s, "_id") == 0)
            id = value;
        else
            params[n++] = (api_param){s, value};
        if (!amp)
            break;
        s = amp + 1;
    }
    api_request req = {.params = params, .nparams = n, .id = id, .now = 1401660000 /* 2014-06-02 */};
    json_writer w;
    json_init(&w);
    api_problem prob;
    memset(&prob, 0, sizeof prob);
    int cache = 0;
    int status = fn(thread, ds, &req, &w, &prob, &cache);
    if (status != 200) {
        if (status < 400 || status > 599 || !prob.title)
            abort();
        json_reset(&w);
        api_problem_write(&prob, "/v1/fuzz", &w);
    }
    json_free(&w);
    free(q);
    return 0;
}
