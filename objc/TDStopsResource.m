/* TDStopsResource.m — GET /v1/stops?q=: stop name search.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_stops_search() in src/api/api.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDStopsResource : TDApiResource
@end

@implementation TDStopsResource

+ (BOOL)answersInLanguages
{
    return YES;   /* names in the language Accept-Language picks */
}

- (api_endpoint_fn)endpoint
{
    return api_stops_search;
}

@end
