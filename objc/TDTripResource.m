/* TDTripResource.m — GET /v1/trips/{id}: one trip with its stop times.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_trip() in src/api/api_reference.c, shared with `transitd query`.
 * It takes the served view with the realtime overlay (showsAlerts), so that
 * a trip only the realtime feed has answers too, and its ETag follows the feed.
 */
#import "TDResource.h"

@interface TDTripResource : TDApiResource
@end

@implementation TDTripResource

- (api_endpoint_fn)endpoint
{
    return api_trip;
}

+ (BOOL)showsAlerts
{
    return YES;
}

@end
