/* TDMetricsResource.m — GET /metrics: Prometheus text exposition.
 *
 * Why it exists: request counts by route and status, latency histograms,
 * the dataset version, the days until the feed expires and reload counts,
 * the alerts stored and the live store's generation, and the compressed-body
 * cache's hits, misses and size, for scraping. The counters are the lock-free
 * ones in src/http/metrics.c and encoded_cache.c; this only renders them into
 * the thread's text buffer.
 */
#import "TDResource.h"
#import "TDServer.h"
#import "board_streams.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "transit/feed_validity.h"

@interface TDMetricsResource : TDResource
@end

@implementation TDMetricsResource

- (void)get:(TDRequest *)req
{
    char version[64] = "";
    dataset *ds = serving_acquire_dataset(server->state);
    if (ds) {
        snprintf(version, sizeof version, "%s", dataset_version(ds));
        feed_validity validity;
        feed_validity_at(ds, (int64_t)time(NULL), &validity);
        metrics_set_feed_days_until_expiry(server->counters, validity.days_until_expiry);
        dataset_release(ds);
    }
    size_t need = metrics_render(server->counters, ds ? version : NULL, req->text, req->textCap);
    if (need >= req->textCap) {
        if (!td_request_reserve_text(req, need + 1)) {
            td_request_problem(req, 500, NULL, "out of memory while rendering metrics");
            return;
        }
        need = metrics_render(server->counters, ds ? version : NULL, req->text, req->textCap);
    }
    /* the alerts: how many are stored, how many are active now, the generation */
    alert_view *v = serving_acquire_alerts(server->state);
    uint32_t stored = v ? alert_view_count(v) : 0, active = 0;
    int64_t now = (int64_t)time(NULL);
    for (uint32_t i = 0; i < stored; i++)
        active += alert_active_at(alert_view_at(v, i), now);
    char tail[512];
    int n = snprintf(tail, sizeof tail,
                     "# HELP transitd_alerts Service alerts in the live store.\n"
                     "# TYPE transitd_alerts gauge\n"
                     "transitd_alerts %u\n"
                     "# HELP transitd_alerts_active Service alerts active now.\n"
                     "# TYPE transitd_alerts_active gauge\n"
                     "transitd_alerts_active %u\n"
                     "# HELP transitd_alerts_generation The live store's write generation.\n"
                     "# TYPE transitd_alerts_generation gauge\n"
                     "transitd_alerts_generation %lld\n",
                     stored, active, (long long)(v ? alert_view_generation(v) : 0));
    if (v)
        alert_view_release(v);
    if (!td_request_reserve_text(req, need + (size_t)n + 1)) {
        td_request_problem(req, 500, NULL, "out of memory while rendering metrics");
        return;
    }
    memcpy(req->text + need, tail, (size_t)n + 1);
    need += (size_t)n;
    /* the GTFS-Realtime source: polls, failures (the last good feed stays), matches */
    if (serving_realtime(server->state)) {
        size_t more = rt_ingest_render_metrics(serving_realtime(server->state), now, req->text + need, req->textCap - need);
        if (need + more >= req->textCap) {
            if (!td_request_reserve_text(req, need + more + 1)) {
                td_request_problem(req, 500, NULL, "out of memory while rendering metrics");
                return;
            }
            more = rt_ingest_render_metrics(serving_realtime(server->state), now, req->text + need, req->textCap - need);
        }
        need += more;
    }
    /* the compressed-body cache: hits, misses, stores, evictions, what it holds */
    size_t more = encoded_cache_render_metrics(server->compressedBodies, req->text + need, req->textCap - need);
    if (need + more >= req->textCap) {
        if (!td_request_reserve_text(req, need + more + 1)) {
            td_request_problem(req, 500, NULL, "out of memory while rendering metrics");
            return;
        }
        more = encoded_cache_render_metrics(server->compressedBodies, req->text + need, req->textCap - need);
    }
    need += more;
    /* HTTPS: handshakes by version, failures, certificate reloads and expiry */
    if (server->tls) {
        more = tls_server_render_metrics(server->tls, now, req->text + need, req->textCap - need);
        if (need + more >= req->textCap) {
            if (!td_request_reserve_text(req, need + more + 1)) {
                td_request_problem(req, 500, NULL, "out of memory while rendering metrics");
                return;
            }
            more = tls_server_render_metrics(server->tls, now, req->text + need, req->textCap - need);
        }
        need += more;
    }
    /* a replica: polls, versions taken, transfer failures, bytes */
    if (server->replica) {
        more = replica_render_metrics(server->replica, req->text + need, req->textCap - need);
        if (need + more >= req->textCap) {
            if (!td_request_reserve_text(req, need + more + 1)) {
                td_request_problem(req, 500, NULL, "out of memory while rendering metrics");
                return;
            }
            more = replica_render_metrics(server->replica, req->text + need, req->textCap - need);
        }
        need += more;
    }
    /* pushed boards: streams open, refused, events sent and dropped */
    if (server->streams) {
        more = board_streams_render_metrics(server->streams, req->text + need, req->textCap - need);
        if (need + more >= req->textCap) {
            if (!td_request_reserve_text(req, need + more + 1)) {
                td_request_problem(req, 500, NULL, "out of memory while rendering metrics");
                return;
            }
            more = board_streams_render_metrics(server->streams, req->text + need, req->textCap - need);
        }
        need += more;
    }
    req->responseBody = req->text;
    req->responseLength = need;
    req->contentType = "text/plain; version=0.0.4; charset=utf-8";
}

@end
