/* client_answer.c — answers GET paths from a snapshot with libtransit_client.a
 * alone, for the equivalence tests (tests/api/test_client.py).
 *
 * Why it exists: the tests compare, byte for byte, what the phone's library
 * answers with what the HTTP server sends. This program is what an app would
 * be: it includes only transit/client.h and links only the client library
 * and its few system libraries, so building it also proves that nothing of
 * the server came along.
 *
 * usage: client_answer DIR < requests
 * Each request line is "NOW PATH" (NOW in Unix seconds); each answer is
 * "STATUS LENGTH\n" followed by LENGTH bytes of JSON and "\n".
 * `client_answer DIR --structs LAT LON NOW` prints what the struct calls give
 * near a point instead, one line per row.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/client.h"

static int structs(transit_snapshot *s, double lat, double lon, int64_t now)
{
    transit_stop stops[20];
    transit_departure rows[50];
    uint32_t n = 0;
    bool truncated = false;
    transit_error err;
    if (transit_nearby_stops(s, lat, lon, 500, 20, stops, &n, &truncated, &err) != 0) {
        fprintf(stderr, "nearby stops: %d %s: %s\n", err.status, err.param, err.message);
        return 1;
    }
    for (uint32_t i = 0; i < n; i++)
        printf("stop %s %.0f %s\n", stops[i].id, stops[i].distance_m, stops[i].name);
    if (transit_nearby_departures(s, lat, lon, 500, TRANSIT_DEPARTURES, now, 3600, 50, rows, &n,
                                  &truncated, &err) != 0) {
        fprintf(stderr, "nearby departures: %d %s: %s\n", err.status, err.param, err.message);
        return 1;
    }
    for (uint32_t i = 0; i < n; i++)
        printf("departure %" PRId64 " %s %s %s %d\n", rows[i].time, rows[i].stop_id, rows[i].trip_id,
               rows[i].route_id, rows[i].service_date);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: client_answer DIR [--structs LAT LON NOW] < requests\n");
        return 2;
    }
    transit_error err;
    transit_snapshot *s = transit_open(argv[1], &err);
    if (!s) {
        fprintf(stderr, "client_answer: %s\n", err.message);
        return 1;
    }
    int rc = 0;
    if (argc == 6 && strcmp(argv[2], "--structs") == 0) {
        rc = structs(s, atof(argv[3]), atof(argv[4]), strtoll(argv[5], NULL, 10));
        transit_close(s);
        return rc;
    }
    char line[8192];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *space = strchr(line, ' ');
        if (!space)
            continue;
        *space = '\0';
        char *body = NULL;
        size_t len = 0;
        int status = transit_get_json(s, space + 1, strtoll(line, NULL, 10), &body, &len);
        if (!body) {
            rc = 1;
            break;
        }
        printf("%d %zu\n", status, len);
        fwrite(body, 1, len, stdout);
        putchar('\n');
        transit_free(body);
    }
    transit_close(s);
    return rc;
}
