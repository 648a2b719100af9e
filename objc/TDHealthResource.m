/* TDHealthResource.m — GET /healthz: liveness. 200 whenever the process
 * answers HTTP at all, dataset or not.
 *
 * Why it exists: orchestrators poll it constantly, so it is also the
 * cheapest answer the server has: one response object built at start-up and
 * queued again and again (libmicrohttpd reference-counts it), no allocation
 * per request.
 */
#import "TDResource.h"
#import "TDServer.h"

#include <microhttpd.h>

static const char HEALTH_BODY[] = "{\"status\":\"ok\"}\n";

@interface TDHealthResource : TDResource {
    struct MHD_Response *response;
}
@end

@implementation TDHealthResource

- (instancetype)initWithServer:(TDServer *)aServer
{
    if ((self = [super initWithServer:aServer]) == nil)
        return nil;
    response = MHD_create_response_from_buffer(sizeof HEALTH_BODY - 1, (void *)HEALTH_BODY,
                                               MHD_RESPMEM_PERSISTENT);
    if (!response) {
        [self release];
        return nil;
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "application/json; charset=utf-8");
    MHD_add_response_header(response, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(response, TD_HEADER_NOSNIFF, "nosniff");
    return self;
}

- (void)dealloc
{
    if (response)
        MHD_destroy_response(response);
    [super dealloc];
}

- (void)get:(TDRequest *)req
{
    req->sharedResponse = response;
    /* the same bytes, for when the server must add headers (shutting down) */
    req->responseBody = HEALTH_BODY;
    req->responseLength = sizeof HEALTH_BODY - 1;
    req->responsePersistent = true;
}

@end
