/* client_example.c — the README's "Using transitd offline on a phone" example,
 * compiled and run by tests/api/test_client.py, so the README shows only code
 * that builds and works.
 *
 * Why it exists: it is the call sequence an app follows, with files in place
 * of the network: the "server" is a directory written by `transitd export`
 * (OUT/v1/dataset/index.json and OUT/v1/dataset/VERSION/FILE), read where an
 * app would GET. Such static mirrors have no patches, so delta steps get 404
 * and the library falls back to whole files, as it would with a CDN.
 *
 * usage: client_example EXPORT_DIR SNAPSHOT_DIR LAT LON
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transit/client.h"

/* What the app's HTTP client does: here, read EXPORT_DIR + path. */
static char *get(const char *server, const char *path, size_t *length, int *status)
{
    char file[4096];
    snprintf(file, sizeof file, "%s%.*s", server, (int)strcspn(path, "?"), path);
    if (strcmp(path, "/v1/dataset?profile=phone") == 0)
        snprintf(file, sizeof file, "%s/v1/dataset/index.json", server);
    FILE *f = strchr(path, '?') && strstr(path, "from=") ? NULL : fopen(file, "rb");
    if (!f) {
        *status = 404;
        *length = 0;
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *body = malloc((size_t)size + 1);
    *length = body ? fread(body, 1, (size_t)size, f) : 0;
    fclose(f);
    *status = body ? 200 : 500;
    return body;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: client_example EXPORT_DIR SNAPSHOT_DIR LAT LON\n");
        return 2;
    }
    const char *server = argv[1], *dir = argv[2];
    transit_error err;

    /* 1. update the snapshot: the manifest, then each step the library asks for */
    size_t length;
    int status;
    char *manifest = get(server, "/v1/dataset?profile=phone", &length, &status);
    transit_update *u = manifest ? transit_update_begin(dir, manifest, length, &err) : NULL;
    free(manifest);
    if (!u) {
        fprintf(stderr, "update: %s\n", manifest ? err.message : "no manifest");
        return 1;
    }
    transit_step step;
    while (transit_update_next(u, &step) == 1) {
        char *body = get(server, step.path, &length, &status);
        if (body && transit_update_write(u, body, length, &err) != 0)
            status = 0;
        free(body);
        if (transit_update_end(u, status, &err) != 0) {
            fprintf(stderr, "update: %s\n", err.message);
            transit_update_free(u);
            return 1;
        }
    }
    if (transit_update_commit(u, &err) != 0) {
        fprintf(stderr, "update: %s\n", err.message);
        transit_update_free(u);
        return 1;
    }
    transit_update_free(u);

    /* 2. open it and ask what leaves near the rider in the next hour */
    transit_snapshot *s = transit_open(dir, &err);
    if (!s) {
        fprintf(stderr, "open: %s\n", err.message);
        return 1;
    }
    transit_departure rows[10];
    uint32_t count = 0;
    bool truncated = false;
    if (transit_nearby_departures(s, atof(argv[3]), atof(argv[4]), 500, TRANSIT_DEPARTURES,
                                  0 /* now */, 3600, 10, rows, &count, &truncated, &err) != 0) {
        fprintf(stderr, "departures: %s %s\n", err.param, err.message);
        transit_close(s);
        return 1;
    }
    for (uint32_t i = 0; i < count; i++)
        printf("%" PRId64 " %s %s from %s\n", rows[i].time, rows[i].route_short_name,
               rows[i].headsign, rows[i].stop_name);

    /* 3. or the server's very JSON, for an app that already parses it */
    char *json = NULL;
    status = transit_get_json(s, "/v1/stops/nearby?lat=40.65&lon=-73.95&limit=3", 0, &json, &length);
    if (json)
        printf("%d %s\n", status, json);
    transit_free(json);
    transit_close(s);
    return 0;
}
