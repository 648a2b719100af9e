/* TDPageFileResource.m — GET /docs and GET /assets/{name}: files of the pages.
 *
 * Why it exists: the API reference page (www/docs.html at /docs, drawn by
 * www/docs.js from /openapi.json), and the script and stylesheet the pages
 * share (/assets/docs.js, /assets/style.css), are files held in memory since
 * start-up (site.h) and served as they are, without a copy. Under /assets/
 * the .html files are not served: pages have their own paths (/ and /docs).
 */
#import "TDResource.h"
#import "TDServer.h"

#include <string.h>

#include "transit/site.h"

#define API_REFERENCE_PAGE "docs.html"

@interface TDPageFileResource : TDResource
@end

@implementation TDPageFileResource

- (void)get:(TDRequest *)req
{
    const char *name = req->resourceId ? req->resourceId : API_REFERENCE_PAGE;
    const site_file *file = site_find(server->pages, name);
    size_t n = file ? strlen(file->name) : 0;
    bool page_as_asset = req->resourceId && n > 5 && strcmp(file->name + n - 5, ".html") == 0;
    if (!file || page_as_asset) {
        if (req->resourceId)
            td_request_problem(req, 404, NULL, "there is no asset named '%.100s'", name);
        else
            td_request_problem(req, 404, NULL, "no API reference page was found at start-up "
                               "(%.200s)", server->pagesSource);
        return;
    }
    req->responseBody = file->bytes;
    req->responseLength = file->len;
    req->responsePersistent = true;
    req->contentType = file->content_type;
    req->cacheSeconds = 3600;
}

@end
