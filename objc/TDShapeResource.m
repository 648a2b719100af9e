/* TDShapeResource.m — GET /v1/shapes/{id}: one shape as an encoded polyline.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_shape() in src/api/api_shapes.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDShapeResource : TDApiResource
@end

@implementation TDShapeResource

- (api_endpoint_fn)endpoint
{
    return api_shape;
}

@end
