/* bench_query.c — the in-process query benchmark (`make bench-query`).
 *
 * Why it exists: the query issue sets latency targets for the engine itself,
 * without HTTP: nearby_departures (radius 500 m, window 60 min, limit 50)
 * p50 <= 10 us and p99 <= 50 us; stop_departures (limit 50) p50 <= 2 us;
 * nearby_stops (limit 20) p50 <= 2 us. It opens a dataset, draws a fixed
 * random query set (a seeded LCG: the same queries every run), warms up, then
 * times every call with a monotonic clock and prints p50/p99/mean per kind,
 * as a table and as one JSON line {"bench":"query",...} for bench/run_bench.py.
 *
 * With --rt FEED.pb (a TripUpdates feed, e.g. the one bench/realtime_bench.py
 * writes) it also times the two boards by predicted time over the overlay
 * of that feed (engine/board_predicted.c, realtime=predicted) on the same
 * queries, beside the plain ones: the engine's share of the realtime
 * benchmark's ratio, without HTTP.
 *
 * With --rt it also times the whole nearby board as the server asks for it
 * (board.h's board_nearby, the join included) three ways on the same
 * queries, one after the other for each query: without realtime
 * (board_plain), with the overlay and realtime=scheduled (board_scheduled)
 * and with realtime=predicted (board_predicted): the in-process share of
 * the realtime benchmark's two ratios. Each of the three answers a query of
 * its own at each step (the same queries in all, shifted), so that none
 * finds the caches warm from the others.
 *
 * The dataset is held as a server holds it (dataset_keep_derived_in_files
 * when dataset_derived_belongs_in_files, then its pages let go), so the
 * figures are the server's engine's.
 *
 * --date YYYYMMDD sets the service date of the queries (the feed's, for --rt).
 * --only NAME times that kind alone (the others are not run): a profiler's
 * view of one path.
 * --evict KB writes a buffer of that many kilobytes before each timed call
 * (untimed): a server's caches hold more than its last query (the kernel's
 * sockets, libmicrohttpd, the JSON, other processes), so its queries find
 * less of their data cached than a loop of queries alone does. Paths that
 * read more distinct cache lines lose more under it.
 *
 * Usage: bench_query DATA_DIR [--queries N] [--warmup N] [--seed N] [--rt FEED.pb] [--date YYYYMMDD]
 *                    [--only NAME] [--evict KB]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/board_predicted.h"
#include "live/rt_row_index.h"
#include "transit/board.h"
#include "transit/gtfs.h"
#include "transit/query.h"
#include "transit/rt_feed.h"
#include "transit/rt_overlay.h"

static uint64_t g_rng;

static uint32_t rnd(void)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}

static double rnd_unit(void) { return (double)rnd() / 2147483648.0; }

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

typedef struct query_case {
    uint32_t stop;
    double lat, lon;
    int64_t when;
} query_case;

typedef struct timing {
    const char *name;
    double *ns;
    uint64_t results;
    int errors;
} timing;

static void summarise(const timing *t, int n, double *p50, double *p99, double *mean)
{
    qsort(t->ns, (size_t)n, sizeof *t->ns, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += t->ns[i];
    *p50 = t->ns[n / 2] / 1e3;
    *p99 = t->ns[(size_t)n * 99 / 100] / 1e3;
    *mean = sum / n / 1e3;
}

/* The overlay of the TripUpdates feed in `path` over `ds`, built as of
 * `now`; NULL (said on stderr) when the file cannot be read or decoded. */
static rt_overlay *overlay_of(const char *path, dataset *ds, int64_t now)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_query: %s: cannot open\n", path);
        return NULL;
    }
    size_t cap = 1 << 20, len = 0;
    uint8_t *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *bigger = realloc(data, cap *= 2);
            if (!bigger) free(data);
            data = bigger;
        }
    }
    fclose(f);
    if (!data) {
        fprintf(stderr, "bench_query: %s: out of memory\n", path);
        return NULL;
    }
    char err[256];
    double t0 = now_ns();
    rt_feed *feed = rt_feed_decode(data, len, err, sizeof err);
    double t1 = now_ns();
    free(data);
    if (!feed) {
        fprintf(stderr, "bench_query: %s: %s\n", path, err);
        return NULL;
    }
    rt_overlay_stats stats;
    rt_overlay *o = rt_overlay_build(feed, ds, now, &stats);
    double t2 = now_ns();
    rt_feed_free(feed);
    if (!o) fprintf(stderr, "bench_query: %s: out of memory building the overlay\n", path);
    else
        fprintf(stderr, "bench_query: %s: %zu bytes decoded in %.1f ms, %u trip instances matched, overlay built in "
                        "%.1f ms (its row index: %u trips, %zu KB)\n", path, len, (t1 - t0) / 1e6, stats.matched,
                (t2 - t1) / 1e6, rt_row_index_kept(rt_overlay_row_index(o)),
                rt_row_index_bytes(rt_overlay_row_index(o)) / 1024);
    return o;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: bench_query DATA_DIR [--queries N] [--warmup N] [--seed N] [--rt FEED.pb] "
                        "[--date YYYYMMDD] [--only NAME] [--evict KB]\n");
        return argc < 2 ? 2 : 0;
    }
    int nq = 20000, warm = 2000;
    uint64_t seed = 1;
    const char *rt_path = NULL, *date_arg = NULL, *only = NULL;
    long evict_kb = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--queries") == 0) nq = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--warmup") == 0) warm = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0) seed = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--rt") == 0) rt_path = argv[i + 1];
        else if (strcmp(argv[i], "--date") == 0) date_arg = argv[i + 1];
        else if (strcmp(argv[i], "--only") == 0) only = argv[i + 1];
        else if (strcmp(argv[i], "--evict") == 0) evict_kb = atol(argv[i + 1]);
        else {
            fprintf(stderr, "bench_query: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (nq < 10 || warm < 0 || evict_kb < 0 || evict_kb > 1024 * 1024) {
        fprintf(stderr, "bench_query: --queries must be >= 10, --warmup >= 0 and --evict between 0 and 1048576\n");
        return 2;
    }
    size_t evict_len = (size_t)evict_kb * 1024;
    unsigned char *evict = evict_len ? malloc(evict_len) : NULL;
    if (evict_len && !evict) {
        fprintf(stderr, "bench_query: out of memory for --evict\n");
        return 1;
    }
    char err[512];
    dataset *ds = dataset_open(argv[1], err, sizeof err);
    if (!ds) {
        fprintf(stderr, "bench_query: %s\n", err);
        return 1;
    }
    /* as a server holds it: the derived arrays in a mapped file, their pages
     * and the timetable's let go after the open, brought back by the warmup */
    if (dataset_derived_belongs_in_files(ds))   /* as a server does */
        dataset_keep_derived_in_files(ds);
    dataset_drop_pages(ds);
    dataset_counts c;
    dataset_get_counts(ds, &c);
    /* platforms and stops with coordinates: the points people ask about */
    uint32_t *stops = malloc(c.stops * sizeof *stops), nstops = 0;
    for (uint32_t i = 0; i < c.stops; i++) {
        stop_info si;
        dataset_stop(ds, i, &si);
        if (si.location_type == 0 && si.lat == si.lat) stops[nstops++] = i;
    }
    if (nstops == 0) {
        fprintf(stderr, "bench_query: the dataset has no stops with coordinates\n");
        return 1;
    }
    /* a Tuesday two weeks into the feed (or near its middle, for short feeds) */
    int32_t span = c.last_date - c.first_date;
    int32_t day = c.first_date + (span > 28 ? 14 : span / 2);
    for (int i = 0; i < 7 && weekday_from_days(day) != 1 && day < c.last_date; i++) day++;
    if (date_arg && gtfs_parse_date(date_arg, strlen(date_arg), &day) != 0) {
        fprintf(stderr, "bench_query: --date %s is not YYYYMMDD\n", date_arg);
        return 2;
    }
    g_rng = seed;
    int total = nq + warm;
    query_case *qs = malloc((size_t)total * sizeof *qs);
    for (int i = 0; i < total; i++) {
        uint32_t s = stops[rnd() % nstops];
        stop_info si;
        dataset_stop(ds, s, &si);
        /* within a few hundred metres of a stop, at a time between 05:00 and 23:00 */
        qs[i].stop = s;
        qs[i].lat = si.lat + (rnd_unit() - 0.5) * 0.006;
        qs[i].lon = si.lon + (rnd_unit() - 0.5) * 0.008;
        qs[i].when = dataset_instant(ds, day, 5 * 3600 + rnd() % (18 * 3600));
    }
    rt_overlay *overlay = NULL;
    if (rt_path && !(overlay = overlay_of(rt_path, ds, dataset_instant(ds, day, 12 * 3600)))) return 1;
    query_scratch *scratch = query_scratch_new();
    predicted_scratch *pscratch = predicted_scratch_new();
    board_scratch *bscratch = board_scratch_new();
    departure *deps = malloc(QUERY_LIMIT_MAX * sizeof *deps);
    rt_departure *rts = malloc(QUERY_LIMIT_MAX * sizeof *rts);
    nearby_stop *near = malloc(QUERY_LIMIT_MAX * sizeof *near);
    enum { NEARBY, STOP, STOPS, NEARBY_PREDICTED, STOP_PREDICTED, BOARD_PLAIN, BOARD_SCHEDULED, BOARD_PREDICTED,
           KINDS };
    int kinds = overlay ? KINDS : NEARBY_PREDICTED;
    timing t[KINDS] = {{"nearby_departures", NULL, 0, 0}, {"stop_departures", NULL, 0, 0},
                       {"nearby_stops", NULL, 0, 0},      {"nearby_predicted", NULL, 0, 0},
                       {"stop_predicted", NULL, 0, 0},    {"board_plain", NULL, 0, 0},
                       {"board_scheduled", NULL, 0, 0},   {"board_predicted", NULL, 0, 0}};
    bool run[KINDS];
    for (int k = 0; k < KINDS; k++) {
        t[k].ns = malloc((size_t)nq * sizeof(double));
        run[k] = k < kinds && (!only || strcmp(only, t[k].name) == 0);
    }
    if (only) {
        bool any = false;
        for (int k = 0; k < KINDS; k++) any |= run[k];
        if (!any) {
            fprintf(stderr, "bench_query: --only %s: no such kind%s\n", only, overlay ? "" : " (without --rt)");
            return 2;
        }
    }
    board_sources plain = {NULL, NULL, BOARD_BY_PREDICTION, false};
    board_sources scheduled = {overlay, NULL, BOARD_BY_SCHEDULE, false};
    board_sources predicted = {overlay, NULL, BOARD_BY_PREDICTION, false};
    const board_sources *sources[KINDS] = {[BOARD_PLAIN] = &plain, [BOARD_SCHEDULED] = &scheduled,
                                           [BOARD_PREDICTED] = &predicted};
    for (int i = 0; i < total; i++) {
        const query_case *q = &qs[i];
        for (int k = 0; k < KINDS; k++) {
            if (!run[k]) continue;
            uint32_t n = 0;
            bool trunc;
            query_error qe;
            board b;
            int rc;
            if (evict)
                for (size_t b = 0; b < evict_len; b += 64) evict[b] = (unsigned char)(evict[b] + i);
            double a = now_ns();
            switch (k) {
            case NEARBY:
                rc = nearby_departures(ds, scratch, q->lat, q->lon, 500, q->when, 3600, 50, deps, &n, &trunc, &qe);
                break;
            case STOP:
                rc = stop_departures(ds, scratch, q->stop, q->when, 3600, 50, deps, &n, &trunc, &qe);
                break;
            case STOPS:
                rc = nearby_stops(ds, scratch, q->lat, q->lon, 500, 20, near, &n, &trunc, &qe);
                break;
            case NEARBY_PREDICTED:
                rc = board_predicted_nearby(pscratch, ds, scratch, overlay, QUERY_DEPARTURES, q->lat, q->lon, 500,
                                            q->when, 3600, 50, false, deps, rts, &n, &trunc, &qe);
                break;
            case STOP_PREDICTED:
                rc = board_predicted_stop(pscratch, ds, scratch, overlay, QUERY_DEPARTURES, q->stop, q->when, 3600,
                                          50, false, deps, rts, &n, &trunc, &qe);
                break;
            default: {
                /* each board kind on a query of its own at this step, so
                 * that none finds the caches warm from another kind having
                 * just answered the same one (a server's next request is
                 * somewhere else too) */
                const query_case *o = &qs[(i + (k - BOARD_PLAIN + 1) * (total / 4 + 1)) % total];
                rc = board_nearby(bscratch, ds, scratch, QUERY_DEPARTURES, o->lat, o->lon, 500, o->when, 3600, 50,
                                  sources[k], &b, &qe);
                n = rc == QUERY_OK ? b.count : 0;
                break;
            }
            }
            double e = now_ns();
            int at = i - warm;
            if (at >= 0) t[k].ns[at] = e - a, t[k].results += n, t[k].errors += rc != QUERY_OK;
        }
    }
    char date[11];
    format_date(day, date);
    printf("query benchmark: %s (dataset %s), %d queries per kind after %d warm-up, service date %s\n", argv[1],
           dataset_version(ds), nq, warm, date);
    printf("%-20s %10s %10s %10s %12s\n", "query", "p50 us", "p99 us", "mean us", "avg results");
    char json[2048];
    int off = snprintf(json, sizeof json, "{\"bench\":\"query\",\"dataset\":\"%s\",\"service_date\":\"%s\"",
                       dataset_version(ds), date);
    int errors = 0;
    for (int k = 0; k < kinds; k++) {
        if (!run[k]) continue;
        double p50, p99, mean;
        summarise(&t[k], nq, &p50, &p99, &mean);
        printf("%-20s %10.2f %10.2f %10.2f %12.1f\n", t[k].name, p50, p99, mean, (double)t[k].results / nq);
        off += snprintf(json + off, sizeof json - (size_t)off,
                        ",\"%s\":{\"queries\":%d,\"p50_us\":%.3f,\"p99_us\":%.3f,\"mean_us\":%.3f,"
                        "\"avg_results\":%.2f,\"errors\":%d}",
                        t[k].name, nq, p50, p99, mean, (double)t[k].results / nq, t[k].errors);
        errors += t[k].errors;
    }
    printf("%s}\n", json);
    for (int k = 0; k < KINDS; k++) free(t[k].ns);
    free(evict);
    board_scratch_free(bscratch);
    free(deps);
    free(rts);
    predicted_scratch_free(pscratch);
    rt_overlay_release(overlay);
    free(near);
    free(qs);
    free(stops);
    query_scratch_free(scratch);
    dataset_close(ds);
    if (errors) fprintf(stderr, "bench_query: %d queries returned an error\n", errors);
    return errors ? 1 : 0;
}
