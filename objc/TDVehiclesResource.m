/* TDVehiclesResource.m — GET /v1/vehicles: vehicle positions, by area or route.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_vehicles() in src/api/api_vehicles.c, on the request's
 * realtime overlay, whose generation its ETag follows (as departures do).
 */
#import "TDResource.h"

@interface TDVehiclesResource : TDApiResource
@end

@implementation TDVehiclesResource

- (api_endpoint_fn)endpoint
{
    return api_vehicles;
}

+ (BOOL)showsAlerts
{
    return YES;   /* the snapshot with the realtime overlay, and its generation in the ETag */
}

@end
