/* TDStopResource.m — GET /v1/stops/{id}: one stop.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_stop() in src/api/api.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDStopResource : TDApiResource
@end

@implementation TDStopResource

+ (BOOL)answersInLanguages
{
    return YES;   /* names in the language Accept-Language picks */
}

- (api_endpoint_fn)endpoint
{
    return api_stop;
}

+ (BOOL)showsAlerts
{
    return YES;
}

@end
