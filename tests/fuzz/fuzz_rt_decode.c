/* fuzz_rt_decode.c — libFuzzer target for the GTFS-Realtime decoder path.
 *
 * Why it exists: the decoder reads bytes from the network. Every input must
 * either decode or fail with a message, never crash, overrun or leak; a feed
 * that decodes must also survive conversion of its alerts (rt_alerts.c),
 * which re-checks them with the alerts API's rules, and being resolved
 * against a small timetable (rt_overlay.c: matching, propagation, ADDED
 * trips) and shown in departures (rt_merge.c and the row writer), as a
 * server does with every feed it polls; its vehicle positions too: the
 * served set (rt_vehicles.c: matching, staleness, JSON), /v1/vehicles with
 * a box and a route, the rows' vehicles, and the vehicle-positions export
 * decoded again. The timetable is built once, from
 * a feed written into $TMPDIR, with the stop and trip ids the seeds use.
 * `make fuzz` builds build/fuzz/fuzz_rt_decode; run it with a corpus dir:
 *   build/fuzz/fuzz_rt_decode -max_total_time=60 build/fuzz/corpus/rt_decode
 * `make fuzz-smoke` (run by CI) runs every target briefly, this one from
 * the seeds tests/fuzz/make_seeds.py writes.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "transit/api.h"
#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/json_writer.h"
#include "transit/query.h"
#include "transit/rt_alerts.h"
#include "transit/rt_encode.h"
#include "transit/rt_feed.h"
#include "transit/rt_overlay.h"
#include "transit/rt_vehicles.h"
#include "transit/timetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const FIXTURE[][2] = {
    {"agency.txt", "agency_id,agency_name,agency_url,agency_timezone\n"
                   "A1,Fuzz,https://example.com,America/New_York\n"},
    {"stops.txt", "stop_id,stop_name,stop_lat,stop_lon,location_type,parent_station\n"
                  "STA,Station,40.0,-74.0,1,\nP1,Platform,40.0,-74.0,0,STA\n"
                  "S1,One,40.0005,-74.0,0,\nS2,Two,40.001,-74.0,0,\nS3,Three,40.002,-74.0,0,\n"
                  "S4,Four,40.003,-74.0,0,\n"},
    {"routes.txt", "route_id,agency_id,route_short_name,route_long_name,route_type\n"
                   "R1,A1,1,Main,3\nR2,A1,2,Night,3\n"},
    {"trips.txt", "route_id,service_id,trip_id,direction_id\nR1,WK,T1,0\nR2,WK,T2,1\nR1,WK,T3,0\n"
                  "R1,WK,F1,1\n"},
    {"stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                       "T1,08:00:00,08:00:00,P1,1\nT1,08:10:00,08:11:00,S2,2\nT1,08:20:00,08:20:00,S3,3\n"
                       "T1,08:30:00,08:30:00,S4,4\n"
                       "T2,25:30:00,25:30:00,S2,5\nT2,25:40:00,25:40:00,S3,6\n"
                       "T3,09:00:00,09:00:00,S1,1\nT3,09:10:00,09:10:00,S2,2\nT3,09:20:00,09:20:00,P1,3\n"
                       "F1,06:00:00,06:00:00,S1,1\nF1,06:05:00,06:05:00,S2,2\n"},
    {"frequencies.txt", "trip_id,start_time,end_time,headway_secs\nF1,07:00:00,09:00:00,1200\n"},
    {"calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,"
                     "end_date\nWK,1,1,1,1,1,0,0,20261026,20261113\n"},
};

static dataset *g_ds;
static api_thread *g_thread;
static char g_dir[512];

/* Empties and removes the fixture's folder: once the dataset is open it
 * needs none of its files by name (timetable.bin stays mapped). */
static void remove_fixture(void)
{
    char path[800];
    DIR *dir = opendir(g_dir);
    if (dir) {
        for (struct dirent *e; (e = readdir(dir));) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
            unlink(path);
        }
        closedir(dir);
    }
    rmdir(g_dir);
}

/* The timetable every decoded feed is resolved against; exits when it
 * cannot be built (the harness, not the input, is broken then). */
static void open_fixture(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/fuzz-rt-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    char err[512], path[700];
    if (!mkdtemp(g_dir)) {
        perror("fuzz_rt_decode: mkdtemp");
        exit(1);
    }
    for (size_t i = 0; i < sizeof FIXTURE / sizeof FIXTURE[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, FIXTURE[i][0]);
        FILE *f = fopen(path, "w");
        if (!f || fputs(FIXTURE[i][1], f) < 0 || fclose(f) != 0) {
            perror(path);
            exit(1);
        }
    }
    feed_t *feed = feed_open(g_dir, err, sizeof err);
    diag d;
    diag_init(&d);
    timetable_stats st;
    snprintf(path, sizeof path, "%s/timetable.bin", g_dir);
    int rc = feed ? timetable_build(feed, path, NULL, &d, &st, err, sizeof err) : -1;
    feed_close(feed);
    diag_destroy(&d);
    if (rc == 0)
        g_ds = dataset_open(g_dir, err, sizeof err);
    remove_fixture();
    if (!g_ds || !(g_thread = api_thread_new())) {
        fprintf(stderr, "fuzz_rt_decode: the fixture timetable: %s\n", err);
        exit(1);
    }
}

/* /v1/vehicles with the overlay's vehicles, unfiltered and filtered;
 * every body must parse as JSON. */
static void answer_vehicles(const rt_overlay *o)
{
    api_param params[][2] = {{{"limit", "2"}, {"after", ""}},
                             {{"bbox", "-74.01,39.99,-73.99,40.01"}, {"route", "R1"}}};
    api_problem prob;
    int cache;
    json_writer w;
    for (int i = 0; i < 2; i++) {
        api_request req = {.params = params[i], .nparams = i ? 2 : 1, .realtime = o};
        json_init(&w);
        if (api_vehicles(g_thread, g_ds, &req, &w, &prob, &cache) == 200) {
            json_error_t e;
            json_t *parsed = json_loadb(w.buf, w.len, 0, &e);
            if (!parsed) {
                fprintf(stderr, "fuzz_rt_decode: a vehicles body is not JSON (%s): %.*s\n", e.text, (int)w.len,
                        w.buf);
                __builtin_trap();
            }
            json_decref(parsed);
        }
        json_free(&w);
    }
}

/* The body of a 200 must parse as JSON. */
static void check_json(const json_writer *w, const char *what)
{
    json_error_t e;
    json_t *parsed = json_loadb(w->buf, w->len, 0, &e);
    if (!parsed) {
        fprintf(stderr, "fuzz_rt_decode: a %s body is not JSON (%s at %d): %.*s\n", what, e.text, e.position,
                (int)w->len, w->buf);
        __builtin_trap();
    }
    json_decref(parsed);
}

/* /v1/trips/{id} of the realtime-only trips (NEW, DUPLICATED copies,
 * REPLACEMENTs) the overlay holds, and of ids the seeds use: a timetable
 * trip's instance of the seeds' day too (its TripProperties, platform
 * changes and vehicle). */
static void answer_trips(const rt_overlay *o)
{
    static const char *const ids[] = {"X1", "D1", "T1", "rt:x2", "T1", "T3"};
    api_param on_day[] = {{"date", "2026-11-02"}};
    api_problem prob;
    int cache;
    json_writer w;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        api_request req = {.id = ids[i], .realtime = o, .now = 1793624400, .params = i >= 4 ? on_day : NULL,
                           .nparams = i >= 4 ? 1 : 0};
        json_init(&w);
        if (api_trip(g_thread, g_ds, &req, &w, &prob, &cache) == 200)
            check_json(&w, "trip");
        json_free(&w);
    }
}

/* Departures with the overlay, as GET /v1/stops/{id}/departures and
 * /v1/departures answer them, by predicted and by scheduled time, of each
 * kind, with wheelchair=1 too (rows a platform change moved are chosen
 * apart there); every body must parse as JSON. */
static void answer_departures(const rt_overlay *o)
{
    static const char *const stops[] = {"STA", "P1", "S1", "S2", "S3"};
    static const char *const modes[][3] = {{"predicted", "departures", "0"}, {"scheduled", "departures", "0"},
                                           {"predicted", "both", "1"}, {"scheduled", "arrivals", "1"}};
    api_problem prob;
    int cache;
    json_writer w;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        api_param params[] = {{"time", "2026-11-02T06:00:00-05:00"}, {"window", "1440"}, {"limit", "7"},
                              {"realtime", modes[m][0]}, {"kind", modes[m][1]}, {"wheelchair", modes[m][2]},
                              {"lat", "40.001"}, {"lon", "-74.0"}, {"radius", "300"}};
        for (size_t i = 0; i <= sizeof stops / sizeof stops[0]; i++) {
            bool nearby = i == sizeof stops / sizeof stops[0];
            api_request req = {.params = params, .nparams = nearby ? 9 : 6,
                               .id = nearby ? NULL : stops[i], .realtime = o};
            json_init(&w);
            int status = nearby ? api_departures(g_thread, g_ds, &req, &w, &prob, &cache)
                                : api_stop_departures(g_thread, g_ds, &req, &w, &prob, &cache);
            if (status == 200)
                check_json(&w, "departures");
            json_free(&w);
        }
    }
}

static bool same_event(const rt_event *a, const rt_event *b)
{
    return a->present == b->present && a->has_delay == b->has_delay && a->has_time == b->has_time &&
           a->has_uncertainty == b->has_uncertainty && a->delay == b->delay && a->time == b->time &&
           a->uncertainty == b->uncertainty;
}

/* The poller's decode (stops packed) reads as the full one: every stop
 * unpacked the same, and the same trip-updates export. */
static void check_packed(const rt_feed *f, const uint8_t *data, size_t size)
{
    char err[256];
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return;
    if (size) memcpy(copy, data, size);
    rt_feed *p = rt_feed_decode_packed(copy, size, err, sizeof err);
    free(copy);
    if (!p || p->trip_update_count != f->trip_update_count) __builtin_trap();
    for (uint32_t i = 0; i < f->trip_update_count; i++) {
        const rt_trip_update *a = &f->trip_updates[i], *b = &p->trip_updates[i];
        if (a->stop_count != b->stop_count) __builtin_trap();
        rt_stop_update *room = malloc(((size_t)b->stop_count + 1) * sizeof *room);
        if (!room) break;
        const rt_stop_update *bs = rt_trip_update_stops(b, room);
        for (uint32_t k = 0; k < a->stop_count; k++) {
            const rt_stop_update *x = &a->stops[k], *y = &bs[k];
            if (x->has_stop_sequence != y->has_stop_sequence || x->stop_sequence != y->stop_sequence ||
                x->relationship != y->relationship || x->departure_occupancy != y->departure_occupancy ||
                !x->stop_id != !y->stop_id || (x->stop_id && strcmp(x->stop_id, y->stop_id) != 0) ||
                !x->assigned_stop_id != !y->assigned_stop_id ||
                (x->assigned_stop_id && strcmp(x->assigned_stop_id, y->assigned_stop_id) != 0) ||
                !same_event(&x->arrival, &y->arrival) || !same_event(&x->departure, &y->departure))
                __builtin_trap();
        }
        free(room);
    }
    uint8_t *pa = NULL, *pb = NULL;
    size_t la = 0, lb = 0;
    int ra = rt_encode_trip_updates(f, 1, &pa, &la), rb = rt_encode_trip_updates(p, 1, &pb, &lb);
    if (ra != rb || la != lb || (ra == 0 && la && memcmp(pa, pb, la) != 0)) __builtin_trap();
    free(pa);
    free(pb);
    rt_feed_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    rt_feed *f = rt_feed_decode(data, size, err, sizeof err);
    if (!f) {
        if (!err[0])
            __builtin_trap();   /* a failure always says why */
        return 0;
    }
    /* walk what was decoded, so a dangling pointer shows */
    size_t sum = 0;
    for (uint32_t i = 0; i < f->trip_update_count; i++) {
        const rt_trip_update *t = &f->trip_updates[i];
        sum += t->trip_id ? strlen(t->trip_id) : 0;
        for (uint32_t k = 0; k < t->stop_count; k++)
            sum += t->stops[k].stop_id ? strlen(t->stops[k].stop_id) : t->stops[k].stop_sequence;
    }
    check_packed(f, data, size);
    if (!g_ds)
        open_fixture();
    rt_overlay_stats stats;
    /* now: Monday 2026-11-02 08:00 EST, for updates without a start_date */
    rt_overlay *o = rt_overlay_build(f, g_ds, 1793624400, &stats);
    if (o) {
        rt_vehicles_stats vstats;
        rt_vehicles *v = rt_vehicles_build(f->vehicles, f->vehicle_count, g_ds, 1793624400, 600, &vstats);
        if (v) {
            /* what the export writes decodes again, with as many vehicles */
            uint8_t *pb = NULL;
            size_t len = 0;
            if (rt_encode_vehicles(v, 1793624400, &pb, &len) == 0) {
                rt_feed *again = rt_feed_decode(pb, len, err, sizeof err);
                if (!again || again->vehicle_count != rt_vehicles_count(v))
                    __builtin_trap();
                rt_feed_free(again);
                free(pb);
            }
        }
        rt_overlay_set_vehicles(o, v);
        answer_departures(o);
        answer_vehicles(o);
        answer_trips(o);
        rt_overlay_release(o);
    }
    alert **alerts = NULL;
    uint32_t rejected = 0;
    long n = rt_alerts_from_feed(f, 0, &alerts, &rejected, err, sizeof err);
    if (n > 0)
        rt_alerts_free(alerts, (uint32_t)n);
    else if (n == 0)
        rt_alerts_free(alerts, 0);
    rt_feed_free(f);
    return sum == (size_t)-1;
}
