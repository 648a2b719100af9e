/* board_dump.c — many random boards printed, to compare two builds' answers
 * byte for byte.
 *
 * Why it exists: a change to how boards are chosen (the drain of boards by
 * predicted time, issue #26) must give the same answers as the build before
 * it on data and feeds far larger than the API tests', over every kind of
 * board. This opens a dataset and a TripUpdates feed once, as a server
 * does, and prints N seeded random requests through api_departures and
 * api_stop_departures (the server's own endpoints): nearby and stop boards
 * (stations too), departures, arrivals and both, limits 1..60, windows
 * 5..120 min, radius 100..1000 m, one in eight with wheelchair=1, one in
 * eight with realtime=scheduled (the board by schedule, chosen here when
 * the overlay hides or moves rows), the rest by predicted time. Each
 * request is printed, then its status and body. It uses only transit/api.h
 * as it stood before the change, so it links against an older
 * libtransit.a too:
 *
 *   clang -std=c11 -O2 -Iinclude bench/board_dump.c OLD/libtransit.a -l... -o /tmp/board_dump_old
 *
 * Usage: board_dump DATA_DIR --rt FEED.pb --date YYYYMMDD [--boards N] [--seed S]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static rt_overlay *overlay_of(const char *path, dataset *ds, int32_t day)
{
    char err[512];
    FILE *fp = fopen(path, "rb");
    long len = fp && fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    uint8_t *bytes = len > 0 ? malloc((size_t)len) : NULL;
    if (!bytes || fseek(fp, 0, SEEK_SET) != 0 || fread(bytes, 1, (size_t)len, fp) != (size_t)len) {
        fprintf(stderr, "board_dump: cannot read %s\n", path);
        return NULL;
    }
    fclose(fp);
    rt_feed *f = rt_feed_decode(bytes, (size_t)len, err, sizeof err);
    free(bytes);
    rt_overlay *rt = f ? rt_overlay_build(f, ds, dataset_instant(ds, day, 12 * 3600), NULL) : NULL;
    if (!rt) fprintf(stderr, "board_dump: %s: %s\n", path, f ? "out of memory" : err);
    rt_feed_free(f);
    return rt;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: board_dump DATA_DIR --rt FEED.pb --date YYYYMMDD [--boards N] [--seed S]\n");
        return 2;
    }
    int n = 20000;
    const char *rt_path = NULL, *date_arg = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--boards") == 0) n = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0) g_rng = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--rt") == 0) rt_path = argv[i + 1];
        else if (strcmp(argv[i], "--date") == 0) date_arg = argv[i + 1];
    }
    int32_t day;
    if (!rt_path || !date_arg || !rt_parse_date(date_arg, &day)) {
        fprintf(stderr, "board_dump: --rt FEED.pb and --date YYYYMMDD are needed\n");
        return 2;
    }
    char err[512];
    dataset *ds = dataset_open(argv[1], err, sizeof err);
    if (!ds) {
        fprintf(stderr, "board_dump: %s\n", err);
        return 1;
    }
    rt_overlay *rt = overlay_of(rt_path, ds, day);
    if (!rt) return 1;
    dataset_counts c;
    dataset_get_counts(ds, &c);
    api_thread *t = api_thread_new();
    json_writer w;
    json_init(&w);
    static const char *const kinds[] = {"departures", "departures", "arrivals", "both"};
    for (int i = 0; i < n; i++) {
        stop_info si;
        uint32_t s;
        do {
            s = rnd() % c.stops;
            dataset_stop(ds, s, &si);
        } while (si.location_type != 0 && si.location_type != 1);
        char lat[32], lon[32], when[32], limit[16], window[16], radius[16];
        snprintf(lat, sizeof lat, "%.6f", si.lat + ((double)rnd() / 2147483648.0 - 0.5) * 0.006);
        snprintf(lon, sizeof lon, "%.6f", si.lon + ((double)rnd() / 2147483648.0 - 0.5) * 0.008);
        rfc3339_format_utc(dataset_instant(ds, day, 4 * 3600 + rnd() % (22 * 3600)), when);
        snprintf(limit, sizeof limit, "%u", 1 + rnd() % 60);
        snprintf(window, sizeof window, "%u", 5 + rnd() % 116);
        snprintf(radius, sizeof radius, "%u", 100 + rnd() % 901);
        const char *kind = kinds[rnd() % 4];
        bool wheelchair = rnd() % 8 == 0, scheduled = rnd() % 8 == 0, nearby = rnd() % 2 == 0;
        api_param params[16];
        int np = 0;
        if (nearby) {
            params[np++] = (api_param){"lat", lat};
            params[np++] = (api_param){"lon", lon};
            params[np++] = (api_param){"radius", radius};
        }
        params[np++] = (api_param){"time", when};
        params[np++] = (api_param){"limit", limit};
        params[np++] = (api_param){"window", window};
        params[np++] = (api_param){"kind", kind};
        if (wheelchair) params[np++] = (api_param){"wheelchair", "1"};
        if (scheduled) params[np++] = (api_param){"realtime", "scheduled"};
        api_request req = {.params = params, .nparams = np, .id = nearby ? NULL : si.id, .now = 0, .realtime = rt};
        api_problem prob;
        int cache;
        json_reset(&w);
        int status = nearby ? api_departures(t, ds, &req, &w, &prob, &cache)
                            : api_stop_departures(t, ds, &req, &w, &prob, &cache);
        printf("#%d %s", i, nearby ? "nearby" : si.id);
        for (int k = 0; k < np; k++) printf(" %s=%s", params[k].key, params[k].value);
        printf("\n%d ", status);
        if (status == 200) fwrite(w.buf, 1, w.len, stdout);
        else printf("%s", prob.detail);
        printf("\n");
    }
    json_free(&w);
    rt_overlay_release(rt);
    api_thread_free(t);
    dataset_close(ds);
    return 0;
}
