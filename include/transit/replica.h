/* replica.h — `serve --replica-of URL`: the dataset taken from a primary (or
 * from a static mirror of `transitd export`) over HTTP.
 *
 * Why it exists: a second server used to work only on the first one's disk.
 * A replica has a data directory of its own, possibly empty, and a thread
 * that polls URL/v1/dataset (conditionally: an unchanged primary answers
 * 304), downloads a new version's files into a staging directory, resuming
 * with Range requests from the bytes it already has, verifies every SHA-256
 * against the manifest, and only then installs and activates the version
 * with the importer's atomic steps (datadir.h). The server's follower maps
 * it within a second; until then the old version is served. A truncated,
 * corrupted or interrupted transfer never activates: a file that does not
 * hash right is dropped and fetched again on the next poll, and the failure
 * is counted.
 */
#ifndef TRANSIT_REPLICA_H
#define TRANSIT_REPLICA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transit/serving.h"

typedef struct replica replica;

/* What /readyz and /metrics show of a replica. */
typedef struct replica_status {
    const char *primary;          /* the URL, as given */
    char offered[16];             /* the version the primary's manifest names, or "" */
    char installed[16];           /* the newest version this replica activated, or "" */
    int64_t last_contact;         /* Unix seconds of the last answer from the primary, or 0 */
    int64_t last_poll;            /* Unix seconds of the last poll */
    int64_t live_checked;         /* Unix seconds the primary's alerts were last confirmed (200 or 304) */
    int64_t live_generation;      /* this replica's alert generation: one more per change taken */
    uint64_t polls, polls_failed; /* manifest polls, and those that got no usable answer */
    uint64_t versions_installed;
    uint64_t transfers_failed;    /* files refused (size or SHA-256) or cut off */
    uint64_t bytes_fetched;       /* file bytes received */
    uint64_t bytes_resumed;       /* bytes a transfer did not fetch again thanks to Range */
    char last_error[256];         /* "" when the last poll went well */
} replica_status;

/* Starts the polling thread for data directory data_dir (created when
 * missing) and primary URL (http:// or https://, no trailing path needed),
 * interval_s between polls; and, with a serving state, a second thread that
 * mirrors the primary's live state into it every 0.5 s: its alerts
 * (GET /v1/alerts, conditional) and, when its /readyz says it has realtime,
 * its trip updates and vehicle positions (GET /gtfs-rt/trip-updates.pb and
 * /gtfs-rt/vehicle-positions.pb, conditional), which become this server's
 * two realtime sources. NULL with err. */
replica *replica_start(serving *state, const char *data_dir, const char *url, unsigned interval_s,
                       char *err, size_t cap);
/* Stops the thread (an ongoing transfer is cut; it resumes on the next
 * start) and frees r. */
void replica_stop(replica *r);

void replica_get_status(replica *r, replica_status *out);

/* Prometheus text of the counters, like snprintf. */
size_t replica_render_metrics(replica *r, char *out, size_t cap);

/* One poll, synchronously (tests and the thread). 1 when a new version was
 * activated, 0 when nothing changed, -1 on failure (status.last_error). */
int replica_poll_once(replica *r);

#endif
