/* fuzz_client_path.c — libFuzzer target for the client library's request
 * reader: transit_get_json takes a GET path with its query string, as an
 * app builds it from what a rider typed, and must answer every one with a
 * status and a JSON body (an answer or a problem), never crash or leak.
 *
 * Why it exists: the path is split, percent-decoded ('+' a space, as
 * libmicrohttpd does), routed to an api_* endpoint and its parameters
 * checked there, all of it on untrusted text. The snapshot is a two-route
 * timetable built once into $TMPDIR and opened the way the client opens
 * one (transit_open: trusted, with its .derived file written and mapped).
 * Seeds: tests/fuzz/seeds/client_path.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "transit/client.h"
#include "transit/diag.h"
#include "transit/feed.h"
#include "transit/timetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const FEED[][2] = {
    {"agency.txt", "agency_id,agency_name,agency_url,agency_timezone\nA,Bus,https://example.org,Europe/Rome\n"},
    {"stops.txt", "stop_id,stop_name,stop_lat,stop_lon\nA1,Piazza Uno,41.10,16.80\nA2,Via Due,41.101,16.801\n"
                  "A3,Corso Tre,41.102,16.802\n"},
    {"routes.txt", "route_id,agency_id,route_short_name,route_long_name,route_type\nL1,A,1,Linea,3\n"
                   "L2,A,2,Notte,3\n"},
    {"trips.txt", "route_id,service_id,trip_id,trip_headsign\nL1,D,t1,Centro\nL2,D,t2,Porto\n"},
    {"stop_times.txt", "trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                       "t1,07:00:00,07:00:00,A1,1\nt1,07:05:00,07:06:00,A2,2\nt1,07:10:00,07:10:00,A3,3\n"
                       "t2,23:50:00,23:50:00,A3,1\nt2,24:10:00,24:10:00,A1,2\n"},
    {"calendar.txt", "service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,start_date,end_date\n"
                     "D,1,1,1,1,1,1,1,20261101,20261231\n"},
};

static transit_snapshot *g_snapshot;

static void build_snapshot(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[700], err[512] = "";
    snprintf(dir, sizeof dir, "%s/fuzz-client-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("fuzz_client_path: mkdtemp");
        exit(1);
    }
    for (size_t i = 0; i < sizeof FEED / sizeof FEED[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, FEED[i][0]);
        FILE *f = fopen(path, "w");
        if (!f || fputs(FEED[i][1], f) < 0 || fclose(f) != 0) {
            perror(path);
            exit(1);
        }
    }
    feed_t *feed = feed_open(dir, err, sizeof err);
    diag d;
    diag_init(&d);
    timetable_stats st;
    snprintf(path, sizeof path, "%s/timetable.bin", dir);
    int rc = feed ? timetable_build(feed, path, NULL, &d, &st, err, sizeof err) : -1;
    feed_close(feed);
    diag_destroy(&d);
    transit_error e = {0};
    if (rc == 0)
        g_snapshot = transit_open(dir, &e);
    /* open, the snapshot needs none of its files by name (all mapped) */
    static const char *const written[] = {"timetable.bin", ".derived", ".readers.lock"};
    for (size_t i = 0; i < sizeof FEED / sizeof FEED[0] + 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, i < 3 ? written[i] : FEED[i - 3][0]);
        unlink(path);
    }
    rmdir(dir);
    if (!g_snapshot) {
        fprintf(stderr, "fuzz_client_path: the fixture: %s%s\n", err, e.message);
        exit(1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_snapshot)
        build_snapshot();
    if (size > 4096)
        return 0;
    char *path = malloc(size + 1);
    if (!path)
        return 0;
    memcpy(path, data, size);
    path[size] = '\0';   /* a NUL inside cuts the path, as a C string does */
    char *body = NULL;
    size_t len = 0;
    /* 2026-11-10T06:00Z: within the fixture's calendar */
    int status = transit_get_json(g_snapshot, path, 1794290400, &body, &len);
    if (!body || status < 200 || status > 599)
        abort();
    json_error_t e;
    json_t *parsed = json_loadb(body, len, 0, &e);
    if (!parsed) {
        fprintf(stderr, "fuzz_client_path: %d, not JSON (%s): %.*s\n", status, e.text, (int)len, body);
        abort();
    }
    json_decref(parsed);
    transit_free(body);
    free(path);
    return 0;
}
