/* TDAssetResource.m — GET /assets/{name}: the pages' stylesheet and script.
 *
 * Why it exists: the landing page and the API reference share one
 * stylesheet, and the reference is drawn by a script; both are files of
 * www/, held in memory since start-up (site.h) and served without a copy.
 * The .html files are pages with their own paths (/ and /docs), not assets.
 */
#import "TDResource.h"
#import "TDServer.h"

#include <string.h>

#include "transit/site.h"

@interface TDAssetResource : TDResource
@end

@implementation TDAssetResource

- (void)get:(TDRequest *)req
{
    const site_file *file = site_find(server->pages, req->resourceId);
    size_t n = file ? strlen(file->name) : 0;
    if (!file || (n > 5 && strcmp(file->name + n - 5, ".html") == 0)) {
        td_request_problem(req, 404, NULL, "there is no asset named '%.100s'",
                           req->resourceId ? req->resourceId : "");
        return;
    }
    req->responseBody = file->bytes;
    req->responseLength = file->len;
    req->responsePersistent = true;
    req->contentType = file->content_type;
    req->cacheSeconds = 3600;
}

@end
