/* TDGtfsRtResource.m — GET /gtfs-rt/trip-updates.pb, /gtfs-rt/vehicle-positions.pb
 * and /gtfs-rt/alerts.pb.
 *
 * Why it exists: replicas behind a load balancer read one primary's live
 * data with the ingest code they already have (`serve --gtfs-rt
 * http://primary/gtfs-rt/trip-updates.pb`), and any GTFS-Realtime consumer
 * can read it too. Trip updates are the last good feed's (an empty
 * FeedMessage without --gtfs-rt); alerts are every alert this server shows,
 * written through /v1/alerts or from its feed (rt_encode.h); vehicle positions
 * are the vehicles it shows (rt_vehicles.h: merged, stale ones left out).
 * `?format=json` answers the same message as JSON. The ETag follows the
 * alert generation and the realtime overlay, like departures.
 */
#import "TDResource.h"
#import "TDServer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transit/rt_encode.h"
#include "transit/rt_vehicles.h"

@interface TDGtfsRtResource : TDResource
@end

@implementation TDGtfsRtResource

+ (BOOL)showsAlerts
{
    return YES;
}

- (void)get:(TDRequest *)req
{
    bool json = false;
    for (int i = 0; i < req->nparams; i++) {
        const api_param *p = &req->params[i];
        if (strcmp(p->key, "format") == 0 && (strcmp(p->value, "json") == 0 || strcmp(p->value, "pb") == 0)) {
            json = strcmp(p->value, "json") == 0;
        } else if (strcmp(p->key, "format") == 0) {
            td_request_problem(req, 400, "format", "format must be pb or json, got '%.60s'", p->value);
            return;
        } else {
            td_request_problem(req, 400, p->key, "unknown parameter '%.60s' (only format)", p->key);
            return;
        }
    }
    int64_t now = (int64_t)time(NULL);
    uint8_t *pb = NULL;
    size_t len = 0;
    int rc;
    if (strstr(req->path, "vehicle-positions")) {
        /* the vehicles this server shows (stale ones left out), from the
         * request's overlay; none before the first dataset or without --gtfs-rt */
        const rt_vehicles *v = req->realtime ? rt_overlay_vehicles(req->realtime) : NULL;
        uint64_t stamp = req->realtime && rt_overlay_feed_timestamp(req->realtime)
                             ? rt_overlay_feed_timestamp(req->realtime) : (uint64_t)now;
        rc = rt_encode_vehicles(v, stamp, &pb, &len);
    } else if (strstr(req->path, "trip-updates")) {
        rc = serving_realtime(server->state) ? rt_ingest_encode_trip_updates(serving_realtime(server->state), now, &pb, &len)
                              : rt_encode_trip_updates(NULL, (uint64_t)now, &pb, &len);
    } else {
        uint32_t n = req->alerts ? alert_view_count(req->alerts) : 0;
        const alert **list = malloc((n ? n : 1) * sizeof *list);
        rc = -1;
        if (list) {
            for (uint32_t i = 0; i < n; i++)
                list[i] = alert_view_at(req->alerts, i);
            rc = rt_encode_alerts(list, n, (uint64_t)now, &pb, &len);
            free(list);
        }
    }
    char *text = NULL;
    if (rc == 0 && json && !(text = rt_feed_message_json(pb, len, &len)))
        rc = -1;
    const void *body = json ? (const void *)text : (const void *)pb;
    if (rc != 0 || !td_request_reserve_text(req, len + 1)) {
        free(pb);
        free(text);
        td_request_problem(req, 500, NULL, "out of memory encoding the GTFS-Realtime feed");
        return;
    }
    memcpy(req->text, body, len);
    free(pb);
    free(text);
    req->responseBody = req->text;
    req->responseLength = len;
    req->contentType = json ? "application/json; charset=utf-8" : "application/x-protobuf";
    req->cacheSeconds = 0;
}

@end
