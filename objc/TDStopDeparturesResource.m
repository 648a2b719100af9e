/* TDStopDeparturesResource.m — GET /v1/stops/{id}/departures: departures at a stop (from now by default).
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_stop_departures() in src/api/api.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDStopDeparturesResource : TDApiResource
@end

@implementation TDStopDeparturesResource

- (api_endpoint_fn)endpoint
{
    return api_stop_departures;
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
