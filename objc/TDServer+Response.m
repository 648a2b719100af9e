/* TDServer+Response.m — what a resource answered, framed as HTTP.
 *
 * Why it exists: routing and the verb messages (TDServer.m) are one concern;
 * turning a status and a body into libmicrohttpd's response is another:
 * problem+json for errors, the server's weak ETags and 304, the content
 * coding (br or gzip, as Accept-Encoding asks, through the compressed-body
 * cache), Vary, Cache-Control, Allow, CORS and the access log. The body a
 * resource wrote is handed to libmicrohttpd without a copy (body_pool.h), and
 * so is a compressed body from the cache.
 */
#import "TDServer.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transit/accept_encoding.h"

#define COMPRESS_MIN_BYTES 1024   /* smaller bodies gain less than the headers cost */
#define RETRY_AFTER_SECONDS "5"
#define JSON_TYPE "application/json; charset=utf-8"
#define PROBLEM_TYPE "application/problem+json; charset=utf-8"

/* ------------------------------------------------------------ ETags */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* The answer key being built: its bytes go into req->answerKey while they fit
 * (past TD_MAX_ANSWER_KEY the answer is not cached) and all of them into the hash. */
typedef struct answer_key {
    TDRequest *req;
    size_t len;
    bool overflow;
    uint64_t hash;
} answer_key;

static void key_add(answer_key *k, const void *data, size_t n)
{
    k->hash = fnv1a(k->hash, data, n);
    if (k->overflow || n > TD_MAX_ANSWER_KEY - k->len) {
        k->overflow = true;
        return;
    }
    memcpy(k->req->answerKey + k->len, data, n);
    k->len += n;
}

static void key_add_text(answer_key *k, const char *text)
{
    key_add(k, text, strlen(text) + 1);
}

/* W/"<dataset version>-<hash of the answer key>". The answer key is everything
 * the answer depends on, each part delimited: the route, the id, the sorted
 * parameters (as the endpoint sees them: C strings), the dataset version, the
 * alerts' and the realtime overlay's generations where the route shows them, and
 * the minute where the answer depends on the clock. It is left in req->answerKey
 * for the compressed-body cache (encoded_cache.h), whose entries it keys.
 *
 * One ETag for every content coding of the answer, weak: RFC 9110 §8.8.1 lets a
 * weak validator stand for representations that are semantically equivalent,
 * which the gzip, br and identity forms of one JSON text are; and the tag is
 * decided before the answer is written (a 304 skips the endpoint), when whether
 * the body will be large enough to compress is not known. A cache keeps the
 * codings apart by Vary: Accept-Encoding; a strong validator (the alerts' own
 * ETag, used in If-Match) is never sent with a coding (respond:). */
void td_make_etag(TDRequest *req, td_route *route, char *out, size_t cap)
{
    answer_key k = {req, 0, false, 14695981039346656037ull};
    key_add_text(&k, route->pattern);
    if (req->resourceId) {
        key_add(&k, "\1", 1);
        key_add_text(&k, req->resourceId);
    } else {
        key_add(&k, "", 1);
    }
    int order[TD_MAX_PARAMS];
    td_request_param_order(req, order);
    bool has_time = false;
    for (int i = 0; i < req->nparams; i++)
        if (strcmp(req->params[i].key, "time") == 0)
            has_time = true;
    uint32_t nparams = (uint32_t)req->nparams;
    key_add(&k, &nparams, sizeof nparams);
    for (int i = 0; i < req->nparams; i++) {
        const api_param *p = &req->params[order[i]];
        key_add_text(&k, p->key);
        key_add_text(&k, p->value);
    }
    const char *version = req->dataset ? dataset_version(req->dataset) : "live";
    key_add_text(&k, version);
    /* the names' language, when not the feed's own (which keys as before) */
    if (req->language > 0) {
        key_add(&k, "\2", 1);
        key_add_text(&k, req->contentLanguage ? req->contentLanguage : "");
    }
    /* the alert texts' languages, when the request ranked some (none ranked
     * keys as before: the same texts) */
    if (req->alertLanguageSet && req->alertLanguage.nranked) {
        key_add(&k, "\3", 1);
        for (uint32_t i = 0; i < req->alertLanguage.nranked; i++)
            key_add_text(&k, req->alertLanguage.ranked[i]);
    }
    /* alerts: every write changes the generation; with alerts present, what
     * is active changes with the clock too */
    bool clock = route->depends_on_clock;
    unsigned char parts = (req->alerts ? 1 : 0) | (req->realtime ? 2 : 0);
    if (req->alerts)
        clock = clock || alert_view_count(req->alerts) > 0;
    if (clock && !has_time)
        parts |= 4;
    key_add(&k, &parts, 1);
    if (req->alerts) {
        int64_t generation = alert_view_generation(req->alerts);
        key_add(&k, &generation, sizeof generation);
    }
    /* realtime: every overlay published changes the answers */
    if (req->realtime) {
        uint64_t generation = rt_overlay_generation(req->realtime);
        key_add(&k, &generation, sizeof generation);
    }
    if (parts & 4)
        key_add(&k, &req->now, sizeof req->now);
    req->answerKeyLength = k.overflow ? 0 : k.len;
    uint64_t h = k.hash;
    /* written by hand: snprintf was a visible share of a small response */
    static const char hex[] = "0123456789abcdef";
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
bool td_etag_matches(const char *header, const char *etag)
{
    /* weak comparison (RFC 9110 §13.1.2): W/ on either side does not matter */
    const char *opaque = strncmp(etag, "W/", 2) == 0 ? etag + 2 : etag;
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

void td_write_access_log(TDRequest *req, int status, size_t bytes, uint64_t micros)
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

/* ------------------------------------------------------------ responses */

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

/* ------------------------------------------------------------ content codings */

/* The codings offered besides identity, in the server's order of preference
 * when the client weighs them equally (URLSession's "gzip, deflate, br"): br
 * first, because on the server's answers Brotli quality 1 costs about a fifth
 * less CPU than gzip at libdeflate level 1 for a body within 3 % of the same
 * size (bench/README.md, "Compression"). */
static const content_coding offered_codings[] = {CODING_BR, CODING_GZIP};

/* The free callback of a body held in the compressed-body cache. */
static void release_cached(void *cls)
{
    encoded_entry_release(cls);
}

/* A response whose body is body[0..len) in `coding`: the cached one when the
 * answer has a key (a 200 of a route with the server's ETag) and was compressed
 * before from the same bytes, else compressed now by the thread's compressor
 * and stored under the key. NULL when the compressor fails, the result is not
 * smaller, or out of memory: the caller sends the body as it is. */
static struct MHD_Response *compressed_response(encoded_cache *cache, TDRequest *req,
                                                content_coding coding, const char *body,
                                                size_t len, size_t *encoded_len)
{
    bool keyed = cache && req->answerKeyLength > 0 && req->status == 200;
    encoded_key key = {req->answerKey, req->answerKeyLength, coding, len, 0};
    const unsigned char *z = NULL;
    size_t zlen = 0;
    encoded_entry *held = NULL;
    if (keyed) {
        key.plain_crc = encoded_cache_crc32(body, len);
        held = encoded_cache_find(cache, &key, &z, &zlen);
    }
    if (!held) {
        int rc = coding == CODING_BR ? brotli_body_compress(req->brotli, body, len, &z, &zlen)
                                     : gzip_body_compress(req->gzip, body, len, &z, &zlen);
        if (rc != 0 || zlen >= len)
            return NULL;
        if (keyed)
            held = encoded_cache_put(cache, &key, z, zlen, &z);
    }
    *encoded_len = zlen;
    if (!held)
        return MHD_create_response_from_buffer(zlen, (void *)(uintptr_t)z, MHD_RESPMEM_MUST_COPY);
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback_cls(
        zlen, (void *)(uintptr_t)z, release_cached, held);
    if (!r)
        encoded_entry_release(held);
    return r;
}

/* The Cache-Control value for `seconds` (-1: no-store, else >= 0); the common values
 * are constants, others are formatted into `text`. */
/* The request headers a response's body depends on, for Vary: the coding
 * when it could be compressed, the language when the route translates, and
 * Accept on a route that answers text/event-stream to those who ask (a plain
 * GET's body must not be served from a cache to a stream, nor the reverse). */
static const char *vary_value(bool encoding, bool language, bool accept)
{
    static const char *const values[8] = {
        NULL, "Accept-Encoding", "Accept-Language", "Accept-Encoding, Accept-Language",
        "Accept", "Accept-Encoding, Accept", "Accept-Language, Accept", "Accept-Encoding, Accept-Language, Accept",
    };
    return values[(encoding ? 1 : 0) | (language ? 2 : 0) | (accept ? 4 : 0)];
}

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
@implementation TDServer (Response)

/* Queues r (which it takes) on the request's connection; on the write
 * queue's thread, leaves it in the suspended connection instead, for the
 * handler call after the resume (write_queue.h). */
static enum MHD_Result queue_or_hold(TDRequest *req, unsigned status, struct MHD_Response *r)
{
    if (req->answeringFor) {
        req->answeringFor->deferred_status = status;
        req->answeringFor->deferred_response = r;
        return MHD_YES;
    }
    enum MHD_Result queued = MHD_queue_response(req->connection, status, r);
    MHD_destroy_response(r);
    return queued;
}

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
    if (req->sharedResponse && !closing && !config.ncors_origins && !req->answeringFor) {
        *sent = req->verb == TD_HEAD ? 0 : req->responseLength;
        return MHD_queue_response(req->connection, (unsigned)status, req->sharedResponse);
    }
    if (req->ownedResponse && status < 300) {
        struct MHD_Response *own = req->ownedResponse;
        req->ownedResponse = NULL;
        if (closing)
            MHD_add_response_header(own, MHD_HTTP_HEADER_CONNECTION, "close");
        if (config.ncors_origins)
            add_cors_headers(&config, req, route, own);
        *sent = 0;   /* streamed: its length is not known here */
        return queue_or_hold(req, (unsigned)status, own);
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
    bool compressible = status != 204 && req->responseFd < 0 && (strncmp(type, "application/", 12) == 0 ||
                                          strncmp(type, "text/", 5) == 0);
    /* a strong validator names these exact bytes (RFC 9110 §8.8.3): sent as they are */
    bool strong_tag = req->responseEtag[0] && strncmp(req->responseEtag, "W/", 2) != 0;
    content_coding coding = CODING_IDENTITY;
    if (has_body && compressible && len > COMPRESS_MIN_BYTES && !strong_tag) {
        const char *ae = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_ACCEPT_ENCODING);
        coding = accept_encoding_choose(ae, ae ? strlen(ae) : 0, offered_codings,
                                        sizeof offered_codings / sizeof *offered_codings);
    }
    struct MHD_Response *r = NULL;
    if (coding != CODING_IDENTITY) {
        size_t encoded_len = 0;
        r = compressed_response(config.compressed_cache_mb ? compressedBodies : NULL, req, coding,
                                body, len, &encoded_len);
        if (r)
            len = encoded_len;
        else
            coding = CODING_IDENTITY;
    }
    if (!r && req->responseFd >= 0 && status < 300) {
        /* a file's bytes, read by MHD (sendfile on plain HTTP); MHD closes the fd */
        r = MHD_create_response_from_fd_at_offset64(req->responseLength, req->responseFd,
                                                    req->responseFdOffset);
        if (r)
            req->responseFd = -1;
        len = req->responseLength;
    }
    if (!r)
        r = from_writer && len > 0 ? response_from_writer(bodies, req->out, len)
                                   : MHD_create_response_from_buffer(len, (void *)(uintptr_t)body, mode);
    if (!r)
        return MHD_NO;
    if (req->contentRange[0])
        MHD_add_response_header(r, "Content-Range", req->contentRange);
    if (req->acceptRanges)
        MHD_add_response_header(r, "Accept-Ranges", "bytes");
    if (has_body)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, TD_HEADER_NOSNIFF, "nosniff");
    const char *vary = vary_value(compressible, req->translations != NULL || req->alertLanguageSet,
                                  req->variesOnAccept);
    if (vary)
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, vary);
    if (req->contentLanguage && (status == 200 || status == 304))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_LANGUAGE, req->contentLanguage);
    else if (req->contentLanguageText[0] && status < 300)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_LANGUAGE, req->contentLanguageText);
    if (coding != CODING_IDENTITY)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, content_coding_name(coding));
    if (status != 204) {
        char text[32];
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
                                req->cacheImmutable && status < 300
                                    ? "public, max-age=31536000, immutable"
                                    : cache_control(req->cacheSeconds < 0 ? -1 : req->cacheSeconds,
                                                    text, sizeof text));
    }
    const char *tag = etag[0] ? etag : req->responseEtag;
    if (tag[0] && (status == 200 || status == 201 || status == 206 || status == 304))
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
    *sent = req->verb == TD_HEAD ? 0 : len;
    return queue_or_hold(req, (unsigned)status, r);
}

@end
