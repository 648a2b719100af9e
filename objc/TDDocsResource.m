/* TDDocsResource.m — GET /docs: the API reference page.
 *
 * Why it exists: people read an API as a page, not as JSON. www/docs.html
 * with www/docs.js renders /openapi.json (this server's own document) in the
 * browser: every path, its parameters and responses. Nothing is fetched from
 * anywhere else; without JavaScript the page links the raw document.
 */
#import "TDResource.h"
#import "TDServer.h"

#include "transit/site.h"

@interface TDDocsResource : TDResource
@end

@implementation TDDocsResource

- (void)get:(TDRequest *)req
{
    const site_file *page = site_find(server->pages, "docs.html");
    if (!page) {
        td_request_problem(req, 404, NULL, "no API reference page was found at start-up "
                           "(%.200s)", server->pagesSource);
        return;
    }
    req->responseBody = page->bytes;
    req->responseLength = page->len;
    req->responsePersistent = true;
    req->contentType = page->content_type;
    req->cacheSeconds = 3600;
}

@end
