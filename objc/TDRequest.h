/* TDRequest.h — one HTTP request as the resources see it, reused per thread.
 *
 * Why it exists: the server must not build an object graph per request (no
 * NSString, no NSDictionary on the hot path). Each server thread owns one
 * TDRequest and refills it for every request it answers: the path, id and
 * parameters are C strings pointing into libmicrohttpd's connection memory or
 * the request's own buffers; the JSON body goes into the request's reusable
 * json_writer; the per-thread api context, compressors and log buffer live
 * here too. A resource reads the request fields and fills the response
 * fields; the server turns them into HTTP.
 */
#import <Foundation/Foundation.h>

#include <stdbool.h>
#include <stdint.h>
#include "transit/api.h"
#include "transit/brotli_body.h"
#include "transit/gzip_body.h"

struct MHD_Connection;
@class TDServer;
typedef struct td_conn td_conn;   /* TDServer.h */

/* The HTTP verbs that become messages (TD_VERB_OTHER: anything else). */
typedef enum td_verb {
    TD_GET, TD_HEAD, TD_POST, TD_PUT, TD_PATCH, TD_DELETE, TD_OPTIONS, TD_VERB_OTHER,
    TD_VERB_COUNT
} td_verb;

#define TD_MAX_PARAMS 32
#define TD_MAX_TARGET 8192      /* request-target bytes before 414 */
#define TD_MAX_PATH TD_MAX_TARGET /* decoded path bytes (ids included) */
#define TD_MAX_ANSWER_KEY 2048  /* bytes of an answer's cache key; longer: not cached */

@interface TDRequest : NSObject {
@public
    /* ---- the request (valid during one call of a verb message) */
    TDServer *server;
    struct MHD_Connection *connection;
    td_verb verb;
    const char *method;               /* as received, e.g. "GET" */
    const char *target;               /* raw request-target, e.g. "/v1/stops?q=x" */
    const char *path;                 /* percent-decoded path, no query */
    const char *resourceId;           /* percent-decoded {id} segment, or NULL */
    const char *resourceSubId;        /* a second {id} segment (/v1/dataset/{id}/{id}), or NULL */
    api_param params[TD_MAX_PARAMS];  /* query parameters, decoded by MHD */
    int nparams;
    const char *body;                 /* request body (POST/PUT/PATCH), may be NULL */
    size_t bodyLength;
    dataset *dataset;                 /* retained for this request, or NULL */
    alert_view *alerts;               /* retained for this request when the route shows
                                       * alerts (resolved against `dataset`), or NULL */
    rt_overlay *realtime;             /* retained with `alerts` when the server has --gtfs-rt,
                                       * else NULL */
    int64_t now;                      /* Unix seconds, truncated to the minute */
    /* names in another language (translations.h): set for a route that answers
     * in languages when the dataset has translations, else NULL and 0 */
    const struct dataset_translations *translations;
    int language;                     /* an index of its tags; 0: the feed's own */
    const char *contentLanguage;      /* the tag answered in, or NULL (no Content-Language) */
    /* alert texts in the request's languages (alert_text.h): ranked for a route
     * that shows alerts when one of them has a text in several translations */
    alert_language alertLanguage;
    bool alertLanguageSet;            /* alertLanguage holds the ranking; the answer varies with it */
    bool variesOnAccept;              /* the route could have answered a stream had Accept asked:
                                       * caches must key on Accept (board_streams.h) */
    api_thread *apiThread;            /* this thread's api context */
    td_conn *answeringFor;            /* on the write queue's thread: the suspended connection
                                       * whose response is made (respond: leaves it there) */

    /* ---- the response (filled by the resource) */
    int status;
    json_writer *out;                 /* the JSON body, when responseBody is NULL */
    const char *responseBody;         /* or these bytes ... */
    size_t responseLength;
    bool responsePersistent;          /* ... which outlive the response (no copy) */
    struct MHD_Response *sharedResponse; /* or a prebuilt response (owned by the resource) */
    struct MHD_Response *ownedResponse;  /* or one made for this request, destroyed once queued */
    const char *contentType;          /* NULL: application/json; charset=utf-8 */
    int cacheSeconds;                 /* max-age; < 0: Cache-Control no-store */
    api_problem problem;              /* when status >= 400 */
    char responseEtag[80];            /* set by a resource that makes its own ETag, or "" */
    unsigned char answerKey[TD_MAX_ANSWER_KEY]; /* everything the answer depends on, as the */
    size_t answerKeyLength;           /* server's ETag hashes it (td_make_etag); 0: none */
    char location[320];               /* Location of a 201, or "" */
    const char *wwwAuthenticate;      /* the WWW-Authenticate of a 401, or NULL */
    int responseFd;                   /* or a file's bytes [responseFdOffset, +responseLength),
                                       * sent by MHD (which closes it); -1: none */
    uint64_t responseFdOffset;
    char contentRange[96];            /* Content-Range of a 206 or 416, or "" */
    char contentLanguageText[96];     /* Content-Language of the alert texts written, or "" */
    bool acceptRanges;                /* send Accept-Ranges: bytes */
    bool cacheImmutable;              /* Cache-Control: public, max-age=31536000, immutable */
    bool problemWritten;              /* status >= 400 and out already holds the problem+json
                                         (with extension members): sent as it is */

    /* ---- per-thread storage, reused across requests */
    json_writer jsonOut;
    gzip_body *gzip;
    brotli_body *brotli;
    char pathBuffer[TD_MAX_PATH + 1];
    char idBuffer[TD_MAX_PATH + 1];
    char subIdBuffer[TD_MAX_PATH + 1];
    char *text;                       /* a growable text buffer (e.g. /metrics) */
    size_t textCap;
    char logLine[1024];
    int64_t logSecond;                /* the second logPrefix was formatted for */
    char logPrefix[24];               /* "2026-01-02T03:04:05" */
}

- (instancetype)initWithServer:(TDServer *)aServer;
@end

/* Empties the response fields for the next request (a function, not a
 * message: it runs on every request). */
void td_request_reset_response(TDRequest *req);
/* The parameters' indexes in order of name, then value (an insertion
 * sort: there are at most TD_MAX_PARAMS): what the ETag's answer key and a
 * pushed board's group key read, so that the order a client wrote them in
 * does not matter. */
void td_request_param_order(const TDRequest *req, int order[TD_MAX_PARAMS]);

/* Sets a problem response: status, title from the status, detail formatted. */
void td_request_problem(TDRequest *req, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Runs one api.h endpoint with the request's parameters, id, dataset and
 * clock, and takes its status, body or problem and cache lifetime. */
void td_request_run_endpoint(TDRequest *req, api_endpoint_fn endpoint);
/* Ranks the Accept-Language value `header` (NULL: none sent) among `tags`,
 * the languages of the alerts being shown, into req->alertLanguage, with the
 * feed's language of req->dataset as fallback, and sets alertLanguageSet. */
void td_request_rank_alert_languages(TDRequest *req, const char *header, const char *const *tags, uint32_t ntags);
/* Makes sure req->text has room for `need` bytes; false when out of memory. */
bool td_request_reserve_text(TDRequest *req, size_t need);
/* The reason phrase for a status ("Not Found"). */
const char *td_status_title(int status);
