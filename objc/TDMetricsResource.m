/* TDMetricsResource.m — GET /metrics: Prometheus text exposition.
 *
 * Why it exists: request counts by route and status, latency histograms,
 * the dataset version, the days until the feed expires and reload counts,
 * for scraping. The counters are the lock-free ones in src/metrics.c; this
 * only renders them into the thread's text buffer.
 */
#import "TDResource.h"
#import "TDServer.h"

#include <stdio.h>
#include <time.h>

#include "transit/feed_validity.h"

@interface TDMetricsResource : TDResource
@end

@implementation TDMetricsResource

- (void)get:(TDRequest *)req
{
    char version[64] = "";
    dataset *ds = td_server_acquire_dataset(server);
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
    req->responseBody = req->text;
    req->responseLength = need;
    req->contentType = "text/plain; version=0.0.4; charset=utf-8";
}

@end
