/* TDRouteResource.m — GET /v1/routes/{id}: one route.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_route() in src/api/api_reference.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDRouteResource : TDApiResource
@end

@implementation TDRouteResource

+ (BOOL)answersInLanguages
{
    return YES;   /* names in the language Accept-Language picks */
}

- (api_endpoint_fn)endpoint
{
    return api_route;
}

@end
