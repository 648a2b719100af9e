/* TDResource.h — the base class of everything the server routes a path to.
 *
 * Why it exists: HTTP verbs are messages. A resource class implements the
 * verbs it supports as -get:, -put:, -post:, -patch:, -delete: (and, rarely,
 * its own -options:); the server asks once per class at start-up which of
 * those it responds to, caches their IMPs, and derives the Allow header from
 * them. HEAD is answered from -get: without the body. One instance per route
 * serves every thread at once, so resources keep no per-request state: all of
 * that is in the TDRequest they are handed.
 */
#import <Foundation/Foundation.h>
#import "TDRequest.h"

/* The verb messages (all optional). Each fills the request's response fields. */
@protocol TDVerbMessages
@optional
- (void)get:(TDRequest *)req;
- (void)put:(TDRequest *)req;
- (void)post:(TDRequest *)req;
- (void)patch:(TDRequest *)req;
- (void)delete:(TDRequest *)req;
- (void)options:(TDRequest *)req;
@end

@interface TDResource : NSObject <TDVerbMessages> {
@protected
    TDServer *server;   /* not retained: the server owns its resources */
}
- (instancetype)initWithServer:(TDServer *)aServer;
/* Whether requests need the current dataset (else 503 while none is loaded);
 * such GET answers also get an ETag from the dataset version. Default NO. */
+ (BOOL)needsDataset;
/* Whether the answer depends on the clock when no `time` parameter is given
 * (departures); the ETag then includes the current minute. Default NO. */
+ (BOOL)dependsOnClock;
/* Whether requests get the alert view (TDRequest.alerts), and GET ETags
 * change with every alert write. Default NO. */
+ (BOOL)showsAlerts;
/* Whether the answer's names (stops, routes, agencies, headsigns) follow the
 * request's Accept-Language when the dataset has translations (translations.h):
 * the request then gets TDRequest.language, the ETag and the compressed-body
 * cache key on it, and the response says Content-Language and Vary:
 * Accept-Language. Default NO. */
+ (BOOL)answersInLanguages;
/* Whether GET answers get the server's weak ETag (dataset version, alert
 * generation, route, id, parameters). Default: needsDataset || showsAlerts.
 * A resource that answers NO sets TDRequest.responseEtag itself. */
+ (BOOL)usesServerETag;
/* Whether a GET with Accept: text/event-stream is answered as a pushed
 * board (board_streams.h): the same -get: answers it first and again
 * whenever what is served changes. Default NO. */
+ (BOOL)pushesBoards;
/* Whether POST, PUT, PATCH and DELETE are answered on the write queue's
 * thread (write_queue.h), so that a commit's fsync stalls no thread that
 * answers reads. Default NO. */
+ (BOOL)writesOnQueue;
@end

/* A resource whose GET is one api.h endpoint. Subclasses override -endpoint. */
@interface TDApiResource : TDResource {
@protected
    api_endpoint_fn endpointFunction;   /* cached from -endpoint at init */
}
- (api_endpoint_fn)endpoint;
@end
