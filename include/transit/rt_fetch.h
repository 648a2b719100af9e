/* rt_fetch.h — the bytes of a GTFS-Realtime source, from a file or a URL.
 *
 * Why it exists: `serve --gtfs-rt` takes either a path (a file another
 * process rewrites) or an http(s) URL polled with libcurl. Both end as one
 * buffer for rt_feed_decode; this hides which it was, with the limits a
 * poller needs (a size cap, a timeout, HTTP errors as errors).
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

/* libcurl's process-wide set-up and tear-down: call once at start and exit
 * (before any thread fetches, after the last has stopped). */
void rt_fetch_global_init(void);
void rt_fetch_global_cleanup(void);

#endif
