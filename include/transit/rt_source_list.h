/* rt_source_list.h — the GTFS-Realtime sources given on a command line,
 * each with its own request headers.
 *
 * Why it exists: `serve` and `query` both take `--gtfs-rt SOURCE`
 * repeatable and `--gtfs-rt-header 'NAME: VALUE'`, which applies to the
 * --gtfs-rt given just before it (an agency's API key goes with its URL
 * only). One place holds that rule, checks the header text (a token name,
 * a colon, a value without control characters) and makes the label a
 * source is shown under in logs, /metrics and /readyz: the URL without its
 * credentials and query string (where API keys go), or the file's path.
 * Header values are never shown anywhere.
 */
#ifndef TRANSIT_RT_SOURCE_LIST_H
#define TRANSIT_RT_SOURCE_LIST_H

#include <stdbool.h>
#include <stddef.h>

#define RT_MAX_SOURCES 16
#define RT_MAX_SOURCE_HEADERS 8
#define RT_MAX_HEADER_BYTES 1024

typedef struct rt_source_spec {
    const char *location;                            /* a path or an http(s) URL (not copied) */
    const char *headers[RT_MAX_SOURCE_HEADERS];      /* "Name: value" (not copied) */
    size_t nheaders;
    const char *feed;   /* --gtfs-rt-feed NAME: the feed of a merged dataset its ids belong to, or NULL */
} rt_source_spec;

typedef struct rt_source_list {
    rt_source_spec sources[RT_MAX_SOURCES];
    size_t count;
} rt_source_list;

/* Adds a --gtfs-rt SOURCE (kept by pointer). False with err when empty or
 * past RT_MAX_SOURCES. */
bool rt_source_list_add(rt_source_list *list, const char *location, char *err, size_t errlen);

/* Adds a --gtfs-rt-header to the last source added (kept by pointer).
 * False with err (which never quotes the value) when no source comes
 * before it, the header is malformed, or the source has too many. */
bool rt_source_list_add_header(rt_source_list *list, const char *header, char *err, size_t errlen);

/* Adds a --gtfs-rt-feed NAME to the last source added (kept by pointer):
 * its trip, route, stop and agency ids are those of feed NAME of a merged
 * dataset (feed_merge.h), so "NAME:id" is used where the merge namespaced
 * the id. False with err when no source comes before it, the source has
 * one already, or NAME is not 1-47 letters, digits, '_', '-' or '.'. */
bool rt_source_list_set_feed(rt_source_list *list, const char *feed, char *err, size_t errlen);

/* Whether `header` is "Name: value": a non-empty RFC 9110 token, a colon,
 * optional spaces, a non-empty value of visible characters, spaces and
 * tabs; at most RT_MAX_HEADER_BYTES. False with the reason in err. */
bool rt_header_valid(const char *header, char *err, size_t errlen);

/* The label of `location` into out[0..cap): an URL without "user:pass@",
 * query string and fragment; a path as it is. */
void rt_source_label(const char *location, char *out, size_t cap);

#endif
