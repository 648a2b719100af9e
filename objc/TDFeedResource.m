/* TDFeedResource.m — GET /v1/feed: the dataset being served (version, counts,
 * dates) and its feed_validity, which depends on today's date.
 *
 * Why it exists: one resource class per route (see TDRoutes.m); the answer
 * itself is api_feed() in src/api/api_reference.c, shared with `transitd query`.
 */
#import "TDResource.h"

@interface TDFeedResource : TDApiResource
@end

@implementation TDFeedResource

- (api_endpoint_fn)endpoint
{
    return api_feed;
}

+ (BOOL)dependsOnClock
{
    return YES;
}

@end
