/* bench_api.c — the two departures endpoints in process, from parameters to
 * JSON body.
 *
 * Why it exists: the HTTP benchmarks (run_bench.py, ab_builds.py) measure
 * the departures endpoints through libmicrohttpd and wrk on shared cores,
 * where single runs swing by a third. Two builds that differ only below
 * the HTTP layer are compared more finely here: api_departures and
 * api_stop_departures called as the server calls them (parameter checks,
 * query, board join, JSON rows), on the same seeded requests as the wrk
 * scripts' shape (radius 500 m, window 60 min, limit 50, RFC 3339 times
 * between 05:00 and 23:00 on a Tuesday two weeks into the feed), each call
 * timed. It uses only what transit/api.h declared before issue #27, so it
 * also builds against an older libtransit.a for a side-by-side run.
 * With --rt FEED.pb the requests carry the overlay of that TripUpdates feed
 * (e.g. realtime_bench.py's), built as a server builds it, and --realtime
 * scheduled|predicted asks for that mode; --date YYYYMMDD sets the requests'
 * day (the feed's).
 *
 * Usage: bench_api DATA_DIR [--requests N] [--rounds N] [--rt FEED.pb] [--realtime MODE] [--date YYYYMMDD]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transit/api.h"
#include "transit/gtfs.h"
#include "transit/json_writer.h"
#include "transit/query.h"
#include "transit/rfc3339.h"
#include "transit/rt_feed.h"
#include "transit/rt_overlay.h"

static uint64_t g_rng = 1;

static uint32_t rnd(void)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct request {
    char stop[256], lat[32], lon[32], time[32];
} request;

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_api DATA_DIR [--requests N] [--rounds N] [--rt FEED.pb] "
                        "[--realtime scheduled|predicted] [--date YYYYMMDD]\n");
        return 2;
    }
    int n = 5000, rounds = 5;
    const char *rt_path = NULL, *mode = NULL, *date_arg = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--requests") == 0) n = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--rt") == 0) rt_path = argv[i + 1];
        else if (strcmp(argv[i], "--realtime") == 0) mode = argv[i + 1];
        else if (strcmp(argv[i], "--date") == 0) date_arg = argv[i + 1];
    }
    char err[512];
    dataset *ds = dataset_open(argv[1], err, sizeof err);
    if (!ds) {
        fprintf(stderr, "bench_api: %s\n", err);
        return 1;
    }
    dataset_counts c;
    dataset_get_counts(ds, &c);
    int32_t span = c.last_date - c.first_date;
    int32_t day = c.first_date + (span > 28 ? 14 : span / 2);
    for (int i = 0; i < 7 && weekday_from_days(day) != 1 && day < c.last_date; i++) day++;
    if (date_arg && !rt_parse_date(date_arg, &day)) {
        fprintf(stderr, "bench_api: --date %s is not YYYYMMDD\n", date_arg);
        return 2;
    }
    rt_overlay *rt = NULL;
    if (rt_path) {
        FILE *fp = fopen(rt_path, "rb");
        long len = fp && fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
        uint8_t *bytes = len > 0 ? malloc((size_t)len) : NULL;
        if (!bytes || fseek(fp, 0, SEEK_SET) != 0 || fread(bytes, 1, (size_t)len, fp) != (size_t)len) {
            fprintf(stderr, "bench_api: cannot read %s\n", rt_path);
            return 1;
        }
        fclose(fp);
        rt_feed *f = rt_feed_decode(bytes, (size_t)len, err, sizeof err);
        free(bytes);
        if (!f || !(rt = rt_overlay_build(f, ds, dataset_instant(ds, day, 12 * 3600), NULL))) {
            fprintf(stderr, "bench_api: %s: %s\n", rt_path, f ? "out of memory" : err);
            return 1;
        }
        rt_feed_free(f);
    }
    request *reqs = calloc((size_t)n, sizeof *reqs);
    for (int i = 0; i < n; i++) {
        stop_info si;
        uint32_t s;
        do {
            s = rnd() % c.stops;
            dataset_stop(ds, s, &si);
        } while (si.location_type != 0);
        snprintf(reqs[i].stop, sizeof reqs[i].stop, "%s", si.id);
        snprintf(reqs[i].lat, sizeof reqs[i].lat, "%.6f", si.lat + ((double)rnd() / 2147483648.0 - 0.5) * 0.006);
        snprintf(reqs[i].lon, sizeof reqs[i].lon, "%.6f", si.lon + ((double)rnd() / 2147483648.0 - 0.5) * 0.008);
        rfc3339_format_utc(dataset_instant(ds, day, 5 * 3600 + rnd() % (18 * 3600)), reqs[i].time);
    }
    api_thread *t = api_thread_new();
    json_writer w;
    json_init(&w);
    double *ns = malloc((size_t)n * rounds * sizeof *ns);
    const char *names[2] = {"GET /v1/departures", "GET /v1/stops/{id}/departures"};
    for (int e = 0; e < 2; e++) {
        size_t k = 0, bytes = 0;
        for (int r = -1; r < rounds; r++) {   /* round -1 warms up */
            for (int i = 0; i < n; i++) {
                const request *q = &reqs[i];
                api_param nearby[] = {{"lat", q->lat}, {"lon", q->lon}, {"time", q->time}, {"realtime", mode}};
                api_param stop[] = {{"time", q->time}, {"realtime", mode}};
                api_request req = e == 0 ? (api_request){.params = nearby, .nparams = mode ? 4 : 3, .now = 0}
                                         : (api_request){.params = stop, .nparams = mode ? 2 : 1, .id = q->stop,
                                                         .now = 0};
                req.realtime = rt;
                api_problem prob;
                int cache;
                json_reset(&w);
                double a = now_ns();
                int status = e == 0 ? api_departures(t, ds, &req, &w, &prob, &cache)
                                    : api_stop_departures(t, ds, &req, &w, &prob, &cache);
                double b = now_ns();
                if (status != 200) {
                    fprintf(stderr, "bench_api: %s answered %d: %s\n", names[e], status, prob.detail);
                    return 1;
                }
                if (r >= 0) {
                    ns[k++] = b - a;
                    bytes += w.len;
                }
            }
        }
        double sum = 0;
        for (size_t i = 0; i < k; i++)
            sum += ns[i];
        qsort(ns, k, sizeof *ns, cmp_double);
        printf("%-32s p50 %7.2f us  p99 %7.2f us  mean %7.2f us  body %6zu bytes\n", names[e], ns[k / 2] / 1e3,
               ns[k * 99 / 100] / 1e3, sum / (double)k / 1e3, bytes / k);
    }
    json_free(&w);
    rt_overlay_release(rt);
    api_thread_free(t);
    free(ns);
    free(reqs);
    dataset_close(ds);
    return 0;
}
