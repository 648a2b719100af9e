/* TDDeparturesResource.m — GET /v1/departures: departures near a point (from now by default).
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_departures() in src/api/api.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDDeparturesResource : TDApiResource
@end

@implementation TDDeparturesResource

- (api_endpoint_fn)endpoint
{
    return api_departures;
}

+ (BOOL)dependsOnClock
{
    return YES;
}

+ (BOOL)showsAlerts
{
    return YES;
}

+ (BOOL)pushesBoards
{
    return YES;
}

@end
