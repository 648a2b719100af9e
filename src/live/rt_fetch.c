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

bool rt_source_is_url(const char *source)
{
    return strncmp(source, "http://", 7) == 0 || strncmp(source, "https://", 8) == 0;
}

typedef struct grow_buf {
    uint8_t *data;
    size_t len, cap;
    bool too_big, oom;
} grow_buf;

static bool grow_append(grow_buf *b, const void *p, size_t n)
{
    if (b->len + n > RT_FETCH_MAX_BYTES) {
        b->too_big = true;
        return false;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64 * 1024;
        while (cap < b->len + n) cap *= 2;
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
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (!grow_append(b, chunk, n)) break;
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

static int fetch_url(const char *url, unsigned timeout_s, grow_buf *b, char *err, size_t errlen)
{
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "cannot start libcurl");
        return -1;
    }
    char curl_err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)(timeout_s ? timeout_s : 30));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);   /* threads: no SIGALRM for DNS timeouts */
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");   /* gzip when the server offers it */
    curl_easy_setopt(c, CURLOPT_USERAGENT, "transitd (GTFS-Realtime poller)");
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (b->too_big) {
        snprintf(err, errlen, "%.200s sent more than %u bytes", url, RT_FETCH_MAX_BYTES);
        return -1;
    }
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "cannot fetch %.200s: %s", url, curl_err[0] ? curl_err : curl_easy_strerror(rc));
        return -1;
    }
    if (status != 200) {
        snprintf(err, errlen, "HTTP %ld from %.200s", status, url);
        return -1;
    }
    return 0;
}

int rt_fetch(const char *source, unsigned timeout_s, uint8_t **data, size_t *len, char *err,
             size_t errlen)
{
    grow_buf b = {0};
    int rc = rt_source_is_url(source) ? fetch_url(source, timeout_s, &b, err, errlen)
                                      : fetch_file(source, &b, err, errlen);
    if (rc != 0) {
        free(b.data);
        return -1;
    }
    *data = b.data;
    *len = b.len;
    return 0;
}

void rt_fetch_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
void rt_fetch_global_cleanup(void) { curl_global_cleanup(); }
