/* TDResource.m — defaults for resources, and the GET of the api.h-backed
 * ones (the endpoint function is looked up once, at init).
 *
 * Why it exists: see TDResource.h.
 */
#import "TDResource.h"

@implementation TDResource

- (instancetype)initWithServer:(TDServer *)aServer
{
    if ((self = [super init]) != nil)
        server = aServer;
    return self;
}

+ (BOOL)needsDataset
{
    return NO;
}

+ (BOOL)dependsOnClock
{
    return NO;
}

+ (BOOL)showsAlerts
{
    return NO;
}

+ (BOOL)usesServerETag
{
    return [self needsDataset] || [self showsAlerts];
}

+ (BOOL)pushesBoards
{
    return NO;
}

+ (BOOL)writesOnQueue
{
    return NO;
}

+ (BOOL)answersInLanguages
{
    return NO;
}

@end

@implementation TDApiResource

- (instancetype)initWithServer:(TDServer *)aServer
{
    if ((self = [super initWithServer:aServer]) != nil)
        endpointFunction = [self endpoint];
    return self;
}

- (api_endpoint_fn)endpoint
{
    [NSException raise:NSInternalInconsistencyException
                format:@"%@ must override -endpoint", NSStringFromClass([self class])];
    return NULL;
}

+ (BOOL)needsDataset
{
    return YES;
}

- (void)get:(TDRequest *)req
{
    td_request_run_endpoint(req, endpointFunction);
}

@end
