/* TDReadyResource.m — GET /readyz: readiness. 200 with the dataset version
 * while a dataset is being served; 503 (problem+json, Retry-After) before the
 * first one is loaded (`serve --wait-for-data`).
 *
 * Why it exists: a load balancer should send traffic only to a server that
 * can answer /v1, which is a different question from "is it alive".
 */
#import "TDResource.h"
#import "TDServer.h"

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
    json_object_end(req->out);
    dataset_release(ds);
}

@end
