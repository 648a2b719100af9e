/* TDDatasetResource.m — GET /v1/dataset (the manifest of the served version)
 * and GET /v1/dataset/{version}/{file} (one of its files, as it is on disk).
 *
 * Why it exists: replicas on other hosts take the dataset from here
 * (transit/snapshot.h): the manifest's ETag is the version, so a replica's
 * poll of an unchanged server costs a 304; a file's strong ETag is its
 * SHA-256, it never changes (Cache-Control: immutable), and Range requests
 * (206, with If-Range) let an interrupted transfer resume. Only the served
 * version's files are offered: a replica that asks for another one gets 404
 * and reads the manifest again. With ?from=OLD a file comes as a zstd patch
 * against OLD's (a phone's update, api_dataset_delta), while OLD is still
 * held beside the served version.
 */
#import "TDResource.h"
#import "TDServer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "transit/accept_encoding.h"
#include "transit/snapshot.h"

@interface TDDatasetResource : TDResource
@end

@implementation TDDatasetResource

+ (BOOL)needsDataset
{
    return YES;
}

+ (BOOL)usesServerETag
{
    return NO;
}

- (void)get:(TDRequest *)req
{
    snprintf(req->responseEtag, sizeof req->responseEtag, "\"%s\"", dataset_version(req->dataset));
    const char *inm = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && td_etag_matches(inm, req->responseEtag) && req->nparams == 0) {
        req->status = 304;
        req->cacheSeconds = 0;
        return;
    }
    td_request_run_endpoint(req, api_dataset);
    /* a phone's poll (?profile=phone) revalidates as cheaply, once its
     * parameters are known to be good */
    if (req->status == 200 && inm && td_etag_matches(inm, req->responseEtag)) {
        json_reset(req->out);
        req->status = 304;
        req->cacheSeconds = 0;
    }
}

@end

@interface TDDatasetFileResource : TDResource
@end

/* "bytes=FIRST-LAST", "bytes=FIRST-" or "bytes=-SUFFIX" of a file of `size`
 * bytes into [*from, *to]. 1 when satisfiable, 0 when not (416), -1 when
 * the header is not one such range (ignored, as RFC 9110 §14.2 allows:
 * the whole file is sent). */
static int parse_range(const char *h, uint64_t size, uint64_t *from, uint64_t *to)
{
    if (strncmp(h, "bytes=", 6) != 0)
        return -1;
    const char *p = h + 6;
    if (strchr(p, ','))
        return -1;   /* several ranges: sent whole */
    char *end = NULL;
    if (*p == '-') {
        errno = 0;
        unsigned long long suffix = strtoull(p + 1, &end, 10);
        if (errno || end == p + 1 || *end)
            return -1;
        if (suffix == 0 || size == 0)
            return 0;
        *from = suffix >= size ? 0 : size - suffix;
        *to = size - 1;
        return 1;
    }
    if (*p < '0' || *p > '9')
        return -1;
    errno = 0;
    unsigned long long first = strtoull(p, &end, 10);
    if (errno || *end != '-')
        return -1;
    p = end + 1;
    unsigned long long last = size ? size - 1 : 0;
    if (*p) {
        if (*p < '0' || *p > '9')
            return -1;
        last = strtoull(p, &end, 10);
        if (errno || *end || last < first)
            return -1;
    }
    if (first >= size)
        return 0;
    *from = first;
    *to = last >= size ? size - 1 : last;
    return 1;
}

/* A whole file, gzip-compressed as it is sent (zlib level 1, a 64 KB window
 * of input at a time): the stores compress to about 28 % (Brooklyn's
 * timetable.bin: 9.1 MB to 2.6 MB), which pays over a WAN link, and the
 * memory stays constant whatever the file's size. A transfer cut short left
 * the client a prefix of the file, which it resumes with an uncompressed
 * Range request. */
typedef struct gzip_stream {
    int fd;
    z_stream z;
    bool input_done, finished;
    unsigned char in[64 * 1024];
} gzip_stream;

static ssize_t read_gzip(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    gzip_stream *g = cls;
    if (g->finished)
        return MHD_CONTENT_READER_END_OF_STREAM;
    g->z.next_out = (Bytef *)buf;
    g->z.avail_out = (uInt)(max > (1u << 30) ? (1u << 30) : max);
    while (g->z.avail_out > 0) {
        if (g->z.avail_in == 0 && !g->input_done) {
            ssize_t n = read(g->fd, g->in, sizeof g->in);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
            g->z.next_in = g->in;
            g->z.avail_in = (uInt)n;
            g->input_done = n == 0;
        }
        int rc = deflate(&g->z, g->input_done ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            g->finished = true;
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (rc == Z_BUF_ERROR && g->z.avail_in == 0 && g->input_done)
            break;
    }
    size_t produced = (size_t)((char *)g->z.next_out - buf);
    if (produced == 0)
        return g->finished ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
    return (ssize_t)produced;
}

static void free_gzip(void *cls)
{
    gzip_stream *g = cls;
    deflateEnd(&g->z);
    close(g->fd);
    free(g);
}

/* A patch being sent: the cache's buffer, held by reference. */
typedef struct delta_body {
    api_delta *delta;
    const unsigned char *bytes;
    size_t len;
} delta_body;

static ssize_t read_delta(void *cls, uint64_t pos, char *buf, size_t max)
{
    delta_body *b = cls;
    if (pos >= b->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = b->len - (size_t)pos < max ? b->len - (size_t)pos : max;
    memcpy(buf, b->bytes + pos, n);
    return (ssize_t)n;
}

static void free_delta(void *cls)
{
    delta_body *b = cls;
    api_delta_release(b->delta);
    free(b);
}

@implementation TDDatasetFileResource

/* ?from=OLD: the file as a zstd patch against OLD's (api_dataset_delta). Its
 * own strong validator: the file's digest and the base it applies to. */
- (void)sendDelta:(TDRequest *)req from:(const char *)from file:(const snapshot_file *)f
{
    api_delta *d = NULL;
    int status = api_dataset_delta(req->dataset, from, f->name, &d, &req->problem);
    if (status != 200) {
        req->status = status;
        req->problem.status = status;
        if (!req->problem.title)
            req->problem.title = td_status_title(status);
        return;
    }
    char tag[128];
    snprintf(tag, sizeof tag, "\"%s-from-%s\"", f->sha256, from);
    const char *inm = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && td_etag_matches(inm, tag)) {
        api_delta_release(d);
        snprintf(req->responseEtag, sizeof req->responseEtag, "%s", tag);
        req->cacheImmutable = true;
        req->status = 304;
        return;
    }
    delta_body *b = calloc(1, sizeof *b);
    struct MHD_Response *r = NULL;
    if (b) {
        b->delta = d;
        b->bytes = api_delta_bytes(d, &b->len);
        r = MHD_create_response_from_callback(b->len, 64 * 1024, read_delta, b, free_delta);
    }
    if (!r) {
        if (b)
            free(b);
        api_delta_release(d);
        td_request_problem(req, 503, NULL, "out of memory while sending a delta");
        return;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, tag);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/zstd");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "public, max-age=31536000, immutable");
    MHD_add_response_header(r, "Delta-Base", from);
    MHD_add_response_header(r, TD_HEADER_NOSNIFF, "nosniff");
    req->ownedResponse = r;
}

+ (BOOL)needsDataset
{
    return YES;
}

+ (BOOL)usesServerETag
{
    return NO;
}

- (void)get:(TDRequest *)req
{
    const char *version = req->resourceId, *name = req->resourceSubId;
    const char *base = NULL;   /* ?from= */
    for (int i = 0; i < req->nparams; i++) {
        if (strcmp(req->params[i].key, "from") != 0 || base) {
            td_request_problem(req, 400, req->params[i].key, strcmp(req->params[i].key, "from") == 0
                                   ? "parameter '%.60s' is given twice"
                                   : "unknown parameter '%.60s' (only from is taken)",
                               req->params[i].key);
            return;
        }
        base = req->params[i].value;
    }
    if (!version || !name || strcmp(version, dataset_version(req->dataset)) != 0) {
        td_request_problem(req, 404, NULL, "version '%.40s' is not served here (it serves %s; "
                           "read /v1/dataset)", version ? version : "", dataset_version(req->dataset));
        return;
    }
    char err[256];
    const snapshot_manifest *m = api_dataset_manifest(req->dataset, err, sizeof err);
    if (!m) {
        td_request_problem(req, 500, NULL, "cannot list the dataset's files: %s", err);
        return;
    }
    const snapshot_file *f = snapshot_file_name_ok(name) ? snapshot_find(m, name) : NULL;
    if (!f) {
        td_request_problem(req, 404, NULL, "version %s has no file '%.60s'", m->version, name);
        return;
    }
    if (base) {
        [self sendDelta:req from:base file:f];
        return;
    }
    snprintf(req->responseEtag, sizeof req->responseEtag, "\"%s\"", f->sha256);
    req->cacheImmutable = true;
    req->acceptRanges = true;
    req->contentType = "application/octet-stream";
    const char *inm = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (inm && td_etag_matches(inm, req->responseEtag)) {
        req->status = 304;
        return;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dataset_dir(req->dataset), f->name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_size != f->size) {
        if (fd >= 0)
            close(fd);
        td_request_problem(req, 500, NULL, "%s is missing or changed on disk", f->name);
        return;
    }
    uint64_t from = 0, to = f->size ? f->size - 1 : 0;
    const char *range = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, "Range");
    const char *if_range = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, "If-Range");
    /* If-Range names the file the client holds part of: another file, all of it */
    if (range && (!if_range || strcmp(if_range, req->responseEtag) == 0)) {
        int r = parse_range(range, f->size, &from, &to);
        if (r == 0) {
            close(fd);
            snprintf(req->contentRange, sizeof req->contentRange, "bytes */%" PRIu64, f->size);
            td_request_problem(req, 416, "Range", "the range '%.60s' is outside the file's %" PRIu64
                               " bytes", range, f->size);
            return;
        }
        if (r == 1) {
            req->status = 206;
            snprintf(req->contentRange, sizeof req->contentRange,
                     "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, from, to, f->size);
        } else {
            from = 0;
            to = f->size ? f->size - 1 : 0;
        }
    }
    /* the whole file to a client that takes gzip: compressed as it goes */
    static const content_coding gzip_only[] = {CODING_GZIP};
    const char *ae = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_ACCEPT_ENCODING);
    if (req->status == 200 && req->verb != TD_HEAD && f->size > 4096 && ae &&
        accept_encoding_choose(ae, strlen(ae), gzip_only, 1) == CODING_GZIP) {
        gzip_stream *g = calloc(1, sizeof *g);
        if (g && deflateInit2(&g->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
            g->fd = fd;
            struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                                       read_gzip, g, free_gzip);
            if (r) {
                /* another representation: its own strong validator */
                char tag[96];
                snprintf(tag, sizeof tag, "\"%s-gzip\"", f->sha256);
                MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, tag);
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
                MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
                MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
                                        "public, max-age=31536000, immutable");
                MHD_add_response_header(r, "Accept-Ranges", "bytes");
                MHD_add_response_header(r, TD_HEADER_NOSNIFF, "nosniff");
                req->ownedResponse = r;
                return;
            }
            deflateEnd(&g->z);
        }
        free(g);
    }
    req->responseFd = fd;
    req->responseFdOffset = from;
    req->responseLength = f->size ? to - from + 1 : 0;
}

@end
