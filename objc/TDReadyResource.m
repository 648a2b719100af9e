/* TDReadyResource.m — GET /readyz: readiness. 200 with the dataset version
 * and its feed_validity while a dataset is being served (plus a warning when
 * the feed has expired or is not in effect yet: the server still answers, so
 * it stays ready, and the warning says what is wrong); 503 (problem+json,
 * Retry-After) before the first one is loaded (`serve --wait-for-data`).
 *
 * Why it exists: a load balancer should send traffic only to a server that
 * can answer /v1, which is a different question from "is it alive".
 */
#import "TDResource.h"
#import "TDServer.h"

#include "transit/feed_validity.h"

@interface TDReadyResource : TDResource
@end

@implementation TDReadyResource

- (void)get:(TDRequest *)req
{
    dataset *ds = td_server_acquire_dataset(server);
    if (!ds) {
        td_request_problem(req, 503, NULL, "no dataset is loaded yet");
        return;
    }
    json_object_begin(req->out);
    json_kv_string(req->out, "status", "ready");
    json_kv_string(req->out, "dataset_version", dataset_version(ds));
    feed_validity validity;
    feed_validity_at(ds, req->now, &validity);
    feed_validity_write(req->out, &validity);
    char warning[256];
    if (feed_validity_warning(&validity, warning, sizeof warning))
        json_kv_string(req->out, "warning", warning);
    json_object_end(req->out);
    dataset_release(ds);
}

@end
