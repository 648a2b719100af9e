/* TDStopsNearbyResource.m — GET /v1/stops/nearby: stops near a point.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_stops_nearby() in src/api/api.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDStopsNearbyResource : TDApiResource
@end

@implementation TDStopsNearbyResource

+ (BOOL)answersInLanguages
{
    return YES;   /* names in the language Accept-Language picks */
}

- (api_endpoint_fn)endpoint
{
    return api_stops_nearby;
}

@end
