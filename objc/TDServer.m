/* TDServer.m — routing, and every request's verb sent as a message.
 *
 * Why it exists: see TDServer.h. The hot path here works on C strings and
 * fixed arrays only: the path is percent-decoded segment by segment into the
 * thread's TDRequest, the route is a short table scan, the verb message is
 * sent through an IMP cached at start-up. What the resource answered
 * becomes an HTTP response in TDServer+Response.m; the tokens, the OpenAPI
 * document and the pages are read in TDServer+Setup.m.
 */
#import "TDServer.h"
#import "TDResource.h"
#import "board_streams.h"
#import "write_queue.h"

#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "transit/accept_language.h"
#include "transit/translations.h"

/* Body buffers kept for reuse, and the largest kept (see body_pool.h):
 * enough for every connection of a busy benchmark, at most 8 MB idle. */
#define BODY_POOL_IDLE 64
#define BODY_POOL_MAX_CAP (128 * 1024)

/* ------------------------------------------------------------ verbs */

static SEL verb_selector(td_verb verb)
{
    switch (verb) {
    case TD_GET: case TD_HEAD: return @selector(get:);
    case TD_POST: return @selector(post:);
    case TD_PUT: return @selector(put:);
    case TD_PATCH: return @selector(patch:);
    case TD_DELETE: return @selector(delete:);
    case TD_OPTIONS: return @selector(options:);
    default: return NULL;
    }
}

static const char *const verb_names[TD_VERB_COUNT] = {
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "",
};

typedef void (*verb_message_fn)(id, SEL, TDRequest *);

/* ------------------------------------------------------------ small helpers */

static uint64_t monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes src[0..n) into dst; returns the length or -1 for a bad
 * escape or an encoded NUL. dst has room for n bytes. */
static long percent_decode(const char *src, size_t n, char *dst)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] != '%') {
            dst[o++] = src[i];
            continue;
        }
        if (i + 2 >= n)
            return -1;
        int hi = hex_value(src[i + 1]), lo = hex_value(src[i + 2]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            return -1;
        dst[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    return (long)o;
}

/* The first malformed escape of a raw query string: a '%' without two hex
 * digits, or %00, which libmicrohttpd would decode into a NUL that silently
 * cuts the value short. NULL when there is none; else the '%', with the
 * raw name of its parameter in *key, *key_len. */
static const char *bad_query_escape(const char *query, const char **key, size_t *key_len)
{
    for (const char *p = strchr(query, '%'); p; p = strchr(p + 1, '%')) {
        if (hex_value(p[1]) >= 0 && hex_value(p[2]) >= 0 && (p[1] != '0' || p[2] != '0'))
            continue;
        const char *pair = p;
        while (pair > query && pair[-1] != '&')
            pair--;
        const char *end = pair;
        while (*end && *end != '=' && *end != '&')
            end++;
        *key = pair;
        *key_len = (size_t)(end - pair);
        return p;
    }
    return NULL;
}

/* ------------------------------------------------------------ routes */

static bool compile_route(td_route *r, const char *pattern)
{
    memset(r, 0, sizeof *r);
    r->pattern = pattern;
    if (pattern[0] != '/')
        return false;
    const char *p = pattern + 1;
    while (*p || r->nsegments == 0) {
        if (r->nsegments == TD_MAX_SEGMENTS)
            return false;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        bool is_id = len == 4 && memcmp(p, "{id}", 4) == 0;
        r->segments[r->nsegments] = is_id ? NULL : p;
        r->segment_len[r->nsegments] = len;
        r->nsegments++;
        if (!end)
            break;
        p = end + 1;
    }
    return true;
}

static void count_reload(void *ctx, bool ok)
{
    metrics_reload(ctx, ok);
}

@implementation TDServer

- (instancetype)initWithConfig:(const td_config *)cfg error:(char *)err length:(size_t)errlen
{
    if ((self = [super init]) == nil)
        return nil;
    config = *cfg;
    draining = 0;
    pthread_mutex_init(&tokensLock, NULL);
    if (td_route_table_count > TD_MAX_ROUTES) {
        snprintf(err, errlen, "too many routes (%d, at most %d)", td_route_table_count,
                 TD_MAX_ROUTES);
        [self release];
        return nil;
    }
    for (int i = 0; i < td_route_table_count; i++) {
        const td_route_spec *spec = &td_route_table[i];
        td_route *r = &routes[nroutes];
        Class cls = NSClassFromString([NSString stringWithUTF8String:spec->class_name]);
        if (!compile_route(r, spec->pattern)) {
            snprintf(err, errlen, "route %s: bad pattern", spec->pattern);
            [self release];
            return nil;
        }
        if (!cls || ![cls isSubclassOfClass:[TDResource class]]) {
            snprintf(err, errlen, "route %s: class %s is not a TDResource", spec->pattern,
                     spec->class_name);
            [self release];
            return nil;
        }
        r->resource = [[cls alloc] initWithServer:self];
        r->needs_dataset = [cls needsDataset];
        r->depends_on_clock = [cls dependsOnClock];
        r->shows_alerts = [cls showsAlerts];
        r->server_etag = [cls usesServerETag];
        r->pushes_boards = [cls pushesBoards];
        r->answers_in_languages = [cls answersInLanguages];
        r->writes_on_queue = [cls writesOnQueue];
        size_t used = 0;
        for (int v = 0; v < TD_VERB_OTHER; v++) {
            SEL sel = verb_selector((td_verb)v);
            if (v == TD_HEAD || ![cls instancesRespondToSelector:sel])
                continue;
            r->verb_imp[v] = [cls instanceMethodForSelector:sel];
        }
        /* Allow: the verbs implemented, HEAD with GET, OPTIONS always. */
        static const td_verb allow_order[] = {TD_GET, TD_HEAD, TD_POST, TD_PUT, TD_PATCH,
                                              TD_DELETE, TD_OPTIONS};
        for (size_t k = 0; k < sizeof allow_order / sizeof allow_order[0]; k++) {
            td_verb v = allow_order[k];
            bool allowed = v == TD_OPTIONS || r->verb_imp[v] ||
                           (v == TD_HEAD && r->verb_imp[TD_GET]);
            if (allowed)
                used += (size_t)snprintf(r->allow + used, sizeof r->allow - used, "%s%s",
                                         used ? ", " : "", verb_names[v]);
        }
        routeLabels[nroutes] = spec->pattern;
        nroutes++;
    }
    counters = metrics_new(nroutes, routeLabels);
    bodies = body_pool_new(BODY_POOL_IDLE, BODY_POOL_MAX_CAP);
    compressedBodies = encoded_cache_new((size_t)config.compressed_cache_mb << 20);
    state = serving_new(config.data_dir);
    if (!counters || !bodies || !compressedBodies || !state) {
        snprintf(err, errlen, "out of memory");
        [self release];
        return nil;
    }
    serving_on_reload(state, count_reload, counters);
    return self;
}

- (void)dealloc
{
    replica_stop(replica);   /* its threads show into `state`: stopped first */
    for (int i = 0; i < nroutes; i++)
        [routes[i].resource release];
    metrics_free(counters);
    body_pool_free(bodies);
    encoded_cache_free(compressedBodies);
    free(openapiDocument);
    site_free(pages);
    serving_free(state);
    auth_tokens_free(tokens);
    tls_server_free(tls);
    pthread_mutex_destroy(&tokensLock);
    [super dealloc];
}

/* Splits the raw path into segments, decodes each into the request's
 * buffers, and finds the first route whose segments match. Returns the
 * route, NULL for no match; *bad is set for a malformed escape. */
static td_route *match_route(TDServer *self, TDRequest *req, const char *raw, size_t raw_len,
                             bool *bad)
{
    const char *seg_text[TD_MAX_SEGMENTS];
    size_t seg_len[TD_MAX_SEGMENTS];
    int nseg = 0;
    bool too_many = false;
    char *out = req->pathBuffer;
    size_t o = 0;
    *bad = false;
    if (raw_len == 0 || raw[0] != '/' || raw_len > TD_MAX_PATH) {
        long n = percent_decode(raw, raw_len > TD_MAX_PATH ? TD_MAX_PATH : raw_len, out);
        out[n < 0 ? 0 : n] = '\0';
        *bad = n < 0;
        return NULL;
    }
    size_t i = 1;
    out[o++] = '/';
    for (;;) {
        const char *seg = raw + i;
        const char *end = memchr(seg, '/', raw_len - i);
        size_t len = end ? (size_t)(end - seg) : raw_len - i;
        long n = percent_decode(seg, len, out + o);
        if (n < 0) {
            *bad = true;
            out[o] = '\0';
            return NULL;
        }
        if (nseg < TD_MAX_SEGMENTS) {
            seg_text[nseg] = out + o;
            seg_len[nseg] = (size_t)n;
            nseg++;
        } else {
            too_many = true;
        }
        o += (size_t)n;
        if (!end)
            break;
        out[o++] = '/';
        i += len + 1;
    }
    out[o] = '\0';
    if (too_many)
        return NULL;
    for (int r = 0; r < self->nroutes; r++) {
        td_route *route = &self->routes[r];
        if (route->nsegments != nseg)
            continue;
        int id_seg = -1, sub_seg = -1;
        bool ok = true;
        for (int s = 0; s < nseg && ok; s++) {
            if (!route->segments[s]) {
                if (id_seg < 0)
                    id_seg = s;
                else
                    sub_seg = s;
                ok = seg_len[s] > 0;
            } else
                ok = route->segment_len[s] == seg_len[s] &&
                     memcmp(route->segments[s], seg_text[s], seg_len[s]) == 0;
        }
        if (!ok)
            continue;
        if (id_seg >= 0) {
            memcpy(req->idBuffer, seg_text[id_seg], seg_len[id_seg]);
            req->idBuffer[seg_len[id_seg]] = '\0';
            req->resourceId = req->idBuffer;
        }
        if (sub_seg >= 0) {
            memcpy(req->subIdBuffer, seg_text[sub_seg], seg_len[sub_seg]);
            req->subIdBuffer[seg_len[sub_seg]] = '\0';
            req->resourceSubId = req->subIdBuffer;
        }
        return route;
    }
    return NULL;
}

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    TDRequest *req = (TDRequest *)cls;
    if (req->nparams == TD_MAX_PARAMS) {
        req->nparams = TD_MAX_PARAMS + 1;   /* marks "too many" */
        return MHD_NO;
    }
    req->params[req->nparams].key = key;
    req->params[req->nparams].value = value ? value : "";
    req->nparams++;
    return MHD_YES;
}

/* ------------------------------------------------------------ answering */

/* A request the connection already condemned (too long a target, too large
 * a body, a bad Host): its problem set, true; else false. */
static bool refuse_connection(TDServer *self, TDRequest *req, const td_conn *conn)
{
    if (conn->target_too_long)
        td_request_problem(req, 414, NULL, "the request target is longer than %d bytes", TD_MAX_TARGET);
    else if (conn->body_too_large)
        td_request_problem(req, 413, NULL, "the request body is larger than %zu bytes", self->config.max_body);
    else if (conn->bad_host)
        td_request_problem(req, 400, NULL, "an HTTP/1.1 request needs exactly one Host header, "
                                           "and no request may have more than one");
    else
        return false;
    return true;
}

/* A query string whose escapes libmicrohttpd would decode wrongly: its
 * problem set, true; else false. */
static bool refuse_query(TDRequest *req, const char *query)
{
    const char *bad_escape, *bad_key = NULL;
    size_t bad_key_len = 0;
    if (!query || !(bad_escape = bad_query_escape(query, &bad_key, &bad_key_len)))
        return false;
    char name[48];
    snprintf(name, sizeof name, "%.*s", (int)(bad_key_len < 40 ? bad_key_len : 40), bad_key);
    bool nul = bad_escape[1] == '0' && bad_escape[2] == '0';
    td_request_problem(req, 400, name,
                       nul ? "query parameter '%s' contains an encoded NUL (%%00)"
                           : "query parameter '%s' has a malformed percent-encoding "
                             "(%% must be followed by two hex digits)",
                       name);
    return true;
}

/* Whether an If-None-Match list holds the element * (any representation). */
static bool etag_list_has_star(const char *header)
{
    for (const char *p = header; *p;) {
        p += strspn(p, " \t,");
        if (*p == '*')
            return true;
        if (*p == 'W' && p[1] == '/')
            p += 2;
        if (*p == '"') {
            const char *close = strchr(p + 1, '"');
            p = close ? close + 1 : p + strlen(p);
        } else {
            p += strcspn(p, ",");
        }
    }
    return false;
}

/* The language of the names, for a route that answers in languages: when the
 * dataset has translations, the one Accept-Language picks among them (RFC 4647
 * lookup, accept_language.h), else the feed's own. A dataset without
 * translations leaves the request as it was. */
static void choose_language(TDRequest *req)
{
    char why[256];
    const dataset_translations *t = dataset_translations_get(req->dataset, why, sizeof why);
    const char *const *tags;
    size_t n = t ? translations_languages(t, &tags) : 0;
    if (n < 2)
        return;
    const char *header = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_ACCEPT_LANGUAGE);
    int chosen = header ? accept_language_choose(header, strlen(header), tags, n) : -1;
    req->translations = t;
    req->language = chosen > 0 ? chosen : 0;
    req->contentLanguage = tags[req->language][0] ? tags[req->language] : NULL;
}

/* Sends the verb's message to the route's resource, with what is served
 * taken for the request; or answers 304 when the client's copy is current.
 * etag gets the server's ETag of a GET. */
static void send_verb(TDServer *self, TDRequest *req, td_route *route, td_verb verb, IMP imp, char *etag,
                      size_t etag_cap, bool streaming)
{
    MHD_get_connection_values(req->connection, MHD_GET_ARGUMENT_KIND, collect_param, req);
    req->now = (int64_t)time(NULL) / 60 * 60;
    bool write = verb == TD_POST || verb == TD_PUT || verb == TD_PATCH || verb == TD_DELETE;
    if (route->shows_alerts) {
        serving_view v;
        serving_acquire(self->state, &v);
        req->dataset = v.ds;
        req->alerts = v.alerts;
        req->realtime = v.realtime;
    } else if (route->needs_dataset) {
        req->dataset = serving_acquire_dataset(self->state);
    }
    if (req->nparams > TD_MAX_PARAMS) {
        td_request_problem(req, 400, NULL, "more than %d query parameters", TD_MAX_PARAMS);
        return;
    }
    if (write && self->config.replica_of) {
        /* a replica writes nothing: the same request goes to the primary
         * (307 keeps the method and the body; credentials are the client's) */
        const char *base = self->config.replica_of;
        size_t n = strlen(base);
        while (n > 8 && base[n - 1] == '/')
            n--;
        snprintf(req->location, sizeof req->location, "%.*s%s", (int)n, base, req->target);
        req->status = 307;
        req->cacheSeconds = -1;
        json_object_begin(req->out);
        json_kv_string(req->out, "detail", "this server is a replica; writes go to its primary");
        json_kv_string(req->out, "location", req->location);
        json_object_end(req->out);
        return;
    }
    if (write && !td_server_authorize(self, req))
        return;   /* 401 or 403, set by td_server_authorize */
    if (route->needs_dataset && !req->dataset) {
        td_request_problem(req, 503, NULL, "no dataset is loaded yet; import one into %.150s and send SIGHUP",
                           self->config.data_dir);
        return;
    }
    if (route->answers_in_languages && req->dataset)
        choose_language(req);
    if (route->shows_alerts && req->alerts && alert_view_multilingual(req->alerts)) {
        const char *const *tags;
        uint32_t ntags = alert_view_languages(req->alerts, &tags);
        td_request_rank_alert_languages(req, MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                                         MHD_HTTP_HEADER_ACCEPT_LANGUAGE),
                                        tags, ntags);
    }
    const char *inm = NULL;
    if (verb == TD_GET && route->server_etag) {
        td_make_etag(req, route, etag, etag_cap);
        if (!streaming)   /* a stream's client says what it has with Last-Event-ID */
            inm = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_IF_NONE_MATCH);
    }
    /* A listed ETag was only ever sent with a 200, so its parameters were good:
     * 304 without asking the endpoint. `*` matches any current representation,
     * so the endpoint answers first and a 400 or 404 stays one (RFC 9110 §13.2.1:
     * preconditions apply only where the answer would be a 2xx). */
    bool star = inm && etag_list_has_star(inm);
    if (inm && !star && td_etag_matches(inm, etag)) {
        req->status = 304;
        req->cacheSeconds = route->depends_on_clock ? 30 : 86400;
        return;
    }
    ((verb_message_fn)imp)(route->resource, verb_selector(verb), req);
    if (star && req->status == 200) {
        req->status = 304;
        req->cacheSeconds = route->depends_on_clock ? 30 : 86400;
    }
}

/* Gives back what the request took of the serving state. */
static void release_served(TDRequest *req)
{
    serving_view v = {req->dataset, req->alerts, req->realtime};
    serving_view_release(&v);
    req->dataset = NULL;
    req->alerts = NULL;
    req->realtime = NULL;
}

- (int)answer:(TDRequest *)req connectionState:(td_conn *)conn
{
    td_request_reset_response(req);
    req->server = self;
    req->dataset = NULL;
    req->alerts = NULL;
    req->realtime = NULL;
    req->translations = NULL;
    req->language = 0;
    req->contentLanguage = NULL;
    req->alertLanguageSet = false;
    req->resourceId = NULL;
    req->resourceSubId = NULL;
    req->nparams = 0;
    req->pathBuffer[0] = '\0';
    req->path = req->pathBuffer;
    req->target = conn->target;
    req->body = conn->body;
    req->bodyLength = conn->body_len;

    int route_index = nroutes;
    td_route *route = NULL;
    const char *allow = NULL;
    char etag[96];
    etag[0] = '\0';

    if (!refuse_connection(self, req, conn)) {
        const char *q = strchr(conn->target, '?');
        size_t raw_len = q ? (size_t)(q - conn->target) : conn->target_len;
        bool bad = false;
        route = match_route(self, req, conn->target, raw_len, &bad);
        td_verb verb = req->verb == TD_HEAD ? TD_GET : req->verb;
        IMP imp = route && verb < TD_VERB_OTHER ? route->verb_imp[verb] : NULL;
        if (route)
            route_index = (int)(route - routes);
        if (bad) {
            td_request_problem(req, 400, NULL, "the path has a malformed percent-encoding");
        } else if (!route) {
            td_request_problem(req, 404, NULL, "there is no resource at %.200s", req->path);
        } else if (!imp && verb == TD_OPTIONS) {
            req->status = 204;
            allow = route->allow;
        } else if (!imp) {
            allow = route->allow;
            td_request_problem(req, 405, NULL, "%.20s is not allowed on %.160s (allowed: %s)", req->method,
                               route->pattern, route->allow);
        } else if (!refuse_query(req, q ? q + 1 : NULL)) {
            bool write = verb == TD_POST || verb == TD_PUT || verb == TD_PATCH || verb == TD_DELETE;
            if (write && route->writes_on_queue && writes && !req->answeringFor) {
                /* the write queue's thread answers it (this method again, with
                 * answeringFor set); the handler queues what it made once
                 * libmicrohttpd resumes the connection. Logged and counted there. */
                conn->deferred = true;
                conn->deferred_response = NULL;
                if (write_queue_submit(writes, req->connection, req->method, conn))
                    return MHD_YES;
                conn->deferred = false;   /* out of memory: answered here */
            }
            /* a pushed board: answered as the plain GET, then kept open */
            req->variesOnAccept = route->pushes_boards && req->verb == TD_GET;   /* a stream, or a 503 with --max-streams 0 */
            bool streaming = req->variesOnAccept && streams && board_streams_wanted(req);
            send_verb(self, req, route, verb, imp, etag, sizeof etag, streaming);
            if (streaming && req->status == 200) {
                board_streams_open(streams, req, route);
                etag[0] = '\0';
            }
        }
    }

    size_t sent = 0;
    enum MHD_Result result = [self respond:req route:route etag:etag allow:allow sent:&sent];
    if (req->responseFd >= 0) {   /* not handed to MHD (an error answer instead) */
        close(req->responseFd);
        req->responseFd = -1;
    }
    if (req->ownedResponse) {
        MHD_destroy_response(req->ownedResponse);
        req->ownedResponse = NULL;
    }
    release_served(req);
    uint64_t micros = monotonic_us() - conn->started_us;
    metrics_observe(counters, route_index, req->status, micros);
    if (!config.quiet)
        td_write_access_log(req, req->status, sent, micros);
    return result;
}

@end
