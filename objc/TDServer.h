/* TDServer.h — the Objective-C object every HTTP request is handed to.
 *
 * Why it exists: the C access handler (http_daemon.m) knows libmicrohttpd;
 * the server knows HTTP. It owns the route table (path pattern → resource
 * instance, with each class's verb IMPs cached at start-up), the metrics,
 * the OpenAPI document and the bearer tokens, and it turns what a resource
 * answered into an HTTP response: problem+json for errors, ETag/304, gzip,
 * Cache-Control, Allow. What is served — the dataset, the alerts, the
 * realtime overlay, and their reloads — is the C serving state
 * (transit/serving.h) that it holds, as `transitd query` does.
 */
#import <Foundation/Foundation.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include "transit/auth.h"
#include "transit/body_pool.h"
#include "transit/encoded_cache.h"
#include "transit/metrics.h"
#include "transit/rt_source_list.h"
#include "transit/serving.h"
#include "transit/site.h"
#include "transit/replica.h"
#include "transit/tls_server.h"
#import "TDRequest.h"

@class TDResource;
typedef struct board_streams board_streams;
typedef struct write_queue write_queue;

#define TD_MAX_CORS_ORIGINS 16

typedef struct td_config {
    const char *data_dir;
    const char *bind;            /* numeric IPv4/IPv6 address or host name */
    const char *openapi_path;    /* NULL: look beside the binary */
    const char *tokens_path;     /* bearer tokens for writes; NULL: writes answer 403 */
    int port;                    /* 0: any free port (reported at start-up) */
    int threads;
    unsigned max_connections;
    unsigned max_connections_per_ip;   /* 0: no cap */
    unsigned timeout_s;
    unsigned header_timeout_s;   /* a request must be complete this long after the connection opened */
    unsigned follow_interval_s;  /* how often DATA/current is checked; 0: SIGHUP only */
    size_t max_body;
    bool quiet;
    bool wait_for_data;
    const char *pages_dir;       /* NULL: look beside the binary (site.h) */
    const char *cors_origins[TD_MAX_CORS_ORIGINS];   /* "*" or "https://host[:port]" */
    int ncors_origins;           /* 0: no CORS headers at all */
    rt_source_list gtfs_rt;      /* GTFS-Realtime files or http(s) URLs with their headers; count 0: none */
    unsigned rt_interval_s;      /* how often they are polled */
    unsigned rt_max_age_s;       /* a source without a good poll for longer leaves the merge */
    unsigned compressed_cache_mb;   /* bound of the compressed-body cache; 0: no cache */
    const char *tls_cert;        /* PEM chain (leaf first or in any order); NULL: plain HTTP */
    const char *tls_key;         /* its PEM private key; set with tls_cert or not at all */
    const char *replica_of;      /* the primary's URL: a replica (replica.h); NULL: a primary */
    unsigned replica_interval_s; /* how often the primary's manifest is polled */
    unsigned max_streams;        /* pushed boards (text/event-stream) open at once; past it 503 */
    unsigned stream_keepalive_s; /* a comment on every idle stream this often */
} td_config;

/* The state libmicrohttpd keeps per connection for us (http_daemon.m owns it). */
typedef struct td_conn {
    bool started;                /* the handler has been called for this request */
    bool target_too_long;
    bool body_too_large;
    bool bad_host;               /* HTTP/1.1 without exactly one Host header */
    uint64_t started_us;         /* monotonic, when the request line arrived */
    uint64_t deadline_us;        /* request_deadline.h (__atomic) */
    int fd;                      /* the connection's socket */
    struct td_conn *prev, *next; /* in the deadline registry */
    size_t target_len;
    char *body;                  /* request body, up to max_body; reused */
    size_t body_len, body_cap;
    tls_connection tls;          /* HTTPS only: the handshake's state (tls_server.h) */
    /* a write answered on the write queue's thread (write_queue.h): while
     * deferred, the connection is suspended; its response waits here for
     * the handler call that follows the resume (NULL: close the connection) */
    bool deferred;
    unsigned deferred_status;
    struct MHD_Response *deferred_response;
    char target[TD_MAX_TARGET + 1];
} td_conn;

/* Sent with every response: browsers must not guess a type other than the
 * declared one (JSON shown as HTML). */
#define TD_HEADER_NOSNIFF "X-Content-Type-Options"

/* A route pattern compiled at start-up: literal segments and {id}. */
#define TD_MAX_SEGMENTS 8
typedef struct td_route {
    const char *pattern;         /* "/v1/stops/{id}/departures" (also the metrics label) */
    int nsegments;
    const char *segments[TD_MAX_SEGMENTS];  /* literal text, or NULL for {id} */
    size_t segment_len[TD_MAX_SEGMENTS];
    TDResource *resource;
    IMP verb_imp[TD_VERB_COUNT];
    bool needs_dataset, depends_on_clock;
    bool shows_alerts;           /* the request gets the alert view; GET ETags follow it */
    bool server_etag;            /* GET answers get the server's weak ETag (else the resource's) */
    bool pushes_boards;          /* a GET asking for text/event-stream becomes a pushed board */
    bool answers_in_languages;   /* names follow Accept-Language (TDResource answersInLanguages) */
    bool writes_on_queue;        /* POST, PUT, PATCH, DELETE answered on the write queue's thread */
    char allow[64];              /* "GET, HEAD, OPTIONS" */
} td_route;

/* The route table (TDRoutes.m): one line per endpoint. */
typedef struct td_route_spec {
    const char *pattern;
    const char *class_name;
} td_route_spec;
extern const td_route_spec td_route_table[];
extern const int td_route_table_count;

#define TD_MAX_ROUTES 32

@interface TDServer : NSObject {
@public
    td_config config;
    td_route routes[TD_MAX_ROUTES];
    const char *routeLabels[TD_MAX_ROUTES];
    int nroutes;
    metrics *counters;
    body_pool *bodies;           /* JSON bodies handed to MHD without a copy */
    encoded_cache *compressedBodies;   /* gzip and br bodies for repeated answers (encoded_cache.h) */
    char *openapiDocument;       /* NULL when not found */
    size_t openapiLength;
    char openapiSource[1024];    /* where it was read, or where we looked */
    site *pages;                 /* the web pages (www/), NULL when not found */
    char pagesSource[1024];      /* where they were read, or where we looked */
    serving *state;              /* what is served (transit/serving.h) */
    pthread_mutex_t tokensLock;
    auth_tokens *tokens;         /* NULL: no --tokens, writes answer 403 */
    int draining;                /* shutting down: answer with Connection: close (__atomic) */
    serving_follower *follower;  /* set by serve, may be NULL */
    tls_server *tls;             /* --tls-cert: the certificate, its reload, handshake counts */
    replica *replica;            /* --replica-of: the dataset's transfer from the primary */
    board_streams *streams;      /* pushed boards (board_streams.h), set by serve, may be NULL */
    write_queue *writes;         /* the live store's writes' thread (write_queue.h), set by the
                                  * daemon when writes are enabled (--tokens), else NULL */
}

/* Builds the routes (fails with a message when a class is missing). */
- (instancetype)initWithConfig:(const td_config *)cfg error:(char *)err length:(size_t)errlen;
/* Answers one request: routing, verb dispatch, HTTP framing, log, metrics.
 * Returns an MHD_Result. */
- (int)answer:(TDRequest *)req connectionState:(td_conn *)conn;
@end

/* TDServer+Response.m: a resource's answer as an HTTP response (status,
 * headers, body), queued on the request's connection; *sent gets the body's
 * bytes. */
@interface TDServer (Response)
- (enum MHD_Result)respond:(TDRequest *)req
                     route:(td_route *)route
                      etag:(const char *)etag
                     allow:(const char *)allow
                      sent:(size_t *)sent;
@end
/* The server's weak ETag of a GET: W/"<dataset version>-<hash of the route,
 * id, sorted parameters, alert and realtime generations[, minute]>". */
void td_make_etag(TDRequest *req, td_route *route, char *out, size_t cap);
/* Whether an If-None-Match header names etag (or is "*"). */
bool td_etag_matches(const char *header, const char *etag);
/* One access-log line on stderr. */
void td_write_access_log(TDRequest *req, int status, size_t bytes, uint64_t micros);

/* TDServer+Setup.m: */
/* Reads config.tokens_path (start-up and SIGHUP); keeps the old tokens and
 * returns false with err when the file is bad. */
bool td_server_load_tokens(TDServer *server, char *err, size_t errlen);
/* Whether the request's Authorization header carries a configured token;
 * otherwise fills the 401/403 problem and returns false. */
bool td_server_authorize(TDServer *server, TDRequest *req);
/* Reads the OpenAPI document (config.openapi_path or beside the binary). */
void td_server_load_openapi(TDServer *server);
/* Reads the web pages (config.pages_dir or beside the binary). */
void td_server_load_pages(TDServer *server);
