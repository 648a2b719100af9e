/* TDServer.m — routing, verb dispatch and HTTP framing for every request.
 *
 * Why it exists: see TDServer.h. The hot path here works on C strings and
 * fixed arrays only: the path is percent-decoded segment by segment into the
 * thread's TDRequest, the route is a short table scan, the verb message is
 * sent through an IMP cached at start-up, and the body is written by the
 * streaming json_writer and copied once into the libmicrohttpd response.
 */
#import "TDServer.h"
#import "TDResource.h"

#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "transit/rt_alerts.h"
#include "transit/share_dir.h"

#define GZIP_MIN_BYTES 1024
#define RETRY_AFTER_SECONDS "5"
#define JSON_TYPE "application/json; charset=utf-8"
#define PROBLEM_TYPE "application/problem+json; charset=utf-8"
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

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* ------------------------------------------------------------ datasets */

static void lock_current(TDServer *server);
static void unlock_current(TDServer *server);

dataset *td_server_acquire_dataset(TDServer *server)
{
    lock_current(server);
    dataset *ds = server->currentDataset;
    if (ds)
        dataset_retain(ds);
    unlock_current(server);
    return ds;
}

static void lock_current(TDServer *server)
{
    while (__atomic_exchange_n(&server->datasetLock, 1, __ATOMIC_ACQUIRE))
        ;
}

static void unlock_current(TDServer *server)
{
    __atomic_store_n(&server->datasetLock, 0, __ATOMIC_RELEASE);
}

alert_view *td_server_acquire_alerts(TDServer *server)
{
    lock_current(server);
    alert_view *v = server->currentAlerts;
    if (v)
        alert_view_retain(v);
    unlock_current(server);
    return v;
}

void td_server_acquire_both(TDServer *server, dataset **ds, alert_view **alerts,
                            rt_overlay **realtime)
{
    lock_current(server);
    if ((*ds = server->currentDataset))
        dataset_retain(*ds);
    if ((*alerts = server->currentAlerts))
        alert_view_retain(*alerts);
    if (realtime && (*realtime = server->currentRealtime))
        rt_overlay_retain(*realtime);
    unlock_current(server);
}

void td_server_rebuild_realtime(TDServer *server)
{
    if (!server->realtime)
        return;
    pthread_mutex_lock(&server->realtimeBuilds);
    dataset *ds = td_server_acquire_dataset(server);
    rt_overlay *o = ds ? rt_ingest_overlay(server->realtime, ds, (int64_t)time(NULL)) : NULL;
    if (ds && !o)
        fprintf(stderr, "transitd: out of memory building the realtime overlay; keeping the "
                        "previous one\n");
    if (o) {
        rt_overlay_set_generation(o, ++server->realtimeGeneration);
        lock_current(server);
        rt_overlay *old = server->currentRealtime;
        server->currentRealtime = o;
        unlock_current(server);
        if (old)
            rt_overlay_release(old);
    }
    if (ds)
        dataset_release(ds);
    pthread_mutex_unlock(&server->realtimeBuilds);
}

/* Swaps in a dataset and its alert view together, so a request never pairs a
 * view with a dataset it was not resolved against. */
static void install_current(TDServer *server, dataset *ds, alert_view *v)
{
    lock_current(server);
    dataset *old = server->currentDataset;
    alert_view *old_view = server->currentAlerts;
    server->currentDataset = ds;
    server->currentAlerts = v;
    unlock_current(server);
    if (old_view)
        alert_view_release(old_view);
    if (old)
        dataset_release(old);
}

void td_server_install_dataset(TDServer *server, dataset *ds)
{
    pthread_mutex_lock(&server->alertWrites);
    alert_view *current = td_server_acquire_alerts(server);
    alert_view *v = current ? alert_view_rebase(current, ds) : NULL;
    if (current && !v)
        fprintf(stderr, "transitd: out of memory resolving the alerts; none shown until the "
                        "next write\n");
    if (current)
        alert_view_release(current);
    install_current(server, ds, v);
    pthread_mutex_unlock(&server->alertWrites);
    /* until this finishes, rows of the new dataset say realtime false (the
     * overlay knows only the old one's trips) */
    td_server_rebuild_realtime(server);
}

void td_server_lock_alert_writes(TDServer *server)
{
    pthread_mutex_lock(&server->alertWrites);
}

void td_server_unlock_alert_writes(TDServer *server)
{
    pthread_mutex_unlock(&server->alertWrites);
}

void td_server_publish_alerts(TDServer *server, alert_view *v)
{
    lock_current(server);
    alert_view *old = server->currentAlerts;
    server->currentAlerts = v;
    unlock_current(server);
    if (old)
        alert_view_release(old);
}

static void warn_to_stderr(void *ctx, const char *message)
{
    (void)ctx;
    fprintf(stderr, "transitd: warning: %s\n", message);
}

/* A view of the stored alerts (ordered by id) merged with the realtime
 * feed's; call with alertWrites held. NULL when out of memory. */
static alert_view *merged_view(TDServer *server, alert *const *stored, uint32_t n, dataset *ds,
                               int64_t generation)
{
    if (!server->realtime)
        return alert_view_new(stored, n, ds, generation);
    /* (the merge also drops the "rt:" alerts of the view `stored` came from) */
    uint32_t count = 0;
    alert **all = rt_alerts_merge(stored, n, server->rtAlerts, server->nrtAlerts, &count);
    if (!all)
        return NULL;
    alert_view *v = alert_view_new(all, count, ds, generation);
    free(all);
    return v;
}

void td_server_set_rt_alerts(TDServer *server, alert **list, uint32_t n)
{
    pthread_mutex_lock(&server->alertWrites);
    alert **old = server->rtAlerts;
    uint32_t nold = server->nrtAlerts;
    server->rtAlerts = list;
    server->nrtAlerts = n;
    alert_view *current = td_server_acquire_alerts(server);
    dataset *ds = td_server_acquire_dataset(server);
    uint32_t nstored = current ? alert_view_count(current) : 0;
    alert **stored = malloc((nstored ? nstored : 1) * sizeof *stored);
    alert_view *v = NULL;
    if (stored) {
        for (uint32_t i = 0; i < nstored; i++)
            stored[i] = (alert *)alert_view_at(current, i);
        v = merged_view(server, stored, nstored, ds, current ? alert_view_generation(current) : 0);
        free(stored);
    }
    if (v)
        td_server_publish_alerts(server, v);
    else
        fprintf(stderr, "transitd: out of memory merging the realtime alerts\n");
    if (current)
        alert_view_release(current);
    if (ds)
        dataset_release(ds);
    pthread_mutex_unlock(&server->alertWrites);
    rt_alerts_free(old, nold);
}

bool td_server_reload_alerts(TDServer *server)
{
    if (!server->live)
        return false;
    alert **alerts = NULL;
    uint32_t n = 0;
    int64_t generation = 0;
    char err[512];
    if (live_store_load(server->live, &alerts, &n, &generation, warn_to_stderr, NULL, err,
                        sizeof err) != 0) {
        fprintf(stderr, "transitd: cannot load the alerts, still showing the previous ones: %s\n",
                err);
        return false;
    }
    pthread_mutex_lock(&server->alertWrites);
    dataset *ds = td_server_acquire_dataset(server);
    alert_view *v = merged_view(server, alerts, n, ds, generation);
    if (v)
        td_server_publish_alerts(server, v);
    else
        fprintf(stderr, "transitd: out of memory loading %u alerts\n", n);
    if (ds)
        dataset_release(ds);
    pthread_mutex_unlock(&server->alertWrites);
    live_alerts_free(alerts, n);
    return v != NULL;
}

bool td_server_open_live(TDServer *server, char *err, size_t errlen)
{
    if (!(server->live = live_store_open(server->config.data_dir, err, errlen)))
        return false;
    return td_server_reload_alerts(server);
}

bool td_server_load_tokens(TDServer *server, char *err, size_t errlen)
{
    if (!server->config.tokens_path)
        return true;
    auth_tokens *t = auth_tokens_load(server->config.tokens_path, err, errlen);
    if (!t)
        return false;
    pthread_mutex_lock(&server->tokensLock);
    auth_tokens *old = server->tokens;
    server->tokens = t;
    pthread_mutex_unlock(&server->tokensLock);
    auth_tokens_free(old);
    return true;
}

bool td_server_authorize(TDServer *server, TDRequest *req)
{
    const char *header = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_AUTHORIZATION);
    const char *token = NULL;
    size_t len = 0;
    int kind = auth_bearer_token(header, &token, &len);
    pthread_mutex_lock(&server->tokensLock);
    bool configured = server->tokens != NULL;
    bool ok = configured && kind == 1 && auth_tokens_check(server->tokens, token, len, NULL);
    pthread_mutex_unlock(&server->tokensLock);
    if (ok)
        return true;
    if (!configured) {
        td_request_problem(req, 403, NULL,
                           "writes are disabled: this server has no bearer tokens. Make one with "
                           "`transitd token new --tokens FILE` and start the server with "
                           "`transitd serve --tokens FILE`");
    } else if (kind == 0) {
        req->wwwAuthenticate = "Bearer realm=\"transitd\"";
        td_request_problem(req, 401, NULL,
                           "%s needs an Authorization: Bearer <token> header", req->method);
    } else {
        req->wwwAuthenticate = "Bearer realm=\"transitd\", error=\"invalid_token\"";
        td_request_problem(req, 401, NULL, kind < 0 ? "the Authorization header is not a Bearer token"
                                                    : "the bearer token is not valid");
    }
    return false;
}

bool td_server_reload(TDServer *server, char *err, size_t errlen)
{
    dataset *ds = dataset_open(server->config.data_dir, err, errlen);
    if (!ds) {
        metrics_reload(server->counters, false);
        fprintf(stderr, "transitd: reload failed, still serving the previous dataset: %s\n", err);
        return false;
    }
    fprintf(stderr, "transitd: now serving dataset %s from %s\n", dataset_version(ds),
            dataset_dir(ds));
    td_server_install_dataset(server, ds);
    metrics_reload(server->counters, true);
    return true;
}

/* ------------------------------------------------------------ OpenAPI */

static char *read_whole_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1))) {
            if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
                free(buf);
                buf = NULL;
            } else {
                buf[size] = '\0';
                *len = (size_t)size;
            }
        }
    }
    fclose(f);
    return buf;
}

void td_server_load_openapi(TDServer *server)
{
    char candidates[SHARE_MAX_CANDIDATES][SHARE_PATH_MAX];
    int n = 0;
    if (server->config.openapi_path)
        snprintf(candidates[n++], SHARE_PATH_MAX, "%s", server->config.openapi_path);
    else
        n = share_candidates("openapi.json", "docs/openapi.json", candidates, SHARE_MAX_CANDIDATES);
    server->openapiSource[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t len = 0;
        char *doc = read_whole_file(candidates[i], &len);
        if (doc) {
            server->openapiDocument = doc;
            server->openapiLength = len;
            snprintf(server->openapiSource, sizeof server->openapiSource, "%s", candidates[i]);
            return;
        }
        size_t used = strlen(server->openapiSource);
        snprintf(server->openapiSource + used, sizeof server->openapiSource - used, "%s%s",
                 used ? ", " : "", candidates[i]);
    }
    fprintf(stderr, "transitd: warning: no OpenAPI document found (looked at %s); "
                    "/openapi.json will answer 404\n", server->openapiSource);
}

void td_server_load_pages(TDServer *server)
{
    server->pages = site_locate(server->config.pages_dir, server->pagesSource,
                                sizeof server->pagesSource);
    if (server->pages)
        snprintf(server->pagesSource, sizeof server->pagesSource, "%s", server->pages->dir);
    else
        fprintf(stderr, "transitd: warning: no web pages found (%s); / and /docs will answer "
                        "404\n", server->pagesSource);
}

/* ------------------------------------------------------------ CORS */

#define CORS_ALLOW_HEADERS "Authorization, Content-Type, If-Match, If-None-Match"
#define CORS_EXPOSE_HEADERS "ETag, Location, Retry-After, Allow, WWW-Authenticate"
#define CORS_MAX_AGE_SECONDS "7200"   /* the most Chromium honours */

/* The CORS headers of a response while --cors-origin is set. With "*" every
 * response allows any origin. With a list, every response says Vary: Origin
 * (a cache must not hand one origin's answer to another), and a request
 * whose Origin is on the list gets it back as Access-Control-Allow-Origin.
 * An allowed preflight (OPTIONS on a route) also gets the route's own Allow
 * list as its methods, so verbs a resource adds are allowed as they appear. */
static void add_cors_headers(const td_config *cfg, TDRequest *req, const td_route *route,
                             struct MHD_Response *r)
{
    const char *allowed = NULL;
    if (strcmp(cfg->cors_origins[0], "*") == 0) {
        allowed = "*";
    } else {
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
        const char *origin = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_ORIGIN);
        for (int i = 0; origin && !allowed && i < cfg->ncors_origins; i++)
            if (strcmp(origin, cfg->cors_origins[i]) == 0)
                allowed = origin;
    }
    if (!allowed)
        return;
    MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
    MHD_add_response_header(r, "Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS);
    if (req->verb == TD_OPTIONS && route) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", route->allow);
        MHD_add_response_header(r, "Access-Control-Allow-Headers", CORS_ALLOW_HEADERS);
        MHD_add_response_header(r, "Access-Control-Max-Age", CORS_MAX_AGE_SECONDS);
    }
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

@implementation TDServer

- (instancetype)initWithConfig:(const td_config *)cfg error:(char *)err length:(size_t)errlen
{
    if ((self = [super init]) == nil)
        return nil;
    config = *cfg;
    datasetLock = 0;
    draining = 0;
    pthread_mutex_init(&alertWrites, NULL);
    pthread_mutex_init(&tokensLock, NULL);
    pthread_mutex_init(&realtimeBuilds, NULL);
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
    if (!counters || !bodies) {
        snprintf(err, errlen, "out of memory");
        [self release];
        return nil;
    }
    return self;
}

- (void)dealloc
{
    for (int i = 0; i < nroutes; i++)
        [routes[i].resource release];
    metrics_free(counters);
    body_pool_free(bodies);
    free(openapiDocument);
    if (currentAlerts)
        alert_view_release(currentAlerts);
    if (currentRealtime)
        rt_overlay_release(currentRealtime);
    rt_ingest_free(realtime);
    rt_alerts_free(rtAlerts, nrtAlerts);
    pthread_mutex_destroy(&realtimeBuilds);
    site_free(pages);
    if (currentDataset)
        dataset_release(currentDataset);
    live_store_close(live);
    auth_tokens_free(tokens);
    pthread_mutex_destroy(&alertWrites);
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
        int id_seg = -1;
        bool ok = true;
        for (int s = 0; s < nseg && ok; s++) {
            if (!route->segments[s])
                id_seg = s, ok = seg_len[s] > 0;
            else
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

/* W/"<dataset version>-<hash of route, id, sorted parameters[, minute]>" */
static void make_etag(TDRequest *req, td_route *route, char *out, size_t cap)
{
    uint64_t h = 14695981039346656037ull;
    h = fnv1a(h, route->pattern, strlen(route->pattern) + 1);
    if (req->resourceId)
        h = fnv1a(h, req->resourceId, strlen(req->resourceId) + 1);
    int order[TD_MAX_PARAMS];
    bool has_time = false;
    for (int i = 0; i < req->nparams; i++) {
        int j = i;
        while (j > 0) {
            const api_param *a = &req->params[order[j - 1]], *b = &req->params[i];
            int c = strcmp(a->key, b->key);
            if (c < 0 || (c == 0 && strcmp(a->value, b->value) <= 0))
                break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
        if (strcmp(req->params[i].key, "time") == 0)
            has_time = true;
    }
    for (int i = 0; i < req->nparams; i++) {
        const api_param *p = &req->params[order[i]];
        h = fnv1a(h, p->key, strlen(p->key) + 1);
        h = fnv1a(h, p->value, strlen(p->value) + 1);
    }
    /* alerts: every write changes the generation; with alerts present, what
     * is active changes with the clock too */
    bool clock = route->depends_on_clock;
    if (req->alerts) {
        int64_t generation = alert_view_generation(req->alerts);
        h = fnv1a(h, &generation, sizeof generation);
        clock = clock || alert_view_count(req->alerts) > 0;
    }
    /* realtime: every overlay published changes the answers */
    if (req->realtime) {
        uint64_t generation = rt_overlay_generation(req->realtime);
        h = fnv1a(h, &generation, sizeof generation);
    }
    if (clock && !has_time)
        h = fnv1a(h, &req->now, sizeof req->now);
    /* written by hand: snprintf was a visible share of a small response */
    static const char hex[] = "0123456789abcdef";
    const char *version = req->dataset ? dataset_version(req->dataset) : "live";
    size_t vlen = strlen(version);
    if (vlen + 22 > cap)   /* W/" version - 16 hex " NUL */
        vlen = cap - 22;
    char *p = out;
    memcpy(p, "W/\"", 3);
    p += 3;
    memcpy(p, version, vlen);
    p += vlen;
    *p++ = '-';
    for (int shift = 60; shift >= 0; shift -= 4)
        *p++ = hex[(h >> shift) & 15];
    *p++ = '"';
    *p = '\0';
}

/* If-None-Match (RFC 9110 §13.1.2): weak comparison against a list or "*". */
static bool etag_matches(const char *header, const char *etag)
{
    const char *opaque = etag + 2;   /* skip W/ */
    size_t olen = strlen(opaque);
    const char *p = header;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        if (*p == '*')
            return true;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        const char *end = p;
        if (*end == '"') {
            end = strchr(end + 1, '"');
            end = end ? end + 1 : p + strlen(p);
        } else {
            while (*end && *end != ',')
                end++;
        }
        if ((size_t)(end - p) == olen && memcmp(p, opaque, olen) == 0)
            return true;
        p = end;
    }
    return false;
}

/* ------------------------------------------------------------ access log */

static void write_access_log(TDRequest *req, int status, size_t bytes, uint64_t micros)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if ((int64_t)now.tv_sec != req->logSecond) {
        struct tm tm;
        time_t t = now.tv_sec;
        gmtime_r(&t, &tm);
        strftime(req->logPrefix, sizeof req->logPrefix, "%Y-%m-%dT%H:%M:%S", &tm);
        req->logSecond = (int64_t)now.tv_sec;
    }
    char *line = req->logLine;
    size_t cap = sizeof req->logLine;
    int n = snprintf(line, cap, "%s.%03ldZ %s ", req->logPrefix, (long)(now.tv_nsec / 1000000),
                     req->method);
    size_t o = n > 0 ? (size_t)n : 0;
    /* the target as received, control bytes and spaces shown as '?', cut at 600 bytes */
    for (const char *t = req->target; *t && o < 600; t++)
        line[o++] = ((unsigned char)*t <= ' ' || *t == 0x7f) ? '?' : *t;
    n = snprintf(line + o, cap - o, " %d %zu %llu\n", status, bytes, (unsigned long long)micros);
    o += n > 0 ? (size_t)n : 0;
    if (o > cap)
        o = cap;
    ssize_t w = write(STDERR_FILENO, line, o);
    (void)w;
}

/* ------------------------------------------------------------ answering */

- (int)answer:(TDRequest *)req connectionState:(td_conn *)conn
{
    td_request_reset_response(req);
    req->server = self;
    req->dataset = NULL;
    req->alerts = NULL;
    req->realtime = NULL;
    req->resourceId = NULL;
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

    if (conn->target_too_long) {
        td_request_problem(req, 414, NULL, "the request target is longer than %d bytes",
                           TD_MAX_TARGET);
    } else if (conn->body_too_large) {
        td_request_problem(req, 413, NULL, "the request body is larger than %zu bytes",
                           config.max_body);
    } else if (conn->bad_host) {
        td_request_problem(req, 400, NULL, "an HTTP/1.1 request needs exactly one Host header, "
                                           "and no request may have more than one");
    } else {
        const char *q = strchr(conn->target, '?');
        size_t raw_len = q ? (size_t)(q - conn->target) : conn->target_len;
        const char *bad_escape, *bad_key = NULL;
        size_t bad_key_len = 0;
        bool bad = false;
        route = match_route(self, req, conn->target, raw_len, &bad);
        if (bad) {
            td_request_problem(req, 400, NULL, "the path has a malformed percent-encoding");
        } else if (!route) {
            td_request_problem(req, 404, NULL, "there is no resource at %.200s", req->path);
        } else {
            route_index = (int)(route - routes);
            td_verb verb = req->verb == TD_HEAD ? TD_GET : req->verb;
            IMP imp = verb < TD_VERB_OTHER ? route->verb_imp[verb] : NULL;
            if (!imp && verb == TD_OPTIONS) {
                req->status = 204;
                allow = route->allow;
            } else if (!imp) {
                allow = route->allow;
                td_request_problem(req, 405, NULL, "%.20s is not allowed on %.160s (allowed: %s)",
                                   req->method, route->pattern, route->allow);
            } else if (q && (bad_escape = bad_query_escape(q + 1, &bad_key, &bad_key_len))) {
                char name[48];
                snprintf(name, sizeof name, "%.*s", (int)(bad_key_len < 40 ? bad_key_len : 40),
                         bad_key);
                bool nul = bad_escape[1] == '0' && bad_escape[2] == '0';
                td_request_problem(req, 400, name,
                                   nul ? "query parameter '%s' contains an encoded NUL (%%00)"
                                       : "query parameter '%s' has a malformed percent-encoding "
                                         "(%% must be followed by two hex digits)",
                                   name);
            } else {
                MHD_get_connection_values(req->connection, MHD_GET_ARGUMENT_KIND, collect_param,
                                          req);
                req->now = (int64_t)time(NULL) / 60 * 60;
                bool write = verb == TD_POST || verb == TD_PUT || verb == TD_PATCH ||
                             verb == TD_DELETE;
                if (route->shows_alerts)
                    td_server_acquire_both(self, &req->dataset, &req->alerts, &req->realtime);
                else if (route->needs_dataset)
                    req->dataset = td_server_acquire_dataset(self);
                if (req->nparams > TD_MAX_PARAMS) {
                    td_request_problem(req, 400, NULL, "more than %d query parameters",
                                       TD_MAX_PARAMS);
                } else if (write && !td_server_authorize(self, req)) {
                    /* 401 or 403, set by td_server_authorize */
                } else if (route->needs_dataset && !req->dataset) {
                    td_request_problem(req, 503, NULL,
                                       "no dataset is loaded yet; import one into %.150s and "
                                       "send SIGHUP",
                                       config.data_dir);
                } else {
                    const char *inm = NULL;
                    if (verb == TD_GET && route->server_etag) {
                        make_etag(req, route, etag, sizeof etag);
                        inm = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                          MHD_HTTP_HEADER_IF_NONE_MATCH);
                    }
                    if (inm && etag_matches(inm, etag)) {
                        req->status = 304;
                        req->cacheSeconds = route->depends_on_clock ? 30 : 86400;
                    } else {
                        ((verb_message_fn)imp)(route->resource, verb_selector(verb), req);
                    }
                }
            }
        }
    }

    size_t sent = 0;
    enum MHD_Result result = [self respond:req route:route etag:etag allow:allow sent:&sent];
    if (req->dataset) {
        dataset_release(req->dataset);
        req->dataset = NULL;
    }
    if (req->alerts) {
        alert_view_release(req->alerts);
        req->alerts = NULL;
    }
    if (req->realtime) {
        rt_overlay_release(req->realtime);
        req->realtime = NULL;
    }
    uint64_t micros = monotonic_us() - conn->started_us;
    metrics_observe(counters, route_index, req->status, micros);
    if (!config.quiet)
        write_access_log(req, req->status, sent, micros);
    return result;
}

/* The free callback of a body handed over by response_from_writer. */
static void give_body_back(void *cls)
{
    body_pool_give(cls);
}

/* A response whose body is the writer's buffer itself, not a copy: the
 * writer carries on with an idle buffer from the pool, and libmicrohttpd
 * returns this one to the pool when it has sent it. NULL when out of memory
 * (the writer's bytes are then lost, and the caller answers MHD_NO). */
static struct MHD_Response *response_from_writer(body_pool *pool, json_writer *w, size_t len)
{
    body_buffer *b = body_pool_take(pool);
    if (!b)
        return NULL;
    json_swap_buffer(w, &b->buf, &b->cap);
    struct MHD_Response *r =
        MHD_create_response_from_buffer_with_free_callback_cls(len, b->buf, give_body_back, b);
    if (!r)
        body_pool_give(b);
    return r;
}

/* The Cache-Control value for `seconds` (-1: no-store, else >= 0); the common values
 * are constants, others are formatted into `text`. */
static const char *cache_control(int seconds, char *text, size_t cap)
{
    switch (seconds) {
    case -1:
        return "no-store";
    case 30:
        return "max-age=30";
    case 86400:
        return "max-age=86400";
    default:
        snprintf(text, cap, "max-age=%d", seconds);
        return text;
    }
}

/* Turns the request's response fields into a queued libmicrohttpd response. */
- (enum MHD_Result)respond:(TDRequest *)req
                     route:(td_route *)route
                      etag:(const char *)etag
                     allow:(const char *)allow
                      sent:(size_t *)sent
{
    (void)route;
    int status = req->status;
    bool closing = __atomic_load_n(&draining, __ATOMIC_RELAXED) ||
                   status == 413 || status == 414;
    if (req->sharedResponse && !closing && !config.ncors_origins) {
        *sent = req->verb == TD_HEAD ? 0 : req->responseLength;
        return MHD_queue_response(req->connection, (unsigned)status, req->sharedResponse);
    }
    const char *body = NULL;
    size_t len = 0;
    enum MHD_ResponseMemoryMode mode = MHD_RESPMEM_MUST_COPY;
    bool from_writer = false;   /* body is req->out's buffer: hand it over, do not copy */
    const char *type = req->contentType ? req->contentType : JSON_TYPE;
    bool has_body = true;
    if (status >= 400) {
        if (!req->problemWritten) {
            json_reset(req->out);
            api_problem_write(&req->problem, req->path[0] ? req->path : NULL, req->out);
        }
        body = req->out->buf;
        len = req->out->len;
        from_writer = true;
        type = PROBLEM_TYPE;
        req->cacheSeconds = -1;
    } else if (status == 204 || status == 304) {
        has_body = false;
        mode = MHD_RESPMEM_PERSISTENT;
    } else if (req->responseBody) {
        body = req->responseBody;
        len = req->responseLength;
        if (req->responsePersistent)
            mode = MHD_RESPMEM_PERSISTENT;
    } else {
        body = req->out->buf;
        len = req->out->len;
        from_writer = true;
    }
    bool compressible = status != 204 && (strncmp(type, "application/", 12) == 0 ||
                                          strncmp(type, "text/", 5) == 0);
    bool gzipped = false;
    if (has_body && len > GZIP_MIN_BYTES) {
        const char *ae = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_ACCEPT_ENCODING);
        const unsigned char *z;
        size_t zlen;
        if (gzip_accepted(ae) && gzip_body_compress(req->gzip, body, len, &z, &zlen) == 0) {
            body = (const char *)z;
            len = zlen;
            mode = MHD_RESPMEM_MUST_COPY;
            from_writer = false;
            gzipped = true;
        }
    }
    struct MHD_Response *r = from_writer && len > 0
                                 ? response_from_writer(bodies, req->out, len)
                                 : MHD_create_response_from_buffer(len, (void *)(uintptr_t)body, mode);
    if (!r)
        return MHD_NO;
    if (has_body)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, TD_HEADER_NOSNIFF, "nosniff");
    if (compressible)
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
    if (gzipped)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    if (status != 204) {
        char text[32];
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
                                cache_control(req->cacheSeconds < 0 ? -1 : req->cacheSeconds,
                                              text, sizeof text));
    }
    const char *tag = etag[0] ? etag : req->responseEtag;
    if (tag[0] && (status == 200 || status == 201 || status == 304))
        MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, tag);
    if (req->location[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, req->location);
    if (req->wwwAuthenticate)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, req->wwwAuthenticate);
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (status == 503)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER_SECONDS);
    if (closing)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (config.ncors_origins)
        add_cors_headers(&config, req, route, r);
    enum MHD_Result ok = MHD_queue_response(req->connection, (unsigned)status, r);
    MHD_destroy_response(r);
    *sent = req->verb == TD_HEAD ? 0 : len;
    return ok;
}

@end
