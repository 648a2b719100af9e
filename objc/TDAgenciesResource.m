/* TDAgenciesResource.m — GET /v1/agencies: the feed's agencies.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_agencies() in src/api/api_reference.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDAgenciesResource : TDApiResource
@end

@implementation TDAgenciesResource

+ (BOOL)answersInLanguages
{
    return YES;   /* names in the language Accept-Language picks */
}

- (api_endpoint_fn)endpoint
{
    return api_agencies;
}

@end
