/* client_cold_start.c — how fast a phone answers after opening its snapshot,
 * and what the open and a session of queries cost in resident memory.
 *
 * Why it exists: issue #25's targets (first answer < 5 ms, < 20 MB resident
 * added by the open and 1,000 queries, on Brooklyn) are about the client
 * library as an app links it, so this program links only
 * libtransit_client.a. bench/client_bench.py runs it in a fresh process,
 * after evicting the snapshot's files from the page cache when asked (the
 * first answer then reads from the disk, as after a phone reboot).
 *
 * usage: client_cold_start DIR NOW LAT LON QUERIES SEED json|struct
 * prints one JSON object: open_ms, first_answer_ms (from the open to the
 * first departures near LAT,LON: the server's JSON body, or the structs),
 * rss_before_kb, rss_after_open_kb, rss_after_queries_kb, queries,
 * query_us_median (the session's departures near random points).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <unistd.h>
#else
#include <sys/resource.h>
#endif

#include "transit/client.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Resident set now, in KB (Linux: /proc/self/statm; elsewhere the peak). */
static long rss_kb(void)
{
#if defined(__linux__)
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
#else
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (long)(ru.ru_maxrss / 1024);   /* bytes on macOS */
#endif
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 8 || (strcmp(argv[7], "json") != 0 && strcmp(argv[7], "struct") != 0)) {
        fprintf(stderr, "usage: client_cold_start DIR NOW LAT LON QUERIES SEED json|struct\n");
        return 2;
    }
    int64_t now = strtoll(argv[2], NULL, 10);
    double lat = atof(argv[3]), lon = atof(argv[4]);
    int queries = atoi(argv[5]);
    unsigned seed = (unsigned)strtoul(argv[6], NULL, 10);
    bool json = strcmp(argv[7], "json") == 0;
    if (queries < 1 || queries > 100000) {
        fprintf(stderr, "QUERIES must be 1..100000\n");
        return 2;
    }
    long rss_before = rss_kb();
    double t0 = now_ms();
    transit_error err;
    transit_snapshot *s = transit_open(argv[1], &err);
    if (!s) {
        fprintf(stderr, "client_cold_start: %s\n", err.message);
        return 1;
    }
    double t_open = now_ms();
    long rss_open = rss_kb();
    /* the first answer: what leaves near the point in the next hour */
    transit_stop stops[1];
    transit_departure rows[50];
    uint32_t n = 0;
    bool truncated;
    char path[256], *body = NULL;
    size_t len;
    int status;
    if (json) {
        snprintf(path, sizeof path, "/v1/departures?lat=%.6f&lon=%.6f&radius=500&limit=20", lat, lon);
        status = transit_get_json(s, path, now, &body, &len);
        transit_free(body);
    } else {
        status = transit_nearby_departures(s, lat, lon, 500, TRANSIT_DEPARTURES, now, 3600, 20, rows, &n,
                                           &truncated, &err) == 0 ? 200 : err.status;
    }
    double t_first = now_ms();
    if (status != 200) {
        fprintf(stderr, "client_cold_start: the first answer was %d\n", status);
        transit_close(s);
        return 1;
    }
    /* a session: stops and departures near random stops within 5 km of the
     * point (each moved up to 200 m), over the day */
    static transit_stop centres[500];
    uint32_t ncentres = 0;
    if (transit_nearby_stops(s, lat, lon, 5000, 500, centres, &ncentres, &truncated, &err) != 0 || !ncentres) {
        fprintf(stderr, "client_cold_start: no stops within 5 km of the point\n");
        transit_close(s);
        return 1;
    }
    double *lat_us = malloc((size_t)queries * sizeof *lat_us);
    srand(seed);
    for (int i = 0; i < queries && lat_us; i++) {
        const transit_stop *c = &centres[(uint32_t)rand() % ncentres];
        double qlat = c->lat + ((double)rand() / RAND_MAX - 0.5) * 0.0036;
        double qlon = c->lon + ((double)rand() / RAND_MAX - 0.5) * 0.0048;
        int64_t t = now + (i % 48) * 1800;
        double a = now_ms();
        if (json) {
            snprintf(path, sizeof path, "/v1/departures?lat=%.6f&lon=%.6f&radius=800&limit=50", qlat, qlon);
            transit_get_json(s, path, t, &body, &len);
            transit_free(body);
        } else {
            transit_nearby_stops(s, qlat, qlon, 800, 1, stops, &n, &truncated, &err);
            transit_nearby_departures(s, qlat, qlon, 800, TRANSIT_DEPARTURES, t, 3600, 50, rows, &n,
                                      &truncated, &err);
        }
        lat_us[i] = (now_ms() - a) * 1e3;
    }
    long rss_end = rss_kb();
    double median = 0;
    if (lat_us) {
        qsort(lat_us, (size_t)queries, sizeof *lat_us, by_double);
        median = lat_us[queries / 2];
    }
    printf("{\"mode\":\"%s\",\"open_ms\":%.3f,\"first_answer_ms\":%.3f,\"rss_before_kb\":%ld,"
           "\"rss_after_open_kb\":%ld,\"rss_after_queries_kb\":%ld,\"queries\":%d,\"query_us_median\":%.1f}\n",
           argv[7], t_open - t0, t_first - t0, rss_before, rss_open, rss_end, queries, median);
    free(lat_us);
    transit_close(s);
    return 0;
}
