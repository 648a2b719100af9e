/* TDStopArrivalsResource.m — GET /v1/stops/{id}/arrivals: arrivals at a stop (from now by default).
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_stop_arrivals() in src/api/api.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDStopArrivalsResource : TDApiResource
@end

@implementation TDStopArrivalsResource

+ (BOOL)answersInLanguages
{
    return YES;   /* names in the language Accept-Language picks */
}

- (api_endpoint_fn)endpoint
{
    return api_stop_arrivals;
}

+ (BOOL)dependsOnClock
{
    return YES;
}

+ (BOOL)showsAlerts
{
    return YES;
}

@end
