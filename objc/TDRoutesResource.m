/* TDRoutesResource.m — GET /v1/routes: all routes.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_routes() in src/api/api_reference.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDRoutesResource : TDApiResource
@end

@implementation TDRoutesResource

+ (BOOL)answersInLanguages
{
    return YES;   /* names in the language Accept-Language picks */
}

- (api_endpoint_fn)endpoint
{
    return api_routes;
}

@end
