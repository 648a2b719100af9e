/* rt_fetch.c — reading a GTFS-Realtime source: a file, or a URL with libcurl.
 *
 * Why it exists: see include/transit/rt_fetch.h. The one place transitd
 * uses libcurl.
 */
#include "transit/rt_fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

bool rt_source_is_url(const char *source)
{
    return strncmp(source, "http://", 7) == 0 || strncmp(source, "https://", 8) == 0;
}

/* The body as it arrives. Its memory counts against the realtime memory
 * bound (a 64 MB feed: the bytes are a third of what the poll may hold), so
 * it is sized once where the size is known beforehand (a file's size, a
 * Content-Length), grows by half otherwise, and is trimmed to the body at
 * the end (grow_trim): no doubling slack is left around while decoding. */
typedef struct grow_buf {
    uint8_t *data;
    size_t len, cap;
    bool too_big, oom;
    CURL *easy;                /* a URL's transfer, for its Content-Length */
    const int *cancel;         /* nonzero: stop the transfer */
} grow_buf;

/* Room for `want` bytes in all, allocated once. */
static bool grow_reserve(grow_buf *b, size_t want)
{
    if (want <= b->cap) return true;
    uint8_t *d = realloc(b->data, want);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = want;
    return true;
}

/* The buffer cut to the body's length (realloc of a large block moves no
 * bytes on Linux: mremap). */
static void grow_trim(grow_buf *b)
{
    if (b->len && b->len < b->cap) {
        uint8_t *d = realloc(b->data, b->len);
        if (d) {
            b->data = d;
            b->cap = b->len;
        }
    }
}

static bool grow_append(grow_buf *b, const void *p, size_t n)
{
    if (b->len + n > RT_FETCH_MAX_BYTES) {
        b->too_big = true;
        return false;
    }
    if (!b->cap && b->easy) {   /* the first bytes of an answer: its announced length, when sane */
        curl_off_t announced = -1;
        if (curl_easy_getinfo(b->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced) == CURLE_OK &&
            announced > 0 && announced <= RT_FETCH_MAX_BYTES && !grow_reserve(b, (size_t)announced))
            return false;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64 * 1024;
        while (cap < b->len + n) cap += cap / 2;
        if (cap > RT_FETCH_MAX_BYTES) cap = RT_FETCH_MAX_BYTES;
        uint8_t *d = realloc(b->data, cap);
        if (!d) {
            b->oom = true;
            return false;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return true;
}

static int fetch_file(const char *path, grow_buf *b, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %.200s: %s", path, strerror(errno));
        return -1;
    }
    /* read straight into a buffer of the file's size (one byte more, to see
     * it grow while read) */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
        (uint64_t)st.st_size < RT_FETCH_MAX_BYTES)
        grow_reserve(b, (size_t)st.st_size + 1);
    size_t n;
    while (!b->oom) {
        if (b->cap - b->len < 4096) {
            char chunk[65536];
            if ((n = fread(chunk, 1, sizeof chunk, f)) == 0 || !grow_append(b, chunk, n)) break;
            continue;
        }
        if ((n = fread(b->data + b->len, 1, b->cap - b->len, f)) == 0) break;
        if (b->len + n > RT_FETCH_MAX_BYTES) {
            b->too_big = true;
            break;
        }
        b->len += n;
    }
    bool failed = ferror(f);
    fclose(f);
    if (b->too_big) {
        snprintf(err, errlen, "%.200s is larger than %u bytes", path, RT_FETCH_MAX_BYTES);
        return -1;
    }
    if (b->oom || failed) {
        snprintf(err, errlen, "cannot read %.200s: %s", path, b->oom ? "out of memory" : "read error");
        return -1;
    }
    return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
    grow_buf *b = ctx;
    size_t n = size * nmemb;
    return grow_append(b, p, n) ? n : 0;   /* 0 aborts the transfer */
}

/* Copies the value of header line `line` (n bytes) into out when its name
 * is `name`: trimmed, and only when it fits. */
static void take_header(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
    if ((size_t)(end - v) < cap) {
        memcpy(out, v, (size_t)(end - v));
        out[end - v] = '\0';
    }
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ctx)
{
    rt_fetch_validators *v = ctx;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp(p, "HTTP/", 5) == 0)   /* a new answer (after a redirect): its own validators */
        *v = (rt_fetch_validators){{0}, {0}};
    take_header(p, n, "ETag", v->etag, sizeof v->etag);
    take_header(p, n, "Last-Modified", v->last_modified, sizeof v->last_modified);
    return n;
}

/* The request headers: the caller's, then the validators. NULL with
 * *failed set when out of memory. */
static struct curl_slist *request_headers(const char *const *headers, size_t nheaders,
                                          const rt_fetch_validators *sent, bool *failed)
{
    struct curl_slist *list = NULL;
    char line[RT_FETCH_VALIDATOR_MAX + 32];
    *failed = false;
    for (size_t i = 0; i < nheaders + 2; i++) {
        const char *h = NULL;
        if (i < nheaders) {
            h = headers[i];
        } else if (sent && i == nheaders && sent->etag[0]) {
            snprintf(line, sizeof line, "If-None-Match: %s", sent->etag);
            h = line;
        } else if (sent && i == nheaders + 1 && sent->last_modified[0]) {
            snprintf(line, sizeof line, "If-Modified-Since: %s", sent->last_modified);
            h = line;
        }
        if (!h)
            continue;
        struct curl_slist *next = curl_slist_append(list, h);
        if (!next) {
            curl_slist_free_all(list);
            *failed = true;
            return NULL;
        }
        list = next;
    }
    return list;
}

/* libcurl calls it about once a second even while nothing arrives. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const grow_buf *b = arg;
    return __atomic_load_n(b->cancel, __ATOMIC_ACQUIRE) ? 1 : 0;
}

static int fetch_url(const char *url, const char *label, unsigned timeout_s, const char *const *headers,
                     size_t nheaders, const rt_fetch_validators *sent, rt_fetch_validators *fresh,
                     grow_buf *b, char *err, size_t errlen)
{
    bool no_memory;
    struct curl_slist *list = request_headers(headers, nheaders, sent, &no_memory);
    CURL *c = no_memory ? NULL : curl_easy_init();
    if (!c) {
        curl_slist_free_all(list);
        snprintf(err, errlen, "cannot start libcurl");
        return -1;
    }
    rt_fetch_validators answered = {{0}, {0}};
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (list)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &answered);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    b->easy = c;
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)(timeout_s ? timeout_s : 30));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    /* a request header (an API key) must not follow a redirect to another
     * host: with headers, a 3xx is an error that says where it pointed */
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, nheaders ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);   /* threads: no SIGALRM for DNS timeouts */
    if (b->cancel) {
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, b);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");   /* gzip when the server offers it */
    curl_easy_setopt(c, CURLOPT_USERAGENT, "transitd (GTFS-Realtime poller)");
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    b->easy = NULL;
    curl_easy_cleanup(c);
    curl_slist_free_all(list);
    if (b->too_big) {
        snprintf(err, errlen, "%.200s sent more than %u bytes", label, RT_FETCH_MAX_BYTES);
        return -1;
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(err, errlen, "fetch of %.200s canceled", label);
        return -1;
    }
    if (rc != CURLE_OK) {
        /* curl's message may quote the URL, which may carry a key: the label only */
        snprintf(err, errlen, "cannot fetch %.200s: %s", label, curl_easy_strerror(rc));
        return -1;
    }
    if (status == 304 && sent && (sent->etag[0] || sent->last_modified[0]))
        return 1;
    if (status != 200) {
        snprintf(err, errlen, "HTTP %ld from %.200s", status, label);
        return -1;
    }
    if (fresh)
        *fresh = answered;
    return 0;
}

int rt_fetch_conditional(const char *source, const char *label, unsigned timeout_s,
                         const char *const *headers, size_t nheaders, const rt_fetch_validators *sent,
                         rt_fetch_validators *fresh, uint8_t **data, size_t *len, const int *cancel,
                         char *err, size_t errlen)
{
    grow_buf b = {.cancel = cancel};
    if (fresh)
        *fresh = (rt_fetch_validators){{0}, {0}};
    int rc = rt_source_is_url(source)
                 ? fetch_url(source, label, timeout_s, headers, nheaders, sent, fresh, &b, err, errlen)
                 : fetch_file(source, &b, err, errlen);
    if (rc != 0) {
        free(b.data);
        return rc;
    }
    grow_trim(&b);
    *data = b.data;
    *len = b.len;
    return 0;
}

int rt_fetch(const char *source, unsigned timeout_s, uint8_t **data, size_t *len, char *err,
             size_t errlen)
{
    return rt_fetch_conditional(source, source, timeout_s, NULL, 0, NULL, NULL, data, len, NULL, err, errlen);
}

void rt_fetch_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
void rt_fetch_global_cleanup(void) { curl_global_cleanup(); }
