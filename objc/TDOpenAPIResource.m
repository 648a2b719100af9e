/* TDOpenAPIResource.m — GET /openapi.json: the API description.
 *
 * Why it exists: clients and the black-box tests read the contract from the
 * server itself. The document is docs/openapi.json, read once at start-up
 * (see td_server_load_openapi) and served from memory without copying.
 */
#import "TDResource.h"
#import "TDServer.h"

@interface TDOpenAPIResource : TDResource
@end

@implementation TDOpenAPIResource

- (void)get:(TDRequest *)req
{
    if (!server->openapiDocument) {
        td_request_problem(req, 404, NULL, "no OpenAPI document was found at start-up "
                           "(looked at %.180s)", server->openapiSource);
        return;
    }
    req->responseBody = server->openapiDocument;
    req->responseLength = server->openapiLength;
    req->responsePersistent = true;
    req->cacheSeconds = 3600;
}

@end
