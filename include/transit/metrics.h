/* metrics.h — lock-free request counters and latency histograms for /metrics.
 *
 * Why it exists: every HTTP request bumps a few counters from whichever
 * server thread answered it; a mutex there would serialise the threads. All
 * counters are C11 relaxed atomics; rendering reads them without stopping the
 * writers (each value is exact, the set is a near-instant snapshot). The text
 * is the Prometheus exposition format 0.0.4.
 */
#ifndef TRANSIT_METRICS_H
#define TRANSIT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX_ROUTES 32
#define METRICS_BUCKETS 14      /* latency buckets before +Inf */

typedef struct metrics metrics;

/* route_labels[0..nroutes) must outlive the metrics (static strings); one
 * more route, index nroutes, counts requests that matched no route and is
 * labelled "unmatched". nroutes <= METRICS_MAX_ROUTES. NULL on bad input or
 * out of memory. */
metrics *metrics_new(int nroutes, const char *const *route_labels);
void metrics_free(metrics *m);

/* Counts one answered request. route out of range counts as unmatched;
 * status outside 100..599 counts as 599. */
void metrics_observe(metrics *m, int route, int status, uint64_t micros);
/* Counts one dataset reload attempt. */
void metrics_reload(metrics *m, bool ok);

/* The transitd_feed_days_until_expiry gauge, rendered with a dataset
 * version only: set by whoever knows the dataset and the clock (the /metrics
 * resource, just before it renders). METRICS_NO_FEED (the initial value)
 * leaves it out. */
#define METRICS_NO_FEED INT64_MIN
void metrics_set_feed_days_until_expiry(metrics *m, int64_t days);

uint64_t metrics_request_count(const metrics *m, int route, int status);
uint64_t metrics_reload_count(const metrics *m, bool ok);

/* Writes the exposition text into out (NUL-terminated when cap > 0) and
 * returns the length the whole text needs, like snprintf: call again with a
 * bigger buffer when the result is >= cap. dataset_version may be NULL (no
 * dataset). */
size_t metrics_render(const metrics *m, const char *dataset_version, char *out, size_t cap);

#endif
