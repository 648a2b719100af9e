/* rt_fetch.h — the bytes of a GTFS-Realtime source, from a file or a URL.
 *
 * Why it exists: `serve --gtfs-rt` takes either a path (a file another
 * process rewrites) or an http(s) URL polled with libcurl. Both end as one
 * buffer for rt_feed_decode; this hides which it was, with the limits a
 * poller needs (a size cap, a timeout, HTTP errors as errors). The buffer
 * is allocated once where the size is known first (a file's size, a
 * Content-Length) and trimmed to the body otherwise, so a 64 MB feed costs
 * 64 MB while it is decoded, not up to twice that.
 */
#ifndef TRANSIT_RT_FETCH_H
#define TRANSIT_RT_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest feed accepted (NYC's full trip-updates feed is about 10 MB). */
#define RT_FETCH_MAX_BYTES (64u * 1024 * 1024)

/* Whether `source` names a URL (http:// or https://) rather than a file. */
bool rt_source_is_url(const char *source);

/* Reads the whole source into *data (malloc'd; free it) and *len. A URL
 * gets `timeout_s` for the whole transfer and must answer 200. Returns 0,
 * or -1 with err ("HTTP 503 from …", "cannot open …: No such file …"). */
int rt_fetch(const char *source, unsigned timeout_s, uint8_t **data, size_t *len, char *err,
             size_t errlen);

/* The validators of the last good answer of a URL (empty when none), sent
 * back as If-None-Match / If-Modified-Since. */
#define RT_FETCH_VALIDATOR_MAX 256
typedef struct rt_fetch_validators {
    char etag[RT_FETCH_VALIDATOR_MAX];
    char last_modified[RT_FETCH_VALIDATOR_MAX];
} rt_fetch_validators;

/* One conditional fetch of `source` with extra request headers ("Name:
 * value", e.g. an API key; never written into err). `label` names the
 * source in err (rt_source_label: no credentials, no query string).
 * Returns 0 with the body and the answer's validators in *fresh, 1 when a
 * URL answered 304 Not Modified to *sent (nothing in *data), -1 with err.
 * A file has no validators. With headers, redirects are not followed (a
 * key must not go to another host): a 3xx is an error. `cancel`, when not
 * NULL, stops a URL's transfer (-1, "canceled") within about a second of
 * *cancel becoming nonzero (read atomically), so a server that stops does
 * not wait out a hanging source's timeout. */
int rt_fetch_conditional(const char *source, const char *label, unsigned timeout_s,
                         const char *const *headers, size_t nheaders, const rt_fetch_validators *sent,
                         rt_fetch_validators *fresh, uint8_t **data, size_t *len, const int *cancel,
                         char *err, size_t errlen);

/* libcurl's process-wide set-up and tear-down: call once at start and exit
 * (before any thread fetches, after the last has stopped). */
void rt_fetch_global_init(void);
void rt_fetch_global_cleanup(void);

#endif
